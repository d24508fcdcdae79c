//! Where the speaker lives and works: the rules that both "am / is"
//! (be.rs: "I'm living in Paris", "I'm a nurse at St Mary's") and the other
//! verbs (verbs.rs: "I live in Paris", "I work at Acme") end in. A module of
//! their own, so that verbs.rs imports be.rs and neither imports the other
//! back.

use super::clauses::Token;
use super::draft::*;
use super::lexicon::*;

pub(crate) fn works_at(
    subject: &Subject,
    t: &[Token],
    prep: &str,
    neg: Neg,
    style: TimeStyle,
) -> Vec<Draft> {
    let v = value_span(t, WORK_STOPS, true);
    // "at night", "from home", "at the moment": when or where, not for whom.
    let employer = !is_in(NOT_EMPLOYERS, lw(v, 0)) || v.get(1).is_some_and(Token::is_capitalized);
    if !usable(v) || !employer {
        return Vec::new();
    }
    let spec = Spec::new("works_at", false, neg)
        .style(style)
        .confidence(0.8);
    let tail = neg.verb("work", "works", &format!("{prep} {}", display(v)));
    vec![make(subject, spec, Some(v), tail)]
}

pub(crate) fn job_as(subject: &Subject, t: &[Token], neg: Neg, style: TimeStyle) -> Vec<Draft> {
    let t = if is_in(&["a", "an"], lw(t, 0)) {
        from(t, 1)
    } else {
        t
    };
    let np = value_span(t, &["at", "for", "in", "with", "on"], true);
    if !usable(np) {
        return Vec::new();
    }
    let v = display(np);
    let spec = Spec::new("job", false, neg).style(style).confidence(0.8);
    let mut out = vec![make(
        subject,
        spec,
        Some(np),
        neg.be(&format!("{} {v}", indefinite(&v))),
    )];
    let after = from(t, np.len());
    if !neg.negated && is_in(&["at", "for", "with"], lw(after, 0)) {
        out.extend(works_at(subject, from(after, 1), "at", neg, style));
    }
    out
}

/// After "work"/"working": at/for an employer, as an occupation, in a field.
pub(crate) fn work(subject: &Subject, t: &[Token], neg: Neg, style: TimeStyle) -> Vec<Draft> {
    let t = skip_adverbs(t);
    match lw(t, 0) {
        prep @ ("at" | "for") => {
            let mut out = works_at(subject, from(t, 1), prep, neg, style);
            let v = value_span(from(t, 1), WORK_STOPS, true);
            let after = from(t, 1 + v.len());
            if !neg.negated && lw(after, 0) == "as" {
                out.extend(job_as(subject, from(after, 1), neg, style));
            }
            out
        }
        "as" => job_as(subject, from(t, 1), neg, style),
        "in" => {
            let v = value_span(from(t, 1), WORK_STOPS, true);
            if !usable(v) {
                return Vec::new();
            }
            let spec = Spec::new("works_in", false, neg).style(style);
            let tail = neg.verb("work", "works", &format!("in {}", display(v)));
            vec![make(subject, spec, Some(v), tail)]
        }
        _ => Vec::new(),
    }
}

/// "lives in Paris" (the place, single-valued), or "lives in a flat" (the
/// home: a different slot, so it never replaces the city).
pub(crate) fn lives(
    subject: &Subject,
    v: &[Token],
    prep: &str,
    neg: Neg,
    confidence: f32,
) -> Vec<Draft> {
    // "on Main Street", "at 12 Baker Street"; not "on my own".
    let addressed = prep == "in"
        || v.first().is_some_and(|w| {
            w.is_capitalized() || w.lower.starts_with(|c: char| c.is_ascii_digit())
        });
    if !usable(v) || !addressed {
        return Vec::new();
    }
    let attribute = if is_in(&["a", "an"], lw(v, 0)) {
        "home"
    } else {
        "lives_in"
    };
    let spec = Spec::new(attribute, false, neg).confidence(confidence);
    let tail = neg.verb("live", "lives", &format!("{prep} {}", display(v)));
    vec![make(subject, spec, Some(v), tail)]
}
