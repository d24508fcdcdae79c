//! Context assembly: the system prompt, long-term memories, a rolling summary
//! and the newest turns of the session, fitted to an input token budget.
//! Pure and deterministic: the same inputs give the same prompt.

use serde::{Deserialize, Serialize};

use crate::llm::ChatMessage;
use crate::short_term::{Role, Turn};

/// Tokens a chat message costs beyond its text (role and separators, as in
/// OpenAI's ChatML accounting); close enough for Anthropic too.
pub const MESSAGE_OVERHEAD: usize = 4;

/// A long-term memory offered to the prompt, best first.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryLine {
    pub id: String,
    pub text: String,
    /// When the memory became true (ms); shown as a date.
    pub date: i64,
    /// When it was written, if it came from the current session (ms): a
    /// memory written from a turn still in the window repeats that turn.
    pub from_this_session_at: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContextBudget {
    /// Whole input: system prompt, memories, summary, turns and the new input.
    pub input_tokens: usize,
    /// At most this many tokens of long-term memories.
    pub memory_tokens: usize,
    /// At most this many recent turns (messages), however short.
    pub max_turns: usize,
}

impl Default for ContextBudget {
    fn default() -> Self {
        ContextBudget {
            input_tokens: 4000,
            memory_tokens: 600,
            max_turns: 12,
        }
    }
}

/// Where the input tokens went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenCounts {
    pub system: usize,
    pub memories: usize,
    pub summary: usize,
    pub turns: usize,
    /// The new user input.
    pub input: usize,
    pub total_input: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AssembledContext {
    /// System prompt, then the memory block, then the session summary.
    pub system: String,
    /// Recent turns, oldest first, then the new user input.
    pub messages: Vec<ChatMessage>,
    /// For each offered memory, whether it made it into the prompt.
    pub included: Vec<bool>,
    /// Buffer turns left out (older than the window).
    pub turns_left_out: usize,
    pub tokens: TokenCounts,
}

/// Builds the prompt. The system prompt and the new input are always kept;
/// memories come next (up to their budget), then the newest turns that fit.
/// A memory that repeats a turn in the window is left out: nothing twice.
pub fn assemble(
    system_prompt: &str,
    memories: &[MemoryLine],
    summary: Option<&str>,
    buffer: &[Turn],
    input: &str,
    budget: &ContextBudget,
    count: &dyn Fn(&str) -> usize,
) -> AssembledContext {
    let system = count(system_prompt);
    let input_tokens = count(input) + MESSAGE_OVERHEAD;
    let summary_text = summary.map(|s| format!("\n\nEarlier in this session: {s}"));
    let summary_tokens = summary_text.as_deref().map_or(0, count);
    let fixed = system + input_tokens + summary_tokens;
    let room = budget.input_tokens.saturating_sub(fixed);
    let lines: Vec<String> = memories.iter().map(memory_line).collect();

    // First pass: memories by budget alone, to know what room turns get.
    let first = pick_memories(
        &lines,
        &vec![true; lines.len()],
        budget.memory_tokens.min(room),
        count,
    );
    let turns_room = room.saturating_sub(first.1);
    let window = newest_turns(buffer, turns_room, budget.max_turns, count);
    let window_turns = &buffer[buffer.len() - window.0..];

    // Second pass: drop memories the window already says, word for word or
    // as facts distilled from a turn still in it.
    let window_start = window_turns.first().map_or(i64::MAX, |t| t.at);
    let eligible: Vec<bool> = memories
        .iter()
        .map(|m| {
            !window_turns.iter().any(|t| same_text(&t.content, &m.text))
                && m.from_this_session_at.is_none_or(|at| at < window_start)
        })
        .collect();
    let (included, memory_tokens) =
        pick_memories(&lines, &eligible, budget.memory_tokens.min(room), count);

    let mut system_text = system_prompt.to_string();
    if included.iter().any(|&b| b) {
        system_text
            .push_str("\n\nWhat you remember about the user (from earlier sessions, with dates):");
        for (line, _) in lines.iter().zip(&included).filter(|(_, &inc)| inc) {
            system_text.push('\n');
            system_text.push_str(line);
        }
    }
    if let Some(s) = &summary_text {
        system_text.push_str(s);
    }
    let mut messages: Vec<ChatMessage> = window_turns
        .iter()
        .map(|t| ChatMessage::new(chat_role(t.role), t.content.clone()))
        .collect();
    messages.push(ChatMessage::new("user", input));
    let tokens = TokenCounts {
        system,
        memories: memory_tokens,
        summary: summary_tokens,
        turns: window.1,
        input: input_tokens,
        total_input: system + memory_tokens + summary_tokens + window.1 + input_tokens,
    };
    AssembledContext {
        system: system_text,
        messages,
        included,
        turns_left_out: buffer.len() - window.0,
        tokens,
    }
}

fn memory_line(m: &MemoryLine) -> String {
    let date = chrono::DateTime::from_timestamp_millis(m.date)
        .map(|d| d.format("%Y-%m-%d").to_string())
        .unwrap_or_default();
    format!("- [{date}] {}", m.text)
}

/// Takes eligible lines in order while they fit; a line that does not fit is
/// skipped and shorter ones after it may still go in.
fn pick_memories(
    lines: &[String],
    eligible: &[bool],
    budget: usize,
    count: &dyn Fn(&str) -> usize,
) -> (Vec<bool>, usize) {
    let mut used = 0;
    let mut header = false;
    let header_cost = 16; // the block's heading line
    let included = lines
        .iter()
        .zip(eligible)
        .map(|(line, &ok)| {
            let cost = count(line) + 1 + if header { 0 } else { header_cost };
            if ok && used + cost <= budget {
                used += cost;
                header = true;
                true
            } else {
                false
            }
        })
        .collect();
    (included, used)
}

/// How many of the newest turns fit (count, tokens): contiguous from the end,
/// so the window never has a hole.
fn newest_turns(
    buffer: &[Turn],
    budget: usize,
    max_turns: usize,
    count: &dyn Fn(&str) -> usize,
) -> (usize, usize) {
    let mut used = 0;
    let mut n = 0;
    for t in buffer.iter().rev().take(max_turns) {
        let cost = count(&t.content) + MESSAGE_OVERHEAD;
        if used + cost > budget {
            break;
        }
        used += cost;
        n += 1;
    }
    (n, used)
}

fn chat_role(role: Role) -> &'static str {
    if role == Role::Assistant {
        "assistant"
    } else {
        "user"
    }
}

fn same_text(a: &str, b: &str) -> bool {
    crate::text::normalize(a).to_lowercase() == crate::text::normalize(b).to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> usize {
        s.split_whitespace().count()
    }

    fn turns(texts: &[&str]) -> Vec<Turn> {
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                Turn::new(
                    if i % 2 == 0 {
                        Role::User
                    } else {
                        Role::Assistant
                    },
                    *t,
                )
            })
            .collect()
    }

    fn mem(id: &str, text: &str) -> MemoryLine {
        MemoryLine {
            id: id.into(),
            text: text.into(),
            date: 1_683_417_600_000, // 2023-05-07
            from_this_session_at: None,
        }
    }

    #[test]
    fn keeps_system_memories_and_newest_turns_within_budget() {
        let buffer = turns(&["one two three", "four five", "six seven eight nine", "ten"]);
        let memories = [
            mem("a", "Alice lives in Paris"),
            mem("b", "Alice has a cat"),
        ];
        let budget = ContextBudget {
            input_tokens: 60,
            memory_tokens: 40,
            max_turns: 10,
        };
        let c = assemble(
            "Be brief.",
            &memories,
            None,
            &buffer,
            "hi there",
            &budget,
            &words,
        );
        assert!(c.system.starts_with("Be brief."));
        assert!(c.system.contains("- [2023-05-07] Alice lives in Paris"));
        assert_eq!(c.included, vec![true, true]);
        assert!(c.tokens.total_input <= 60, "{:?}", c.tokens);
        assert_eq!(
            c.messages.last().map(|m| m.content.as_str()),
            Some("hi there")
        );
        // The window is the newest turns, contiguous, oldest first.
        let kept: Vec<&str> = c.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(kept[kept.len() - 2], "ten");
        assert_eq!(c.turns_left_out + c.messages.len() - 1, buffer.len());
    }

    #[test]
    fn a_tight_budget_drops_turns_before_the_system_prompt_and_input() {
        let buffer = turns(&["a b c d e f g h", "i j k l"]);
        let budget = ContextBudget {
            input_tokens: 8,
            memory_tokens: 0,
            max_turns: 10,
        };
        let c = assemble("sys tem", &[], None, &buffer, "question", &budget, &words);
        assert_eq!(c.messages.len(), 1);
        assert_eq!(c.turns_left_out, 2);
        assert_eq!(c.system, "sys tem");
    }

    #[test]
    fn a_memory_repeating_a_window_turn_is_left_out() {
        let buffer = turns(&["I live in Paris", "Nice!"]);
        let memories = [mem("a", "i live in  paris"), mem("b", "Alice has a cat")];
        let c = assemble(
            "s",
            &memories,
            None,
            &buffer,
            "q",
            &ContextBudget::default(),
            &words,
        );
        assert_eq!(c.included, vec![false, true]);
        assert!(!c.system.contains("paris"));
    }

    #[test]
    fn a_fact_distilled_from_a_window_turn_is_left_out() {
        let buffer = turns(&["I live in Paris", "Nice!"]);
        let mut fresh = mem("a", "User lives in Paris");
        fresh.from_this_session_at = Some(buffer[0].at);
        let mut older = mem("b", "User has a cat");
        older.from_this_session_at = Some(buffer[0].at - 1);
        let c = assemble(
            "s",
            &[fresh, older],
            None,
            &buffer,
            "q",
            &ContextBudget::default(),
            &words,
        );
        assert_eq!(c.included, vec![false, true]);
    }

    #[test]
    fn same_inputs_same_prompt_and_max_turns_caps_the_window() {
        let buffer = turns(&["a", "b", "c", "d", "e"]);
        let budget = ContextBudget {
            max_turns: 2,
            ..ContextBudget::default()
        };
        let one = assemble("s", &[], Some("we met"), &buffer, "q", &budget, &words);
        let two = assemble("s", &[], Some("we met"), &buffer, "q", &budget, &words);
        assert_eq!(one, two);
        assert_eq!(one.messages.len(), 3);
        assert!(one.system.ends_with("Earlier in this session: we met"));
        assert_eq!(
            one.tokens.summary,
            words("\n\nEarlier in this session: we met")
        );
    }
}
