//! Text normalisation shared by every backend: the content hash that makes
//! writes idempotent, and the keyword analyser behind BM25.

use sha2::{Digest, Sha256};

/// Collapses white space and trims, so that re-sending the same text with other spacing is the same memory.
pub fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` on one line (white space collapsed), cut after `max_chars`
/// characters with an ellipsis: a short form for a prompt or a summary.
pub fn one_line(text: &str, max_chars: usize) -> String {
    let line = normalize(text);
    match line.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// sha256 (hex) of the normalised, lower-cased text.
pub fn content_hash(text: &str) -> String {
    let digest = Sha256::digest(normalize(text).to_lowercase().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The identity of a memory to be written: its content hash, and for an
/// episode (a turn of a conversation) also the turn it is, since the same
/// words said twice are two episodes.
pub fn identity_hash(m: &crate::NewMemory) -> String {
    match (m.kind, m.provenance.turn_ids.is_empty()) {
        (crate::Kind::Episode, false) => content_hash(&format!(
            "{}\u{1f}{}\u{1f}{}",
            m.text,
            m.provenance.session_id.as_deref().unwrap_or_default(),
            m.provenance.turn_ids.join(",")
        )),
        _ => content_hash(&m.text),
    }
}

/// Checks a memory text: not blank, within the size limit.
pub fn validate_text(text: &str) -> crate::Result<()> {
    if text.trim().is_empty() {
        return Err(crate::Error::invalid(
            "the memory text is empty: give some text to store",
        ));
    }
    if text.len() > crate::MAX_TEXT_BYTES {
        return Err(crate::Error::invalid(format!(
            "the memory text is {} bytes, over the limit of {} bytes: split it into smaller memories",
            text.len(),
            crate::MAX_TEXT_BYTES
        )));
    }
    Ok(())
}

/// English function words that carry no topic: dropped from the keyword index
/// so that a question's "what did I ..." does not match every memory.
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "again", "all", "am", "an", "and", "any", "are", "as", "at", "be",
    "because", "been", "before", "being", "both", "but", "by", "can", "could", "d", "did", "do",
    "does", "doing", "during", "each", "for", "from", "had", "has", "have", "having", "he", "her",
    "here", "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself",
    "just", "ll", "m", "me", "more", "most", "my", "myself", "no", "nor", "not", "of", "off", "on",
    "once", "only", "or", "other", "our", "ours", "out", "over", "own", "re", "s", "same", "she",
    "should", "so", "some", "such", "t", "than", "that", "the", "their", "theirs", "them", "then",
    "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up",
    "ve", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom",
    "why", "will", "with", "would", "you", "your", "yours", "yourself",
];

fn is_stopword(word: &str) -> bool {
    STOPWORDS.binary_search(&word).is_ok()
}

/// The words of lower-cased text that are indexed: alphanumeric runs,
/// stop words dropped.
fn words(lower: &str) -> impl Iterator<Item = &str> {
    lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !is_stopword(w))
}

/// Stems already computed, word to stem (see [`Analyzer::terms_memo`]).
#[derive(Default)]
pub struct StemMemo(std::collections::HashMap<String, String>);

/// The keyword analyser: lower-case alphanumeric words, stop words dropped,
/// English Snowball stems (so "hiking" finds "hike").
pub struct Analyzer {
    stemmer: rust_stemmers::Stemmer,
}

impl Default for Analyzer {
    fn default() -> Self {
        Analyzer {
            stemmer: rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English),
        }
    }
}

impl Analyzer {
    pub fn terms(&self, text: &str) -> Vec<String> {
        words(&text.to_lowercase())
            .map(|w| self.stemmer.stem(w).into_owned())
            .collect()
    }

    /// As `terms`, remembering each word's stem in `memo`: for analysing
    /// many texts at once (loading a partition), where stemming is most of
    /// the cost and most words recur.
    pub fn terms_memo(&self, text: &str, memo: &mut StemMemo) -> Vec<String> {
        words(&text.to_lowercase())
            .map(|w| match memo.0.get(w) {
                Some(stem) => stem.clone(),
                None => {
                    let stem = self.stemmer.stem(w).into_owned();
                    memo.0.insert(w.to_string(), stem.clone());
                    stem
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stopwords_are_sorted_for_binary_search() {
        let mut sorted = STOPWORDS.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, STOPWORDS);
    }

    #[test]
    fn one_line_collapses_space_and_cuts_at_a_character() {
        assert_eq!(one_line("a\n  b\tc ", 10), "a b c");
        assert_eq!(one_line("ééé éé", 4), "ééé …");
        assert_eq!(one_line("abcd", 4), "abcd");
    }

    #[test]
    fn hash_ignores_spacing_and_case() {
        assert_eq!(content_hash("I like  tea "), content_hash("i like tea"));
        assert_ne!(content_hash("I like tea"), content_hash("I like coffee"));
    }

    #[test]
    fn remembered_stems_are_the_stems() {
        let a = Analyzer::default();
        let mut memo = StemMemo::default();
        for text in [
            "Hiking and biking in the hills",
            "HIKING again, hiked twice; running runs",
            "",
            "Ünïcode wörds: Straße, naïve café",
        ] {
            assert_eq!(a.terms_memo(text, &mut memo), a.terms(text), "{text}");
        }
        assert!(memo.0.contains_key("hiking"));
    }

    #[test]
    fn analyzer_stems_and_drops_stopwords() {
        let a = Analyzer::default();
        assert_eq!(a.terms("What did I say about hiking?"), vec!["say", "hike"]);
        assert_eq!(a.terms("Zürich, 2023!"), vec!["zürich", "2023"]);
    }

    #[test]
    fn validate_text_rejects_blank_and_huge() {
        assert!(validate_text("  \n").is_err());
        assert!(validate_text(&"x".repeat(crate::MAX_TEXT_BYTES + 1)).is_err());
        assert!(validate_text("fine").is_ok());
    }
}
