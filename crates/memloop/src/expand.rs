//! Entity expansion: from a search's best hits to other memories about the
//! same people, places and things (docs/retrieval.md). The store finds the
//! links (`LongTermStore::linked`); here they become hits, each scored
//! below the hit that led to it, so a direct hit is never pushed down by a
//! memory it links to unless that memory was a weaker direct hit itself.

use std::collections::HashMap;

use memloop_core::links::Links;
use memloop_core::{MemoryRecord, Result, SearchHit, SignalScores};
use memloop_longterm::graph::Expansion;
use memloop_longterm::{LongTermStore, SearchQuery};
use serde_json::Value;

/// The links of a memory written without any: the names in its text, and
/// relations from its fact structure or appositives, "my" being its
/// speaker (`metadata.speaker`) or the user.
pub(crate) fn fill_links(links: &mut Links, text: &str, metadata: &Value) {
    if links.is_empty() {
        let owner = metadata
            .get("speaker")
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .unwrap_or("user");
        *links = memloop_rules::extract::links::links_of(text, metadata, owner);
    }
}

/// `hits` with the memories linked to their top ones merged in, best first,
/// at most `query.top_k`. Searches of the past (`as_of`, superseded
/// versions) are left as they are: links are kept for current memories.
pub(crate) fn expand(
    store: &dyn LongTermStore,
    query: &SearchQuery,
    mut hits: Vec<SearchHit>,
    e: &Expansion,
) -> Result<Vec<SearchHit>> {
    if !e.is_on() || hits.is_empty() || query.as_of.is_some() || query.include_superseded {
        return Ok(hits);
    }
    let mut at: HashMap<String, usize> = hits
        .iter()
        .enumerate()
        .map(|(i, h)| (h.record.id.clone(), i))
        .collect();
    let mut frontier: Vec<(String, f32)> = hits
        .iter()
        .take(e.seeds)
        .map(|h| (h.record.id.clone(), h.score))
        .collect();
    for _ in 0..e.hops {
        let seeds: Vec<&str> = frontier.iter().map(|(id, _)| id.as_str()).collect();
        let score_of: HashMap<&str, f32> =
            frontier.iter().map(|(id, s)| (id.as_str(), *s)).collect();
        let mut next: Vec<(String, f32)> = Vec::new();
        for l in store.linked(&query.scope, &seeds, &e.limits)? {
            let w = e.weight * score_of.get(l.seed_id.as_str()).copied().unwrap_or(0.0);
            if w < query.min_score || !admitted(query, &l.record) {
                continue;
            }
            match at.get(&l.record.id) {
                Some(&i) => {
                    let h = &mut hits[i];
                    h.scores.graph = h.scores.graph.max(w);
                    h.score = h.score.max(w);
                }
                None => {
                    at.insert(l.record.id.clone(), hits.len());
                    next.push((l.record.id.clone(), w));
                    hits.push(SearchHit {
                        record: l.record,
                        score: w,
                        scores: SignalScores {
                            graph: w,
                            ..Default::default()
                        },
                        superseded_by: None,
                    });
                }
            }
        }
        next.sort_by(|a, b| b.1.total_cmp(&a.1));
        next.truncate(e.seeds);
        if next.is_empty() {
            break;
        }
        frontier = next;
    }
    // Stable: among equal scores the direct hit (earlier) stays first.
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    hits.truncate(query.top_k);
    Ok(hits)
}

fn admitted(query: &SearchQuery, rec: &MemoryRecord) -> bool {
    (query.kinds.is_empty() || query.kinds.contains(&rec.kind))
        && query.filter.as_ref().is_none_or(|f| f.matches(rec))
        && query.window_admits(rec.valid_from)
}
