//! The last loop turns of each tenant, for the inspector's Turns view: a
//! bounded ring per tenant, in memory only, off unless `[server]
//! trace_ring` is set (a trace holds the texts of the turn and of what it
//! recalled). Each entry is the trace the route answered with.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use serde::Serialize;
use serde_json::Value;

/// The most tenants whose turns are kept at once: past it, the tenant
/// whose last turn is oldest is dropped, so keys cannot grow it unbounded.
const MAX_TENANTS: usize = 1024;

#[derive(Debug, Clone, Serialize)]
pub struct TraceEntry {
    /// Which route ran the turn: `turn`, `context` or `record`.
    pub route: &'static str,
    /// When it was answered (RFC 3339).
    pub at: String,
    pub trace: Value,
}

#[derive(Default)]
pub struct TraceRing {
    capacity: usize,
    rings: Mutex<HashMap<String, (u64, VecDeque<TraceEntry>)>>,
    clock: std::sync::atomic::AtomicU64,
}

impl TraceRing {
    /// Keeps the last `capacity` turns per tenant (0: none).
    pub fn new(capacity: usize) -> TraceRing {
        TraceRing {
            capacity,
            ..TraceRing::default()
        }
    }

    pub fn enabled(&self) -> bool {
        self.capacity > 0
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn push(&self, tenant: &str, route: &'static str, trace: Value) {
        if self.capacity == 0 {
            return;
        }
        let tick = self
            .clock
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let entry = TraceEntry {
            route,
            at: memloop::time::to_rfc3339(memloop::now_millis()),
            trace,
        };
        let Ok(mut rings) = self.rings.lock() else {
            return;
        };
        if !rings.contains_key(tenant) && rings.len() >= MAX_TENANTS {
            let oldest = rings
                .iter()
                .min_by_key(|(_, (t, _))| *t)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                rings.remove(&k);
            }
        }
        let (last, ring) = rings.entry(tenant.to_string()).or_default();
        *last = tick;
        if ring.len() == self.capacity {
            ring.pop_front();
        }
        ring.push_back(entry);
    }

    /// The tenant's last `limit` turns, newest first.
    pub fn recent(&self, tenant: &str, limit: usize) -> Vec<TraceEntry> {
        let Ok(rings) = self.rings.lock() else {
            return Vec::new();
        };
        rings
            .get(tenant)
            .map(|(_, ring)| ring.iter().rev().take(limit).cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_per_tenant_keeps_the_last_turns() {
        let ring = TraceRing::new(2);
        for i in 0..3 {
            ring.push("a", "turn", serde_json::json!({ "i": i }));
        }
        ring.push("b", "context", serde_json::json!({ "i": 9 }));
        let a: Vec<_> = ring
            .recent("a", 10)
            .iter()
            .map(|e| e.trace["i"].clone())
            .collect();
        assert_eq!(a, vec![serde_json::json!(2), serde_json::json!(1)]);
        assert_eq!(ring.recent("b", 10).len(), 1);
        assert!(ring.recent("c", 10).is_empty());
        assert_eq!(ring.recent("a", 1).len(), 1);
        let off = TraceRing::new(0);
        off.push("a", "turn", serde_json::json!({}));
        assert!(!off.enabled() && off.recent("a", 10).is_empty());
    }
}
