//! `memloop eval gate`: how well the persistence gate keeps the turns that
//! questions need. Every turn of every conversation is judged as a user turn
//! (LoCoMo's turns are all between two people); a turn cited as evidence by
//! any question, of any category, is a positive, every other turn a negative.
//! No store and no model: this runs in well under a second.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use clap::Args;
use memloop::gate::{heuristic, GateConfig, GateDecision};
use serde_json::{json, Value};

use super::format::{self, Conversation};
use super::locomo;
use crate::output::Output;

#[derive(Args)]
pub struct GateArgs {
    /// LoCoMo's JSON, or the generic format (docs/eval-format.md) when the name ends in .jsonl.
    file: PathBuf,
    /// Also list up to N evidence turns the gate skipped, with the rule that skipped them.
    #[arg(long, default_value_t = 0)]
    misses: usize,
    /// Only the first N conversations.
    #[arg(long)]
    limit: Option<usize>,
    /// Turns with fewer words are kept only for a first-person fact (default: the gate's).
    #[arg(long)]
    min_words: Option<usize>,
    /// Judge only the words spoken: drop the image captions the LoCoMo loader
    /// appends to a turn (by default the gate sees the turn as memloop stores it).
    #[arg(long)]
    without_captions: bool,
}

/// How the LoCoMo loader (locomo.rs) appends a shared image's caption to a turn.
const CAPTION_MARK: &str = " [shared an image: ";

/// One judged turn.
struct Judged<'a> {
    conversation: &'a str,
    turn: &'a str,
    speaker: &'a str,
    text: &'a str,
    evidence: bool,
    decision: GateDecision,
}

pub fn run(out: &Output, args: &GateArgs) -> anyhow::Result<()> {
    let (mut conversations, skips) = if args.file.extension().is_some_and(|e| e == "jsonl") {
        (
            format::read_jsonl(&args.file)?,
            locomo::SkipReport::default(),
        )
    } else {
        locomo::load(&args.file)?
    };
    if let Some(n) = args.limit {
        conversations.truncate(n);
    }
    let mut cfg = GateConfig::default();
    if let Some(n) = args.min_words {
        cfg.min_words = n;
    }
    if args.without_captions {
        for t in conversations
            .iter_mut()
            .flat_map(|c| c.sessions.iter_mut())
            .flat_map(|s| s.turns.iter_mut())
        {
            if let Some(at) = t.text.find(CAPTION_MARK) {
                t.text.truncate(at);
            }
        }
    }
    let mut report = measure(&conversations, &cfg, args.misses);
    report["captions"] = json!(!args.without_captions);
    report["skipped"] = json!({
        "unparseable_evidence": skips.unparseable_evidence.len(),
        "unknown_evidence": skips.unknown_evidence.len(),
        "questions_without_evidence": skips.questions_without_evidence,
    });
    if out.json {
        out.json_value(&report)
    } else {
        table(&report);
        Ok(())
    }
}

/// Judges every turn and scores the decisions against the evidence.
fn measure(conversations: &[Conversation], cfg: &GateConfig, misses: usize) -> Value {
    let mut judged = Vec::new();
    // Evidence turns per question category, as (conversation index, turn id).
    let mut by_category: BTreeMap<String, HashSet<(usize, &str)>> = BTreeMap::new();
    let mut questions: BTreeMap<String, Vec<(usize, &[String])>> = BTreeMap::new();
    for (ci, conv) in conversations.iter().enumerate() {
        let evidence: HashSet<&str> = conv
            .questions
            .iter()
            .flat_map(|q| q.evidence.iter().map(String::as_str))
            .collect();
        for q in conv.questions.iter().filter(|q| !q.evidence.is_empty()) {
            let cat = q.category.clone().unwrap_or_else(|| "none".into());
            let set = by_category.entry(cat.clone()).or_default();
            set.extend(q.evidence.iter().map(|e| (ci, e.as_str())));
            questions.entry(cat).or_default().push((ci, &q.evidence));
        }
        for t in conv.sessions.iter().flat_map(|s| &s.turns) {
            judged.push(Judged {
                conversation: &conv.id,
                turn: &t.id,
                speaker: &t.speaker,
                text: &t.text,
                evidence: evidence.contains(t.id.as_str()),
                decision: heuristic(&t.text, "user", cfg),
            });
        }
    }
    let count = |evidence: bool, persist: bool| {
        judged
            .iter()
            .filter(|j| j.evidence == evidence && j.decision.persist == persist)
            .count()
    };
    let (tp, fp, fneg, tn) = (
        count(true, true),
        count(false, true),
        count(true, false),
        count(false, false),
    );
    let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    let (precision, recall) = (ratio(tp, tp + fp), ratio(tp, tp + fneg));
    let f1 = if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    };
    // Per conversation, the turns the gate kept.
    let kept: HashSet<(usize, &str)> = {
        let index: BTreeMap<&str, usize> = conversations
            .iter()
            .enumerate()
            .map(|(i, c)| (c.id.as_str(), i))
            .collect();
        judged
            .iter()
            .filter(|j| j.decision.persist)
            .filter_map(|j| index.get(j.conversation).map(|&ci| (ci, j.turn)))
            .collect()
    };
    let per_category: serde_json::Map<String, Value> = by_category
        .iter()
        .map(|(cat, turns)| {
            let found = turns.iter().filter(|t| kept.contains(t)).count();
            let qs = questions.get(cat).map(Vec::as_slice).unwrap_or_default();
            let whole = qs
                .iter()
                .filter(|(ci, ev)| ev.iter().all(|e| kept.contains(&(*ci, e.as_str()))))
                .count();
            let v = json!({
                "evidence_turns": turns.len(),
                "kept": found,
                "recall": ratio(found, turns.len()),
                "questions": qs.len(),
                "questions_with_all_evidence_kept": ratio(whole, qs.len()),
            });
            (cat.clone(), v)
        })
        .collect();
    let mut report = json!({
        "conversations": conversations.len(),
        "turns": judged.len(),
        "evidence_turns": tp + fneg,
        "kept": tp + fp,
        "kept_fraction": ratio(tp + fp, judged.len()),
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "counts": {"tp": tp, "fp": fp, "fn": fneg, "tn": tn},
        "per_category": per_category,
        "reasons": {
            "kept": reason_counts(judged.iter().filter(|j| j.decision.persist)),
            "skipped": reason_counts(judged.iter().filter(|j| !j.decision.persist)),
        },
    });
    if misses > 0 {
        report["misses"] = judged
            .iter()
            .filter(|j| j.evidence && !j.decision.persist)
            .take(misses)
            .map(|j| {
                json!({"conversation": j.conversation, "turn": j.turn, "speaker": j.speaker,
                    "text": j.text, "reason": j.decision.reason})
            })
            .collect();
    }
    report
}

/// How often each rule decided, by the rule's name without its marker
/// (`preference ("I love")` counts as `preference`); a skip names the kinds
/// of its sentences (`thanks + question without content`) and counts as the first.
fn reason_counts<'a>(judged: impl Iterator<Item = &'a Judged<'a>>) -> Value {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for j in judged {
        let r = &j.decision.reason;
        let name = r.split(" (").next().unwrap_or(r);
        let name = name.split(" + ").next().unwrap_or(name).to_string();
        *counts.entry(name).or_default() += 1;
    }
    json!(counts)
}

fn table(r: &Value) {
    let num = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    println!(
        "persistence gate over {} conversations: {} turns, {} cited as evidence",
        r["conversations"], r["turns"], r["evidence_turns"]
    );
    println!(
        "precision {:.3}  recall {:.3}  F1 {:.3}  kept {:.3} of turns ({})",
        num(&r["precision"]),
        num(&r["recall"]),
        num(&r["f1"]),
        num(&r["kept_fraction"]),
        r["kept"]
    );
    let c = &r["counts"];
    println!(
        "TP {}  FP {}  FN {}  TN {}",
        c["tp"], c["fp"], c["fn"], c["tn"]
    );
    println!("evidence recall by question category");
    let names = [
        ("1", "multi-hop"),
        ("2", "temporal"),
        ("3", "open-domain"),
        ("4", "single-hop"),
        ("5", "adversarial"),
    ];
    if let Some(cats) = r["per_category"].as_object() {
        for (cat, v) in cats {
            let name = names
                .iter()
                .find(|(n, _)| n == cat)
                .map_or("", |(_, name)| name);
            println!(
                "  {cat} {name:<12} {:.3} ({}/{} turns; all evidence kept for {:.3} of {} questions)",
                num(&v["recall"]),
                v["kept"],
                v["evidence_turns"],
                num(&v["questions_with_all_evidence_kept"]),
                v["questions"]
            );
        }
    }
    for (label, key) in [("kept by", "kept"), ("skipped as", "skipped")] {
        if let Some(reasons) = r["reasons"][key].as_object() {
            let mut list: Vec<(&String, &Value)> = reasons.iter().collect();
            list.sort_by_key(|(_, n)| std::cmp::Reverse(n.as_u64().unwrap_or(0)));
            let parts: Vec<String> = list.iter().map(|(k, n)| format!("{k} {n}")).collect();
            println!("{label}: {}", parts.join(", "));
        }
    }
    if let Some(misses) = r["misses"].as_array() {
        println!("evidence turns skipped (first {}):", misses.len());
        for m in misses {
            println!(
                "  {} {} [{}] {}: {}",
                m["conversation"].as_str().unwrap_or_default(),
                m["turn"].as_str().unwrap_or_default(),
                m["reason"].as_str().unwrap_or_default(),
                m["speaker"].as_str().unwrap_or_default(),
                m["text"].as_str().unwrap_or_default()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use format::{Question, Session, Turn};

    #[test]
    fn counts_and_recall_on_a_hand_made_conversation() {
        let turn = |id: &str, text: &str| Turn {
            id: id.into(),
            speaker: "A".into(),
            text: text.into(),
            timestamp: None,
        };
        let conv = Conversation {
            id: "c".into(),
            sessions: vec![Session {
                id: "1".into(),
                date: None,
                turns: vec![
                    turn("T1", "I adopted a greyhound last week."),
                    turn("T2", "Thanks so much, Ben!"),
                    turn("T3", "Wow, that's awesome!"),
                    turn("T4", "ok"),
                ],
            }],
            questions: vec![Question {
                question: "What dog?".into(),
                answer: None,
                evidence: vec!["T1".into(), "T4".into()],
                category: Some("4".into()),
                category_name: None,
                date: None,
            }],
        };
        let r = measure(&[conv], &GateConfig::default(), 5);
        assert_eq!(r["counts"], json!({"tp": 1, "fp": 0, "fn": 1, "tn": 2}));
        assert_eq!(r["recall"], 0.5);
        assert_eq!(r["precision"], 1.0);
        assert_eq!(r["kept_fraction"], 0.25);
        assert_eq!(r["per_category"]["4"]["recall"], 0.5);
        assert_eq!(
            r["per_category"]["4"]["questions_with_all_evidence_kept"],
            0.0
        );
        assert_eq!(r["misses"][0]["turn"], "T4");
    }
}
