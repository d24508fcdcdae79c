//! Printing: JSON on stdout with --json, readable lines otherwise.

use memloop::time::to_rfc3339;
use memloop::{HistoryEntry, MemoryRecord, SearchHit, WriteResult};
use serde::Serialize;

pub struct Output {
    pub json: bool,
}

impl Output {
    pub fn json_value<T: Serialize>(&self, v: &T) -> anyhow::Result<()> {
        println!("{}", serde_json::to_string_pretty(v)?);
        Ok(())
    }

    pub fn writes(&self, results: &[WriteResult]) -> anyhow::Result<()> {
        if self.json {
            return self.json_value(&serde_json::json!({ "results": results }));
        }
        for r in results {
            println!("{:<6} {}  {}", r.event.as_str(), r.id, r.memory);
            if let Some(prev) = &r.previous_memory {
                println!("       was: {prev}");
            }
        }
        Ok(())
    }

    pub fn hits(&self, hits: &[SearchHit]) -> anyhow::Result<()> {
        if self.json {
            return self.json_value(&serde_json::json!({ "results": hits }));
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
                h.record.text,
                h.record.id
            );
        }
        Ok(())
    }

    pub fn record(&self, r: &MemoryRecord) -> anyhow::Result<()> {
        if self.json {
            return self.json_value(r);
        }
        println!("id:         {}", r.id);
        println!("memory:     {}", r.text);
        println!("kind:       {}", r.kind.as_str());
        for (name, v) in [
            ("user", &r.scope.user_id),
            ("agent", &r.scope.agent_id),
            ("session", &r.scope.session_id),
        ] {
            if let Some(v) = v {
                println!("{name:<11} {v}");
            }
        }
        println!("metadata:   {}", r.metadata);
        println!("created:    {}", to_rfc3339(r.created_at));
        println!("updated:    {}", to_rfc3339(r.updated_at));
        if let Some(t) = r.valid_until {
            println!("valid until {} (deleted or superseded)", to_rfc3339(t));
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
            println!("{}  {}  {}{gone}", r.id, to_rfc3339(r.created_at), r.text);
        }
        Ok(())
    }

    pub fn history(&self, entries: &[HistoryEntry]) -> anyhow::Result<()> {
        if self.json {
            return self.json_value(&serde_json::json!({ "results": entries }));
        }
        for e in entries {
            let old = e.old_memory.as_deref().unwrap_or("-");
            let new = e.new_memory.as_deref().unwrap_or("-");
            let reason = e
                .reason
                .as_deref()
                .map(|r| format!("  ({r})"))
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
