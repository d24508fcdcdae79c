//! Fact extraction and the reconciliation decision of the long-term write
//! pipeline, as pure logic: a turn's text in, compact self-contained facts
//! out ([`extract_rules`]); one fact and the stored facts a search found for
//! it in, ADD / UPDATE / DELETE / NOOP out ([`reconcile`]).
//!
//! [`extract_rules`] is the offline mode, used when no LLM is configured. It
//! reads first-person statements with fixed patterns, prefers missing a fact
//! to inventing one, and yields the same [`Fact`] structure as the LLM mode:
//!
//! ```
//! use memloop_rules::extract::{extract_rules, Polarity};
//!
//! let at = 1_794_744_000_000; // 2026-11-15T12:00:00Z, the turn's timestamp
//! let facts = extract_rules("I moved to Berlin last month", "user", at);
//! assert_eq!(facts[0].text, "User lives in Berlin (since October 2026)");
//! assert_eq!(facts[0].attribute.as_deref(), Some("lives_in"));
//! assert_eq!(facts[0].value.as_deref(), Some("Berlin"));
//! assert_eq!(facts[0].polarity, Polarity::Asserted);
//! assert!(extract_rules("Hi there!", "user", at).is_empty());
//! ```
//!
//! Covered: "I live in / moved to / work at / work as / am a …", "I'm N",
//! "I'm from …", "I'm allergic to …", diets, relationship status, "my X is
//! Y" (favourites, birthday, name), "my sister/dog …" as their own subject,
//! likes and dislikes, possessions ("I have a dog"), habits ("I speak
//! French", "I don't smoke"), negations ("no longer", "not … anymore",
//! "quit", "stopped"), retractions ("forget that …"), instructions ("always
//! answer in French"), "remember that I …", predicates joined by "and", and
//! relative or written dates resolved from the turn's timestamp (UTC).
//!
//! Not covered: facts about others named in the third person ("Anna lives
//! in Rome"), coreference across sentences ("I have a sister. She lives in
//! Rome"), past events other than moves, jobs and milestones, plans ("I want
//! to move"), and questions, except a statement before the question ("I
//! live in Paris, any tips?") or wrapped in one ("did you know that I …").

mod be;
mod clauses;
mod draft;
mod fact;
mod home_work;
mod lexicon;
pub mod links;
pub mod question_time;
mod reconcile;
mod rules;
mod time;
mod verbs;

pub use fact::{attribute_is_multi, Fact, Polarity, METADATA_KEY};
pub use reconcile::{may_retire, reconcile, Candidate, Decision, Thresholds};
pub use time::{resolve_relative_time, Granularity, ResolvedTime};

use draft::{Ctx, Draft, Subject, TimeInfo, TimeStyle};
use lexicon::{is_in, FUTURE_MARKERS, GREETINGS};

/// The speaker as a subject key ("user", "caroline") and as written in texts.
struct Speaker {
    key: String,
    display: String,
}

impl Speaker {
    fn new(speaker: &str) -> Speaker {
        let name = memloop_core::text::normalize(speaker);
        if name.is_empty() || name.eq_ignore_ascii_case("user") {
            return Speaker {
                key: "user".into(),
                display: "User".into(),
            };
        }
        Speaker {
            key: name.to_lowercase(),
            display: name,
        }
    }
}

/// Facts stated in one turn by `speaker` ("user", or a name as in a
/// multi-party conversation), with relative times resolved from the turn's
/// timestamp `at_millis`. Greetings, questions, small talk and hypotheticals
/// yield no facts; a question clause yields one only when it states a
/// first-person fact ("I live in Paris, any tips?", "did you know that I …").
pub fn extract_rules(text: &str, speaker: &str, at_millis: i64) -> Vec<Fact> {
    let speaker = Speaker::new(speaker);
    let today = chrono::DateTime::from_timestamp_millis(at_millis).map(|t| t.date_naive());
    let mut facts: Vec<Fact> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for sentence in clauses::sentences(text) {
        let words = &sentence.tokens;
        let greeted = words.first().is_some_and(|t| is_in(GREETINGS, &t.lower))
            || matches!(
                (words.first(), words.get(1)),
                (Some(a), Some(b)) if a.lower == "good" && is_in(&["morning", "afternoon", "evening"], &b.lower)
            );
        let mut clauses = clauses::clauses(words);
        if sentence.question {
            // The question itself states nothing, unless it wraps a statement.
            let asked = clauses.pop().and_then(embedded_statement);
            clauses.extend(asked);
        }
        let mut pending: Option<TimeInfo> = None;
        for clause in clauses {
            let (words, time) = take_time(clause, today);
            let time = time.or_else(|| pending.take());
            let ctx = Ctx {
                greeted,
                time: time.as_ref(),
            };
            let drafts = rules::clause_drafts(&words, &ctx);
            if drafts.is_empty() && time.is_some() && clauses::only_fillers(&words) {
                // "In 2020, I moved to Berlin": the time belongs to the next clause.
                pending = time;
                continue;
            }
            for d in drafts {
                let fact = assemble(d, &speaker, time.as_ref());
                if seen.insert(identity(&fact)) {
                    facts.push(fact);
                }
            }
        }
    }
    facts
}

/// "did you know that I moved to Berlin" → "I moved to Berlin".
fn embedded_statement(clause: &[clauses::Token]) -> Option<&[clauses::Token]> {
    let at = clause.windows(2).position(|w| {
        matches!(w, [a, b] if is_in(&["that", "remember", "know", "knew", "note"], &a.lower)
            && is_in(&["i", "my"], &b.lower))
    })?;
    let before = clause.get(..at)?;
    let knows = before
        .iter()
        .chain(clause.get(at..=at).unwrap_or(&[]))
        .any(|t| is_in(&["know", "knew", "remember", "note", "recall"], &t.lower));
    if knows {
        clause.get(at + 1..)
    } else {
        None
    }
}

/// Takes the clause's time expression out of its words, so that rules see
/// "I moved to Berlin" and the fact gets the resolved time.
fn take_time(
    clause: &[clauses::Token],
    today: Option<chrono::NaiveDate>,
) -> (Vec<clauses::Token>, Option<TimeInfo>) {
    let lower: Vec<&str> = clause.iter().map(|t| t.lower.as_str()).collect();
    let future = lower.iter().any(|w| is_in(FUTURE_MARKERS, w));
    // Without a usable turn time the expression is still taken out of the
    // words (so no value reads "Berlin last month"), but nothing is resolved.
    let Some(m) = time::find_time(&lower, today.unwrap_or_default(), future) else {
        return (clause.to_vec(), None);
    };
    let written = clause
        .get(m.start..m.end)
        .unwrap_or(&[])
        .iter()
        .map(|t| t.orig.as_str())
        .collect::<Vec<_>>()
        .join(" ")
        .replace(" ,", ",");
    let kept = clause
        .iter()
        .enumerate()
        .filter(|(k, _)| *k < m.start || *k >= m.end)
        .map(|(_, t)| t.clone())
        .collect();
    let info = today.map(|_| TimeInfo {
        time: m.time,
        relative: m.relative,
        written,
    });
    (kept, info)
}

fn importance(attribute: Option<&str>) -> f32 {
    match attribute.unwrap_or("") {
        "name" | "allergies" => 0.9,
        "lives_in" | "diet" | "instruction" => 0.8,
        "works_at" | "job" | "relationship_status" | "birth_date" | "traits" => 0.7,
        "age" | "origin" | "nationality" | "born_in" | "moving_to" | "religion" => 0.6,
        _ => 0.5,
    }
}

fn assemble(d: Draft, speaker: &Speaker, time: Option<&TimeInfo>) -> Fact {
    let (subject, display) = match &d.subject {
        Subject::Speaker => (speaker.key.clone(), speaker.display.clone()),
        Subject::Relation(r) => (
            // Keys are lower case; a named relation ("sister Anna") shows its name.
            format!("{}'s {}", speaker.key, r.to_lowercase()),
            format!("{}'s {r}", speaker.display),
        ),
    };
    let plural = matches!(&d.subject, Subject::Relation(r) if is_in(PLURAL_RELATIONS, r));
    let mut text = if d.possessive {
        format!("{display}'s {}", d.tail)
    } else if plural {
        format!("{display} {}", plural_verb(&d.tail))
    } else {
        format!("{display} {}", d.tail)
    };
    if let Some(t) = time {
        match d.style {
            TimeStyle::None => {}
            TimeStyle::Since => text.push_str(&format!(" (since {})", t.time.describe())),
            TimeStyle::Plain => text.push_str(&format!(" {}", t.time.with_preposition())),
            TimeStyle::Label(label) => {
                text.push_str(&format!(" ({label} {})", t.time.with_preposition()))
            }
        }
    }
    let polarity = if d.retracted {
        text = format!("Retracted: {text}");
        Polarity::Retracted
    } else if d.negated {
        Polarity::Negated
    } else {
        Polarity::Asserted
    };
    let relation_weight = if d.subject == Subject::Speaker {
        1.0
    } else {
        0.9
    };
    Fact {
        importance: importance(d.attribute.as_deref()) * relation_weight,
        text,
        kind: d.kind,
        subject,
        attribute: d.attribute,
        value: d.value,
        multi: d.multi,
        polarity,
        entities: d.entities,
        time: time.map(|t| t.time.millis),
        confidence: d.confidence.clamp(0.0, 1.0),
    }
}

const PLURAL_RELATIONS: &[&str] = &["kids", "children", "parents", "siblings", "grandparents"];

/// Rules write tails for one person ("lives in Rome"); "my parents" need the
/// plural verb ("live in Rome").
fn plural_verb(tail: &str) -> String {
    let (head, rest) = match tail.strip_prefix("no longer ") {
        Some(rest) => ("no longer ", rest),
        None => ("", tail),
    };
    let (verb, after) = rest.split_once(' ').unwrap_or((rest, ""));
    let plural = match verb {
        "is" => "are".to_string(),
        "has" => "have".to_string(),
        "does" => "do".to_string(),
        "goes" => "go".to_string(),
        v if v.ends_with("ies") => format!("{}y", v.trim_end_matches("ies")),
        v if ["shes", "ches", "xes", "sses"]
            .iter()
            .any(|s| v.ends_with(s)) =>
        {
            v.trim_end_matches("es").to_string()
        }
        v => v.strip_suffix('s').unwrap_or(v).to_string(),
    };
    format!("{head}{plural} {after}").trim_end().to_string()
}

/// What makes two facts of one turn the same fact.
fn identity(f: &Fact) -> (String, Option<String>, Option<String>, Polarity) {
    (
        f.subject.clone(),
        f.attribute.clone(),
        f.value.as_deref().map(str::to_lowercase),
        f.polarity,
    )
}

#[cfg(test)]
mod tests;
