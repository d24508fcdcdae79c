//! The configured chat model as a listwise reranker: one call over the
//! candidates' short texts, answered with their numbers best first.

use std::sync::Arc;

use memloop_core::{ChatMessage, ChatRequest, Error, Llm, Result};

use super::Reranker;

/// Each candidate is shown to the model cut to this many characters, so
/// the prompt stays short whatever the memories hold.
const MAX_CHARS: usize = 300;

const SYSTEM: &str = "You rank memories by how well they help answer a question. \
Reply with a JSON array of the memories' numbers, most useful first, for example [3, 1, 2]. \
Include only numbers that were given. Reply with the array only.";

pub struct LlmReranker {
    llm: Arc<dyn Llm>,
}

impl LlmReranker {
    pub fn new(llm: Arc<dyn Llm>) -> LlmReranker {
        LlmReranker { llm }
    }
}

fn shown(text: &str) -> String {
    memloop_core::text::one_line(text, MAX_CHARS)
}

/// The prompt: the question, then the candidates numbered from 1.
fn prompt(query: &str, texts: &[String]) -> String {
    let mut p = format!("Question: {}\n\nMemories:\n", shown(query));
    for (i, t) in texts.iter().enumerate() {
        p.push_str(&format!("[{}] {}\n", i + 1, shown(t)));
    }
    p
}

/// The numbers of the reply's first JSON array (1-based, as shown) as
/// 0-based indices with falling scores (1 for the first), or what was
/// wrong with it. A number outside the list is kept, so the stage refuses
/// the answer rather than silently using part of it.
fn parse(reply: &str, n: usize) -> std::result::Result<Vec<(usize, f32)>, String> {
    let start = reply.find('[').ok_or("no [ … ] list of numbers")?;
    let end = reply[start..]
        .find(']')
        .map(|e| start + e)
        .ok_or("a list that does not end")?;
    let numbers: Vec<u64> = serde_json::from_str(&reply[start..=end])
        .map_err(|e| format!("a list that is not of whole numbers ({e})"))?;
    numbers
        .iter()
        .enumerate()
        .map(|(rank, &k)| {
            if k == 0 {
                return Err("number 0, but memories are numbered from 1".to_string());
            }
            Ok(((k - 1) as usize, 1.0 - rank as f32 / n.max(1) as f32))
        })
        .collect()
}

impl Reranker for LlmReranker {
    fn name(&self) -> String {
        format!("llm {}", self.llm.model_id())
    }

    fn scores(&self, query: &str, texts: &[String]) -> Result<Vec<(usize, f32)>> {
        // About four tokens a number with its comma, and a little slack.
        let max_tokens = 16 + 4 * texts.len() as u32;
        let request =
            ChatRequest::new(SYSTEM, vec![ChatMessage::new("user", prompt(query, texts))])
                .max_tokens(max_tokens)
                .temperature(0.0);
        let reply = self.llm.chat(&request)?;
        parse(&reply.text, texts.len()).map_err(|what| {
            let text: String = reply.text.chars().take(200).collect();
            Error::Remote(format!(
                "the model {} answered {what}: {text:?}",
                self.llm.model_id()
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listwise_answer_becomes_falling_scores() {
        let got = parse("Ranking: [2, 3, 1]", 3).unwrap();
        assert_eq!(got.iter().map(|p| p.0).collect::<Vec<_>>(), vec![1, 2, 0]);
        assert!(got[0].1 > got[1].1 && got[1].1 > got[2].1);
    }

    #[test]
    fn answers_that_are_not_a_list_of_numbers_are_refused() {
        for bad in ["2, 1", "[2, \"one\"]", "[0, 1]", "[1, 2", "[-1]", "[1.5]"] {
            assert!(parse(bad, 3).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_prompt_numbers_short_one_line_texts() {
        let long = format!("first line\n{}", "word ".repeat(200));
        let p = prompt("where?", &["Paris".to_string(), long]);
        assert!(p.contains("[1] Paris\n"));
        assert!(p.contains("[2] first line word"));
        assert!(p.lines().all(|l| l.chars().count() <= MAX_CHARS + 8));
    }
}
