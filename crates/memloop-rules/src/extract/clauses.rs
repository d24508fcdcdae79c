//! Splitting a turn into sentences (with the crate's one sentence splitter,
//! `crate::sentences`), words and clauses for the offline rules.
//!
//! Words keep their original spelling (values such as "Berlin" are copied
//! from it) beside a lower-case form that the rules match on. Contractions
//! are expanded ("I'm" → "I am", "don't" → "do not") so that each rule sees
//! one spelling. Nothing here indexes into strings, so any input is safe.

use super::lexicon::{is_in, CONJUNCTIONS, FILLERS, QUESTION_OPENERS};
use crate::sentences::Boundaries;

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub orig: String,
    pub lower: String,
}

impl Token {
    fn new(orig: &str, lower: &str) -> Token {
        Token {
            orig: orig.to_string(),
            lower: lower.to_string(),
        }
    }

    fn comma() -> Token {
        Token::new(",", ",")
    }

    pub fn is_comma(&self) -> bool {
        self.lower == ","
    }

    /// A capitalised word other than "I": a proper noun in the middle of a sentence.
    pub fn is_capitalized(&self) -> bool {
        self.lower != "i" && self.orig.chars().next().is_some_and(char::is_uppercase)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sentence {
    pub tokens: Vec<Token>,
    pub question: bool,
}

/// Curly quotes (and the apostrophe look-alikes ʼ and ′) become straight
/// ones so that "I’m" and "I'm" read alike.
fn straighten(text: &str) -> String {
    text.chars()
        .map(|c| crate::sentences::straighten(c, true))
        .collect()
}

/// Sentences end at `! ? ;`, a line break, or a full stop followed by a space
/// (so "3.5" and "e.g." inside a word stay whole): [`Boundaries::FACTS`].
pub(crate) fn sentences(text: &str) -> Vec<Sentence> {
    let mut out = Vec::new();
    for span in crate::sentences::sentences(text, &Boundaries::FACTS) {
        push_sentence(&mut out, span.text, span.question);
    }
    out
}

fn push_sentence(out: &mut Vec<Sentence>, text: &str, question: bool) {
    let tokens = tokenize(text);
    if tokens.iter().any(|t| !t.is_comma()) {
        out.push(Sentence { tokens, question });
    }
}

/// Words of one sentence; a comma, colon or dash becomes its own `,` token.
pub(crate) fn tokenize(text: &str) -> Vec<Token> {
    const LEADING: &[char] = &['"', '\'', '(', '[', '{', '*', '_', '<', '`'];
    const TRAILING: &[char] = &['"', '\'', ')', ']', '}', '*', '_', '>', '`', '.', '!', '?'];
    let text = straighten(text);
    let mut out = Vec::new();
    for raw in text.split_whitespace() {
        if matches!(raw, "-" | "--" | "\u{2013}" | "\u{2014}") {
            out.push(Token::comma());
            continue;
        }
        let mut word = raw.trim_start_matches(LEADING);
        let mut separated = false;
        loop {
            let trimmed = word.trim_end_matches(TRAILING);
            let stripped = trimmed.trim_end_matches([',', ':']);
            separated |= stripped.len() != trimmed.len();
            if stripped.len() == word.len() {
                break;
            }
            word = stripped;
        }
        if !word.is_empty() {
            out.extend(expand(word));
        }
        if separated {
            out.push(Token::comma());
        }
    }
    out
}

/// Expands a contraction into its words; other words come back as one token.
fn expand(word: &str) -> Vec<Token> {
    let lower = word.to_lowercase();
    // The first part keeps its original spelling ("I" stays capital).
    let split = |stem_len: usize, stem: &str, rest: &[&str]| {
        let orig = word
            .get(..stem_len)
            .filter(|o| !o.is_empty())
            .unwrap_or(stem);
        let mut v = vec![Token::new(orig, stem)];
        v.extend(rest.iter().map(|r| Token::new(r, r)));
        v
    };
    let whole: Option<&[&str]> = match lower.as_str() {
        "can't" | "cant" | "cannot" => Some(&["can", "not"]),
        "won't" => Some(&["will", "not"]),
        "ain't" => Some(&["is", "not"]),
        "shan't" => Some(&["shall", "not"]),
        "im" => Some(&["i", "am"]),
        "ive" => Some(&["i", "have"]),
        "dont" => Some(&["do", "not"]),
        "doesnt" => Some(&["does", "not"]),
        "didnt" => Some(&["did", "not"]),
        "isnt" => Some(&["is", "not"]),
        "arent" => Some(&["are", "not"]),
        "wasnt" => Some(&["was", "not"]),
        "havent" => Some(&["have", "not"]),
        "hasnt" => Some(&["has", "not"]),
        "wouldnt" => Some(&["would", "not"]),
        _ => None,
    };
    if let Some(parts) = whole {
        let (first, rest) = parts.split_first().map_or(("", &[][..]), |(f, r)| (*f, r));
        let stem_len = if lower.starts_with(first) {
            first.len()
        } else {
            0
        };
        return split(stem_len, first, rest);
    }
    for (suffix, full) in [
        ("n't", "not"),
        ("'m", "am"),
        ("'ve", "have"),
        ("'ll", "will"),
        ("'re", "are"),
        ("'d", "would"),
    ] {
        if let Some(stem) = lower.strip_suffix(suffix) {
            if !stem.is_empty() {
                return split(stem.len(), stem, &[full]);
            }
        }
    }
    if let Some(stem) = lower.strip_suffix("'s") {
        const IS: &[&str] = &[
            "it", "that", "what", "he", "she", "there", "here", "who", "where", "name", "how",
        ];
        if is_in(IS, stem) {
            return split(stem.len(), stem, &["is"]);
        }
    }
    vec![Token::new(word, &lower)]
}

/// True if a new first-person clause starts right after position `k`.
fn starts_clause(tokens: &[Token], k: usize, after_comma: bool) -> bool {
    let next: Vec<&str> = tokens
        .iter()
        .skip(k + 1)
        .take_while(|t| !t.is_comma())
        .take(5)
        .map(|t| t.lower.as_str())
        .collect();
    let first = next.first().copied().unwrap_or("");
    if first == "my" || (after_comma && is_in(QUESTION_OPENERS, first)) {
        return true;
    }
    next.iter().take(4).any(|w| *w == "i" || *w == "we")
}

/// Splits a sentence into clauses: at a comma or a conjunction that a new
/// first-person clause follows ("I live in Paris, and my sister …", "… but I
/// moved"), or a comma before a question ("…, any tips?"). Other commas stay
/// inside the clause, where they separate list items ("tea, coffee and cake").
pub(crate) fn clauses(tokens: &[Token]) -> Vec<&[Token]> {
    let mut out = Vec::new();
    let mut start = 0;
    for (k, t) in tokens.iter().enumerate() {
        let boundary = if t.is_comma() {
            starts_clause(tokens, k, true)
        } else {
            k > start && is_in(CONJUNCTIONS, &t.lower) && starts_clause(tokens, k, false)
        };
        if boundary {
            if let Some(c) = tokens.get(start..k) {
                push_clause(&mut out, c);
            }
            start = k + 1;
        }
    }
    if let Some(c) = tokens.get(start..) {
        push_clause(&mut out, c);
    }
    out
}

fn push_clause<'t>(out: &mut Vec<&'t [Token]>, clause: &'t [Token]) {
    // Trailing commas left by a split are noise.
    let mut end = clause.len();
    while end > 0 && clause.get(end - 1).is_some_and(Token::is_comma) {
        end -= 1;
    }
    if let Some(c) = clause.get(..end) {
        if !c.is_empty() {
            out.push(c);
        }
    }
}

/// True if every word of the clause is filler ("In 2020," once its time is taken out).
pub(crate) fn only_fillers(tokens: &[Token]) -> bool {
    tokens
        .iter()
        .all(|t| t.is_comma() || is_in(FILLERS, &t.lower) || is_in(&["in", "on", "back"], &t.lower))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        tokenize(text).into_iter().map(|t| t.lower).collect()
    }

    #[test]
    fn contractions_expand() {
        assert_eq!(words("I'm here"), ["i", "am", "here"]);
        assert_eq!(words("I don't, really"), ["i", "do", "not", ",", "really"]);
        assert_eq!(
            words("I can't stand it"),
            ["i", "can", "not", "stand", "it"]
        );
        assert_eq!(words("My name's Tom"), ["my", "name", "is", "tom"]);
        assert_eq!(words("my sister's dog"), ["my", "sister's", "dog"]);
        assert_eq!(words("im from berlin"), ["i", "am", "from", "berlin"]);
        assert_eq!(tokenize("I’m")[0].orig, "I");
        assert_eq!(tokenize("Won't")[0].orig, "will");
        assert!(tokenize("I'm 'quoted'").iter().all(|t| !t.orig.is_empty()));
    }

    #[test]
    fn punctuation_is_trimmed_and_commas_kept() {
        assert_eq!(
            words("\"Paris,\" (France): nice!"),
            ["paris", ",", "france", ",", "nice"]
        );
        assert_eq!(words(" , "), [","]);
    }

    #[test]
    fn sentences_split_on_terminators() {
        let s = sentences("Hi! I live in Paris. Where do I eat? Pi is 3.14");
        assert_eq!(s.len(), 4);
        assert!(s[2].question);
        assert!(!s[1].question);
        assert_eq!(s[3].tokens.len(), 3);
        assert!(sentences("").is_empty());
        assert!(sentences("...?!").is_empty());
    }

    fn clause_words(text: &str) -> Vec<String> {
        let t = tokenize(text);
        clauses(&t)
            .iter()
            .map(|c| {
                c.iter()
                    .map(|t| t.lower.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }

    #[test]
    fn clauses_split_before_a_new_subject_only() {
        assert_eq!(
            clause_words("I like tea, coffee and cake"),
            ["i like tea , coffee and cake"]
        );
        assert_eq!(
            clause_words("I live in Paris and I love it"),
            ["i live in paris", "i love it"]
        );
        assert_eq!(
            clause_words("In 2020, I moved to Berlin"),
            ["in 2020", "i moved to berlin"]
        );
        assert_eq!(
            clause_words("I moved to Berlin, any tips"),
            ["i moved to berlin", "any tips"]
        );
        assert_eq!(
            clause_words("I live in Paris, France"),
            ["i live in paris , france"]
        );
    }
}
