//! Rules for verbs other than "be": living, working, moving, starting and
//! quitting, liking, possessions, habits.

use super::be::{be, call_me, name};
use super::clauses::Token;
use super::draft::*;
use super::home_work::{job_as, lives, work, works_at};
use super::lexicon::*;

/// "a (new) job at X", "a position as Y": the job noun within the first words.
pub(crate) fn job_phrase(
    subject: &Subject,
    t: &[Token],
    neg: Neg,
    style: TimeStyle,
) -> Option<Vec<Draft>> {
    let at = t
        .iter()
        .take(4)
        .position(|w| is_in(&["job", "position", "role", "gig"], &w.lower))?;
    let after = from(t, at + 1);
    Some(match lw(after, 0) {
        "at" | "with" | "for" => {
            let mut out = works_at(subject, from(after, 1), "at", neg, style);
            let v = value_span(from(after, 1), WORK_STOPS, true);
            let more = from(after, 1 + v.len());
            if lw(more, 0) == "as" {
                out.extend(job_as(subject, from(more, 1), neg, style));
            }
            out
        }
        "as" => job_as(subject, from(after, 1), neg, style),
        _ => Vec::new(),
    })
}

/// After "have/has": possessions, "been to", "no X", present perfect.
pub(crate) fn have(subject: &Subject, t: &[Token], neg: Neg, ctx: &Ctx<'_>) -> Vec<Draft> {
    let mut neg = neg;
    let mut t = read_negation(t, &mut neg);
    if neg.negated && says_anymore(t) {
        neg.no_longer = true;
    }
    if lw(t, 0) == "always" {
        t = from(t, 1);
    }
    let rest = from(t, 1);
    match lw(t, 0) {
        "got" => possession(subject, rest, neg, TimeStyle::Plain),
        "to" => Vec::new(),
        "been" if lw(rest, 0) == "to" => each_item(
            subject,
            from(rest, 1),
            true,
            || Spec::new("visited", true, neg).style(TimeStyle::Plain),
            |v| {
                if neg.negated {
                    format!("has never been to {v}")
                } else {
                    format!("has been to {v}")
                }
            },
        ),
        "been" => be(subject, rest, neg, ctx),
        "lived" => verb(subject, "live", rest, neg),
        "worked" => verb(subject, "work", rest, neg),
        "loved" => verb(subject, "love", rest, neg),
        "liked" => verb(subject, "like", rest, neg),
        "enjoyed" => verb(subject, "enjoy", rest, neg),
        "no" => {
            let neg = Neg {
                negated: true,
                no_longer: neg.no_longer,
            };
            possession(subject, rest, neg, TimeStyle::Plain)
        }
        // "I have finished": a participle, not a possession.
        w if w.ends_with("ed") => Vec::new(),
        _ => possession(subject, t, neg, TimeStyle::Plain),
    }
}

/// "a dog named Rex", "two kids", "a peanut allergy", "a job at Acme".
pub(crate) fn possession(subject: &Subject, t: &[Token], neg: Neg, style: TimeStyle) -> Vec<Draft> {
    if let Some(jobs) = job_phrase(subject, t, neg, style) {
        return jobs;
    }
    let t = if lw(t, 0) == "any" { from(t, 1) } else { t };
    let noun_at = usize::from(is_in(ARTICLES, lw(t, 0)) || small_number(lw(t, 0)).is_some());
    let noun = lw(t, noun_at);
    if is_in(NOT_POSSESSIONS, noun) || is_in(NOT_POSSESSIONS, lw(t, 0)) {
        return Vec::new();
    }
    // "a peanut allergy", "an allergy to cats", "allergies to X and Y"
    let span = value_span(t, &[], false);
    if let Some(pos) = span.iter().position(|w| w.lower.starts_with("allerg")) {
        let what = if lw(span, pos + 1) == "to" {
            from(span, pos + 2)
        } else {
            span.get(noun_at..pos).unwrap_or(&[])
        };
        return each_item(
            subject,
            what,
            false,
            || Spec::new("allergies", true, neg).confidence(0.8),
            |v| neg.be(&format!("allergic to {v}")),
        );
    }
    each_item(
        subject,
        t,
        true,
        || Spec::new("has", true, neg).style(style).confidence(0.6),
        |v| match (neg.negated, neg.no_longer) {
            (false, _) => format!("has {v}"),
            (true, true) => format!("no longer has {v}"),
            (true, false) => format!("does not have {v}"),
        },
    )
}

/// "I used to live in X", "I used to work at X": past, kept apart from the current value.
pub(crate) fn used_to(subject: &Subject, t: &[Token]) -> Vec<Draft> {
    let (attribute, base, prep) = match (lw(t, 0), lw(t, 1)) {
        ("live", "in") => ("previously_lived_in", "live", "in"),
        ("work", p @ ("at" | "for")) => ("previously_worked_at", "work", p),
        _ => return Vec::new(),
    };
    let v = value_span(from(t, 2), WORK_STOPS, true);
    if !usable(v) {
        return Vec::new();
    }
    let spec = Spec::new(attribute, true, Neg::default()).style(TimeStyle::Plain);
    vec![make(
        subject,
        spec,
        Some(v),
        format!("used to {base} {prep} {}", display(v)),
    )]
}

/// Verbs: living, working, moving, liking, starting, quitting, habits.
pub(crate) fn verb(subject: &Subject, w: &str, rest: &[Token], neg: Neg) -> Vec<Draft> {
    let rest = skip_adverbs(rest);
    match w {
        "live" | "lives" => match lw(rest, 0) {
            prep @ ("in" | "at" | "on") => {
                let v = value_span(from(rest, 1), PLACE_STOPS, true);
                lives(subject, v, prep, neg, 0.8)
            }
            "with" => each_item(
                subject,
                from(rest, 1),
                true,
                || Spec::new("lives_with", true, neg),
                |v| neg.verb("live", "lives", &format!("with {v}")),
            ),
            _ => Vec::new(),
        },
        "lived" if !neg.negated => used_to_from_past(subject, "live", rest),
        "worked" if !neg.negated => used_to_from_past(subject, "work", rest),
        "work" | "works" => work(subject, rest, neg, TimeStyle::Since),
        "moved" | "relocated" if !neg.negated => moved(subject, rest),
        "started" | "began" if !neg.negated => started(subject, rest),
        "joined" if !neg.negated => {
            let v = value_span(rest, WORK_STOPS, true);
            if !v.first().is_some_and(Token::is_capitalized) {
                return Vec::new();
            }
            let mut out = works_at(subject, v, "at", neg, TimeStyle::Since);
            for d in &mut out {
                d.confidence = 0.5;
            }
            out
        }
        "got" if !neg.negated => got(subject, rest),
        "quit" | "left" | "lost" | "stopped" | "gave" | "dropped" if !neg.negated => {
            quit(subject, w, rest)
        }
        "turned" if !neg.negated => {
            let n = lw(rest, 0);
            let plausible = n.len() <= 3 && n.parse::<u32>().is_ok_and(|n| (1..=130).contains(&n));
            if !plausible {
                return Vec::new();
            }
            let spec = Spec::new("age", false, neg)
                .style(TimeStyle::Plain)
                .confidence(0.8);
            vec![make(subject, spec, rest.get(..1), format!("turned {n}"))]
        }
        "adopted" | "bought" if !neg.negated => {
            let label = if w == "adopted" { "adopted" } else { "bought" };
            possession(subject, rest, neg, TimeStyle::Label(label))
        }
        "graduated" if !neg.negated && lw(rest, 0) == "from" => {
            let v = value_span(from(rest, 1), &["with", "in"], true);
            if !usable(v) {
                return Vec::new();
            }
            let spec = Spec::new("graduated_from", true, neg).style(TimeStyle::Plain);
            vec![make(
                subject,
                spec,
                Some(v),
                format!("graduated from {}", display(v)),
            )]
        }
        "go" | "goes" if lw(rest, 0) == "by" => call_me(from(rest, 1)),
        "come" | "comes" if lw(rest, 0) == "from" => {
            let v = value_span(from(rest, 1), PLACE_STOPS, true);
            if !usable(v) {
                return Vec::new();
            }
            let tail = neg.be(&format!("from {}", display(v)));
            vec![make(
                subject,
                Spec::new("origin", false, neg),
                Some(v),
                tail,
            )]
        }
        "grew" if !neg.negated && (lw(rest, 0), lw(rest, 1)) == ("up", "in") => {
            let v = value_span(from(rest, 2), PLACE_STOPS, true);
            if !usable(v) {
                return Vec::new();
            }
            let spec = Spec::new("grew_up_in", false, neg).style(TimeStyle::None);
            vec![make(
                subject,
                spec,
                Some(v),
                format!("grew up in {}", display(v)),
            )]
        }
        "changed" if (lw(rest, 0), lw(rest, 1), lw(rest, 2)) == ("my", "name", "to") => {
            let mut out = name(subject, from(rest, 3), 0.8);
            for d in &mut out {
                d.style = TimeStyle::Since;
            }
            out
        }
        _ => other_verb(subject, w, rest, neg),
    }
}

pub(crate) fn used_to_from_past(subject: &Subject, base: &str, rest: &[Token]) -> Vec<Draft> {
    let mut words = vec![Token {
        orig: base.to_string(),
        lower: base.to_string(),
    }];
    words.extend_from_slice(rest);
    used_to(subject, &words)
}

/// Likes, dislikes and habits ("I speak French", "I don't smoke").
pub(crate) fn other_verb(subject: &Subject, w: &str, rest: &[Token], neg: Neg) -> Vec<Draft> {
    if let Some(forms) = verb_forms(LIKE_VERBS, w) {
        return likes(subject, rest, neg, forms, false);
    }
    if let Some(forms) = verb_forms(DISLIKE_VERBS, w) {
        if neg.negated {
            return Vec::new();
        }
        return likes(subject, rest, neg, forms, true);
    }
    if let Some(v) = habit_present(w) {
        return habit(subject, v, rest, neg);
    }
    Vec::new()
}

/// "likes X" (multi-valued). A dislike is a negated liking, so "I hate
/// cilantro" retracts a stored "likes cilantro".
pub(crate) fn likes(
    subject: &Subject,
    rest: &[Token],
    neg: Neg,
    (base, third): (&'static str, &'static str),
    dislike: bool,
) -> Vec<Draft> {
    let neg = if dislike {
        Neg {
            negated: true,
            no_longer: false,
        }
    } else {
        neg
    };
    each_item(
        subject,
        rest,
        false,
        || Spec::new("likes", true, neg),
        move |v| {
            if dislike {
                format!("{third} {v}")
            } else {
                neg.verb(base, third, v)
            }
        },
    )
}

pub(crate) fn habit(
    subject: &Subject,
    v: &'static HabitVerb,
    rest: &[Token],
    neg: Neg,
) -> Vec<Draft> {
    let span = value_span(rest, &[], false);
    if span.is_empty() {
        if !v.intransitive {
            return Vec::new();
        }
        let spec = Spec::new(v.third, true, neg).confidence(0.6);
        return vec![make(subject, spec, None, neg.verb(v.base, v.third, ""))];
    }
    each_item(
        subject,
        rest,
        false,
        || Spec::new(v.third, true, neg).confidence(0.6),
        |item| neg.verb(v.base, v.third, item),
    )
}

/// "moved to X", "moved from X to Y", "moved out of X".
pub(crate) fn moved(subject: &Subject, t: &[Token]) -> Vec<Draft> {
    let mut t = skip_adverbs(t);
    while is_in(&["back", "over", "here", "there", "away"], lw(t, 0)) {
        t = from(t, 1);
    }
    let lives_in = |v: &[Token], neg: Neg| lives(subject, v, "in", neg, 0.8);
    let left = Neg {
        negated: true,
        no_longer: true,
    };
    match (lw(t, 0), lw(t, 1)) {
        ("to", _) => lives_in(value_span(from(t, 1), PLACE_STOPS, true), Neg::default()),
        ("from", _) => {
            let old = value_span(from(t, 1), PLACE_STOPS, true);
            let after = from(t, 1 + old.len());
            if lw(after, 0) == "to" {
                lives_in(
                    value_span(from(after, 1), PLACE_STOPS, true),
                    Neg::default(),
                )
            } else {
                lives_in(old, left)
            }
        }
        ("out", "of") => lives_in(value_span(from(t, 2), PLACE_STOPS, true), left),
        ("in", "with") => each_item(
            subject,
            from(t, 2),
            true,
            || Spec::new("lives_with", true, Neg::default()),
            |v| format!("lives with {v}"),
        ),
        _ => Vec::new(),
    }
}

/// "started working at X", "started a new job as Y", "started at X".
pub(crate) fn started(subject: &Subject, t: &[Token]) -> Vec<Draft> {
    let t = skip_adverbs(t);
    let neg = Neg::default();
    match lw(t, 0) {
        "working" => work(subject, from(t, 1), neg, TimeStyle::Since),
        "at" => works_at(subject, from(t, 1), "at", neg, TimeStyle::Since),
        _ => job_phrase(subject, t, neg, TimeStyle::Since).unwrap_or_default(),
    }
}

/// "got married", "got a job at X", "got promoted to Y", "got a dog".
pub(crate) fn got(subject: &Subject, t: &[Token]) -> Vec<Draft> {
    let neg = Neg::default();
    match (lw(t, 0), lw(t, 1)) {
        ("married" | "engaged" | "divorced", next) => {
            let v = if next == "to" {
                let partner = value_span(from(t, 2), &[], true);
                t.get(..2 + partner.len()).unwrap_or(&[])
            } else {
                t.get(..1).unwrap_or(&[])
            };
            let spec = Spec::new("relationship_status", false, neg).confidence(0.8);
            vec![make(subject, spec, Some(v), neg.be(&display(v)))]
        }
        ("promoted", "to") => {
            let t = from(t, 2);
            let t = if is_in(&["a", "an"], lw(t, 0)) {
                from(t, 1)
            } else {
                t
            };
            let np = value_span(t, &["at", "for", "in"], true);
            if !usable(np) {
                return Vec::new();
            }
            let spec = Spec::new("job", false, neg).style(TimeStyle::Plain);
            vec![make(
                subject,
                spec,
                Some(np),
                format!("was promoted to {}", display(np)),
            )]
        }
        ("hired", "at" | "by") => works_at(subject, from(t, 2), "at", neg, TimeStyle::Since),
        ("fired" | "laid", _) => lost_job(subject, "lost"),
        (w, _) if is_in(&["a", "an", "my", "new", "our"], w) || small_number(w).is_some() => {
            possession(subject, t, neg, TimeStyle::Label("got"))
        }
        _ => Vec::new(),
    }
}

pub(crate) fn lost_job(subject: &Subject, verb: &str) -> Vec<Draft> {
    let neg = Neg {
        negated: true,
        no_longer: true,
    };
    let spec = Spec::new("works_at", false, neg).style(TimeStyle::Plain);
    vec![make(subject, spec, None, format!("{verb} their job"))]
}

/// "quit my job (at X)", "stopped eating meat", "gave up smoking".
pub(crate) fn quit(subject: &Subject, w: &str, t: &[Token]) -> Vec<Draft> {
    let t = match (w, lw(t, 0)) {
        ("gave", "up") | ("dropped", "out") => from(t, 1),
        ("gave" | "dropped", _) => return Vec::new(),
        _ => t,
    };
    let neg = Neg {
        negated: true,
        no_longer: true,
    };
    let job_at = usize::from(is_in(&["my", "the", "a", "our"], lw(t, 0)));
    if is_in(&["job", "position", "role"], lw(t, job_at)) {
        let after = from(t, job_at + 1);
        if is_in(&["at", "with", "for"], lw(after, 0)) {
            return works_at(subject, from(after, 1), "at", neg, TimeStyle::Since);
        }
        let verb = if w == "stopped" { "quit" } else { w };
        return lost_job(subject, verb);
    }
    if lw(t, 0) == "working" && is_in(&["at", "for"], lw(t, 1)) {
        return works_at(subject, from(t, 2), "at", neg, TimeStyle::Since);
    }
    if let Some(v) = habit_ing(lw(t, 0)) {
        return habit(subject, v, from(t, 1), neg);
    }
    Vec::new()
}
