//! The keyword side: the analyser's terms (the same as the embedded
//! store's) written as a `tsvector` literal, text terms weighted A and
//! context terms B, with positions so BM25 can count term frequencies; and
//! a query's terms as a `tsquery` matching any of them.

use std::collections::BTreeMap;

use memloop_core::text::Analyzer;
use memloop_longterm::keyword::bounded_context_weight;

/// PostgreSQL refuses longer lexemes; such a "word" is noise anyway.
const MAX_LEXEME_BYTES: usize = 2046;
/// The largest position a tsvector holds.
const MAX_POSITION: usize = 16_383;
/// The most positions one lexeme keeps.
const MAX_POSITIONS: usize = 256;

fn quote(term: &str) -> String {
    let mut out = String::with_capacity(term.len() + 2);
    out.push('\'');
    for c in term.chars() {
        match c {
            '\'' => out.push_str("''"),
            '\\' => out.push_str("\\\\"),
            _ => out.push(c),
        }
    }
    out.push('\'');
    out
}

fn usable(term: &str) -> bool {
    !term.is_empty() && term.len() <= MAX_LEXEME_BYTES
}

/// A memory's keyword side as stored: its tsvector literal, its weighted
/// length, and the share of `context_weight` its context terms weigh at.
pub struct Document {
    pub tsv: String,
    pub len: f32,
    /// `context_scale`: below 1 when the context is long enough to weigh
    /// more than `CONTEXT_WORDS` in all (`bounded_context_weight`, as the
    /// embedded index weighs it).
    pub context_scale: f32,
}

/// The keyword side of a memory: its own terms count 1 each, its context
/// terms `context_weight` each, bounded as the embedded index bounds it.
pub fn document(
    analyzer: &Analyzer,
    text: &str,
    context: Option<&str>,
    context_weight: f32,
) -> Document {
    let own = analyzer.terms(text);
    let mut ctx = if context_weight > 0.0 {
        context.map(|c| analyzer.terms(c)).unwrap_or_default()
    } else {
        Vec::new()
    };
    ctx.retain(|t| usable(t));
    let bounded = bounded_context_weight(context_weight, ctx.len());
    let context_scale = if context_weight > 0.0 {
        bounded / context_weight
    } else {
        1.0
    };
    let mut positions: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut len = 0.0f32;
    for (i, (term, weight)) in own
        .iter()
        .map(|t| (t, 'A'))
        .chain(ctx.iter().map(|t| (t, 'B')))
        .enumerate()
    {
        if !usable(term) {
            continue;
        }
        len += if weight == 'A' { 1.0 } else { bounded };
        let list = positions.entry(term.as_str()).or_default();
        if list.len() < MAX_POSITIONS {
            list.push(format!("{}{weight}", (i + 1).min(MAX_POSITION)));
        }
    }
    let literal = positions
        .iter()
        .map(|(t, p)| format!("{}:{}", quote(t), p.join(",")))
        .collect::<Vec<_>>()
        .join(" ");
    Document {
        tsv: literal,
        len,
        context_scale,
    }
}

/// The distinct query terms and a tsquery matching any of them (None: no
/// term to look for).
pub fn query(analyzer: &Analyzer, text: &str) -> (Vec<String>, Option<String>) {
    let mut terms: Vec<String> = analyzer
        .terms(text)
        .into_iter()
        .filter(|t| usable(t))
        .collect();
    terms.sort();
    terms.dedup();
    if terms.is_empty() {
        return (terms, None);
    }
    let q = terms
        .iter()
        .map(|t| quote(t))
        .collect::<Vec<_>>()
        .join(" | ");
    (terms, Some(q))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_counts_text_and_context() {
        let a = Analyzer::default();
        let d = document(&a, "hiking hiking Zürich", Some("mountain"), 0.5);
        assert_eq!(d.tsv, "'hike':1A,2A 'mountain':4B 'zürich':3A");
        assert!((d.len - 3.5).abs() < 1e-6);
        assert_eq!(d.context_scale, 1.0);
        let (_, q) = query(&a, "What about hiking in Zürich, hiking?");
        assert_eq!(q.as_deref(), Some("'hike' | 'zürich'"));
        assert_eq!(query(&a, "what is the").1, None);
    }

    #[test]
    fn a_long_context_weighs_at_most_the_bound_in_all() {
        let a = Analyzer::default();
        let context = vec!["glacier"; 1000].join(" ");
        let d = document(&a, "hiking", Some(&context), 0.5);
        // 1000 context words at 0.5 would weigh 500; bounded, 64.
        assert!(
            (d.context_scale - 64.0 / 500.0).abs() < 1e-6,
            "{}",
            d.context_scale
        );
        assert!((d.len - (1.0 + 64.0)).abs() < 1e-3, "{}", d.len);
        // A context of 100 words at 0.5 (50 in all) is under the bound: untouched.
        let short = vec!["glacier"; 100].join(" ");
        let d = document(&a, "hiking", Some(&short), 0.5);
        assert_eq!(d.context_scale, 1.0);
        assert!((d.len - 51.0).abs() < 1e-3);
    }
}
