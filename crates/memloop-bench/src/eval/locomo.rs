//! LoCoMo's JSON into the generic format, handling the quirks listed in
//! shared/data/README.md: sessions enumerated by their `session_N` keys,
//! image captions kept with the turn, evidence ids split on `;`, `,` and
//! white space, `D30:05` read as `D30:5`, unknown ids skipped and counted.

use std::collections::HashSet;
use std::path::Path;

use anyhow::Context;
use chrono::NaiveDateTime;
use serde_json::Value;

use super::format::{Conversation, Question, Session, Turn};

/// LoCoMo's question categories, 1 to 5 (its paper, Table 1).
const CATEGORY_NAMES: [&str; 5] = [
    "multi-hop",
    "temporal",
    "open-domain",
    "single-hop",
    "adversarial",
];

#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct SkipReport {
    /// Evidence entries that are not of the form D<session>:<turn>.
    pub unparseable_evidence: Vec<String>,
    /// Evidence ids naming turns that do not exist.
    pub unknown_evidence: Vec<String>,
    /// Questions left without any usable evidence (excluded from recall).
    pub questions_without_evidence: usize,
    /// Turns longer than a memory may be, stored as several pieces.
    pub split_turns: usize,
}

/// "1:56 pm on 8 May, 2023" → RFC 3339 (UTC; the data set gives no zone).
pub fn parse_date(s: &str) -> Option<String> {
    let normalized = s.trim().replace("am on", "AM on").replace("pm on", "PM on");
    NaiveDateTime::parse_from_str(&normalized, "%I:%M %p on %d %B, %Y")
        .ok()
        .map(|t| t.and_utc().to_rfc3339())
}

/// `D30:05` → `D30:5`; None for anything not of the form D<n>:<n>.
fn normalize_id(raw: &str) -> Option<String> {
    let rest = raw.trim().strip_prefix('D')?;
    let (s, t) = rest.split_once(':')?;
    let (s, t): (u32, u32) = (s.parse().ok()?, t.parse().ok()?);
    Some(format!("D{s}:{t}"))
}

pub fn load(path: &Path) -> anyhow::Result<(Vec<Conversation>, SkipReport)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let data: Value = serde_json::from_str(&text).map_err(|e| {
        memloop::Error::invalid(format!("{} is not LoCoMo JSON: {e}", path.display()))
    })?;
    let list = data.as_array().ok_or_else(|| {
        memloop::Error::invalid(format!(
            "{} is not a JSON list of conversations",
            path.display()
        ))
    })?;
    let mut skips = SkipReport::default();
    let mut out = Vec::new();
    for (i, conv) in list.iter().enumerate() {
        out.push(convert(conv, i, &mut skips)?);
    }
    Ok((out, skips))
}

fn convert(conv: &Value, index: usize, skips: &mut SkipReport) -> anyhow::Result<Conversation> {
    let id = conv["sample_id"]
        .as_str()
        .map_or_else(|| format!("conversation-{index}"), String::from);
    let c = &conv["conversation"];
    let mut numbers: Vec<u32> = c
        .as_object()
        .map(|o| {
            o.keys()
                .filter_map(|k| k.strip_prefix("session_").and_then(|n| n.parse().ok()))
                .collect()
        })
        .unwrap_or_default();
    numbers.sort_unstable();
    let mut sessions = Vec::new();
    let mut known: HashSet<String> = HashSet::new();
    for n in numbers {
        let Some(turns) = c[format!("session_{n}")].as_array() else {
            continue;
        };
        let date = c[format!("session_{n}_date_time")]
            .as_str()
            .and_then(parse_date);
        let mut out_turns = Vec::new();
        for t in turns {
            let (Some(dia), Some(speaker)) = (t["dia_id"].as_str(), t["speaker"].as_str()) else {
                continue;
            };
            let Some(tid) = normalize_id(dia) else {
                continue;
            };
            let mut text = t["text"].as_str().unwrap_or_default().to_string();
            if let Some(caption) = t["blip_caption"].as_str() {
                text.push_str(&format!(" [shared an image: {caption}]"));
            }
            known.insert(tid.clone());
            out_turns.push(Turn {
                id: tid,
                speaker: speaker.to_string(),
                text,
                timestamp: None,
            });
        }
        sessions.push(Session {
            id: n.to_string(),
            date,
            turns: out_turns,
        });
    }
    let mut questions = Vec::new();
    for q in conv["qa"].as_array().map(Vec::as_slice).unwrap_or_default() {
        let mut evidence = Vec::new();
        for entry in q["evidence"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            let Some(s) = entry.as_str() else { continue };
            for part in s
                .split(|ch: char| ch == ';' || ch == ',' || ch.is_whitespace())
                .filter(|p| !p.is_empty())
            {
                match normalize_id(part) {
                    None => skips.unparseable_evidence.push(format!("{id}: {part}")),
                    Some(tid) if !known.contains(&tid) => {
                        skips.unknown_evidence.push(format!("{id}: {tid}"))
                    }
                    Some(tid) if !evidence.contains(&tid) => evidence.push(tid),
                    Some(_) => {}
                }
            }
        }
        if evidence.is_empty() {
            skips.questions_without_evidence += 1;
        }
        let answer = q
            .get("answer")
            .or_else(|| q.get("adversarial_answer"))
            .map(|a| match a {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            });
        questions.push(Question {
            question: q["question"].as_str().unwrap_or_default().to_string(),
            answer,
            evidence,
            category: q["category"].as_u64().map(|c| c.to_string()),
            category_name: q["category"]
                .as_u64()
                .and_then(|c| CATEGORY_NAMES.get((c as usize).wrapping_sub(1)))
                .map(|n| n.to_string()),
            // LoCoMo does not say when a question is asked: after the last
            // session (the eval's default).
            date: None,
        });
    }
    Ok(Conversation {
        id,
        sessions,
        questions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_ids() {
        assert_eq!(
            parse_date("1:56 pm on 8 May, 2023").as_deref(),
            Some("2023-05-08T13:56:00+00:00")
        );
        assert_eq!(
            parse_date("10:04 am on 19 January, 2024").as_deref(),
            Some("2024-01-19T10:04:00+00:00")
        );
        assert_eq!(normalize_id("D30:05").as_deref(), Some("D30:5"));
        assert_eq!(normalize_id("D8"), None);
        assert_eq!(normalize_id("session 3"), None);
    }

    #[test]
    fn quirky_evidence_is_split_normalised_and_counted() {
        let conv = serde_json::json!({
            "sample_id": "c1",
            "conversation": {
                "speaker_a": "A", "speaker_b": "B",
                "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"},
                              {"speaker": "B", "dia_id": "D1:2", "text": "look", "blip_caption": "a photo of a dog"}],
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_3_date_time": "1:56 pm on 9 May, 2023"
            },
            "qa": [
                {"question": "q1", "answer": 3, "evidence": ["D1:1; D1:02", "D9:9"], "category": 1},
                {"question": "q2", "adversarial_answer": "x", "evidence": ["nonsense"], "category": 5}
            ]
        });
        let mut skips = SkipReport::default();
        let c = convert(&conv, 0, &mut skips).unwrap();
        assert_eq!(
            c.sessions.len(),
            1,
            "date keys without a session are ignored"
        );
        assert!(c.sessions[0].turns[1]
            .text
            .ends_with("[shared an image: a photo of a dog]"));
        assert_eq!(c.questions[0].evidence, vec!["D1:1", "D1:2"]);
        assert_eq!(c.questions[0].answer.as_deref(), Some("3"));
        assert_eq!(skips.unknown_evidence, vec!["c1: D9:9"]);
        assert_eq!(skips.unparseable_evidence, vec!["c1: nonsense"]);
        assert_eq!(skips.questions_without_evidence, 1);
        assert_eq!(c.questions[0].category_name.as_deref(), Some("multi-hop"));
        assert!(c.questions[1].adversarial());
    }
}
