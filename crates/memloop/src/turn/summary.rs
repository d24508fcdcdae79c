//! The rolling session summary: turns that leave the prompt window are folded
//! into a few lines, so a long session keeps its thread without its length.

use memloop_core::short_term::{Summary, Turn};
use memloop_core::{ChatMessage, ChatRequest, Llm, Result};
use memloop_rules::gate::{self, GateConfig};

use crate::token_count::TokenCounter;

/// Folds `evicted` (the turns after `current.covers`, up to `covers`) into
/// the summary, within `max_tokens`. With an LLM the model rewrites the
/// summary; offline, the evicted turns the gate would keep are appended as
/// short lines and the oldest lines are dropped to fit.
pub fn fold_summary(
    current: &Summary,
    evicted: &[Turn],
    covers: usize,
    max_tokens: usize,
    llm: Option<&dyn Llm>,
    tokens: &TokenCounter,
    gate_cfg: &GateConfig,
) -> Result<Summary> {
    let text = match llm {
        Some(llm) => {
            let turns: String = evicted
                .iter()
                .map(|t| format!("{}: {}\n", t.role, t.content))
                .collect();
            let prompt = format!(
                "Current summary:\n{}\n\nNew turns:\n{turns}\nRewrite the summary to include the new turns. Keep names, facts, decisions and dates; drop small talk. At most {max_tokens} tokens. Reply with the summary only.",
                if current.text.is_empty() { "(none)" } else { &current.text }
            );
            let request = ChatRequest::new(
                "You maintain a concise running summary of a conversation.",
                vec![ChatMessage::new("user", prompt)],
            )
            .max_tokens(max_tokens.min(u32::MAX as usize) as u32);
            llm.chat(&request)?.text.trim().to_string()
        }
        None => extractive(&current.text, evicted, gate_cfg),
    };
    Ok(Summary {
        text: trim_to_tokens(&text, max_tokens, tokens),
        covers,
    })
}

fn extractive(current: &str, evicted: &[Turn], gate_cfg: &GateConfig) -> String {
    let mut lines: Vec<String> = current
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    for t in evicted {
        if gate::heuristic(&t.content, t.role.as_str(), gate_cfg).persist {
            lines.push(format!("{}: {}", t.role, first_sentence(&t.content)));
        }
    }
    lines.join("\n")
}

fn first_sentence(text: &str) -> &str {
    let end = text
        .char_indices()
        .find(|&(i, c)| matches!(c, '.' | '!' | '?') && i > 20)
        .map_or(text.len(), |(i, c)| i + c.len_utf8());
    text[..end].trim()
}

/// Drops the oldest lines until the text fits.
fn trim_to_tokens(text: &str, max_tokens: usize, tokens: &TokenCounter) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut start = 0;
    while start < lines.len() && tokens.count(&lines[start..].join("\n")) > max_tokens {
        start += 1;
    }
    lines[start..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token_count::Encoding;
    use memloop_core::short_term::Role;

    #[test]
    fn offline_summary_keeps_facts_drops_chit_chat_and_fits() {
        let tokens = TokenCounter::new(Encoding::O200k).unwrap();
        let evicted = vec![
            Turn::new(Role::User, "Hi there!"),
            Turn::new(
                Role::User,
                "I adopted a beagle named Rex last week. He is lovely.",
            ),
            Turn::new(Role::Assistant, "Thanks!"),
        ];
        let s = fold_summary(
            &Summary::default(),
            &evicted,
            3,
            100,
            None,
            &tokens,
            &GateConfig::default(),
        )
        .unwrap();
        assert_eq!(s.covers, 3);
        assert!(s.text.contains("beagle named Rex"), "{}", s.text);
        assert!(!s.text.contains("Hi there"));
        let tiny = trim_to_tokens("one line here\nsecond line here", 4, &tokens);
        assert_eq!(tiny, "second line here");
    }
}
