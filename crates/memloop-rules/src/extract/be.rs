//! Rules for "am / is / are" (and "was born"): occupations, diets, origins,
//! allergies, ages, names, relationship status, lasting traits.

use super::clauses::Token;
use super::draft::*;
use super::home_work::{lives, work, works_at};
use super::lexicon::*;

/// True if a word can open a complement of "am/is/are" on its own
/// ("… and allergic to peanuts", "… and a mother of two").
pub(crate) fn opens_complement(word: &str) -> bool {
    is_in(&["a", "an", "allergic", "from", "retired", "into"], word)
        || is_in(DIETS, word)
        || is_in(RELATIONSHIP, word)
        || is_in(TRAITS, word)
}

/// After "am/is/are": jobs, diets, origins, allergies, ages, names, states.
/// "I'm vegetarian and allergic to peanuts" is read as two complements.
pub(crate) fn be(subject: &Subject, t: &[Token], neg: Neg, ctx: &Ctx<'_>) -> Vec<Draft> {
    let mut out = Vec::new();
    // The first complement carries the verb's negation ("I'm not X"); later
    // ones carry their own ("… and no longer Y").
    let mut carried = neg;
    for part in split_before(t, opens_complement) {
        let mut neg = carried;
        carried = Neg::default();
        let part = read_negation(part, &mut neg);
        if neg.negated && says_anymore(part) {
            neg.no_longer = true;
        }
        out.extend(be_one(subject, part, neg, ctx));
    }
    out
}

pub(crate) fn be_one(subject: &Subject, t: &[Token], neg: Neg, ctx: &Ctx<'_>) -> Vec<Draft> {
    let single = |attribute: &'static str, v: &[Token], tail: String| {
        if !usable(v) {
            return Vec::new();
        }
        vec![make(
            subject,
            Spec::new(attribute, false, neg),
            Some(v),
            tail,
        )]
    };
    let word = |k: usize| t.get(k..=k).unwrap_or(&[]);
    let w0 = lw(t, 0);
    match (w0, lw(t, 1)) {
        ("a" | "an", _) => be_noun(subject, from(t, 1), neg, false),
        ("the", _) => be_noun(subject, from(t, 1), neg, true),
        ("from", _) => {
            let v = value_span(from(t, 1), PLACE_STOPS, true);
            single("origin", v, neg.be(&format!("from {}", display(v))))
        }
        ("allergic", "to") => each_item(
            subject,
            from(t, 2),
            false,
            || Spec::new("allergies", true, neg).confidence(0.8),
            |v| neg.be(&format!("allergic to {v}")),
        ),
        (w, "intolerant") if is_in(INTOLERANCES, w) => {
            let v = t.get(..2).unwrap_or(&[]);
            let tail = neg.be(&display(v).to_lowercase());
            vec![make(subject, Spec::new("traits", true, neg), Some(v), tail)]
        }
        (w, next) if is_in(RELATIONSHIP, w) => {
            let v = if next == "to" {
                let partner = value_span(from(t, 2), &[], true);
                t.get(..2 + partner.len()).unwrap_or(&[])
            } else {
                word(0)
            };
            single("relationship_status", v, neg.be(&display(v)))
        }
        (w, _) if is_in(DIETS, w) => single("diet", word(0), neg.be(w)),
        (w, _) if is_in(JOB_STATES, w) => single("job", word(0), neg.be(w)),
        (w, _) if is_in(TRAITS, w) => {
            let spec = Spec::new("traits", true, neg);
            vec![make(subject, spec, Some(word(0)), neg.be(w))]
        }
        ("living" | "based" | "located", "in") => lives(
            subject,
            value_span(from(t, 2), PLACE_STOPS, true),
            "in",
            neg,
            0.7,
        ),
        ("working", _) => work(subject, from(t, 1), neg, TimeStyle::Since),
        ("moving", "to") => {
            let v = value_span(from(t, 2), PLACE_STOPS, true);
            let spec = Spec::new("moving_to", false, neg).style(TimeStyle::Plain);
            if !usable(v) {
                return Vec::new();
            }
            let tail = neg.be(&format!("moving to {}", display(v)));
            vec![make(subject, spec, Some(v), tail)]
        }
        ("into", _) => fond(subject, from(t, 1), neg, "into"),
        ("obsessed", "with")
        | ("passionate" | "crazy" | "mad", "about")
        | ("interested", "in")
        | ("fond", "of")
        | ("keen", "on") => fond(
            subject,
            from(t, 2),
            neg,
            &display(t.get(..2).unwrap_or(&[])),
        ),
        ("called" | "named", _) => name(subject, from(t, 1), 0.8),
        _ => be_other(subject, t, neg, ctx),
    }
}

/// "I'm into jazz", "I'm obsessed with sushi": a liking.
pub(crate) fn fond(subject: &Subject, t: &[Token], neg: Neg, phrase: &str) -> Vec<Draft> {
    let t = if lw(t, 0) == "of" { from(t, 1) } else { t };
    each_item(
        subject,
        t,
        false,
        || Spec::new("likes", true, neg),
        |v| neg.be(&format!("{phrase} {v}")),
    )
}

/// Ages, nationalities, religions and names after "am/is/are".
pub(crate) fn be_other(subject: &Subject, t: &[Token], neg: Neg, ctx: &Ctx<'_>) -> Vec<Draft> {
    let w0 = lw(t, 0);
    let first = t.get(..1).unwrap_or(&[]);
    let rest = from(t, 1);
    let rest_is_empty = rest
        .iter()
        .all(|t| t.is_comma() || is_in(FILLERS, &t.lower));
    if w0.len() <= 3 && !w0.is_empty() && w0.bytes().all(|b| b.is_ascii_digit()) {
        let is_age = rest_is_empty
            || matches!(
                (lw(rest, 0), lw(rest, 1)),
                ("years" | "year", "old") | ("yo", _)
            );
        let plausible = w0.parse::<u32>().is_ok_and(|n| (1..=130).contains(&n));
        if !is_age || !plausible {
            return Vec::new();
        }
        let spec = Spec::new("age", false, neg).confidence(0.8);
        return vec![make(
            subject,
            spec,
            Some(first),
            neg.be(&format!("{w0} years old")),
        )];
    }
    if is_in(NATIONALITIES, w0) && rest_is_empty {
        let tail = neg.be(&display(first));
        return vec![make(
            subject,
            Spec::new("nationality", false, neg),
            Some(first),
            tail,
        )];
    }
    if is_in(RELIGIONS, w0) && rest_is_empty {
        let tail = neg.be(&display(first));
        return vec![make(
            subject,
            Spec::new("religion", false, neg),
            Some(first),
            tail,
        )];
    }
    let caps = t.iter().take_while(|t| t.is_capitalized()).count();
    let after = from(t, caps);
    let alone = after
        .iter()
        .all(|t| t.is_comma() || is_in(FILLERS, &t.lower));
    let names_a_thing = t.iter().take(caps).any(|w| is_in(NOT_NAMES, &w.lower));
    if caps > 0 && caps <= 3 && alone && !neg.negated && !names_a_thing {
        let confidence = if ctx.greeted { 0.8 } else { 0.6 };
        return name(subject, t.get(..caps).unwrap_or(&[]), confidence);
    }
    Vec::new()
}

pub(crate) fn name(subject: &Subject, t: &[Token], confidence: f32) -> Vec<Draft> {
    let v = value_span(t, &[], true);
    if !usable(v) || v.len() > 3 {
        return Vec::new();
    }
    let spec = Spec::new("name", false, Neg::default())
        .confidence(confidence)
        .style(TimeStyle::None);
    let mut d = make(subject, spec, Some(v), format!("name is {}", display(v)));
    d.possessive = true;
    if let Some(v) = &d.value {
        if d.entities.is_empty() {
            d.entities.push(v.clone());
        }
    }
    vec![d]
}

pub(crate) fn call_me(t: &[Token]) -> Vec<Draft> {
    let mut out = name(&Subject::Speaker, t, 0.8);
    for d in &mut out {
        d.possessive = false;
        d.tail = format!("goes by {}", d.value.as_deref().unwrap_or_default());
    }
    out
}

/// After "I'm a/an" (or "the", then only an occupation): an occupation, a
/// diet, a fan, or some other identity.
pub(crate) fn be_noun(subject: &Subject, t: &[Token], neg: Neg, definite: bool) -> Vec<Draft> {
    let mut t2 = t;
    while is_in(&["big", "huge", "massive", "great", "real"], lw(t2, 0)) {
        t2 = from(t2, 1);
    }
    if lw(t2, 0) == "fan" && lw(t2, 1) == "of" {
        return fond(subject, from(t2, 2), neg, "a fan of");
    }
    // "a huge Taylor Swift fan"
    let fan_at = t2.iter().take(5).position(|w| w.lower == "fan");
    if let Some(k) = fan_at.filter(|k| *k > 0) {
        let what = t2.get(..k).unwrap_or(&[]);
        if usable(what) {
            let tail = neg.be(&format!("a fan of {}", display(what)));
            return vec![make(
                subject,
                Spec::new("likes", true, neg),
                Some(what),
                tail,
            )];
        }
    }
    if is_in(
        &[
            "bit", "little", "tad", "lot", "fan", "sucker", "kind", "sort",
        ],
        lw(t, 0),
    ) {
        return Vec::new();
    }
    let np = value_span(
        t,
        &["at", "for", "in", "from", "with", "on", "who", "that"],
        true,
    );
    if !usable(np) {
        return Vec::new();
    }
    // The head noun is the last word, or the one before "of" ("a mother of two").
    let head = match np.iter().position(|w| w.lower == "of").filter(|k| *k > 0) {
        Some(k) => lw(np, k - 1),
        None => np.last().map_or("", |t| t.lower.as_str()),
    };
    if definite && !is_job(head) {
        return Vec::new();
    }
    let (attribute, multi) = if is_in(DIETS, head) {
        ("diet", false)
    } else if is_job(head) {
        ("job", false)
    } else {
        ("identity", true)
    };
    // An identity keeps its complement ("a big believer in therapy"); an
    // occupation stops before its employer ("a nurse at …").
    let np = if multi {
        value_span(t, &["at", "who", "that"], true)
    } else {
        np
    };
    let v = display(np);
    let spec = Spec::new(attribute, multi, neg).confidence(if multi { 0.5 } else { 0.7 });
    let article = if definite { "the" } else { indefinite(&v) };
    let tail = neg.be(&format!("{article} {v}"));
    let mut out = vec![make(subject, spec, Some(np), tail)];
    // "a nurse at St Mary's": the employer too.
    let after = from(t, np.len());
    if attribute == "job" && !neg.negated && is_in(&["at", "for"], lw(after, 0)) {
        out.extend(works_at(
            subject,
            from(after, 1),
            lw(after, 0),
            neg,
            TimeStyle::Since,
        ));
    }
    out
}

/// "I was born in Lyon", "I was born on May 7, 1990"; other past states are not current facts.
pub(crate) fn was(subject: &Subject, t: &[Token], ctx: &Ctx<'_>) -> Vec<Draft> {
    if lw(t, 0) != "born" {
        return Vec::new();
    }
    let rest = from(t, 1);
    let place = if lw(rest, 0) == "in" {
        value_span(from(rest, 1), &[], true)
    } else {
        &[]
    };
    if usable(place) {
        let spec = Spec::new("born_in", false, Neg::default())
            .style(TimeStyle::Plain)
            .confidence(0.8);
        return vec![make(
            subject,
            spec,
            Some(place),
            format!("was born in {}", display(place)),
        )];
    }
    let Some(time) = ctx.time else {
        return Vec::new();
    };
    let mut d = make(
        subject,
        Spec::new("birth_date", false, Neg::default())
            .style(TimeStyle::None)
            .confidence(0.8),
        None,
        format!("was born {}", time.time.with_preposition()),
    );
    d.value = Some(time.time.describe());
    vec![d]
}
