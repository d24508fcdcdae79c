//! What the offline rules produce before a fact is assembled (a `Draft`),
//! and the word-level helpers every rule shares: reading negation, cutting a
//! value out of a clause, splitting lists, turning "my" into "their".

use super::clauses::Token;
use super::lexicon::*;
use super::time::ResolvedTime;
use memloop_core::Kind;

/// Who a draft is about: the speaker or someone (or some animal) of theirs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Subject {
    Speaker,
    /// "sister", "best friend", "dog".
    Relation(String),
}

/// How the clause's time is written into the fact's text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum TimeStyle {
    /// The time is already in the text (or does not belong there).
    None,
    /// A state that began then: "User lives in Berlin (since October 2026)".
    Since,
    /// An event: "User turned 30 in the week of November 2, 2026".
    Plain,
    /// "User has a dog (adopted in October 2026)".
    Label(&'static str),
}

/// The time expression of a clause, taken out of its words.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TimeInfo {
    pub time: ResolvedTime,
    /// False for a date written out, which a value may keep as written.
    pub relative: bool,
    /// The expression as written, with its preposition ("on May 7").
    pub written: String,
}

/// A fact before it is given its subject's name and the clause's time.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Draft {
    pub subject: Subject,
    pub attribute: Option<String>,
    pub value: Option<String>,
    pub multi: bool,
    pub negated: bool,
    pub retracted: bool,
    /// The text is "{subject}'s {tail}" rather than "{subject} {tail}".
    pub possessive: bool,
    pub tail: String,
    pub style: TimeStyle,
    pub kind: Kind,
    pub confidence: f32,
    pub entities: Vec<String>,
}

pub(crate) struct Ctx<'a> {
    /// The sentence opened with a greeting ("Hi, I'm Tom"): a capitalised
    /// word after "I'm" is then very likely a name.
    pub greeted: bool,
    pub time: Option<&'a TimeInfo>,
}

/// Negation read from the clause: "not", "never", "no longer", "… anymore".
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Neg {
    pub(crate) negated: bool,
    pub(crate) no_longer: bool,
}

impl Neg {
    /// A verb phrase in the third person: "lives in X", "no longer lives in
    /// X", "does not live in X".
    pub(crate) fn verb(self, base: &str, third: &str, rest: &str) -> String {
        let s = match (self.negated, self.no_longer) {
            (false, _) => format!("{third} {rest}"),
            (true, true) => format!("no longer {third} {rest}"),
            (true, false) => format!("does not {base} {rest}"),
        };
        s.trim_end().to_string()
    }

    /// "is X", "is no longer X", "is not X".
    pub(crate) fn be(self, rest: &str) -> String {
        match (self.negated, self.no_longer) {
            (false, _) => format!("is {rest}"),
            (true, true) => format!("is no longer {rest}"),
            (true, false) => format!("is not {rest}"),
        }
    }
}

pub(crate) const WORK_STOPS: &[&str] = &["as", "in", "at", "on", "to", "for", "from"];

pub(crate) const PLACE_STOPS: &[&str] = &["to", "for", "from"];

pub(crate) const ARTICLES: &[&str] = &["a", "an", "the"];

/// Splits `t` at each "and" (not the first word) whose next word satisfies
/// `opens`: "moved to Seattle and started at Amazon" → two parts.
pub(crate) fn split_before(t: &[Token], opens: impl Fn(&str) -> bool) -> Vec<&[Token]> {
    let mut parts = Vec::new();
    let mut start = 0;
    for (k, w) in t.iter().enumerate() {
        if k > start && w.lower == "and" && opens(lw(t, k + 1)) {
            parts.push(t.get(start..k).unwrap_or(&[]));
            start = k + 1;
        }
    }
    parts.push(from(t, start));
    parts
}

pub(crate) fn lw(t: &[Token], k: usize) -> &str {
    t.get(k).map_or("", |t| t.lower.as_str())
}

pub(crate) fn from(t: &[Token], k: usize) -> &[Token] {
    t.get(k..).unwrap_or(&[])
}

pub(crate) fn skip_adverbs(mut t: &[Token]) -> &[Token] {
    loop {
        if is_in(ADVERBS, lw(t, 0)) {
            t = from(t, 1);
        } else if is_in(&["kind", "sort"], lw(t, 0)) && lw(t, 1) == "of" {
            t = from(t, 2);
        } else {
            return t;
        }
    }
}

pub(crate) fn read_negation<'t>(mut t: &'t [Token], neg: &mut Neg) -> &'t [Token] {
    loop {
        t = skip_adverbs(t);
        match (lw(t, 0), lw(t, 1)) {
            ("not" | "never", _) => {
                neg.negated = true;
                t = from(t, 1);
            }
            ("no", "longer") => {
                neg.negated = true;
                neg.no_longer = true;
                t = from(t, 2);
            }
            _ => return t,
        }
    }
}

pub(crate) fn says_anymore(t: &[Token]) -> bool {
    t.iter().enumerate().any(|(k, tok)| {
        tok.lower == "anymore"
            || (is_in(&["any", "no"], &tok.lower) && lw(t, k + 1) == "more")
            || (tok.lower == "no" && lw(t, k + 1) == "longer")
    })
}

/// The words of a value: up to a word that ends it ("because", "with", …,
/// plus `extra`). A single value continues over "and" or a comma only into a
/// proper noun ("Procter and Gamble", "Paris, France"); a list keeps them
/// for `items` to split.
pub(crate) fn value_span<'t>(t: &'t [Token], extra: &[&str], single: bool) -> &'t [Token] {
    // An activity keeps its company: "spending time with my kids".
    let gerund = lw(t, 0).ends_with("ing");
    let mut end = 0;
    for (k, tok) in t.iter().enumerate() {
        let w = tok.lower.as_str();
        let ends =
            (k > 0 && (is_in(VALUE_STOPS, w) || is_in(extra, w)) && !(gerund && w == "with"))
                || (is_in(&["any", "no"], w) && is_in(&["more", "longer"], lw(t, k + 1)));
        if ends {
            break;
        }
        if tok.is_comma() || is_in(&["and", "or", "&"], w) {
            let into_name = t.get(k + 1).is_some_and(Token::is_capitalized);
            if single && !into_name {
                break;
            }
        }
        end = k + 1;
    }
    let mut span = t.get(..end).unwrap_or(&[]);
    while let Some((last, rest)) = span.split_last() {
        if last.is_comma() || is_in(&["and", "or", "&", "the", "a", "an"], &last.lower) {
            span = rest;
        } else {
            break;
        }
    }
    span
}

/// List items of a value: "tea, coffee and cake" → three. With `strict`, a
/// separator splits only before an article or number ("a dog and a cat",
/// but "fish and chips" stays whole).
pub(crate) fn items(t: &[Token], strict: bool) -> Vec<&[Token]> {
    let mut out = Vec::new();
    let mut start = 0;
    for (k, tok) in t.iter().enumerate() {
        let sep = tok.is_comma() || is_in(&["and", "or", "&"], &tok.lower);
        let next = lw(t, k + 1);
        let next = if next == "and" { lw(t, k + 2) } else { next };
        if sep && (!strict || is_in(ARTICLES, next) || small_number(next).is_some()) {
            if let Some(item) = t.get(start..k).filter(|i| !i.is_empty()) {
                out.push(item);
            }
            start = k + 1;
        }
    }
    if let Some(item) = t.get(start..).filter(|i| !i.is_empty()) {
        out.push(item);
    }
    out.into_iter()
        .filter(|i| !i.iter().all(|t| t.is_comma() || t.lower == "and"))
        .collect()
}

pub(crate) fn swap_pronoun(tok: &Token) -> &str {
    // "US", "ME" (Maine) are names, not pronouns.
    let acronym = tok.orig.chars().count() > 1 && tok.orig.chars().all(char::is_uppercase);
    if acronym {
        return &tok.orig;
    }
    match tok.lower.as_str() {
        "my" | "our" => "their",
        "me" | "us" => "them",
        "i" | "we" => "they",
        "mine" | "ours" => "theirs",
        "myself" | "ourselves" => "themselves",
        _ => &tok.orig,
    }
}

/// The value as written, in the third person ("my dog" → "their dog").
pub(crate) fn display(t: &[Token]) -> String {
    let mut s = String::new();
    for tok in t {
        if tok.is_comma() {
            s.push(',');
            continue;
        }
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(swap_pronoun(tok));
    }
    s
}

/// The stored value: the display form without a leading article.
pub(crate) fn bare(display: &str) -> String {
    for article in ["a ", "an ", "the "] {
        if let Some(rest) = display.get(..article.len()).and_then(|head| {
            head.eq_ignore_ascii_case(article)
                .then(|| display.get(article.len()..))
                .flatten()
        }) {
            return rest.to_string();
        }
    }
    display.to_string()
}

pub(crate) fn indefinite(noun: &str) -> &'static str {
    if noun
        .chars()
        .next()
        .is_some_and(|c| "aeiouAEIOU".contains(c))
    {
        "an"
    } else {
        "a"
    }
}

/// Runs of capitalised words: "New York", "Acme Corp".
pub(crate) fn entities(t: &[Token]) -> Vec<String> {
    let mut out = Vec::new();
    let mut run: Vec<&str> = Vec::new();
    for tok in t {
        if tok.is_capitalized() {
            run.push(&tok.orig);
        } else if !run.is_empty() {
            out.push(run.join(" "));
            run.clear();
        }
    }
    if !run.is_empty() {
        out.push(run.join(" "));
    }
    out
}

/// A value worth storing: present, not a pronoun ("I like it"), not a ramble.
pub(crate) fn usable(t: &[Token]) -> bool {
    !t.is_empty() && t.len() <= 16 && !is_in(PRONOUN_VALUES, lw(t, 0))
}

/// What a rule hands to `make`.
pub(crate) struct Spec<'s> {
    pub(crate) attribute: &'s str,
    pub(crate) multi: bool,
    pub(crate) negated: bool,
    pub(crate) style: TimeStyle,
    pub(crate) confidence: f32,
}

impl<'s> Spec<'s> {
    pub(crate) fn new(attribute: &'s str, multi: bool, neg: Neg) -> Spec<'s> {
        Spec {
            attribute,
            multi,
            negated: neg.negated,
            style: TimeStyle::Since,
            confidence: 0.7,
        }
    }

    pub(crate) fn style(mut self, style: TimeStyle) -> Self {
        self.style = style;
        self
    }

    pub(crate) fn confidence(mut self, confidence: f32) -> Self {
        self.confidence = confidence;
        self
    }
}

pub(crate) fn make(
    subject: &Subject,
    spec: Spec<'_>,
    value: Option<&[Token]>,
    tail: String,
) -> Draft {
    let (value, entities) = match value {
        Some(v) => (Some(bare(&display(v))), self::entities(v)),
        None => (None, Vec::new()),
    };
    Draft {
        subject: subject.clone(),
        attribute: Some(spec.attribute.to_string()),
        value,
        multi: spec.multi,
        negated: spec.negated,
        retracted: false,
        possessive: false,
        tail,
        style: spec.style,
        kind: Kind::Fact,
        confidence: spec.confidence,
        entities,
    }
}

/// One draft per list item of `t`, with `tail` built from each item's text.
pub(crate) fn each_item(
    subject: &Subject,
    t: &[Token],
    strict: bool,
    spec: impl Fn() -> Spec<'static>,
    tail: impl Fn(&str) -> String,
) -> Vec<Draft> {
    let span = value_span(t, &[], false);
    // Each item is held to `usable`; the list as a whole may be longer.
    if span.len() > 64 || span.is_empty() || is_in(PRONOUN_VALUES, lw(span, 0)) {
        return Vec::new();
    }
    // "to cook and read" is one activity phrase, not a list.
    let list = if lw(span, 0) == "to" {
        vec![span]
    } else {
        items(span, strict)
    };
    list.into_iter()
        .filter(|i| usable(i))
        .map(|i| make(subject, spec(), Some(i), tail(&display(i))))
        .collect()
}

impl Spec<'_> {
    pub(crate) fn style_none(self) -> Self {
        self.style(TimeStyle::None)
    }
}
