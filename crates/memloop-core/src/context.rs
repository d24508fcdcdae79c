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
    /// Tokens of each section's block (one in two-layer mode).
    pub section_tokens: Vec<usize>,
    /// Buffer turns left out (older than the window).
    pub turns_left_out: usize,
    pub tokens: TokenCounts,
}

/// The heading of the one memory block of two-layer mode.
pub const MEMORY_HEADING: &str =
    "What you remember about the user (from earlier sessions, with dates):";

/// One block of memories in the prompt (three-layer mode has one per
/// layer), with its heading and its share of the memory budget.
#[derive(Debug, Clone, PartialEq)]
pub struct Section<'a> {
    pub heading: &'a str,
    /// Best first: chosen in this order.
    pub lines: &'a [MemoryLine],
    /// Its share of `memory_tokens` (0..1); what it leaves unused flows to
    /// the sections after it, then before it, in order.
    pub share: f32,
    /// Shown oldest first (episodes), whatever order they were chosen in.
    pub chronological: bool,
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
    let section = Section {
        heading: MEMORY_HEADING,
        lines: memories,
        share: 1.0,
        chronological: false,
    };
    assemble_sections(
        system_prompt,
        &[section],
        summary,
        buffer,
        input,
        budget,
        count,
    )
}

/// [`assemble`] with the memories in sections, each within its share of the
/// memory budget; `included` and `section_tokens` follow the sections'
/// order. One section with share 1 is exactly [`assemble`].
pub fn assemble_sections(
    system_prompt: &str,
    sections: &[Section<'_>],
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
    let memory_budget = budget.memory_tokens.min(room);
    let rendered: Vec<Vec<String>> = sections
        .iter()
        .map(|s| s.lines.iter().map(memory_line).collect())
        .collect();

    // First pass: memories by budget alone, to know what room turns get.
    let all_eligible: Vec<Vec<bool>> = rendered.iter().map(|l| vec![true; l.len()]).collect();
    let first = pick_sections(sections, &rendered, &all_eligible, memory_budget, count);
    let turns_room = room.saturating_sub(first.1.iter().sum());
    let window = newest_turns(buffer, turns_room, budget.max_turns, count);
    let window_turns = &buffer[buffer.len() - window.0..];

    // Second pass: drop memories the window already says, word for word or
    // as facts distilled from a turn still in it.
    let window_start = window_turns.first().map_or(i64::MAX, |t| t.at);
    let eligible: Vec<Vec<bool>> = sections
        .iter()
        .map(|s| {
            s.lines
                .iter()
                .map(|m| {
                    !window_turns.iter().any(|t| same_text(&t.content, &m.text))
                        && m.from_this_session_at.is_none_or(|at| at < window_start)
                })
                .collect()
        })
        .collect();
    let (included, section_tokens) =
        pick_sections(sections, &rendered, &eligible, memory_budget, count);
    let memory_tokens: usize = section_tokens.iter().sum();

    let mut system_text = system_prompt.to_string();
    for ((section, lines), inc) in sections.iter().zip(&rendered).zip(&included) {
        let mut chosen: Vec<usize> = (0..lines.len()).filter(|&i| inc[i]).collect();
        if chosen.is_empty() {
            continue;
        }
        if section.chronological {
            chosen.sort_by_key(|&i| section.lines[i].date);
        }
        system_text.push_str("\n\n");
        system_text.push_str(section.heading);
        for i in chosen {
            system_text.push('\n');
            system_text.push_str(&lines[i]);
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
        included: included.into_iter().flatten().collect(),
        section_tokens,
        turns_left_out: buffer.len() - window.0,
        tokens,
    }
}

/// Each section's lines within its share of `budget`, then what the
/// sections left unused offered to every section in order (sections after
/// the first that had room, so a layer with nothing to say gives its share
/// away). With one section of share 1 the second round adds nothing.
fn pick_sections(
    sections: &[Section<'_>],
    rendered: &[Vec<String>],
    eligible: &[Vec<bool>],
    budget: usize,
    count: &dyn Fn(&str) -> usize,
) -> (Vec<Vec<bool>>, Vec<usize>) {
    let mut picks: Vec<(Vec<bool>, usize)> = sections
        .iter()
        .zip(rendered)
        .zip(eligible)
        .map(|((s, lines), ok)| {
            let share = (budget as f64 * f64::from(s.share.clamp(0.0, 1.0))).floor() as usize;
            pick_memories(lines, ok, share, 0, count)
        })
        .collect();
    let mut left = budget.saturating_sub(picks.iter().map(|p| p.1).sum());
    for ((lines, ok), pick) in rendered.iter().zip(eligible).zip(&mut picks) {
        if left == 0 {
            break;
        }
        let open: Vec<bool> = ok.iter().zip(&pick.0).map(|(&o, &inc)| o && !inc).collect();
        let (more, used) = pick_memories(lines, &open, left, pick.1, count);
        for (inc, m) in pick.0.iter_mut().zip(more) {
            *inc |= m;
        }
        pick.1 += used;
        left -= used;
    }
    picks.into_iter().unzip()
}

fn memory_line(m: &MemoryLine) -> String {
    let date = chrono::DateTime::from_timestamp_millis(m.date)
        .map(|d| d.format("%Y-%m-%d").to_string())
        .unwrap_or_default();
    format!("- [{date}] {}", m.text)
}

/// Takes eligible lines in order while they fit; a line that does not fit is
/// skipped and shorter ones after it may still go in.
/// `spent` is what the section already holds (its heading is paid when
/// non-zero); the returned count is what these lines add.
fn pick_memories(
    lines: &[String],
    eligible: &[bool],
    budget: usize,
    spent: usize,
    count: &dyn Fn(&str) -> usize,
) -> (Vec<bool>, usize) {
    let mut used = 0;
    let mut header = spent > 0;
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

#[cfg(test)]
mod section_tests {
    use super::*;

    fn words(s: &str) -> usize {
        s.split_whitespace().count()
    }

    fn line(id: &str, text: &str, date: i64) -> MemoryLine {
        MemoryLine {
            id: id.into(),
            text: text.into(),
            date,
            from_this_session_at: None,
        }
    }

    fn section<'a>(heading: &'a str, lines: &'a [MemoryLine], share: f32) -> Section<'a> {
        Section {
            heading,
            lines,
            share,
            chronological: false,
        }
    }

    #[test]
    fn one_section_of_share_one_is_the_two_layer_prompt() {
        let lines = [
            line("a", "Alice lives in Paris", 0),
            line("b", "Alice has a cat", 0),
        ];
        let budget = ContextBudget {
            input_tokens: 100,
            memory_tokens: 25,
            max_turns: 4,
        };
        let two = assemble("s", &lines, Some("we met"), &[], "q", &budget, &words);
        let one = assemble_sections(
            "s",
            &[section(MEMORY_HEADING, &lines, 1.0)],
            Some("we met"),
            &[],
            "q",
            &budget,
            &words,
        );
        assert_eq!(two, one);
        assert_eq!(two.included, vec![true, false]);
    }

    #[test]
    fn each_section_keeps_to_its_share_and_unused_share_flows() {
        let facts: Vec<MemoryLine> = (0..6)
            .map(|i| line(&format!("f{i}"), "one two three four", i))
            .collect();
        let steps = [line("p", "deploy: git pull then make", 0)];
        let episodes = [line("e2", "second said", 2), line("e1", "first said", 1)];
        let budget = ContextBudget {
            input_tokens: 1000,
            memory_tokens: 90,
            max_turns: 4,
        };
        let mut ep = section("Episodes:", &episodes, 0.3);
        ep.chronological = true;
        let sections = [
            section("Facts:", &facts, 0.4),
            section("Procedures:", &steps, 0.3),
            ep,
        ];
        let c = assemble_sections("s", &sections, None, &[], "q", &budget, &words);
        // Each line costs its words + 3 (date, dash, newline) and a heading 16.
        let line_cost = 4 + 3;
        assert!(c.tokens.memories <= 90, "{:?}", c.section_tokens);
        assert_eq!(c.section_tokens.iter().sum::<usize>(), c.tokens.memories);
        // Procedures and episodes used less than their share: the facts
        // got more than their own 36 tokens (two lines) from what was left.
        let facts_in = c.included[..6].iter().filter(|&&b| b).count();
        assert!(facts_in * line_cost + 16 > 36, "{facts_in} facts");
        assert!(c.included[6] && c.included[7] && c.included[8]);
        // Sections in order; episodes oldest first.
        let f = c.system.find("Facts:").unwrap();
        let p = c.system.find("Procedures:").unwrap();
        let e = c.system.find("Episodes:").unwrap();
        assert!(f < p && p < e);
        assert!(c.system.find("first said").unwrap() < c.system.find("second said").unwrap());
    }

    #[test]
    fn a_section_with_share_zero_gets_only_what_the_others_leave() {
        let big: Vec<MemoryLine> = (0..10)
            .map(|i| line(&format!("b{i}"), "a b c d e f", i))
            .collect();
        let small = [line("s", "tiny", 0)];
        let budget = ContextBudget {
            input_tokens: 1000,
            memory_tokens: 40,
            max_turns: 4,
        };
        let sections = [section("Big:", &big, 1.0), section("Small:", &small, 0.0)];
        let c = assemble_sections("s", &sections, None, &[], "q", &budget, &words);
        assert!(c.tokens.memories <= 40);
        // Big takes 16 + 2 × 9 = 34; the 6 left are too few for Small's heading.
        assert!(!c.included[10]);
        assert_eq!(c.section_tokens[1], 0);
    }
}
