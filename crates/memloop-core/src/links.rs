//! The entities a memory names and the typed relations between them: what a
//! store keeps as the entity graph beside the memory (written in the same
//! transaction), and what retrieval follows from a hit to other memories
//! about the same people, places and things (docs/retrieval.md).

use serde::{Deserialize, Serialize};

/// What kind of thing an entity is, as far as extraction could tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntityKind {
    Person,
    Place,
    Organisation,
    Pet,
    Thing,
    /// A name found in text with nothing saying what it names.
    #[default]
    Unknown,
}

impl EntityKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EntityKind::Person => "person",
            EntityKind::Place => "place",
            EntityKind::Organisation => "organisation",
            EntityKind::Pet => "pet",
            EntityKind::Thing => "thing",
            EntityKind::Unknown => "unknown",
        }
    }

    /// The kind stored as `as_str` wrote it; anything else is `Unknown`.
    pub fn parse(s: &str) -> EntityKind {
        match s {
            "person" => EntityKind::Person,
            "place" => EntityKind::Place,
            "organisation" => EntityKind::Organisation,
            "pet" => EntityKind::Pet,
            "thing" => EntityKind::Thing,
            _ => EntityKind::Unknown,
        }
    }

    /// Of two guesses about one entity, the more specific.
    pub fn or(self, other: EntityKind) -> EntityKind {
        if self == EntityKind::Unknown {
            other
        } else {
            self
        }
    }
}

/// An entity a memory names, as written ("Anna", "Acme Corp").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mention {
    pub name: String,
    #[serde(default)]
    pub kind: EntityKind,
}

/// A typed relation a memory states: `subject relation object`
/// ("Anna" `works_at` "Globex", "Anna" `sister_of` "user"). Both ends are
/// also mentions of the memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Relation {
    pub subject: String,
    pub relation: String,
    pub object: String,
    /// The subject holds this relation with one object at a time
    /// (`works_at`, `lives_in`: what the rules reconcile as single-valued):
    /// a store retires the subject's earlier current one when a memory
    /// states another object, as a fact is superseded.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub single: bool,
}

/// Everything a memory links to.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Links {
    pub mentions: Vec<Mention>,
    pub relations: Vec<Relation>,
}

impl Links {
    pub fn is_empty(&self) -> bool {
        self.mentions.is_empty() && self.relations.is_empty()
    }

    /// Adds a mention unless the entity is there already (by [`entity_key`]);
    /// a known kind replaces an unknown one.
    pub fn mention(&mut self, name: &str, kind: EntityKind) {
        let key = entity_key(name);
        if key.is_empty() {
            return;
        }
        match self
            .mentions
            .iter_mut()
            .find(|m| entity_key(&m.name) == key)
        {
            Some(m) => m.kind = m.kind.or(kind),
            None => self.mentions.push(Mention {
                name: name.trim().to_string(),
                kind,
            }),
        }
    }

    /// Adds a relation and mentions of both its ends.
    pub fn relate(
        &mut self,
        subject: (&str, EntityKind),
        relation: &str,
        object: (&str, EntityKind),
    ) {
        self.relate_as(subject, relation, object, false);
    }

    /// Adds a relation the subject holds with one object at a time
    /// ([`Relation::single`]), and mentions of both its ends.
    pub fn relate_single(
        &mut self,
        subject: (&str, EntityKind),
        relation: &str,
        object: (&str, EntityKind),
    ) {
        self.relate_as(subject, relation, object, true);
    }

    fn relate_as(
        &mut self,
        subject: (&str, EntityKind),
        relation: &str,
        object: (&str, EntityKind),
        single: bool,
    ) {
        if entity_key(subject.0).is_empty() || entity_key(object.0).is_empty() {
            return;
        }
        self.mention(subject.0, subject.1);
        self.mention(object.0, object.1);
        let r = Relation {
            subject: subject.0.trim().to_string(),
            relation: relation.to_string(),
            object: object.0.trim().to_string(),
            single,
        };
        if !self.relations.contains(&r) {
            self.relations.push(r);
        }
    }
}

/// The key that identifies an entity within a partition: lower case, one
/// space between words, without a trailing possessive ("Anna's" is Anna).
pub fn entity_key(name: &str) -> String {
    let joined = name
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    let trimmed = joined
        .strip_suffix("'s")
        .or_else(|| joined.strip_suffix("’s"))
        .unwrap_or(&joined);
    trimmed
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_ignore_case_spacing_and_possessives() {
        assert_eq!(entity_key("  Acme   Corp "), "acme corp");
        assert_eq!(entity_key("Anna's"), "anna");
        assert_eq!(entity_key("Anna’s"), "anna");
        assert_eq!(entity_key("\"Rex\","), "rex");
        assert_eq!(entity_key("..."), "");
    }

    #[test]
    fn mentions_are_kept_once_with_the_most_specific_kind() {
        let mut l = Links::default();
        l.mention("Anna", EntityKind::Unknown);
        l.mention("anna's", EntityKind::Person);
        l.relate(
            ("Anna", EntityKind::Person),
            "works_at",
            ("Globex", EntityKind::Organisation),
        );
        l.relate(
            ("Anna", EntityKind::Person),
            "works_at",
            ("Globex", EntityKind::Organisation),
        );
        assert_eq!(l.mentions.len(), 2);
        assert_eq!(l.mentions[0].kind, EntityKind::Person);
        assert_eq!(l.mentions[1].kind, EntityKind::Organisation);
        assert_eq!(l.relations.len(), 1);
        l.relate(
            ("", EntityKind::Person),
            "works_at",
            ("Globex", EntityKind::Organisation),
        );
        assert_eq!(l.relations.len(), 1, "a relation needs both ends");
    }
}
