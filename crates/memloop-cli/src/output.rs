//! Printing: JSON on stdout with --json, readable lines otherwise.
//!
//! Readable lines show stored text through [`printable`]: a memory is data a
//! user or a model wrote, and raw control characters in it (ESC sequences that
//! retitle the terminal or clear the screen, a newline that forges a second
//! line) must not reach the terminal. JSON escapes them by itself.

use std::borrow::Cow;

use indicatif::ProgressBar;

use memloop::time::to_rfc3339;
use memloop::{HistoryEntry, MemoryById, MemoryRecord, RecordStatus, SearchHit, WriteResult};
use serde::Serialize;

/// A failure whose JSON answer is already on stdout (a report that says
/// what failed): with --json nothing more is printed there, so stdout
/// stays one document; the exit code and the stderr line still say it.
#[derive(Debug)]
pub struct Reported(pub String);

impl std::fmt::Display for Reported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Reported {}

/// `text` with control characters (and the bidirectional overrides that can
/// make a line read differently from what it holds) escaped as `\u{..}`,
/// `\n`, `\t`: one stored text prints as one inert line.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if needs_escape(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Like [`printable`], but keeps line breaks: for multi-line text that is
/// meant to be read as lines (an assembled context, a model's reply).
pub fn printable_lines(text: &str) -> String {
    text.split('\n')
        .map(printable)
        .collect::<Vec<_>>()
        .join("\n")
}

fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

pub struct Output {
    pub json: bool,
}

impl Output {
    /// One JSON document on stdout, as the measuring tools print it.
    pub fn json_value<T: Serialize>(&self, v: &T) -> anyhow::Result<()> {
        self.tools().json_value(v)
    }

    pub fn writes(&self, results: &[WriteResult]) -> anyhow::Result<()> {
        if self.json {
            return self.json_value(&serde_json::json!({ "results": results }));
        }
        for r in results {
            println!("{:<6} {}  {}", r.event.as_str(), r.id, printable(&r.memory));
            if let Some(prev) = &r.previous_memory {
                println!("       was: {}", printable(prev));
            }
        }
        Ok(())
    }

    /// Search hits, after how the query's time was read when it named one.
    pub fn hits(
        &self,
        hits: &[SearchHit],
        time: Option<&memloop::TimeReading>,
        rerank: Option<&memloop::rerank::RerankReport>,
    ) -> anyhow::Result<()> {
        if self.json {
            let mut v = serde_json::json!({ "results": hits });
            if let Some(t) = time {
                v["time"] = serde_json::to_value(t)?;
            }
            if let Some(r) = rerank {
                v["rerank"] = serde_json::to_value(r)?;
            }
            return self.json_value(&v);
        }
        if let Some(t) = time {
            println!("{t}");
        }
        if let Some(r) = rerank {
            let ms = r.latency_us as f64 / 1000.0;
            match &r.error {
                None => println!(
                    "reranked the top {} by {} in {ms:.1} ms",
                    r.candidates, r.reranker
                ),
                Some(e) => println!("not reranked ({}: {e}): the fused order stands", r.reranker),
            }
        }
        if hits.is_empty() {
            println!("no memories found");
        }
        for (i, h) in hits.iter().enumerate() {
            let vec = h.scores.vector.map_or("-".into(), |v| format!("{v:.3}"));
            let kw = h.scores.bm25.map_or("-".into(), |v| format!("{v:.2}"));
            println!(
                "{:>2}. {:.3} (vector {vec}, bm25 {kw})  {}  [{}]",
                i + 1,
                h.score,
                printable(&h.record.text),
                printable(&h.record.id)
            );
            if let Some(r) = h.scores.rerank {
                let score = r.score.map_or("-".into(), |s| format!("{s:.3}"));
                println!(
                    "      reranker {score}, fused position {}",
                    r.fused_position
                );
            }
            if h.scores.graph > 0.0 {
                println!("      linked through an entity a better hit names");
            }
            if let Some(r) = &h.superseded_by {
                println!(
                    "      stale: since replaced by {}  [{}]",
                    printable(&r.text),
                    printable(&r.id)
                );
            }
        }
        Ok(())
    }

    /// One memory read by id, with where it stands at `now` (current,
    /// deleted, superseded and by what, expired).
    pub fn record(&self, r: &MemoryRecord, now: i64) -> anyhow::Result<()> {
        let shown = MemoryById::new(r, now);
        if self.json {
            return self.json_value(&shown);
        }
        println!("id:         {}", printable(&r.id));
        println!("memory:     {}", printable(&r.text));
        println!("kind:       {}", r.kind.as_str());
        for (name, v) in [
            ("user", &r.scope.user_id),
            ("agent", &r.scope.agent_id),
            ("session", &r.scope.session_id),
        ] {
            if let Some(v) = v {
                println!("{name:<11} {}", printable(v));
            }
        }
        println!("metadata:   {}", r.metadata);
        println!("created:    {}", to_rfc3339(r.created_at));
        println!("updated:    {}", to_rfc3339(r.updated_at));
        match (shown.status, shown.superseded_by) {
            (RecordStatus::Current, None) => println!("status:     current"),
            (RecordStatus::Current, Some(by)) => println!(
                "status:     current, holding a claim since replaced by {}",
                printable(by)
            ),
            (RecordStatus::Deleted, _) => println!("status:     deleted"),
            (RecordStatus::Expired, _) => println!("status:     expired (gc will delete it)"),
            (RecordStatus::Superseded, by) => {
                println!("status:     superseded by {}", printable(by.unwrap_or("-")))
            }
        }
        if let Some(t) = r.valid_until {
            println!("valid until {}", to_rfc3339(t));
        }
        if let Some(t) = r.expires_at {
            println!("expires:    {}", to_rfc3339(t));
        }
        Ok(())
    }

    pub fn records(&self, rs: &[MemoryRecord]) -> anyhow::Result<()> {
        if self.json {
            return self.json_value(&serde_json::json!({ "results": rs }));
        }
        if rs.is_empty() {
            println!("no memories");
        }
        for r in rs {
            let gone = if r.valid_until.is_some() {
                " (no longer current)"
            } else {
                ""
            };
            println!(
                "{}  {}  {}{gone}",
                printable(&r.id),
                to_rfc3339(r.created_at),
                printable(&r.text)
            );
        }
        Ok(())
    }

    pub fn history(&self, entries: &[HistoryEntry]) -> anyhow::Result<()> {
        if self.json {
            return self.json_value(&serde_json::json!({ "results": entries }));
        }
        for e in entries {
            let old = printable(e.old_memory.as_deref().unwrap_or("-"));
            let new = printable(e.new_memory.as_deref().unwrap_or("-"));
            let reason = e
                .reason
                .as_deref()
                .map(|r| format!("  ({})", printable(r)))
                .unwrap_or_default();
            println!(
                "{}  {:<6} {old} -> {new}{reason}",
                to_rfc3339(e.at),
                e.event.as_str()
            );
        }
        Ok(())
    }
}

/// A progress bar on stderr for a long phase; none with --json (the
/// measuring tools' bar, so every command's looks alike).
pub fn progress_bar(out: &Output, len: u64, label: &str) -> ProgressBar {
    memloop_bench::output::progress_bar(&out.tools(), len, label)
}

impl Output {
    /// The same choice of text or JSON, for `bench` and `eval`.
    pub fn tools(&self) -> memloop_bench::output::Output {
        memloop_bench::output::Output { json: self.json }
    }
}
