//! The reconciliation decision for one new fact against the stored facts a
//! search found for it: ADD, NOOP (already known), UPDATE (a new value for
//! a single-valued attribute), DELETE (an explicit negation or retraction),
//! or SKIP (a retraction with nothing to retract). Pure: the caller fetches
//! the candidates and applies the decision.
//!
//! Structure decides before similarity. Sentence embeddings place "User
//! lives in Paris" and "User lives in Berlin" close together (and a sentence
//! close to its own negation), so cosine alone cannot tell an update from a
//! duplicate; the subject, attribute and value stored with each fact can.
//! Cosine is the fallback for candidates without that structure (memories
//! added as raw text, or named differently by the LLM mode).

use super::fact::{Fact, Polarity, METADATA_KEY};

/// A stored fact that a search found near the new one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate<'a> {
    pub id: &'a str,
    pub text: &'a str,
    /// Cosine similarity of the two texts' embeddings, 0..1.
    pub similarity: f32,
    pub subject: Option<&'a str>,
    pub attribute: Option<&'a str>,
    pub value: Option<&'a str>,
    /// Asserted unless the stored fact says otherwise.
    pub polarity: Polarity,
    /// The attribute holds several values side by side ("likes").
    pub multi: bool,
    /// Proper names the stored fact mentions (`metadata["entities"]`).
    pub entities: &'a [serde_json::Value],
}

impl<'a> Candidate<'a> {
    /// A candidate with no structure (a memory stored as raw text).
    pub fn new(id: &'a str, text: &'a str, similarity: f32) -> Candidate<'a> {
        Candidate {
            id,
            text,
            similarity,
            subject: None,
            attribute: None,
            value: None,
            polarity: Polarity::Asserted,
            multi: false,
            entities: &[],
        }
    }

    /// A candidate with the structure `Fact::metadata` stored (under
    /// `metadata["fact"]`); missing keys leave it unstructured.
    pub fn from_metadata(
        id: &'a str,
        text: &'a str,
        similarity: f32,
        metadata: &'a serde_json::Value,
    ) -> Candidate<'a> {
        let fact = metadata.get(METADATA_KEY);
        let field = |k: &str| fact.and_then(|f| f.get(k)).and_then(|v| v.as_str());
        Candidate {
            subject: field("subject"),
            attribute: field("attribute"),
            value: field("value"),
            polarity: match field("polarity") {
                Some("negated") => Polarity::Negated,
                Some("retracted") => Polarity::Retracted,
                _ => Polarity::Asserted,
            },
            multi: fact
                .and_then(|f| f.get("multi"))
                .and_then(|v| v.as_bool())
                .unwrap_or(false),
            entities: metadata
                .get("entities")
                .and_then(|e| e.as_array())
                .map_or(&[], Vec::as_slice),
            ..Candidate::new(id, text, similarity)
        }
    }
}

/// What to do with a new fact. The id is the stored fact acted on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Store the fact as new.
    Add,
    /// Already known: store nothing.
    Noop { id: String },
    /// Supersede the stored fact with the new one (its validity ends, the new fact is stored).
    Update { id: String },
    /// End the stored fact's validity; the new fact is not stored.
    Delete { id: String },
    /// A retraction that matched nothing: store nothing.
    Skip,
}

impl Decision {
    /// The stored fact acted on, if any.
    pub fn target(&self) -> Option<&str> {
        match self {
            Decision::Noop { id } | Decision::Update { id } | Decision::Delete { id } => Some(id),
            Decision::Add | Decision::Skip => None,
        }
    }
}

/// Cosine thresholds for candidates that lack structure.
///
/// `duplicate` (0.92): at or above it, a candidate with the same polarity is
/// the same fact (NOOP). It sits above the band where all-MiniLM-L6-v2 puts
/// *different values of one attribute* ("User lives in Paris" / "User lives
/// in Berlin", roughly 0.75–0.85) and at the upper part of the band of
/// paraphrases (roughly 0.85–0.95), so a paraphrase is sometimes stored
/// twice (harmless: both say the same) but a changed value is never
/// swallowed as a duplicate. Values are changed by structure (same subject
/// and attribute), not by cosine.
///
/// `retract` (0.85): at or above it, a negation or retraction deletes an
/// unstructured candidate. Lower than `duplicate` because a negation is
/// worded differently from the statement it negates ("User no longer lives
/// in Paris" / "User lives in Paris"), but high, since a wrong DELETE loses
/// a true fact.
///
/// Both are first estimates, to be confirmed by measuring all-MiniLM-L6-v2
/// (384-d) cosines on labelled pairs (paraphrases, changed values,
/// negations, unrelated facts of one user).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    pub duplicate: f32,
    pub retract: f32,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            duplicate: 0.92,
            retract: 0.85,
        }
    }
}

/// Lower case, trimmed, without a leading article or possessive, so "the
/// Beatles" matches "Beatles" and "their dog" matches "a dog".
fn norm(value: &str) -> String {
    let lower = value
        .trim()
        .trim_end_matches(['.', '!', ','])
        .to_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    let skip = usize::from(
        words.len() > 1 && matches!(words.first(), Some(&("a" | "an" | "the" | "their" | "my"))),
    );
    words.get(skip..).unwrap_or_default().join(" ")
}

fn same(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => norm(a) == norm(b),
        _ => false,
    }
}

/// Same subject and attribute, both known.
fn same_slot(fact: &Fact, c: &Candidate<'_>) -> bool {
    fact.attribute.is_some()
        && same(Some(&fact.subject), c.subject)
        && same(fact.attribute.as_deref(), c.attribute)
}

/// The best-scoring candidate that satisfies `pred`.
fn best<'c, 'a>(
    candidates: &'c [Candidate<'a>],
    pred: impl Fn(&Candidate<'a>) -> bool,
) -> Option<&'c Candidate<'a>> {
    candidates
        .iter()
        .filter(|c| pred(c))
        .max_by(|a, b| a.similarity.total_cmp(&b.similarity))
}

fn shown(v: Option<&str>) -> &str {
    v.unwrap_or("(unspecified)")
}

/// The proper names that pick out whom a fact is about: its entities other
/// than those inside its value ("Anna" in "User's sister Anna lives in
/// Rome", not "Rome").
fn identifying<'e>(entities: impl Iterator<Item = &'e str>, value: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = entities
        .filter(|e| value.is_none_or(|v| !mentions(v, e)))
        .map(norm)
        .filter(|e| !e.is_empty())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Whether `fact` may retire the stored `c` (supersede it or end its
/// validity), or why not. Supersession stays narrow: a fact retires only a
/// fact about the same subject and attribute, or about the same pair of
/// subject and value ("forget what I said about Paris"). A similar fact
/// about something else never does, whoever proposes it (the rules or the
/// LLM): "User likes green tea in the morning" is not a new value of "User
/// likes tea" (a multi-valued attribute keeps both), and what is said of
/// the user's sister Maria does not change what was said of their sister
/// Anna (the names that identify the subject differ). Where one side has
/// no structure to compare, only a near-identical text (cosine at or above
/// `th.retract`) may be retired.
pub fn may_retire(fact: &Fact, c: &Candidate<'_>, th: &Thresholds) -> Result<(), String> {
    let same_subject = same(Some(&fact.subject), c.subject);
    let same_value = same(fact.value.as_deref(), c.value);
    if same_subject && same_value {
        return Ok(());
    }
    let (Some(attr), Some(stored_attr)) = (fact.attribute.as_deref(), c.attribute) else {
        return if c.similarity >= th.retract {
            Ok(())
        } else {
            Err(format!(
                "\"{}\" has no subject and attribute to compare with, and its cosine {:.2} is below {:.2}",
                c.text, c.similarity, th.retract
            ))
        };
    };
    if !same_subject {
        return Err(format!(
            "\"{}\" is about {}, the new fact about {}",
            c.text,
            shown(c.subject),
            fact.subject
        ));
    }
    if norm(attr) != norm(stored_attr) {
        return Err(format!(
            "\"{}\" is about {stored_attr}, the new fact about {attr}",
            c.text
        ));
    }
    let whole_slot = fact.polarity == Polarity::Retracted && fact.value.is_none();
    if (fact.multi || c.multi) && !whole_slot {
        return Err(format!(
            "{attr} holds several values side by side: {} does not replace {}",
            shown(fact.value.as_deref()),
            shown(c.value)
        ));
    }
    let new_ids = identifying(
        fact.entities.iter().map(String::as_str),
        fact.value.as_deref(),
    );
    let old_ids = identifying(c.entities.iter().filter_map(|e| e.as_str()), c.value);
    if !new_ids.is_empty() && !old_ids.is_empty() && new_ids != old_ids {
        return Err(format!(
            "\"{}\" names {}, the new fact {}: another {}",
            c.text,
            old_ids.join(", "),
            new_ids.join(", "),
            fact.subject
        ));
    }
    Ok(())
}

/// Decides what to do with `fact` given the stored facts a search found for
/// it (any order), and says why.
///
/// - A new value of a single-valued attribute (same subject and attribute)
///   is an UPDATE of the stored value: "I live in Paris", later "I moved to
///   Berlin" makes Berlin current and supersedes Paris.
/// - The same value, or (without structure) a cosine at or above
///   `th.duplicate` with the same polarity, is a NOOP.
/// - A negated fact DELETEs the stored assertion it negates (same subject
///   and attribute, and value when it names one; or cosine at or above
///   `th.retract`). With nothing to negate it is ADDed: "User does not eat
///   meat" is worth knowing on its own, and a later "I eat meat again"
///   UPDATEs it.
/// - A retraction ("forget that …") DELETEs what it names; with nothing
///   stored to forget it is a SKIP, as storing "forget that" would be noise.
/// - Anything else is an ADD; a multi-valued attribute ("likes") adds a
///   value beside the others.
pub fn reconcile(fact: &Fact, candidates: &[Candidate<'_>], th: &Thresholds) -> (Decision, String) {
    let slot = |c: &Candidate<'_>| same_slot(fact, c);
    let same_value = |c: &Candidate<'_>| same(fact.value.as_deref(), c.value);
    let attr = fact.attribute.as_deref().unwrap_or("fact");
    let new = shown(fact.value.as_deref());
    // Cosine only judges pairs that structure cannot: either side lacks an
    // attribute, or the attributes differ (the LLM may name one slot twice).
    let cosine_ok = |c: &Candidate<'_>| {
        fact.attribute.is_none()
            || c.attribute.is_none()
            || (same(Some(&fact.subject), c.subject) && !slot(c))
    };
    let id = |c: &Candidate<'_>| c.id.to_string();
    let retirable = |c: &Candidate<'_>| may_retire(fact, c, th).is_ok();

    match fact.polarity {
        Polarity::Asserted => {
            if let Some(c) = best(candidates, |c| {
                slot(c) && same_value(c) && c.polarity == Polarity::Asserted
            }) {
                return (
                    Decision::Noop { id: id(c) },
                    format!("already known: {attr} = {new}"),
                );
            }
            // A single-valued slot's current value changes before a stale
            // negation is replaced: the current value is what must be right.
            if !fact.multi {
                if let Some(c) = best(candidates, |c| {
                    slot(c) && c.polarity == Polarity::Asserted && retirable(c)
                }) {
                    let reason = format!("{attr} changed from {} to {new}", shown(c.value));
                    return (Decision::Update { id: id(c) }, reason);
                }
            }
            if let Some(c) = best(candidates, |c| slot(c) && same_value(c) && retirable(c)) {
                let reason = format!("{attr} = {new} holds again; replaces the stored negation");
                return (Decision::Update { id: id(c) }, reason);
            }
            if let Some(c) = best(candidates, |c| {
                cosine_ok(c) && c.polarity == Polarity::Asserted && c.similarity >= th.duplicate
            }) {
                let reason = format!(
                    "near-duplicate of a stored fact (cosine {:.2} >= {:.2})",
                    c.similarity, th.duplicate
                );
                return (Decision::Noop { id: id(c) }, reason);
            }
            // Say why a fact in the same slot was left alone.
            match candidates.iter().find(|c| slot(c) && !retirable(c)) {
                Some(c) => (
                    Decision::Add,
                    format!(
                        "new fact; not a change of memory {}: {}",
                        c.id,
                        may_retire(fact, c, th).err().unwrap_or_default()
                    ),
                ),
                None => (Decision::Add, "new fact".to_string()),
            }
        }
        Polarity::Negated => {
            if let Some(c) = best(candidates, |c| {
                slot(c) && same_value(c) && c.polarity == Polarity::Negated
            }) {
                return (
                    Decision::Noop { id: id(c) },
                    format!("already known: not {attr} = {new}"),
                );
            }
            let negates = |c: &Candidate<'_>| {
                slot(c)
                    && c.polarity == Polarity::Asserted
                    && (fact.value.is_none() || same_value(c))
                    && retirable(c)
            };
            if let Some(c) = best(candidates, negates) {
                let reason = format!("negates {attr} = {}", shown(c.value));
                return (Decision::Delete { id: id(c) }, reason);
            }
            if let Some(c) = best(candidates, |c| {
                cosine_ok(c)
                    && c.polarity == Polarity::Asserted
                    && c.similarity >= th.retract
                    && retirable(c)
            }) {
                let reason = format!(
                    "negates a similar stored fact (cosine {:.2} >= {:.2})",
                    c.similarity, th.retract
                );
                return (Decision::Delete { id: id(c) }, reason);
            }
            if let Some(c) = best(candidates, |c| {
                cosine_ok(c) && c.polarity == Polarity::Negated && c.similarity >= th.duplicate
            }) {
                let reason = format!(
                    "near-duplicate of a stored negation (cosine {:.2})",
                    c.similarity
                );
                return (Decision::Noop { id: id(c) }, reason);
            }
            (
                Decision::Add,
                "new negative fact: nothing stored to negate".to_string(),
            )
        }
        Polarity::Retracted => {
            let named = |c: &Candidate<'_>| {
                if !retirable(c) {
                    false
                } else if fact.attribute.is_some() {
                    slot(c) && (fact.value.is_none() || same_value(c))
                } else {
                    // "forget what I said about Paris": that value, any attribute.
                    (same(Some(&fact.subject), c.subject) && same_value(c))
                        || fact
                            .value
                            .as_deref()
                            .is_some_and(|v| mentions(c.text, v) && c.similarity >= th.retract)
                }
            };
            if let Some(c) = best(candidates, named) {
                let reason = format!("retracts {attr} = {}", shown(c.value));
                return (Decision::Delete { id: id(c) }, reason);
            }
            if let Some(c) = best(candidates, |c| {
                cosine_ok(c) && c.similarity >= th.retract && retirable(c)
            }) {
                let reason = format!(
                    "retracts a similar stored fact (cosine {:.2} >= {:.2})",
                    c.similarity, th.retract
                );
                return (Decision::Delete { id: id(c) }, reason);
            }
            (
                Decision::Skip,
                "nothing stored matches the retraction".to_string(),
            )
        }
    }
}

/// `text` contains `value` as whole words, ignoring case.
fn mentions(text: &str, value: &str) -> bool {
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let text = words(text);
    let value = words(value);
    !value.is_empty() && text.windows(value.len()).any(|w| w == value.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::extract_rules;

    /// Sunday 2026-11-15 12:00 UTC.
    const AT: i64 = 1_794_744_000_000;

    fn fact(text: &str) -> Fact {
        let facts = extract_rules(text, "user", AT);
        assert_eq!(facts.len(), 1, "{text:?} gave {facts:#?}");
        facts.into_iter().next().unwrap()
    }

    /// A stored fact as the lead stores it: its text and metadata.
    struct Stored {
        id: &'static str,
        text: String,
        metadata: serde_json::Value,
    }

    fn stored(id: &'static str, text: &str) -> Stored {
        let f = fact(text);
        Stored {
            id,
            text: f.text.clone(),
            metadata: f.metadata(),
        }
    }

    fn facts_of(text: &str) -> Vec<Fact> {
        extract_rules(text, "user", AT)
    }

    /// Every fact of a sentence, stored as the pipeline stores them.
    fn stored_all(text: &str) -> Vec<Stored> {
        facts_of(text)
            .into_iter()
            .map(|f| {
                let mut metadata = f.metadata();
                metadata["entities"] = f.entities.clone().into();
                Stored {
                    id: "s",
                    text: f.text,
                    metadata,
                }
            })
            .collect()
    }

    fn candidate(s: &Stored, similarity: f32) -> Candidate<'_> {
        Candidate::from_metadata(s.id, &s.text, similarity, &s.metadata)
    }

    fn decide(new: &str, against: &[Candidate<'_>]) -> (Decision, String) {
        reconcile(&fact(new), against, &Thresholds::default())
    }

    #[test]
    fn paris_then_berlin_is_an_update() {
        let paris = stored("m1", "I live in Paris");
        let (d, reason) = decide("I moved to Berlin last month", &[candidate(&paris, 0.78)]);
        assert_eq!(d, Decision::Update { id: "m1".into() });
        assert!(
            reason.contains("Paris") && reason.contains("Berlin"),
            "{reason}"
        );
    }

    #[test]
    fn same_value_is_a_noop_even_at_low_cosine() {
        let paris = stored("m1", "I live in Paris");
        let (d, _) = decide("I live in Paris", &[candidate(&paris, 0.6)]);
        assert_eq!(d, Decision::Noop { id: "m1".into() });
    }

    #[test]
    fn raw_near_duplicate_is_a_noop() {
        let raw = [Candidate::new("r1", "The user lives in Paris", 0.95)];
        let (d, reason) = decide("I live in Paris", &raw);
        assert_eq!(d, Decision::Noop { id: "r1".into() });
        assert!(reason.contains("0.95"));
        let raw = [Candidate::new("r1", "The user likes Paris", 0.80)];
        assert_eq!(decide("I live in Paris", &raw).0, Decision::Add);
    }

    #[test]
    fn negation_deletes() {
        let paris = stored("m1", "I live in Paris");
        let (d, reason) = decide("I no longer live in Paris", &[candidate(&paris, 0.9)]);
        assert_eq!(d, Decision::Delete { id: "m1".into() });
        assert!(reason.contains("Paris"));
        let meat = stored("m2", "I eat meat");
        let (d, _) = decide("I don't eat meat anymore", &[candidate(&meat, 0.7)]);
        assert_eq!(d, Decision::Delete { id: "m2".into() });
        // A negation of another value does not touch the current one.
        let berlin = stored("m3", "I live in Berlin");
        let (d, _) = decide("I don't live in Paris", &[candidate(&berlin, 0.8)]);
        assert_eq!(d, Decision::Add);
    }

    #[test]
    fn negation_of_raw_text_needs_high_cosine() {
        let raw = [Candidate::new("r1", "User lives in Paris", 0.88)];
        assert_eq!(
            decide("I no longer live in Paris", &raw).0,
            Decision::Delete { id: "r1".into() }
        );
        let raw = [Candidate::new("r1", "User eats fish", 0.7)];
        assert_eq!(decide("I don't eat meat", &raw).0, Decision::Add);
    }

    #[test]
    fn negation_then_assertion_updates_the_negation() {
        let no_meat = stored("m1", "I don't eat meat");
        let (d, _) = decide("I eat meat", &[candidate(&no_meat, 0.9)]);
        assert_eq!(d, Decision::Update { id: "m1".into() });
        let (d, _) = decide("I don't eat meat", &[candidate(&no_meat, 0.99)]);
        assert_eq!(d, Decision::Noop { id: "m1".into() });
    }

    #[test]
    fn retraction_deletes_or_skips() {
        let paris = stored("m1", "I live in Paris");
        let (d, _) = decide("Forget that I live in Paris", &[candidate(&paris, 0.8)]);
        assert_eq!(d, Decision::Delete { id: "m1".into() });
        let (d, _) = decide("Forget that I live in Paris", &[]);
        assert_eq!(d, Decision::Skip);
        let raw = [Candidate::new("r1", "User visited Paris in May", 0.86)];
        let (d, _) = decide("Forget what I said about Paris", &raw);
        assert_eq!(d, Decision::Delete { id: "r1".into() });
    }

    #[test]
    fn unrelated_is_an_add() {
        let paris = stored("m1", "I live in Paris");
        let (d, reason) = decide("I'm a teacher", &[candidate(&paris, 0.3)]);
        assert_eq!(d, Decision::Add);
        assert_eq!(reason, "new fact");
        assert_eq!(decide("I'm a teacher", &[]).0, Decision::Add);
    }

    #[test]
    fn multi_valued_attributes_add_side_by_side() {
        let tea = stored("m1", "I like tea");
        let (d, _) = decide("I like coffee", &[candidate(&tea, 0.93)]);
        assert_eq!(d, Decision::Add);
        let (d, _) = decide("I like tea", &[candidate(&tea, 0.93)]);
        assert_eq!(d, Decision::Noop { id: "m1".into() });
    }

    #[test]
    fn job_change_updates_and_prefers_the_assertion() {
        let teacher = stored("m1", "I'm a teacher");
        let not_nurse = stored("m2", "I'm not a nurse");
        let cands = [candidate(&not_nurse, 0.9), candidate(&teacher, 0.7)];
        let (d, reason) = decide("I work as a nurse", &cands);
        assert_eq!(d, Decision::Update { id: "m1".into() });
        assert_eq!(reason, "job changed from teacher to nurse");
        let (d, _) = decide("I work as a nurse", &[candidate(&not_nurse, 0.9)]);
        assert_eq!(d, Decision::Update { id: "m2".into() });
    }

    #[test]
    fn another_subject_is_not_an_update() {
        let mine = stored("m1", "I live in Paris");
        let (d, _) = decide("My sister lives in Rome", &[candidate(&mine, 0.93)]);
        assert_eq!(d, Decision::Add);
    }

    #[test]
    fn similar_facts_about_other_things_never_retire_each_other() {
        // The one pair graph-memory users see retired most: a liking and a narrower one.
        let tea = stored("m1", "I like tea");
        let green = fact("I like green tea in the morning");
        for sim in [0.8, 0.99] {
            let (d, reason) = reconcile(&green, &[candidate(&tea, sim)], &Thresholds::default());
            assert_eq!(d, Decision::Add, "{reason}");
            assert!(reason.contains("side by side"), "{reason}");
        }
        assert!(may_retire(&green, &candidate(&tea, 0.99), &Thresholds::default()).is_err());
        // Two sisters, two cities: neither move is a change of the other's.
        let anna = stored_all("My sister Anna lives in Rome");
        let maria = facts_of("My other sister Maria lives in Madrid");
        assert!(!maria.is_empty());
        for new in &maria {
            let cands: Vec<Candidate> = anna.iter().map(|s| candidate(s, 0.95)).collect();
            let (d, reason) = reconcile(new, &cands, &Thresholds::default());
            assert_eq!(d, Decision::Add, "{}: {reason}", new.text);
        }
        // Even when the subject is named alike (as an LLM may), the names differ.
        let mut llm_maria = fact("My sister lives in Madrid");
        llm_maria.entities = vec!["Maria".into(), "Madrid".into()];
        let stored_anna = Stored {
            id: "m9",
            text: "User's sister lives in Rome".into(),
            metadata: serde_json::json!({
                "fact": {"subject": "user's sister", "attribute": "lives_in", "value": "Rome"},
                "entities": ["Anna", "Rome"],
            }),
        };
        let why = may_retire(
            &llm_maria,
            &candidate(&stored_anna, 0.9),
            &Thresholds::default(),
        )
        .unwrap_err();
        assert!(why.contains("anna") && why.contains("maria"), "{why}");
        // The same sister moving is a change.
        let unnamed = stored("m2", "My sister lives in Rome");
        let (d, _) = decide("My sister lives in Madrid", &[candidate(&unnamed, 0.8)]);
        assert_eq!(d, Decision::Update { id: "m2".into() });
    }

    #[test]
    fn retiring_outside_the_slot_is_refused_with_a_reason() {
        let th = Thresholds::default();
        let paris = stored("m1", "I live in Paris");
        let job = fact("I work as a nurse");
        let why = may_retire(&job, &candidate(&paris, 0.99), &th).unwrap_err();
        assert!(why.contains("lives_in") && why.contains("job"), "{why}");
        let sister = fact("My sister lives in Madrid");
        assert!(may_retire(&sister, &candidate(&paris, 0.99), &th)
            .unwrap_err()
            .contains("user's sister"));
        assert!(may_retire(&fact("I moved to Berlin"), &candidate(&paris, 0.7), &th).is_ok());
        // Raw text: only a near-identical one.
        let raw = Candidate::new("r1", "User enjoys hiking", 0.8);
        assert!(may_retire(&fact("I live in Oslo"), &raw, &th).is_err());
        let raw = Candidate::new("r1", "User lives in Paris", 0.9);
        assert!(may_retire(&fact("I no longer live in Paris"), &raw, &th).is_ok());
        // "forget what I said about Paris": the same subject and value, any attribute.
        let forget = fact("Forget what I said about Paris");
        assert!(may_retire(&forget, &candidate(&paris, 0.5), &th).is_ok());
    }

    #[test]
    fn metadata_round_trip_and_defaults() {
        let f = fact("I don't eat meat");
        let m = f.metadata();
        let c = Candidate::from_metadata("x", "t", 0.5, &m);
        assert_eq!(c.subject, Some("user"));
        assert_eq!(c.attribute, Some("eats"));
        assert_eq!(c.value, Some("meat"));
        assert_eq!(c.polarity, Polarity::Negated);
        let empty = serde_json::json!({});
        let c = Candidate::from_metadata("x", "t", 0.5, &empty);
        assert_eq!(c, Candidate::new("x", "t", 0.5));
        assert_eq!(Decision::Update { id: "a".into() }.target(), Some("a"));
        assert_eq!(Decision::Skip.target(), None);
    }

    #[test]
    fn values_compare_loosely() {
        assert_eq!(norm(" The Beatles. "), "beatles");
        assert_eq!(norm("a"), "a");
        assert!(mentions("User visited Paris in May", "paris"));
        assert!(!mentions("User visited Parisian cafes", "paris"));
        assert!(!mentions("x", ""));
    }
}
