//! The offline rules: one clause in, zero or more drafts out. A clause must
//! open (after filler such as "well, actually") with its subject, "I", "we",
//! "my X", or an instruction ("always …", "forget that …"); everything else
//! (questions, talk about the assistant, hypotheticals) yields nothing. Rules
//! prefer missing a fact to inventing one: the LLM mode is the thorough one.

use super::be::{be, call_me, name, was};
use super::clauses::Token;
use super::draft::*;
use super::lexicon::*;
use super::verbs::{have, likes, used_to, verb};
use memloop_core::Kind;

/// Entry point: the drafts one clause states.
pub(crate) fn clause_drafts(toks: &[Token], ctx: &Ctx<'_>) -> Vec<Draft> {
    let mut k = 0;
    while let Some(t) = toks.get(k) {
        if is_in(HYPOTHETICAL, &t.lower) {
            return Vec::new();
        }
        if !(t.is_comma() || is_in(FILLERS, &t.lower)) {
            break;
        }
        k += 1;
    }
    let rest = from(toks, k);
    let please = lw(rest, 0) == "please";
    let rest = if please { from(rest, 1) } else { rest };
    match (lw(rest, 0), lw(rest, 1), lw(rest, 2), lw(rest, 3)) {
        ("forget" | "disregard" | "ignore", ..) => retraction(from(rest, 1), ctx),
        ("always" | "never", ..) => procedure(rest),
        ("do", "not", ..) if please || lw(rest, 2) == "ever" => procedure(rest),
        ("remember" | "note", ..) => {
            let inner = from(rest, 1);
            let inner = if lw(inner, 0) == "that" {
                from(inner, 1)
            } else {
                inner
            };
            if is_in(&["i", "we", "my"], lw(inner, 0)) {
                clause_drafts(inner, ctx)
            } else {
                Vec::new()
            }
        }
        ("call", "me", ..) => call_me(from(rest, 2)),
        ("you", "can", "call", "me") => call_me(from(rest, 4)),
        ("i", ..) => speaker(from(rest, 1), 1.0, ctx),
        ("we", ..) => speaker(from(rest, 1), 0.8, ctx),
        ("my", ..) => my_phrase(from(rest, 1), ctx),
        _ => Vec::new(),
    }
}

pub(crate) fn speaker(t: &[Token], weight: f32, ctx: &Ctx<'_>) -> Vec<Draft> {
    let mut t = skip_adverbs(t);
    let mut weight = weight;
    // Hedges lower the confidence: "I think (that) I'm allergic to cats".
    // A loop, not recursion, so "I think I think …" cannot exhaust the stack.
    while is_in(HEDGES, lw(t, 0)) {
        let mut inner = from(t, 1);
        if lw(inner, 0) == "that" {
            inner = from(inner, 1);
        }
        weight *= 0.8;
        match lw(inner, 0) {
            "i" | "we" => t = skip_adverbs(from(inner, 1)),
            "my" => return scaled(my_phrase(from(inner, 1), ctx), weight),
            _ => return Vec::new(),
        }
    }
    scaled(predicate(&Subject::Speaker, t, ctx), weight)
}

pub(crate) fn scaled(mut drafts: Vec<Draft>, weight: f32) -> Vec<Draft> {
    for d in &mut drafts {
        d.confidence *= weight;
    }
    drafts
}

/// Verbs that open a second predicate of the same subject: "I moved to
/// Seattle and started working at Amazon".
pub(crate) const PREDICATE_VERBS: &[&str] = &[
    "started",
    "moved",
    "work",
    "works",
    "live",
    "lives",
    "got",
    "adopted",
    "bought",
    "joined",
    "quit",
    "turned",
    "graduated",
    "have",
    "has",
    "love",
    "loves",
    "like",
    "likes",
    "hate",
    "hates",
    "speak",
    "speaks",
    "play",
    "plays",
    "am",
    "is",
    "no",
    "never",
    "also",
    "now",
];

/// The predicate after a subject ("… live in Paris", "… am a teacher"),
/// and any further predicate joined by "and".
pub(crate) fn predicate(subject: &Subject, t: &[Token], ctx: &Ctx<'_>) -> Vec<Draft> {
    let mut out = Vec::new();
    for part in split_before(t, |next| is_in(PREDICATE_VERBS, next)) {
        out.extend(predicate_one(subject, part, ctx));
    }
    out
}

pub(crate) fn predicate_one(subject: &Subject, t: &[Token], ctx: &Ctx<'_>) -> Vec<Draft> {
    let mut neg = Neg::default();
    let mut t = skip_adverbs(t);
    if let ("can", "not", "stand") = (lw(t, 0), lw(t, 1), lw(t, 2)) {
        return likes(subject, from(t, 3), neg, ("stand", "cannot stand"), true);
    }
    if is_in(MODALS, lw(t, 0)) {
        return Vec::new();
    }
    if is_in(&["do", "does", "did"], lw(t, 0)) {
        // Emphatic "I did like it" is past; "I did not" is a plain negation.
        if lw(t, 0) == "did" && lw(t, 1) != "not" {
            return Vec::new();
        }
        t = from(t, 1);
    }
    t = read_negation(t, &mut neg);
    if is_in(MODALS, lw(t, 0)) {
        return Vec::new();
    }
    if neg.negated && says_anymore(t) {
        neg.no_longer = true;
    }
    let rest = from(t, 1);
    match lw(t, 0) {
        "am" | "is" | "are" => be(subject, rest, neg, ctx),
        "was" | "were" => was(subject, rest, ctx),
        "have" | "has" => have(subject, rest, neg, ctx),
        "used" if lw(rest, 0) == "to" && !neg.negated => used_to(subject, from(rest, 1)),
        w => verb(subject, w, rest, neg),
    }
}

/// "my X is Y", "my sister lives in Rome", "my dog's name is Rex".
pub(crate) fn my_phrase(t: &[Token], ctx: &Ctx<'_>) -> Vec<Draft> {
    let Some((relation, possessive, used)) = relation_at(t) else {
        return my_attribute(&Subject::Speaker, t, ctx);
    };
    let subject = Subject::Relation(relation.clone());
    let after = from(t, used);
    if possessive {
        return my_attribute(&subject, after, ctx);
    }
    // "my sister Anna lives in Rome": her name too, and she is "sister
    // Anna" in what follows, so that what is said of another sister named
    // later never reads as a change to hers (two sisters, two subjects).
    let caps = after.iter().take_while(|t| t.is_capitalized()).count();
    let mut out = Vec::new();
    let named = caps > 0 && caps <= 2;
    let mut about = subject.clone();
    if named {
        let names = after.get(..caps).unwrap_or(&[]);
        // Several sisters have several names: one name does not replace another.
        out.extend(name(&subject, names, 0.7).into_iter().map(|mut d| {
            d.multi = true;
            d
        }));
        about = Subject::Relation(format!("{relation} {}", display(names)));
    }
    let mut said = scaled(predicate(&about, from(after, caps), ctx), 0.9);
    if named {
        let names = display(after.get(..caps).unwrap_or(&[]));
        for d in &mut said {
            if !d.entities.contains(&names) {
                d.entities.insert(0, names.clone());
            }
        }
    }
    out.extend(said);
    out
}

/// A relation after "my": (key, possessive, words used). "best friend",
/// "older brother", "sister's".
pub(crate) fn relation_at(t: &[Token]) -> Option<(String, bool, usize)> {
    const MODIFIERS: &[&str] = &[
        "best", "little", "big", "older", "younger", "elder", "oldest", "youngest", "new", "ex",
        "baby", "twin", "step", "other",
    ];
    let modified = is_in(MODIFIERS, lw(t, 0)) && t.len() > 1;
    let k = usize::from(modified);
    let word = lw(t, k);
    let (noun, possessive) = match word.strip_suffix("'s") {
        Some(n) => (n, true),
        None => (word, false),
    };
    if !is_in(RELATIONS, noun) {
        return None;
    }
    let key = if modified {
        format!("{} {noun}", lw(t, 0))
    } else {
        noun.to_string()
    };
    Some((key, possessive, k + 1))
}

/// "favourite colour" → "favourite_color".
pub(crate) fn attribute_key(np: &[Token]) -> String {
    np.iter()
        .map(|t| {
            let w: String = t
                .lower
                .chars()
                .filter(|c| c.is_alphanumeric() || *c == '-')
                .collect();
            match w.as_str() {
                "favorite" | "fav" | "fave" => "favourite".to_string(),
                "colour" => "color".to_string(),
                _ => w,
            }
        })
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("_")
}

/// "my favourite colour is blue": attribute "favourite_color", value "blue".
pub(crate) fn my_attribute(subject: &Subject, t: &[Token], ctx: &Ctx<'_>) -> Vec<Draft> {
    let Some(be_at) = t
        .iter()
        .take(5)
        .position(|w| is_in(&["is", "are"], &w.lower))
    else {
        return Vec::new();
    };
    let np = t.get(..be_at).unwrap_or(&[]);
    let blocked = np.iter().any(|w| {
        w.is_comma() || is_in(&["i", "you", "and", "that", "it", "this", "not"], &w.lower)
    });
    let head = np.last().map_or("", |w| w.lower.as_str());
    if np.is_empty() || blocked || is_in(NOT_ATTRIBUTES, head) || is_in(NOT_ATTRIBUTES, lw(np, 0)) {
        return Vec::new();
    }
    let multi = lw(t, be_at) == "are";
    let mut neg = Neg::default();
    let rest = read_negation(from(t, be_at + 1), &mut neg);
    if neg.negated && says_anymore(rest) {
        neg.no_longer = true;
    }
    if is_in(&["that", "so", "very", "too", "going", "like"], lw(rest, 0)) {
        return Vec::new();
    }
    let attribute = attribute_key(np);
    // "my job is stressful" says nothing about which job: only an occupation
    // ("my job is nursing", "… is a nurse") fills the single-valued job slot.
    if is_in(&["job", "work", "occupation", "profession"], &attribute) {
        let last = value_span(rest, &[], true)
            .last()
            .map_or("", |w| w.lower.as_str());
        if !(is_in(&["a", "an"], lw(rest, 0)) || is_job(last) || last.ends_with("ing")) {
            return Vec::new();
        }
    }
    let attribute = match attribute.as_str() {
        "work" | "occupation" | "profession" => "job".to_string(),
        _ => attribute,
    };
    let np_text = display(np);
    let spec = || Spec {
        attribute: "",
        multi,
        negated: neg.negated,
        style: TimeStyle::Since,
        confidence: 0.8,
    };
    let tail = |v: &str| match (multi, neg.negated, neg.no_longer) {
        (true, false, _) => format!("{np_text} include {v}"),
        (true, true, _) => format!("{np_text} do not include {v}"),
        (false, false, _) => format!("{np_text} is {v}"),
        (false, true, true) => format!("{np_text} is no longer {v}"),
        (false, true, false) => format!("{np_text} is not {v}"),
    };
    let span = value_span(rest, &[], !multi);
    let mut out = if span.is_empty() {
        // "my birthday is May 7": the value was the clause's date.
        let Some(time) = ctx.time else {
            return Vec::new();
        };
        let v = if time.relative {
            time.time.with_preposition()
        } else {
            time.written.clone()
        };
        let mut d = make(subject, spec().style_none(), None, tail(&v));
        d.value = Some(v);
        vec![d]
    } else if multi {
        items(span, false)
            .into_iter()
            .filter(|i| usable(i))
            .map(|i| make(subject, spec(), Some(i), tail(&display(i))))
            .collect()
    } else if usable(span) {
        vec![make(subject, spec(), Some(span), tail(&display(span)))]
    } else {
        Vec::new()
    };
    for d in &mut out {
        d.attribute = Some(attribute.clone());
        d.possessive = true;
        if attribute == "name" {
            if let Some(v) = &d.value {
                d.entities = vec![v.clone()];
            }
        }
    }
    out
}

/// "always answer in French", "never use emojis", "please don't call me Bob".
pub(crate) fn procedure(t: &[Token]) -> Vec<Draft> {
    let (mode, mut body) = match lw(t, 0) {
        "always" => ("always", from(t, 1)),
        _ if lw(t, 0) == "do" => ("never", from(t, 2)),
        _ => ("never", from(t, 1)),
    };
    if lw(body, 0) == "ever" {
        body = from(body, 1);
    }
    let first = lw(body, 0);
    const NOT_INSTRUCTIONS: &[&str] = &[
        "mind", "again", "been", "had", "did", "have", "was", "were", "i", "you", "we", "the", "a",
        "an", "my", "it", "that", "ever", "worry", "forget", "be",
    ];
    let body: Vec<&Token> = body.iter().filter(|t| !t.is_comma()).collect();
    if body.is_empty() || is_in(NOT_INSTRUCTIONS, first) || first.ends_with("ed") {
        return Vec::new();
    }
    let words: Vec<Token> = body.into_iter().cloned().collect();
    let instruction = format!("{mode} {}", display(&words));
    vec![Draft {
        subject: Subject::Speaker,
        attribute: Some("instruction".to_string()),
        value: Some(instruction.clone()),
        multi: true,
        negated: false,
        retracted: false,
        possessive: false,
        tail: format!("asks to {instruction}"),
        style: TimeStyle::None,
        kind: Kind::Procedure,
        confidence: 0.7,
        entities: entities(&words),
    }]
}

/// "forget that I live in Paris", "forget my address", "ignore what I said about Paris".
pub(crate) fn retraction(t: &[Token], ctx: &Ctx<'_>) -> Vec<Draft> {
    let mut t = t;
    loop {
        match (lw(t, 0), lw(t, 1), lw(t, 2)) {
            ("about" | "that", ..) => t = from(t, 1),
            ("what", "i", "said" | "told" | "mentioned") => {
                let about = t.iter().take(6).position(|w| w.lower == "about");
                t = match about {
                    Some(k) => from(t, k + 1),
                    None => from(t, 3),
                };
            }
            _ => break,
        }
    }
    let mark = |mut drafts: Vec<Draft>| {
        for d in &mut drafts {
            d.retracted = true;
            d.confidence = 0.8;
            d.style = TimeStyle::None;
        }
        drafts
    };
    if is_in(&["i", "we", "my"], lw(t, 0)) {
        let inner = clause_drafts(t, ctx);
        if !inner.is_empty() {
            return mark(inner);
        }
    }
    let base = |subject: Subject, attribute: Option<String>, possessive, tail: String| Draft {
        subject,
        attribute,
        value: None,
        multi: false,
        negated: false,
        retracted: true,
        possessive,
        tail,
        style: TimeStyle::None,
        kind: Kind::Fact,
        confidence: 0.8,
        entities: Vec::new(),
    };
    if lw(t, 0) == "my" {
        let np = value_span(from(t, 1), &[], true);
        if np.is_empty() || np.len() > 4 {
            return Vec::new();
        }
        if let Some((relation, false, used)) = relation_at(np) {
            if used == np.len() {
                let d = base(
                    Subject::Relation(relation.clone()),
                    None,
                    false,
                    String::new(),
                );
                return vec![Draft {
                    tail: "(everything about them)".to_string(),
                    ..d
                }];
            }
        }
        let d = base(Subject::Speaker, Some(attribute_key(np)), true, display(np));
        return vec![d];
    }
    let span = value_span(t, &[], true);
    if !usable(span) {
        return Vec::new();
    }
    let mut d = base(
        Subject::Speaker,
        None,
        false,
        format!("said something about {}", display(span)),
    );
    d.value = Some(bare(&display(span)));
    d.entities = entities(span);
    vec![d]
}
