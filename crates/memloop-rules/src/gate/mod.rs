//! The persistence gate: after each turn of an agent loop, the cheap decision
//! whether the turn is worth writing to long-term memory.
//!
//! [`heuristic`] reads the words of one turn, with no model call, in well under
//! a millisecond. It keeps a turn when any sentence of it carries something to
//! remember about the speaker or their world (a correction, decision, plan,
//! preference, first-person fact, dated event, or a named or narrated thing)
//! and skips greetings, thanks, acknowledgements, small talk, reactions to the
//! other person and questions that state nothing. A missed fact is worse than
//! a stored chit-chat line, so every rule errs towards keeping: measured on the
//! LoCoMo dev split it keeps over 95% of the turns that questions cite as
//! evidence (docs/gate.md).
//!
//! The gate judges the turns of the roles in [`GateConfig::judged_roles`]
//! (by default `user` and `human`). Other turns (assistant, system, tool) are
//! skipped: what an assistant says is derived from the user's turns, which the
//! gate has judged, or from sources it can read again.
//!
//! An optional second opinion from a language model ([`llm_tag_prompt`],
//! [`parse_llm_tag`]) is run by the caller; this module only builds the prompt
//! and reads the reply.

use serde::{Deserialize, Serialize};

use crate::sentences::{self, straighten, Boundaries};

/// Whether to write a turn to long-term memory, and the rule that decided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateDecision {
    pub persist: bool,
    /// A short phrase naming the rule, e.g. `preference ("I love")` or `greeting`.
    pub reason: String,
}

impl GateDecision {
    fn keep(reason: impl Into<String>) -> Self {
        Self {
            persist: true,
            reason: reason.into(),
        }
    }

    fn skip(reason: impl Into<String>) -> Self {
        Self {
            persist: false,
            reason: reason.into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GateConfig {
    /// Turns with fewer words are skipped unless they hold a first-person
    /// statement, a plan, a preference, a decision or a correction ("I'm
    /// vegan", "Actually Tuesday"): a bare "Paris!" or "At six" means nothing
    /// without the question before it.
    pub min_words: usize,
    /// Roles whose turns the rules judge (compared case-insensitively); turns
    /// of any other role are skipped.
    pub judged_roles: Vec<String>,
}

impl Default for GateConfig {
    fn default() -> Self {
        Self {
            min_words: 3,
            judged_roles: vec!["user".into(), "human".into()],
        }
    }
}

impl GateConfig {
    /// Whether the gate judges turns of `role` (else it skips them).
    pub fn judges(&self, role: &str) -> bool {
        let role = role.trim();
        self.judged_roles
            .iter()
            .any(|r| r.trim().eq_ignore_ascii_case(role))
    }
}

/// Decides whether one turn is worth writing to long-term memory. Never panics.
pub fn heuristic(text: &str, role: &str, cfg: &GateConfig) -> GateDecision {
    let role = role.trim();
    if !cfg.judges(role) {
        return GateDecision::skip(format!(
            "{} turn (the gate judges user turns)",
            role_name(role)
        ));
    }
    let sentences = split_sentences(text);
    let words: usize = sentences.iter().map(|s| s.words.len()).sum();
    if words == 0 {
        return GateDecision::skip("empty");
    }
    let best = sentences.iter().filter_map(content).min_by_key(|c| c.kind);
    match best {
        Some(c) if words >= cfg.min_words || c.kind.holds_alone() => GateDecision::keep(c.reason()),
        _ if words < cfg.min_words => GateDecision::skip(format!(
            "too short ({words} word{})",
            if words == 1 { "" } else { "s" }
        )),
        _ => GateDecision::skip(chatter_reason(&sentences)),
    }
}

fn role_name(role: &str) -> &str {
    if role.is_empty() {
        "unnamed role"
    } else {
        role
    }
}

/// A word of a sentence, lower-cased, with what surrounds it.
#[derive(Debug)]
struct Word {
    lower: String,
    /// Written with a capital first letter.
    capital: bool,
    /// A comma, colon or similar pause separates it from the word before.
    pause_before: bool,
    /// Followed by such a pause or by the end of the sentence.
    pause_after: bool,
}

#[derive(Debug, Default)]
struct Sentence {
    words: Vec<Word>,
    question: bool,
}

impl Sentence {
    fn lower(&self, i: usize) -> &str {
        self.words.get(i).map_or("", |w| w.lower.as_str())
    }

    /// Whether `phrase` occurs as consecutive words starting at `i`.
    fn at(&self, i: usize, phrase: &[&str]) -> bool {
        phrase
            .iter()
            .enumerate()
            .all(|(k, p)| self.words.get(i + k).is_some_and(|w| w.lower == *p))
    }

    /// The first position where `phrase` occurs.
    fn find(&self, phrase: &[&str]) -> Option<usize> {
        (0..self.words.len()).find(|&i| self.at(i, phrase))
    }

    fn any(&self, list: &[&str]) -> bool {
        self.words.iter().any(|w| list.contains(&w.lower.as_str()))
    }
}

/// Longest sentence analysed as one: longer runs are cut, so every rule that
/// looks around a word stays cheap on any input.
const MAX_SENTENCE_WORDS: usize = 200;

/// Splits a text into sentences of words. Sentences end at `.`, `!`, `?`,
/// `…`, a line break or a dash between spaces; a `.` inside a token ("3.5",
/// "e.g") does not end one ([`Boundaries::GATE`]). Curly apostrophes are read
/// as straight ones.
fn split_sentences(text: &str) -> Vec<Sentence> {
    let mut b = SentenceBuilder::default();
    for span in sentences::sentences(text, &Boundaries::GATE) {
        let chars: Vec<char> = span.text.chars().map(|c| straighten(c, false)).collect();
        for (i, &c) in chars.iter().enumerate() {
            let next = chars.get(i + 1).copied().unwrap_or(' ');
            if c.is_alphanumeric() {
                if b.word.is_empty() {
                    b.capital = c.is_uppercase();
                }
                b.word.push(c);
                continue;
            }
            // Within a sentence a full stop always stands inside a word.
            if matches!(c, '\'' | '.') && !b.word.is_empty() && next.is_alphanumeric() {
                b.word.push(c);
                continue;
            }
            b.end_word();
            if matches!(c, ',' | ';' | ':' | '(' | ')' | '[' | ']' | '"') {
                b.pause = true;
            }
        }
        b.end_word();
        b.sentence.question = span.question;
        b.end_sentence();
    }
    b.out
}

#[derive(Default)]
struct SentenceBuilder {
    out: Vec<Sentence>,
    sentence: Sentence,
    word: String,
    capital: bool,
    pause: bool,
}

impl SentenceBuilder {
    fn end_word(&mut self) {
        let trimmed = self.word.trim_matches('\'');
        if !trimmed.is_empty() {
            if self.pause {
                if let Some(last) = self.sentence.words.last_mut() {
                    last.pause_after = true;
                }
            }
            let lower = trimmed.to_lowercase();
            self.sentence.words.push(Word {
                lower,
                capital: self.capital,
                pause_before: self.pause,
                pause_after: false,
            });
            self.pause = false;
            if self.sentence.words.len() >= MAX_SENTENCE_WORDS {
                self.end_sentence();
            }
        }
        self.word.clear();
    }

    fn end_sentence(&mut self) {
        if let Some(last) = self.sentence.words.last_mut() {
            last.pause_after = true;
        }
        if self.sentence.words.is_empty() {
            self.sentence.question = false;
        } else {
            self.out.push(std::mem::take(&mut self.sentence));
        }
        self.pause = false;
    }
}

/// What a sentence holds that is worth remembering, most specific first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Correction,
    Decision,
    Plan,
    Preference,
    PersonalFact,
    DatedEvent,
    NamedThing,
    Narrative,
}

impl Kind {
    /// Whether this kind keeps a turn shorter than `min_words`.
    fn holds_alone(self) -> bool {
        self <= Kind::PersonalFact
    }
}

#[derive(Debug)]
struct Content {
    kind: Kind,
    /// The words that triggered the rule, as written in the reason.
    marker: String,
}

impl Content {
    fn new(kind: Kind, marker: impl Into<String>) -> Option<Self> {
        Some(Self {
            kind,
            marker: marker.into(),
        })
    }

    fn reason(&self) -> String {
        let m = &self.marker;
        match self.kind {
            Kind::Correction => format!("correction (\"{m}\")"),
            Kind::Decision => format!("decision (\"{m}\")"),
            Kind::Plan => format!("plan (\"{m}\")"),
            Kind::Preference => format!("preference (\"{m}\")"),
            Kind::PersonalFact => "states a fact about the speaker's world".into(),
            Kind::DatedEvent => format!("event with a date or number (\"{m}\")"),
            Kind::NamedThing => format!("names someone or something (\"{m}\")"),
            Kind::Narrative => format!("tells what happened (\"{m}\")"),
        }
    }
}

// Word lists. Kept one table per line of thought; rustfmt would put most of
// them one word per line.
mod words;
use words::*;

/// A word without its possessive "'s" ("tomorrow's").
fn base(w: &str) -> &str {
    w.strip_suffix("'s").unwrap_or(w)
}

fn is_past_verb(w: &str) -> bool {
    if IRREGULAR_PAST.contains(&w) {
        return true;
    }
    w.chars().count() >= 5
        && w.ends_with("ed")
        && !w.ends_with("eed")
        && !ED_ADJECTIVES.contains(&w)
        && w.chars().all(char::is_alphabetic)
}

fn is_gerund(w: &str) -> bool {
    w.chars().count() > 5
        && w.ends_with("ing")
        && !NOT_GERUNDS.contains(&w)
        && w.chars().all(char::is_alphabetic)
}

/// Index of the first word after leading interjections and a name addressed
/// ("Oh wow, Maria, ...").
fn opener(s: &Sentence) -> usize {
    let mut i = 0;
    while let Some(w) = s.words.get(i) {
        let skippable = INTERJECTIONS.contains(&w.lower.as_str()) || (i > 0 && is_vocative(s, i));
        if !skippable {
            break;
        }
        i += 1;
    }
    i
}

/// A capitalised word addressing the other person: "Thanks, Maria!", "Hey Jon,".
fn is_vocative(s: &Sentence, i: usize) -> bool {
    let Some(w) = s.words.get(i) else {
        return false;
    };
    if !w.capital {
        return false;
    }
    let after_interjection = i > 0
        && [INTERJECTIONS, GREETINGS, THANKS]
            .iter()
            .any(|l| l.contains(&s.lower(i - 1)));
    after_interjection || (w.pause_before && w.pause_after) || (i == 0 && w.pause_after)
}

/// The first word at or after `i` that is not an adverb.
fn verb_after(s: &Sentence, mut i: usize) -> usize {
    while ADVERBS.contains(&s.lower(i)) {
        i += 1;
    }
    i
}

/// The predicate after a subject at `subject`, past adverbs and copulas
/// ("I was so glad" → "glad", "I'm a big fan" → "fan").
fn predicate(s: &Sentence, subject: usize) -> usize {
    let mut v = verb_after(s, subject + 1);
    while COPULAS.contains(&s.lower(v)) {
        v = verb_after(s, v + 1);
    }
    v
}

/// A first-person clause that is a reaction rather than a fact: "I hope so",
/// "I'm so glad", "I love that", "I'd love to see it", "I can help you",
/// "I'll keep going", "we got this".
fn phatic_clause(s: &Sentence, subject: usize) -> bool {
    let v = predicate(s, subject);
    let verb = s.lower(v);
    let next = s.lower(v + 1);
    let then = s.lower(v + 2);
    let we = WE.contains(&s.lower(subject));
    let main = main_verb(s, v);
    if s.lower(main).is_empty() {
        // "I definitely will!", "We can!": an answer with nothing in it.
        return true;
    }
    if offer_to_other(s, v) || encouragement(s, main) || (we && MODALS.contains(&verb)) {
        return true;
    }
    if FEELINGS.contains(&verb) {
        return feeling_is_reaction(s, v);
    }
    match verb {
        "" => true,
        // Said of people in the speaker's life, not of the other's words.
        "appreciate" | "admire" | "miss" => !matches!(next, "them" | "him" | "her" | "my" | "our"),
        "love" | "like" | "adore" => reaction_object(s, v + 1),
        "can" | "can't" | "cannot" | "could" => {
            matches!(
                next,
                "imagine" | "tell" | "see" | "relate" | "only" | "believe" | "understand" | "help"
            ) || (next == "wait" && matches!(then, "to" | "for") && wants_to_see(s, v + 3))
        }
        "would" => matches!(next, "love" | "like") && wants_to_see(s, v + 3),
        "want" | "wanted" | "wanna" => wants_to_see(s, v + 1 + usize::from(next == "to")),
        "have" => next == "to" && then == "say",
        "get" | "got" => matches!(next, "it" | "you" | "that" | "this" | "your"),
        "see" | "know" | "remember" | "understand" => KNOWN_OBJECTS.contains(&next),
        "doing" => DOING_WELL.contains(&next),
        "let" => matches!(next, "you" | "me"),
        "in" => matches!(next, "" | "too" | "this" | "for" | "to"),
        // "I think that's great" is a reaction; "I think I'll go" says something.
        "think" | "believe" | "feel" => !(v + 1..(v + 8).min(s.words.len()))
            .any(|k| SUBJECTS.contains(&s.lower(k)) || POSSESSIVES.contains(&s.lower(k))),
        _ => PHATIC_VERBS.contains(&verb),
    }
}

/// "glad", "excited" as a reaction ("so happy for you", "glad to hear it")
/// rather than news ("stoked to start a new job", "glad to be part of it").
fn feeling_is_reaction(s: &Sentence, v: usize) -> bool {
    let then = s.lower(v + 2);
    match s.lower(v + 1) {
        "to" => {
            wants_to_see(s, v + 2)
                || matches!(then, "help" | "have")
                || (then == "be" && !matches!(s.lower(v + 3), "part" | "involved" | "back"))
        }
        "for" | "about" | "of" | "with" | "that" => {
            then.is_empty()
                || SECOND_PERSON.contains(&then)
                || matches!(then, "it" | "that" | "this" | "them" | "everyone" | "all")
        }
        _ => true,
    }
}

/// The verb after future and modal markers: "gonna keep" → "keep",
/// "going to make" → "make", "will never give" → "never".
fn main_verb(s: &Sentence, mut v: usize) -> usize {
    loop {
        let w = s.lower(v);
        if w == "going" && s.lower(v + 1) == "to" {
            v += 2;
        } else if MODALS.contains(&w)
            || matches!(w, "gonna" | "wanna" | "to")
            || (ADVERBS.contains(&w) && w != "never")
        {
            v += 1;
        } else {
            return v;
        }
    }
}

/// A verb whose object is the other person: "I can support you", "I'll send
/// you a video", "I miss you". What it promises is about the conversation.
fn offer_to_other(s: &Sentence, v: usize) -> bool {
    let mut k = v;
    while MODALS.contains(&s.lower(k)) || matches!(s.lower(k), "to" | "be" | "help") {
        k += 1;
    }
    SECOND_PERSON.contains(&s.lower(k)) || SECOND_PERSON.contains(&s.lower(k + 1))
}

/// Perseverance and encouragement, said of oneself or of both: "I'll keep
/// going", "I'm gonna make it", "I'll do my best", "we'll get through this".
fn encouragement(s: &Sentence, v: usize) -> bool {
    let next = s.lower(v + 1);
    let then = s.lower(v + 2);
    match s.lower(v) {
        "keep" => KEEP_GOING.contains(&next),
        "do" | "try" => matches!(next, "my" | "our") && then == "best",
        "make" => {
            matches!(next, "it" | "this" | "that" | "things")
                || (matches!(next, "my" | "our") && matches!(then, "dream" | "dreams"))
        }
        "get" => next == "through",
        "never" | "not" | "won't" => matches!(next, "give" | "quit" | "stop" | "let"),
        "stay" => STAY_WHAT.contains(&next),
        "push" | "pushing" | "rock" | "rocking" | "reach" | "chase" => true,
        "be" => matches!(next, "there" | "fine" | "okay" | "ok" | "alright" | "right"),
        _ => false,
    }
}

/// "see it", "hear more", "know": wanting to learn about the other's news.
fn wants_to_see(s: &Sentence, i: usize) -> bool {
    LEARN_VERBS.contains(&s.lower(i))
}

/// What follows "I love": a reaction to the other's news ("that", "how you",
/// "to see it") or a preference ("hiking", "to paint").
fn reaction_object(s: &Sentence, i: usize) -> bool {
    let w = s.lower(i);
    w.is_empty() || REACTION_OBJECTS.contains(&w) || (w == "to" && wants_to_see(s, i + 1))
}

/// The content of one sentence, if any.
fn content(s: &Sentence) -> Option<Content> {
    let first_person = first_person_fact(s).is_some();
    if s.question {
        // A question keeps only what it states about the speaker:
        // "Did you know I adopted a dog?".
        if !first_person {
            return None;
        }
        return marked(s).or_else(|| Content::new(Kind::PersonalFact, "I"));
    }
    let addressed = s.any(SECOND_PERSON);
    if let Some(c) = marked(s) {
        if first_person || !addressed {
            return Some(c);
        }
    }
    if first_person {
        return Content::new(Kind::PersonalFact, "I");
    }
    if WISHES.contains(&s.lower(opener(s))) {
        return None;
    }
    if addressed {
        return dropped_subject(s).filter(|_| {
            // "Been reading the book you lent me", not "Got you!".
            let v = verb_after(s, opener(s));
            !(v..v + 3).any(|k| SECOND_PERSON.contains(&s.lower(k)))
        });
    }
    dropped_subject(s)
        .or_else(|| dated(s))
        .or_else(|| named(s))
        .or_else(|| narrative(s))
}

/// The position of a first-person subject or possessive that states
/// something ("I adopted", "my sister"), skipping reactions ("I hope so").
fn first_person_fact(s: &Sentence) -> Option<usize> {
    (0..s.words.len()).find(|&i| {
        let w = s.lower(i);
        if SUBJECTS.contains(&w) {
            // "do I", "can I", "should I" ask rather than state.
            let asked = s.question && i > 0 && QUESTION_WORDS.contains(&s.lower(i - 1));
            // "Is there anything I can do?" offers rather than states.
            let offered = s.question && MODALS.contains(&s.lower(predicate(s, i)));
            !asked && !offered && !generic_we(s, i) && !phatic_clause(s, i)
        } else if POSSESSIVES.contains(&w) {
            !SET_POSSESSIONS.contains(&s.lower(i + 1))
        } else {
            false
        }
    })
}

/// "we" as everyone, or as the two people talking: "who we really are",
/// "how we grow", "since we last talked".
fn generic_we(s: &Sentence, i: usize) -> bool {
    if !WE.contains(&s.lower(i)) || i == 0 {
        return false;
    }
    let mut v = verb_after(s, i + 1);
    if s.lower(v) == "last" {
        v += 1;
    }
    let before = s.lower(i - 1);
    matches!(before, "who" | "how" | "what" | "where" | "why")
        || (before == "since" && TALKED.contains(&s.lower(v)))
}

/// Corrections, decisions, plans and preferences, by their marker words.
fn marked(s: &Sentence) -> Option<Content> {
    correction(s)
        .or_else(|| decision(s))
        .or_else(|| plan(s))
        .or_else(|| preference(s))
}

fn correction(s: &Sentence) -> Option<Content> {
    const PHRASES: &[&[&str]] = &[
        &["not", "anymore"],
        &["anymore"],
        &["any", "more"],
        &["no", "longer"],
        &["i", "moved"],
        &["we", "moved"],
        &["i", "meant"],
        &["changed", "my", "mind"],
        &["i", "was", "wrong"],
        &["correction"],
        &["to", "be", "clear"],
        &["used", "to"],
        &["instead", "of"],
    ];
    if let Some(p) = PHRASES.iter().find(|p| s.find(p).is_some()) {
        let shown: Vec<&str> = p.iter().map(|w| if *w == "i" { "I" } else { w }).collect();
        return Content::new(Kind::Correction, shown.join(" "));
    }
    if s.lower(opener(s)) == "actually" {
        return Content::new(Kind::Correction, "actually");
    }
    let first = s.lower(0);
    if matches!(first, "no" | "nope" | "nah") && RESTATED.contains(&s.lower(1)) {
        return Content::new(Kind::Correction, format!("{first}, {}", display_word(s, 1)));
    }
    None
}

/// Whether the speaker is the subject of the word at `i`: a first-person
/// subject shortly before it, or "I" left out ("Decided to go").
fn said_by_speaker(s: &Sentence, i: usize) -> bool {
    (i.saturating_sub(4)..i).any(|k| SUBJECTS.contains(&s.lower(k)))
        || verb_after(s, opener(s)) == i
}

fn decision(s: &Sentence) -> Option<Content> {
    let i = (0..s.words.len())
        .find(|&i| DECISION_WORDS.contains(&s.lower(i)) && said_by_speaker(s, i))?;
    Content::new(Kind::Decision, s.lower(i).to_string())
}

fn plan(s: &Sentence) -> Option<Content> {
    for i in 0..s.words.len() {
        let w = s.lower(i);
        if matches!(w, "i'll" | "we'll") && !phatic_clause(s, i) && !s.lower(i + 1).is_empty() {
            return Content::new(Kind::Plan, display_word(s, i));
        }
        let what = verb_after(s, i + 1 + usize::from(s.lower(i + 1) == "to"));
        let plan_word = PLAN_WORDS.contains(&w)
            && !encouragement(s, what)
            && !offer_to_other(s, what)
            && match w {
                "going" | "about" => s.lower(i + 1) == "to" && !wants_to_see(s, i + 2),
                "looking" => {
                    matches!(s.lower(i + 1), "forward" | "into") && !wants_to_see(s, i + 3)
                }
                "want" | "wanna" | "hoping" | "thinking" | "considering" | "plan" | "plans" => {
                    !wants_to_see(s, i + 1) && !wants_to_see(s, i + 2)
                }
                _ => true,
            };
        if plan_word && said_by_speaker(s, i) && !s.lower(what).is_empty() {
            let marker = match w {
                "going" | "about" => format!("{w} to"),
                _ => w.to_string(),
            };
            return Content::new(Kind::Plan, marker);
        }
    }
    let future = s
        .words
        .iter()
        .position(|w| FUTURE_TIMES.contains(&base(&w.lower)))?;
    if s.any(SECOND_PERSON) {
        return None;
    }
    let marker = match (base(s.lower(future)), s.lower(future + 1)) {
        ("next", after) if !after.is_empty() => format!("next {after}"),
        (w, _) => w.to_string(),
    };
    Content::new(Kind::Plan, marker)
}

fn display_word(s: &Sentence, i: usize) -> String {
    let w = s.lower(i);
    match w.strip_prefix('i') {
        Some(rest) if rest.starts_with('\'') || rest.is_empty() => format!("I{rest}"),
        _ => w.to_string(),
    }
}

fn preference(s: &Sentence) -> Option<Content> {
    for i in 0..s.words.len() {
        let w = s.lower(i);
        if POSSESSIVES.contains(&w) {
            let fav = s.lower(i + 1);
            if matches!(fav, "favorite" | "favourite" | "fave") {
                return Content::new(Kind::Preference, format!("{w} {fav}"));
            }
            continue;
        }
        if !SUBJECTS.contains(&w) {
            continue;
        }
        let v = predicate(s, i);
        let verb = s.lower(v);
        if verb == "can't" && s.lower(v + 1) == "stand" {
            return Content::new(
                Kind::Preference,
                format!("{} can't stand", display_word(s, i)),
            );
        }
        let reaction = matches!(verb, "love" | "like" | "adore" | "loved" | "liked")
            && reaction_object(s, v + 1);
        if PREFERENCE_VERBS.contains(&verb) && !reaction {
            return Content::new(Kind::Preference, format!("{} {verb}", display_word(s, i)));
        }
    }
    None
}

/// "Been busy repainting", "Just started cello lessons": the speaker's news
/// with "I" left out.
fn dropped_subject(s: &Sentence) -> Option<Content> {
    let v = verb_after(s, opener(s));
    if v + 1 >= s.words.len() {
        return None;
    }
    let w = s.lower(v);
    let opens = DROPPED_SUBJECT_OPENERS.contains(&w)
        || FEELINGS.contains(&w)
        || is_past_verb(w)
        || (is_gerund(w)
            && !s.words[v..]
                .iter()
                .any(|x| matches!(x.lower.as_str(), "is" | "are" | "was" | "were" | "can")));
    let reaction = match w {
        "appreciate" | "admire" | "miss" => {
            !matches!(s.lower(v + 1), "them" | "him" | "her" | "my" | "our")
        }
        "got" => matches!(s.lower(v + 1), "it" | "you" | "this"),
        "loved" => reaction_object(s, v + 1),
        "going" => s.lower(v + 1) != "to",
        "was" | "were" | "made" => true,
        _ if FEELINGS.contains(&w) => feeling_is_reaction(s, v),
        _ => encouragement(s, v),
    };
    (opens && !reaction)
        .then(|| Content::new(Kind::PersonalFact, w.to_string()))
        .flatten()
}

/// A date, time or number: "last Friday", "in 2019", "three kids".
fn dated(s: &Sentence) -> Option<Content> {
    // "Thanks, that's all for today!", "Bye, see you next week": a closing
    // formula's time word dates nothing.
    let first = s.words.first().map(|w| base(&w.lower)).unwrap_or("");
    if THANKS.contains(&first) || GREETINGS.contains(&first) || ACKNOWLEDGEMENTS.contains(&first) {
        return None;
    }
    let i = s.words.iter().position(|w| {
        let l = base(&w.lower);
        TIME_WORDS.contains(&l)
            || NUMBER_WORDS.contains(&l)
            || (w.capital && AMBIGUOUS_MONTHS.contains(&l))
            || l.chars().any(|c| c.is_ascii_digit())
    })?;
    let w = base(s.lower(i));
    let marker = match (w, s.lower(i + 1)) {
        ("last" | "next", after) if !after.is_empty() => format!("{w} {after}"),
        _ => w.to_string(),
    };
    Content::new(Kind::DatedEvent, marker)
}

/// A name that is not the person addressed: "It was Nina Simone".
fn named(s: &Sentence) -> Option<Content> {
    let i = (1..s.words.len()).find(|&i| {
        let w = &s.words[i];
        w.capital
            && !is_vocative(s, i)
            && !SUBJECTS.contains(&w.lower.as_str())
            && !INTERJECTIONS.contains(&w.lower.as_str())
    })?;
    let mut chars = s.lower(i).chars();
    let shown: String = chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default();
    Content::new(Kind::NamedThing, shown)
}

/// Something that happened to someone in the speaker's world: "The twins
/// adored it", "She had a rough year", "They've been rehearsing". A reaction
/// ("That was awesome") is not.
fn narrative(s: &Sentence) -> Option<Content> {
    if let Some(n) = s.find(&["name", "is"]).or_else(|| s.find(&["named"])) {
        return Content::new(Kind::Narrative, s.lower(n).to_string());
    }
    let perfect_or_future = (0..s.words.len()).find(|&i| {
        matches!(s.lower(i), "they've" | "they'll" | "he'll" | "she'll")
            || (matches!(s.lower(i), "he's" | "she's" | "has") && s.lower(i + 1) == "been")
    });
    if let Some(i) = perfect_or_future {
        return Content::new(Kind::Narrative, s.lower(i).to_string());
    }
    if let Some(i) = going_well(s) {
        return Content::new(Kind::Narrative, s.lower(i).to_string());
    }
    // "Pixel loves the beach", "my sister hates flying": what people and pets
    // of the speaker's world like.
    if let Some(i) = (opener(s) + 1..s.words.len()).find(|&i| {
        THIRD_PERSON_LIKES.contains(&s.lower(i))
            && !REACTION_OPENERS.contains(&s.lower(i - 1))
            && !matches!(s.lower(i + 1), "" | "you" | "your" | "it" | "that" | "this")
    }) {
        return Content::new(Kind::Narrative, s.lower(i).to_string());
    }
    let o = opener(s);
    let reaction = REACTION_OPENERS.contains(&s.lower(o));
    let i = (o..s.words.len()).find(|&i| {
        let w = s.lower(i);
        is_past_verb(w) && !(reaction && SEEMING.contains(&w))
    })?;
    Content::new(Kind::Narrative, s.lower(i).to_string())
}

/// How a thing of the speaker's world is going: "The bakery's doing great",
/// "the kids are doing well" (not "it's going well", a reaction).
fn going_well(s: &Sentence) -> Option<usize> {
    let o = opener(s);
    (o + 1..s.words.len()).find(|&i| {
        let w = s.lower(i);
        let subject = s.lower(i - 1);
        let noun_is = subject
            .strip_suffix("'s")
            .is_some_and(|n| !NOT_THINGS.contains(&n));
        matches!(w, "doing" | "going")
            && (noun_is
                || (matches!(subject, "is" | "are") && i >= o + 2 && s.lower(i - 2) != "it"))
            && !matches!(s.lower(i + 1), "to" | "on")
    })
}

/// Why a turn with no content is skipped: the kinds of its sentences, in order.
fn chatter_reason(sentences: &[Sentence]) -> String {
    let mut kinds: Vec<&str> = Vec::new();
    for s in sentences {
        let k = chatter_kind(s);
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    kinds.truncate(2);
    kinds.join(" + ")
}

fn chatter_kind(s: &Sentence) -> &'static str {
    let first = s.lower(0);
    let phrase = |p: &[&str]| s.find(p).is_some();
    if GREETINGS.contains(&first)
        || phrase(&["good", "morning"])
        || phrase(&["long", "time"])
        || phrase(&["nice", "to", "meet"])
        || phrase(&["see", "you"])
        || phrase(&["take", "care"])
        || phrase(&["how's", "it", "going"])
    {
        "greeting"
    } else if THANKS.contains(&first) || phrase(&["thank", "you"]) {
        "thanks"
    } else if s.question {
        "question without content"
    } else if s
        .words
        .iter()
        .enumerate()
        .all(|(i, w)| ACKNOWLEDGEMENTS.contains(&w.lower.as_str()) || is_vocative(s, i))
    {
        "acknowledgement"
    } else if s.any(SECOND_PERSON) {
        "reaction to the other speaker"
    } else {
        "small talk"
    }
}

/// The prompt asking a language model whether a turn holds a fact worth
/// remembering long-term. The answer is read by [`parse_llm_tag`].
pub fn llm_tag_prompt(text: &str) -> String {
    let turn = text.replace("\"\"\"", "\"\" \"");
    format!(
        "You decide whether one turn of a conversation is worth writing to long-term memory.\n\
         Answer YES if the turn states something worth remembering in later conversations \
         about the speaker or their world: a preference, a fact about them, their family, \
         work, home, health or possessions, an event (with its date if given), a plan, a \
         decision, or a correction of something said before.\n\
         Answer NO if it is only a greeting, thanks, an acknowledgement, small talk, a \
         reaction to the other person, or a question that states nothing about the speaker.\n\
         Reply with one word: YES or NO.\n\n\
         Turn:\n\"\"\"\n{turn}\n\"\"\"\n"
    )
}

/// Reads a model's YES/NO reply: "YES", "yes.", "**No** — it is a greeting",
/// "Answer: yes". `None` when the reply starts with neither.
pub fn parse_llm_tag(reply: &str) -> Option<bool> {
    const PREAMBLE: &[&str] = &[
        "answer", "final", "the", "is", "my", "response", "output", "tag",
    ];
    reply
        .split(|c: char| !c.is_alphabetic())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .find(|w| !PREAMBLE.contains(&w.as_str()))
        .and_then(|w| match w.as_str() {
            "yes" => Some(true),
            "no" => Some(false),
            _ => None,
        })
}

#[cfg(test)]
mod tests;
