//! Search through the facade: the store's fused hits, the reranking stage,
//! entity expansion, and the retrievals counted; and the switches each
//! front end maps onto a search (`expand`, `hops`, `rerank`, `rerank_top_n`).

use memloop_core::{Error, Result, SearchHit};
use memloop_longterm::graph::Expansion;
use memloop_longterm::SearchQuery;

use super::Memory;
use crate::rerank::{RerankReport, RerankStage};

const NO_RERANKER: &str = "this search asks for reranking, but no reranker is configured: \
     set [rerank] kind (docs/retrieval.md, \"Reranking\") or leave rerank out";

/// A search's hits and what its reranking stage did (None: no stage ran).
#[derive(Debug, Clone)]
pub struct Searched {
    pub hits: Vec<SearchHit>,
    pub rerank: Option<RerankReport>,
}

impl Memory {
    /// A search's expansion from a front end's switches (REST's and MCP's
    /// `expand` and `hops`, the CLI's `--expand` and `--hops`): `expand`
    /// false turns it off; true, or `hops` alone, turns it on with the
    /// configured hops or those given. None: neither was given, the
    /// configured expansion applies.
    pub fn expansion_asked(
        &self,
        expand: Option<bool>,
        hops: Option<usize>,
    ) -> Result<Option<Expansion>> {
        if let Some(h) = hops {
            crate::config::check_hops(h, "hops")?;
        }
        // Turned on for this search: the configured expansion, or the
        // default one with the configured hops (`[search] hops`).
        let configured = if self.expansion.is_on() {
            self.expansion
        } else {
            Expansion {
                hops: match self.expansion.hops {
                    0 => Expansion::ON.hops,
                    h => h,
                },
                ..Expansion::ON
            }
        };
        Ok(match (expand, hops) {
            (Some(false), _) => Some(Expansion::OFF),
            (None, None) => None,
            (_, h) => Some(Expansion {
                hops: h.unwrap_or(configured.hops),
                ..configured
            }),
        })
    }

    /// A search's reranking depth (`SearchQuery::rerank`) from a front
    /// end's switches: `rerank` false turns it off; true, or `top_n`
    /// alone, asks for it (refused when no reranker is configured). None:
    /// neither was given, the configured stage applies.
    pub fn rerank_asked(
        &self,
        rerank: Option<bool>,
        top_n: Option<usize>,
    ) -> Result<Option<usize>> {
        match (rerank, top_n, self.rerank.as_ref()) {
            (Some(false), _, _) => Ok(Some(0)),
            (None, None, _) => Ok(None),
            (_, _, None) => Err(Error::invalid(NO_RERANKER)),
            (_, Some(n), Some(_)) => {
                crate::rerank::check_top_n(n, "rerank_top_n").map(|()| Some(n))
            }
            (_, None, Some(stage)) => Ok(Some(stage.top_n())),
        }
    }

    /// Hybrid search (vector + BM25) in the query's scope.
    pub fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>> {
        self.search_traced(query).map(|s| s.hits)
    }

    /// `search`, with what its reranking stage did.
    pub fn search_traced(&self, query: &SearchQuery) -> Result<Searched> {
        if query.text.trim().is_empty() {
            return Err(memloop_core::Error::invalid(
                "the search query is empty: give some text to search for",
            ));
        }
        let v = self.embedder.embed_query(&query.text)?;
        self.search_by_vector_traced(query, &v)
    }

    /// Search with a query vector computed elsewhere. Either way, a query
    /// that names no decay gets the configured one, and each hit returned
    /// counts as a retrieval of it (batched by the store, see
    /// `LongTermStore::record_access`).
    pub fn search_by_vector(&self, query: &SearchQuery, vector: &[f32]) -> Result<Vec<SearchHit>> {
        self.search_by_vector_traced(query, vector).map(|s| s.hits)
    }

    /// `search_by_vector`, with what its reranking stage did. The order:
    /// the store's fused hits (as many as the reranker reorders, when that
    /// is more than `top_k`), the reranking, then entity expansion from the
    /// (reordered) top hits.
    pub fn search_by_vector_traced(&self, query: &SearchQuery, vector: &[f32]) -> Result<Searched> {
        let rerank = self.rerank_depth(query)?;
        let depth = rerank.map_or(0, |(_, n)| n);
        let filled;
        let fused = if query.decay.is_none() || depth > query.top_k {
            filled = SearchQuery {
                decay: Some(query.decay.unwrap_or_else(|| self.forgetting.decay())),
                top_k: query.top_k.max(depth),
                ..query.clone()
            };
            &filled
        } else {
            query
        };
        let mut hits = self.store.search(fused, vector)?;
        let mut report = None;
        if let Some((stage, n)) = rerank {
            let (reranked, r) = stage.apply(&query.text, hits, n);
            hits = reranked;
            report = Some(r);
        }
        hits.truncate(query.top_k);
        let expansion = query.expand.unwrap_or(self.expansion);
        let hits = crate::expand::expand(self.store.as_ref(), query, hits, &expansion)?;
        let ids: Vec<&str> = hits.iter().map(|h| h.record.id.as_str()).collect();
        if let Err(e) = self.store.record_access(&query.scope.tenant, &ids) {
            // Counts feed ranking only: the search's answer stands.
            tracing::warn!(error = %e, "retrievals were not counted");
        }
        Ok(Searched {
            hits,
            rerank: report,
        })
    }

    /// The stage and depth this search reranks with: none when no stage is
    /// set or the query asks for none (`rerank = 0`); a depth asked for
    /// without a stage is refused, so a caller is not left believing its
    /// hits were reranked.
    fn rerank_depth(&self, query: &SearchQuery) -> Result<Option<(&RerankStage, usize)>> {
        match (query.rerank, self.rerank.as_ref()) {
            (Some(0), _) | (None, None) => Ok(None),
            (None, Some(stage)) => Ok(Some((stage, stage.top_n()))),
            (Some(n), Some(stage)) => {
                crate::rerank::check_top_n(n, "rerank_top_n")?;
                Ok(Some((stage, n)))
            }
            (Some(_), None) => Err(Error::invalid(NO_RERANKER)),
        }
    }
}
