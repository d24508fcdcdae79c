//! The one sentence splitter of the rules, and the quote straightening that
//! both word readers share.
//!
//! The gate and fact extraction split a turn into sentences with the same
//! scan, [`sentences`]; they differ only in the [`Boundaries`] they pass.
//! Each then reads the words of a sentence its own way, because their word
//! lists and rules are written for different spellings: the gate
//! (`gate/mod.rs`) keeps contractions whole ("i'm", matched against "i'm"
//! in its lists), splits at every other character that is not a letter or
//! digit ("self-employed" is two words) and marks the pauses between words;
//! extraction (`extract/tokens.rs`) splits at white space only, keeps inner
//! punctuation ("self-employed", "$50") and expands contractions ("I'm" →
//! "I am") so that each rule sees one spelling.

/// Curly quotes as straight ones: ‘ ’ → `'`, “ ” → `"`. With `look_alikes`,
/// also the apostrophe look-alikes ʼ (U+02BC, a letter) and ′ (U+2032, the
/// prime), which extraction reads as apostrophes and the gate does not.
pub(crate) fn straighten(c: char, look_alikes: bool) -> char {
    match c {
        '\u{2018}' | '\u{2019}' => '\'',
        '\u{201c}' | '\u{201d}' => '"',
        '\u{02bc}' | '\u{2032}' if look_alikes => '\'',
        other => other,
    }
}

/// Where one reader's sentences end. A `?` always ends one and makes it a
/// question.
pub(crate) struct Boundaries {
    /// Characters that end a sentence wherever they stand, besides `?`.
    pub ends: &'static [char],
    /// When a full stop ends a sentence.
    pub full_stop: FullStop,
    /// Whether a hyphen or en dash with white space on either side ("so -
    /// anyway") ends a sentence, and an em dash anywhere.
    pub spaced_dashes: bool,
}

/// When a `.` ends a sentence.
pub(crate) enum FullStop {
    /// Unless it stands between two letters or digits ("3.5", "e.g"), so
    /// also in "end.)" and ".5".
    OutsideWord,
    /// Only before white space or at the end ("Paris. Then"), so not in
    /// "3.5", "e.g.," or "end.)".
    BeforeSpace,
}

impl Boundaries {
    /// The gate's: a line break, `!`, `…` and a spaced dash end a sentence
    /// too; `;` is a pause inside one.
    pub const GATE: Boundaries = Boundaries {
        ends: &['!', '\u{2026}', '\n'],
        full_stop: FullStop::OutsideWord,
        spaced_dashes: true,
    };

    /// Extraction's: `!`, `;` and a line break (also a lone `\r`) end a
    /// sentence; a dash stays inside one (its tokenizer reads it as a comma).
    pub const FACTS: Boundaries = Boundaries {
        ends: &['!', ';', '\n', '\r'],
        full_stop: FullStop::BeforeSpace,
        spaced_dashes: false,
    };
}

/// One sentence of a text, without the character that ended it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span<'t> {
    pub text: &'t str,
    /// Ended by `?`.
    pub question: bool,
}

/// Splits `text` into sentences at `b`'s boundaries. Every piece between two
/// boundaries comes back, also an empty or blank one (the readers drop
/// sentences without words); the last piece is never a question.
pub(crate) fn sentences<'t>(text: &'t str, b: &Boundaries) -> Vec<Span<'t>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut prev = ' ';
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        let ends = match c {
            '?' => true,
            '.' => match b.full_stop {
                FullStop::OutsideWord => {
                    !(prev.is_alphanumeric() && next.is_some_and(char::is_alphanumeric))
                }
                FullStop::BeforeSpace => next.is_none_or(char::is_whitespace),
            },
            '-' | '\u{2013}' | '\u{2014}' if b.spaced_dashes => {
                c == '\u{2014}' || prev.is_whitespace() || next.is_none_or(char::is_whitespace)
            }
            _ => b.ends.contains(&c),
        };
        if ends {
            out.push(Span {
                text: text.get(start..at).unwrap_or_default(),
                question: c == '?',
            });
            start = at + c.len_utf8();
        }
        prev = c;
    }
    out.push(Span {
        text: text.get(start..).unwrap_or_default(),
        question: false,
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split<'t>(text: &'t str, b: &Boundaries) -> Vec<(&'t str, bool)> {
        sentences(text, b)
            .into_iter()
            .map(|s| (s.text, s.question))
            .collect()
    }

    #[test]
    fn both_readers_split_at_question_and_exclamation_marks() {
        for b in [&Boundaries::GATE, &Boundaries::FACTS] {
            assert_eq!(
                split("Hi! Where? Pi is 3.14", b),
                [("Hi", false), (" Where", true), (" Pi is 3.14", false)]
            );
            assert_eq!(split("", b), [("", false)]);
        }
    }

    #[test]
    fn the_readers_differ_at_full_stops_dashes_and_semicolons() {
        let gate = &Boundaries::GATE;
        let facts = &Boundaries::FACTS;
        assert_eq!(split("end.)", gate), [("end", false), (")", false)]);
        assert_eq!(split("end.)", facts), [("end.)", false)]);
        assert_eq!(split("a.b", gate), [("a.b", false)]);
        assert_eq!(split("a.b", facts), [("a.b", false)]);
        assert_eq!(split("so - then", gate), [("so ", false), (" then", false)]);
        assert_eq!(split("so - then", facts), [("so - then", false)]);
        assert_eq!(split("self-made", gate), [("self-made", false)]);
        assert_eq!(split("a; b", gate), [("a; b", false)]);
        assert_eq!(split("a; b", facts), [("a", false), (" b", false)]);
        assert_eq!(split("a\u{2026}b", gate), [("a", false), ("b", false)]);
        assert_eq!(split("a\u{2026}b", facts), [("a\u{2026}b", false)]);
    }

    #[test]
    fn straighten_reads_curly_quotes_and_optionally_look_alikes() {
        let s = |t: &str, l: bool| t.chars().map(|c| straighten(c, l)).collect::<String>();
        assert_eq!(s("\u{201c}I\u{2019}m\u{201d}", false), "\"I'm\"");
        assert_eq!(s("I\u{02bc}m I\u{2032}m", false), "I\u{02bc}m I\u{2032}m");
        assert_eq!(s("I\u{02bc}m I\u{2032}m", true), "I'm I'm");
    }
}
