//! The entities a memory names, for the store's entity graph: proper names
//! found in any text (a turn, a fact, a note), and typed relations where a
//! fact's structure or an appositive ("Anna is my sister", "my sister Anna")
//! states one. General English, no list of known names: a name is a run of
//! capitalised words; at the start of a sentence, where every word is
//! capitalised, a word English uses to open sentences (pronouns,
//! determiners, conjunctions, greetings, interjections) is not one.

use memloop_core::links::{entity_key, EntityKind, Links};
use serde_json::Value;

use super::lexicon::{is_in, RELATIONS};
use super::METADATA_KEY;

/// Words that open English sentences capitalised without naming anything.
const OPENERS: &[&str] = &[
    "a",
    "about",
    "absolutely",
    "actually",
    "after",
    "again",
    "ah",
    "all",
    "also",
    "although",
    "always",
    "an",
    "and",
    "any",
    "anyway",
    "are",
    "as",
    "at",
    "aw",
    "awesome",
    "aww",
    "be",
    "because",
    "been",
    "before",
    "being",
    "besides",
    "both",
    "but",
    "by",
    "can",
    "cheers",
    "cool",
    "could",
    "congrats",
    "congratulations",
    "dear",
    "definitely",
    "did",
    "do",
    "does",
    "don't",
    "each",
    "either",
    "even",
    "ever",
    "every",
    "exactly",
    "for",
    "from",
    "glad",
    "good",
    "great",
    "had",
    "has",
    "have",
    "he",
    "hello",
    "her",
    "here",
    "hers",
    "hey",
    "hi",
    "him",
    "his",
    "how",
    "however",
    "i",
    "if",
    "in",
    "indeed",
    "is",
    "isn't",
    "it",
    "its",
    "it's",
    "just",
    "let",
    "let's",
    "like",
    "lol",
    "maybe",
    "me",
    "mine",
    "more",
    "most",
    "much",
    "my",
    "nah",
    "neither",
    "never",
    "nice",
    "no",
    "nope",
    "nor",
    "not",
    "now",
    "of",
    "oh",
    "ok",
    "okay",
    "on",
    "once",
    "one",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "perhaps",
    "please",
    "plus",
    "really",
    "right",
    "same",
    "see",
    "she",
    "should",
    "since",
    "so",
    "some",
    "sometimes",
    "soon",
    "sorry",
    "still",
    "such",
    "sure",
    "thank",
    "thanks",
    "that",
    "that's",
    "the",
    "their",
    "them",
    "then",
    "there",
    "there's",
    "these",
    "they",
    "this",
    "those",
    "though",
    "thus",
    "to",
    "too",
    "totally",
    "true",
    "uh",
    "um",
    "until",
    "up",
    "us",
    "very",
    "was",
    "we",
    "well",
    "were",
    "what",
    "what's",
    "when",
    "where",
    "whether",
    "which",
    "while",
    "who",
    "whoa",
    "why",
    "will",
    "with",
    "wow",
    "would",
    "yeah",
    "yep",
    "yes",
    "yet",
    "you",
    "your",
    "yours",
    "you're",
    "i'm",
    "i've",
    "i'd",
    "i'll",
    "we're",
    "they're",
    "he's",
    "she's",
    "wait",
    "omg",
    "haha",
    "hmm",
    "yay",
    "alright",
];

/// Words that stand inside a sentence capitalised without being names.
const NEVER_NAMES: &[&str] = &["i", "i'm", "i've", "i'd", "i'll", "ok", "okay"];

/// Relation nouns after "my" that are animals, not people.
const PETS: &[&str] = &["dog", "cat", "puppy", "kitten", "pet"];

/// The proper names in `text`, in order of first appearance, once each
/// (by [`entity_key`]).
pub fn find_names(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |run: &[&str]| {
        let name = run.join(" ");
        let key = entity_key(&name);
        if !key.is_empty() && !out.iter().any(|n| entity_key(n) == key) {
            out.push(strip_possessive(&name).to_string());
        }
    };
    for line in text.lines() {
        let mut run: Vec<&str> = Vec::new();
        let mut sentence_start = true;
        let mut run_started_sentence = false;
        for raw in line.split_whitespace() {
            let word = raw.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’');
            let word = word.trim_matches(|c| c == '\'' || c == '’');
            let capitalised = is_capitalised(word);
            let lower = word.to_lowercase();
            let opener = sentence_start && is_in(OPENERS, &lower);
            if capitalised && !opener && !is_in(NEVER_NAMES, &lower) {
                if run.is_empty() {
                    run_started_sentence = sentence_start;
                }
                run.push(word);
            } else if !run.is_empty() {
                flush(&mut run, run_started_sentence, &mut push);
            }
            let ends = raw.ends_with(['.', '!', '?', ':', ';', '"', '(', ')']);
            let breaks = ends || raw.ends_with([',', '—', '–']);
            if breaks && !run.is_empty() {
                flush(&mut run, run_started_sentence, &mut push);
            }
            sentence_start = ends || (word.is_empty() && sentence_start);
        }
        flush(&mut run, run_started_sentence, &mut push);
    }
    out
}

/// Ends a run of capitalised words: a name, unless it is one word opening a
/// sentence that ends in "ing"/"ly" (a verb or adverb, capitalised only by
/// its place).
fn flush(run: &mut Vec<&str>, started_sentence: bool, push: &mut impl FnMut(&[&str])) {
    if run.is_empty() {
        return;
    }
    let single = run.len() == 1;
    let lower = run[0].to_lowercase();
    let verbish = lower.ends_with("ing") || lower.ends_with("ly");
    if !(single && started_sentence && verbish) {
        push(run);
    }
    run.clear();
}

fn is_capitalised(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(char::is_uppercase) && chars.any(char::is_alphabetic)
}

fn strip_possessive(name: &str) -> &str {
    name.strip_suffix("'s")
        .or_else(|| name.strip_suffix("’s"))
        .unwrap_or(name)
}

/// What a memory links to: the names in its text, the relation of a fact's
/// structure (`metadata.fact`: subject, attribute, value), and appositives
/// naming a relative or pet of the writer ("Anna is my sister", "my dog
/// Rex"). `owner` is who "my" is: "user" or the speaker's name.
pub fn links_of(text: &str, metadata: &Value, owner: &str) -> Links {
    let mut links = Links::default();
    for name in find_names(text) {
        links.mention(&name, EntityKind::Unknown);
    }
    appositives(text, owner, &mut links);
    if let Some(fact) = metadata.get(METADATA_KEY) {
        fact_relation(fact, text, &mut links);
    }
    links
}

/// "NAME is my NOUN" and "my NOUN NAME" for the relation nouns the rules
/// know ("sister", "boss", "dog"): NAME `NOUN_of` owner.
fn appositives(text: &str, owner: &str, links: &mut Links) {
    let words: Vec<&str> = text
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\''))
        .collect();
    let names: Vec<String> = find_names(text);
    let is_name = |w: &str| names.iter().any(|n| entity_key(n) == entity_key(w));
    for (i, w) in words.iter().enumerate() {
        let noun = |j: usize| {
            words
                .get(j)
                .map(|n| n.to_lowercase())
                .filter(|n| is_in(RELATIONS, n))
        };
        // "Anna is my sister"
        if i >= 1
            && w.eq_ignore_ascii_case("is")
            && words
                .get(i + 1)
                .is_some_and(|m| m.eq_ignore_ascii_case("my"))
        {
            if let Some(n) = noun(i + 2) {
                if is_name(words[i - 1]) {
                    relate_kin(links, words[i - 1], &n, owner);
                }
            }
        }
        // "my sister Anna"
        if w.eq_ignore_ascii_case("my") {
            if let (Some(n), Some(name)) = (noun(i + 1), words.get(i + 2)) {
                if is_name(name) {
                    relate_kin(links, name, &n, owner);
                }
            }
        }
    }
}

fn relate_kin(links: &mut Links, name: &str, noun: &str, owner: &str) {
    let kind = if is_in(PETS, noun) {
        EntityKind::Pet
    } else {
        EntityKind::Person
    };
    let name = strip_possessive(name);
    links.relate(
        (name, kind),
        &format!("{noun}_of"),
        (owner, EntityKind::Person),
    );
}

/// A fact's own relation: "user's sister anna" `works_at` "Google" links
/// Anna (and her relation to the user) to Google.
fn fact_relation(fact: &Value, text: &str, links: &mut Links) {
    let field = |k: &str| fact.get(k).and_then(Value::as_str).unwrap_or("");
    let (subject, attribute, value) = (field("subject"), field("attribute"), field("value"));
    if subject.is_empty() {
        return;
    }
    // "user's sister anna" → owner "user", noun "sister", name "anna".
    let (owner, rest) = match subject.split_once("'s ") {
        Some((o, r)) => (o, Some(r)),
        None => (subject, None),
    };
    let mut subject_name = display(text, owner);
    if let Some(rest) = rest {
        let mut parts = rest.splitn(2, ' ');
        let noun = parts.next().unwrap_or("");
        match (parts.next(), attribute, value) {
            (Some(name), _, _) => {
                let name = display(text, name);
                relate_kin(links, &name, noun, &subject_name);
                subject_name = name;
            }
            (None, "name", v) if !v.is_empty() => {
                relate_kin(links, v, noun, &subject_name);
                return;
            }
            _ => return,
        }
    }
    if attribute.is_empty() || value.is_empty() || !value.chars().any(char::is_uppercase) {
        return;
    }
    let kind = match attribute {
        "works_at" | "graduated_from" => EntityKind::Organisation,
        "lives_in" | "born_in" | "grew_up_in" | "moving_to" | "visited" | "origin" => {
            EntityKind::Place
        }
        _ => EntityKind::Unknown,
    };
    let (subject, object) = ((subject_name.as_str(), EntityKind::Person), (value, kind));
    // One employer, one home at a time: a later one retires the earlier
    // relation as the reconciliation supersedes the fact.
    if crate::extract::fact::attribute_is_multi(attribute) == Some(false) {
        links.relate_single(subject, attribute, object);
    } else {
        links.relate(subject, attribute, object);
    }
}

/// `lower` as the text writes it ("anna" → "Anna"), or as given.
fn display(text: &str, lower: &str) -> String {
    let hay = text.to_lowercase();
    match hay.find(lower) {
        Some(at) if text.is_char_boundary(at) && text.is_char_boundary(at + lower.len()) => {
            text[at..at + lower.len()].to_string()
        }
        _ => lower.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(t: &str) -> Vec<String> {
        find_names(t)
    }

    #[test]
    fn names_are_runs_of_capitalised_words() {
        assert_eq!(
            names("I met Anna at Acme Corp in New York."),
            ["Anna", "Acme Corp", "New York"]
        );
        assert_eq!(names("Anna works at Globex"), ["Anna", "Globex"]);
        assert_eq!(
            names("Caroline: Hey Mel! Thanks, Mel's dog Oscar is cute."),
            ["Caroline", "Mel", "Oscar"]
        );
        assert_eq!(names("anna works at globex"), Vec::<String>::new());
    }

    #[test]
    fn sentence_openers_and_the_pronoun_i_are_not_names() {
        assert!(names("Thanks! Yes, I did. The park was lovely. I'm OK.").is_empty());
        assert!(names("Honestly it was fun. Running is hard.").is_empty());
        assert_eq!(names("Wow. That's great, Sam!"), ["Sam"]);
        // Mid-sentence, a capitalised word is a name whatever it is.
        assert_eq!(names("We went to Yes Bar."), ["Yes Bar"]);
    }

    #[test]
    fn the_same_name_is_found_once_and_possessives_drop() {
        assert_eq!(names("Rex barked. Rex's bowl and rex."), ["Rex"]);
        assert_eq!(names("Paris, Paris and PARIS"), ["Paris"]);
    }

    #[test]
    fn appositives_relate_relatives_and_pets_to_the_writer() {
        let l = links_of("Anna is my sister", &json!({}), "user");
        assert_eq!(l.relations.len(), 1);
        assert_eq!(
            (
                l.relations[0].subject.as_str(),
                l.relations[0].relation.as_str(),
                l.relations[0].object.as_str()
            ),
            ("Anna", "sister_of", "user")
        );
        let l = links_of("I walked my dog Rex today", &json!({}), "Caroline");
        assert_eq!(l.relations[0].relation, "dog_of");
        assert_eq!(l.relations[0].object, "Caroline");
        assert_eq!(l.mentions[0].kind, EntityKind::Pet);
        // A relation noun the rules do not know relates nothing.
        assert!(links_of("Anna is my hero", &json!({}), "user")
            .relations
            .is_empty());
    }

    #[test]
    fn a_facts_structure_gives_its_relation() {
        let text = "User's sister Anna works at Google";
        let meta = json!({"fact": {"subject": "user's sister anna", "attribute": "works_at", "value": "Google"}});
        let l = links_of(text, &meta, "user");
        let rels: Vec<(&str, &str, &str)> = l
            .relations
            .iter()
            .map(|r| (r.subject.as_str(), r.relation.as_str(), r.object.as_str()))
            .collect();
        assert!(rels.contains(&("Anna", "sister_of", "User")), "{rels:?}");
        assert!(rels.contains(&("Anna", "works_at", "Google")), "{rels:?}");
        let google = l.mentions.iter().find(|m| m.name == "Google");
        assert_eq!(google.map(|m| m.kind), Some(EntityKind::Organisation));

        let meta =
            json!({"fact": {"subject": "user's sister", "attribute": "name", "value": "Anna"}});
        let l = links_of("User's sister's name is Anna", &meta, "user");
        assert_eq!(l.relations[0].relation, "sister_of");
        let meta = json!({"fact": {"subject": "user", "attribute": "lives_in", "value": "Berlin"}});
        let l = links_of("User lives in Berlin (since October 2026)", &meta, "user");
        assert_eq!(l.relations[0].object, "Berlin");
        assert_eq!(l.relations[0].subject, "User");
        // A lower-case value is no entity ("likes" "hiking").
        let meta = json!({"fact": {"subject": "user", "attribute": "likes", "value": "hiking"}});
        assert!(links_of("User likes hiking", &meta, "user")
            .relations
            .is_empty());
    }
}
