//! A memory's keyword terms, analysed once when it is written and kept in
//! its row (`memories.terms`, schema version 7). Loading a partition read
//! every text and stemmed it again: most of a user's first search after
//! the store opened (docs/benchmarks.md, "Cold partitions"). Now a load
//! reads the terms; only rows written before version 7 are analysed.
//!
//! Format: the text's terms separated by single spaces, a newline, then
//! the context's terms the same way. The analyser's words are
//! alphanumeric, so neither separator occurs inside a term. A change to
//! the analyser must come with a migration that sets the column to NULL,
//! so that no load mixes old terms with new ones.

use std::sync::LazyLock;

use memloop_core::text::{Analyzer, StemMemo};

/// The store's analyser: every write, load and search goes through this one,
/// so stored terms and a query's terms cannot come from two.
static ANALYZER: LazyLock<Analyzer> = LazyLock::new(Analyzer::default);

pub(crate) fn analyzer() -> &'static Analyzer {
    &ANALYZER
}

/// A text's terms and its context's terms (stems remembered in `memo`).
pub(crate) fn analyse(
    text: &str,
    context: Option<&str>,
    memo: &mut StemMemo,
) -> (Vec<String>, Vec<String>) {
    let context_terms = context
        .map(|c| ANALYZER.terms_memo(c, memo))
        .unwrap_or_default();
    (ANALYZER.terms_memo(text, memo), context_terms)
}

/// The stored form of a text's and its context's terms.
pub(crate) fn of(text: &str, context: Option<&str>) -> String {
    let (terms, context_terms) = analyse(text, context, &mut StemMemo::default());
    let mut out = terms.join(" ");
    out.push('\n');
    out.push_str(&context_terms.join(" "));
    out
}

/// The text's terms and the context's terms of a stored form, as they
/// are read (nothing collected).
pub(crate) fn parse(stored: &str) -> (Terms<'_>, Terms<'_>) {
    let (own, context) = stored.split_once('\n').unwrap_or((stored, ""));
    (split(own), split(context))
}

pub(crate) type Terms<'a> = std::iter::Filter<std::str::Split<'a, char>, fn(&&str) -> bool>;

fn split(s: &str) -> Terms<'_> {
    s.split(' ').filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_read_back_as_the_analyser_gave_them() {
        let text = "Melanie went hiking with her kids, then painted a sunrise!";
        let context = "Caroline: How was the weekend?\nMelanie: Busy.";
        let stored = of(text, Some(context));
        let (own, ctx) = parse(&stored);
        let (own, ctx): (Vec<&str>, Vec<&str>) = (own.collect(), ctx.collect());
        assert_eq!(own, ANALYZER.terms(text));
        assert_eq!(ctx, ANALYZER.terms(context));
        assert!(own.contains(&"hike"), "{own:?}");
    }

    #[test]
    fn no_context_and_no_words_read_back_empty() {
        let read = |stored: &str| -> (Vec<String>, Vec<String>) {
            let (own, ctx) = parse(stored);
            (
                own.map(String::from).collect(),
                ctx.map(String::from).collect(),
            )
        };
        let none: Vec<String> = vec![];
        assert_eq!(
            read(&of("Hiking.", None)),
            (vec!["hike".to_string()], none.clone())
        );
        assert_eq!(read(&of("", None)), (none.clone(), none.clone()));
        assert_eq!(read(&of("the of and", Some("a an"))), (none.clone(), none));
    }
}
