//! Reads: get, list, history, hybrid search, stats.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};

use memloop_core::{Error, Filter, HistoryEntry, Kind, MemoryRecord, Result, Scope, SearchHit};
use rusqlite::{params_from_iter, OptionalExtension};

use crate::partition::PartitionIndex;
use crate::rows::{
    history_from_row, rank_inputs_from_row, record_from_row, HISTORY_COLUMNS, RANK_INPUT_COLUMNS,
    RECORD_COLUMNS,
};
use crate::{lock, read, sql_err, EmbeddedStore};
use memloop_longterm::keyword::{Allow, KeywordIndex, Reach};
use memloop_longterm::rank::RankInputs;
use memloop_longterm::{
    number_sessions, rank, Entity, ListQuery, SearchQuery, SessionInfo, Stats, MAX_LIMIT,
};

impl EmbeddedStore {
    pub(crate) fn get(&self, tenant: &str, id: &str) -> Result<MemoryRecord> {
        let found = self
            .conn()
            .prepare_cached(&format!(
                "SELECT {RECORD_COLUMNS} FROM memories WHERE id = ?1"
            ))
            .map_err(sql_err)?
            .query_row([id], record_from_row)
            .optional()
            .map_err(sql_err)?;
        match found {
            Some((_, rec)) if rec.scope.tenant == tenant => Ok(rec),
            _ => Err(Error::NotFound(id.to_string())),
        }
    }

    /// Memories of a scope, newest first, filtered, paginated.
    pub(crate) fn list(&self, q: &ListQuery) -> Result<Vec<MemoryRecord>> {
        let limit = if q.limit == 0 {
            100
        } else {
            q.limit.min(MAX_LIMIT)
        };
        let mut out = Vec::new();
        let mut skipped = 0;
        self.scan(q, |rec| {
            if skipped < q.offset {
                skipped += 1;
                return true;
            }
            out.push(rec);
            out.len() < limit
        })?;
        Ok(out)
    }

    /// How many memories `list` would page through (limit and offset ignored).
    pub(crate) fn count(&self, q: &ListQuery) -> Result<usize> {
        let mut n = 0;
        self.scan(q, |_| {
            n += 1;
            true
        })?;
        Ok(n)
    }

    /// Calls `visit` with each memory of the query's scope that it admits,
    /// newest first, until `visit` returns false.
    fn scan(&self, q: &ListQuery, mut visit: impl FnMut(MemoryRecord) -> bool) -> Result<()> {
        let partition = q.scope.partition()?;
        let now = self.now();
        let conn = self.conn();
        let sql = format!(
            "SELECT {RECORD_COLUMNS} FROM memories WHERE partition = ?1 {} ORDER BY created_at DESC, row DESC",
            if q.include_superseded || q.as_of.is_some() { "" } else { "AND valid_until IS NULL" }
        );
        let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
        let rows = stmt
            .query_map([&partition], record_from_row)
            .map_err(sql_err)?;
        for r in rows {
            let (_, rec) = r.map_err(sql_err)?;
            let visible = match q.as_of {
                Some(t) => rec.valid_from <= t && rec.valid_until.is_none_or(|u| u > t),
                None => q.include_superseded || rec.is_current(now),
            };
            if visible && admits(&q.scope, &q.kinds, q.filter.as_ref(), &rec) && !visit(rec) {
                break;
            }
        }
        Ok(())
    }

    /// The users, and the agents with memories of their own (no user), that
    /// have current (not expired) memories in a tenant, by name.
    pub(crate) fn entities(&self, tenant: &str) -> Result<Vec<Entity>> {
        let now = self.now();
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT user_id IS NULL, coalesce(user_id, agent_id), count(*), min(created_at), max(updated_at) \
                 FROM memories WHERE tenant = ?1 AND valid_until IS NULL \
                 AND (expires_at IS NULL OR expires_at > ?2) \
                 GROUP BY 1, 2 ORDER BY 2, 1",
            )
            .map_err(sql_err)?;
        let rows = stmt
            .query_map(rusqlite::params![tenant, now], |r| {
                Ok(Entity {
                    kind: if r.get::<_, bool>(0)? {
                        "agent"
                    } else {
                        "user"
                    },
                    name: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                    memories: r.get(2)?,
                    created_at: r.get(3)?,
                    updated_at: r.get(4)?,
                })
            })
            .map_err(sql_err)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql_err)
    }

    /// The scope's sessions, newest first (`LongTermStore::sessions`). A
    /// session's times are its episodes' (the turns as said) when it has
    /// any: a fact's `valid_from` may be a date it talks about, long before
    /// the session.
    pub(crate) fn sessions(&self, scope: &Scope) -> Result<Vec<SessionInfo>> {
        let partition = scope.partition()?;
        let now = self.now();
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT session_id, \
                 coalesce(min(CASE WHEN kind = 'episode' THEN valid_from END), min(valid_from)), \
                 coalesce(max(CASE WHEN kind = 'episode' THEN valid_from END), max(valid_from)), \
                 count(*) FROM memories \
                 WHERE partition = ?1 AND valid_until IS NULL AND session_id IS NOT NULL \
                 AND (expires_at IS NULL OR expires_at > ?2) AND (?3 IS NULL OR agent_id = ?3) \
                 GROUP BY session_id",
            )
            .map_err(sql_err)?;
        let rows = stmt
            .query_map(rusqlite::params![partition, now, scope.agent_id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .map_err(sql_err)?;
        let raw = rows
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(sql_err)?;
        Ok(number_sessions(scope, raw))
    }

    /// Every change to one memory, oldest first.
    pub(crate) fn history(&self, tenant: &str, id: &str) -> Result<Vec<HistoryEntry>> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {HISTORY_COLUMNS} FROM history WHERE memory_id = ?1 ORDER BY seq"
            ))
            .map_err(sql_err)?;
        let prefix = format!("{tenant}\u{1f}");
        let rows = stmt.query_map([id], history_from_row).map_err(sql_err)?;
        let mut out = Vec::new();
        for r in rows {
            let (partition, entry) = r.map_err(sql_err)?;
            if partition.starts_with(&prefix) {
                out.push(entry);
            }
        }
        if out.is_empty() {
            return Err(Error::NotFound(id.to_string()));
        }
        Ok(out)
    }

    /// Hybrid search in one partition: the vector and keyword indexes each
    /// give `candidates` rows, their scores fused (see `memloop_core::fusion`).
    pub(crate) fn search(&self, q: &SearchQuery, vector: &[f32]) -> Result<Vec<SearchHit>> {
        // Counted while it runs: a search splits its keyword walk only
        // while a core is free (`memloop_longterm::par`).
        let _busy = memloop_longterm::par::Busy::start();
        let partition = q.scope.partition()?;
        self.check_dims(vector)?;
        q.check()?;
        let now = self.now();
        // A time window that filters narrows too: the indexes then rank only
        // the window's memories, so the window gets all the candidate places.
        let restricted = q.filter.is_some()
            || !q.kinds.is_empty()
            || (q.scope.user_id.is_some() && q.scope.agent_id.is_some())
            || q.scope.session_id.is_some()
            || q.time.is_some_and(|t| t.filters());
        // Narrowed searches first find the rows they may return, then search only those.
        let allowed: Option<HashSet<i64>> = if restricted {
            Some(self.allowed_rows(&partition, q, now)?)
        } else {
            None
        };
        // The past is not in the shared indexes: build one for this query.
        let past = q.as_of.is_some() || q.include_superseded;
        let part = if past {
            Arc::new(RwLock::new(self.past_index(&partition, q.as_of)?))
        } else {
            self.partition_index(&partition)?
        };
        // The analyser the stored terms came from.
        let terms = crate::stored_terms::analyzer().terms(&q.text);
        let n = q.candidates.max(q.top_k);
        let query_words = memloop_longterm::rank::query_words(&q.text);
        let (vec_hits, kw_hits, spoken) = {
            let p = self.read_for_search(&part);
            // Expired rows take no candidate place: they are refused inside
            // each index's search, before its top-N cut (the allowed rows
            // of a narrowed search already leave them out).
            let rows = Arc::new(RowFilter {
                skip_expired: allowed.is_none() && p.expiry.any_expired(now),
                allowed,
                now,
            });
            let allow_fn = rows.bind(&p);
            let allow: Allow<'_> = allow_fn
                .as_ref()
                .map(|f| f as &(dyn Fn(i64) -> bool + Sync));
            let reach: Arc<dyn Reach> = Arc::new(PartitionReach {
                part: part.clone(),
                rows: rows.clone(),
            });
            // A signal weighted 0 is not computed at all (dense-only,
            // keyword-only). The vector search runs beside the keyword
            // walk, which a large partition shares between two cores.
            let dense = || {
                if q.vector_weight > 0.0 {
                    p.vectors.search(vector, n, allow)
                } else {
                    Ok(Vec::new())
                }
            };
            let (kw_hits, vec_hits) = if q.keyword_weight > 0.0 {
                p.keywords
                    .search_beside(&terms, n, allow, Some(reach), dense)
            } else {
                (Vec::new(), dense())
            };
            let vec_hits = vec_hits?;
            // Candidates said by someone the query names.
            let spoken: HashSet<i64> = if q.speaker_boost > 0.0 {
                vec_hits
                    .iter()
                    .map(|h| h.row)
                    .chain(kw_hits.iter().map(|h| h.0))
                    .filter(|&row| p.keywords.spoken_by_any(row, &query_words))
                    .collect()
            } else {
                HashSet::new()
            };
            (vec_hits, kw_hits, spoken)
        };
        let mut ranked = rank::fuse_candidates(q, &vec_hits, &kw_hits, &spoken);
        let tenant = q.scope.tenant.as_str();
        let records = ranked.cut_and_hydrate(
            q,
            now,
            |rows, decay| {
                if !decay {
                    return self.valid_from_of(rows);
                }
                let mut inputs = self.by_rows(RANK_INPUT_COLUMNS, rows, rank_inputs_from_row)?;
                self.access.merge_into(tenant, &mut inputs);
                Ok(inputs)
            },
            |rows| {
                let mut records = self.by_rows(RECORD_COLUMNS, rows, record_from_row)?;
                self.access.merge_into(tenant, &mut records);
                Ok(records)
            },
        )?;
        let mut out = ranked.into_hits(&records, q, now);
        rank::finish(&mut out, q.top_k, now, |id| match self.get(tenant, id) {
            Ok(rec) => Ok(Some(rec)),
            Err(Error::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        })?;
        Ok(out)
    }

    fn allowed_rows(&self, partition: &str, q: &SearchQuery, now: i64) -> Result<HashSet<i64>> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {RECORD_COLUMNS} FROM memories WHERE partition = ?1 {}",
                // A search of the past filters versions, not just current memories.
                if q.as_of.is_some() || q.include_superseded {
                    ""
                } else {
                    "AND valid_until IS NULL"
                }
            ))
            .map_err(sql_err)?;
        let rows = stmt
            .query_map([partition], record_from_row)
            .map_err(sql_err)?;
        let mut out = HashSet::new();
        let past = q.as_of.is_some() || q.include_superseded;
        for r in rows {
            let (row, rec) = r.map_err(sql_err)?;
            if (past || !rec.is_expired(now))
                && q.window_admits(rec.valid_from)
                && admits(&q.scope, &q.kinds, q.filter.as_ref(), &rec)
            {
                out.insert(row);
            }
        }
        Ok(out)
    }

    /// The rows' `valid_from` (all a search ranking by time alone needs),
    /// remembered ones without reading the store.
    fn valid_from_of(&self, rows: &[i64]) -> Result<HashMap<i64, RankInputs>> {
        let (mut found, missing) = self.valid_from.get(rows);
        let read = self.by_rows("row, valid_from", &missing, |r| Ok((r.get(0)?, r.get(1)?)))?;
        self.valid_from.remember(&read);
        found.extend(read);
        Ok(found
            .into_iter()
            .map(|(row, t)| (row, RankInputs::valid_from(t)))
            .collect())
    }

    /// `columns` of the given rows, each mapped by `from_row` to (row, T).
    fn by_rows<T>(
        &self,
        columns: &str,
        rows: &[i64],
        from_row: fn(&rusqlite::Row<'_>) -> rusqlite::Result<(i64, T)>,
    ) -> Result<HashMap<i64, T>> {
        if rows.is_empty() {
            return Ok(HashMap::new());
        }
        let conn = self.conn();
        // The list padded to a power of two (repeating its last row, which
        // IN ignores): a handful of statement texts, each prepared once and
        // cached. Prepared afresh for each count, they were a quarter of
        // reading a search's records (docs/benchmarks.md).
        let slots = rows.len().next_power_of_two().max(8);
        let placeholders = vec!["?"; slots].join(",");
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {columns} FROM memories WHERE row IN ({placeholders})"
            ))
            .map_err(sql_err)?;
        let last = rows.last().copied().unwrap_or_default();
        let padded = rows
            .iter()
            .copied()
            .chain(std::iter::repeat(last))
            .take(slots);
        let found = stmt
            .query_map(params_from_iter(padded), from_row)
            .map_err(sql_err)?;
        found
            .collect::<rusqlite::Result<HashMap<_, _>>>()
            .map_err(sql_err)
    }

    pub(crate) fn stats(&self) -> Result<Stats> {
        let now = self.now();
        let conn = self.conn();
        let one = |sql: &str| {
            conn.query_row(sql, [], |r| r.get::<_, i64>(0))
                .map_err(sql_err)
        };
        let memories = one("SELECT count(*) FROM memories")?;
        let superseded = one("SELECT count(*) FROM memories WHERE valid_until IS NOT NULL")?;
        let expired: i64 = conn
            .query_row(
                "SELECT count(*) FROM memories WHERE valid_until IS NULL AND expires_at <= ?1",
                [now],
                |r| r.get(0),
            )
            .map_err(sql_err)?;
        let partitions = one("SELECT count(DISTINCT partition) FROM memories")?;
        let history_entries = one("SELECT count(*) FROM history")?;
        let mut by_kind = HashMap::new();
        let mut stmt = conn
            .prepare(
                "SELECT kind, count(*) FROM memories WHERE valid_until IS NULL \
                 AND (expires_at IS NULL OR expires_at > ?1) GROUP BY kind",
            )
            .map_err(sql_err)?;
        let rows = stmt
            .query_map([now], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
            .map_err(sql_err)?;
        for r in rows {
            let (k, n) = r.map_err(sql_err)?;
            by_kind.insert(k, n);
        }
        let database_bytes = ["", "-wal"]
            .iter()
            .filter_map(|s| std::fs::metadata(self.dir.join(format!("{}{s}", crate::DB_FILE))).ok())
            .map(|m| m.len())
            .sum();
        let schema_version = one("PRAGMA user_version")?;
        drop(stmt);
        drop(conn);
        let parts = lock(&self.partitions);
        let hnsw_partitions = parts.values().filter(|p| read(p).vectors.is_ann()).count();
        Ok(Stats {
            memories,
            current: memories - superseded - expired,
            superseded,
            expired,
            by_kind,
            partitions,
            history_entries,
            database_bytes,
            embedder: self.embedder.clone(),
            schema_version,
            loaded_partitions: parts.len(),
            hnsw_partitions,
        })
    }
}

fn admits(scope: &Scope, kinds: &[Kind], filter: Option<&Filter>, rec: &MemoryRecord) -> bool {
    scope.admits(&rec.scope)
        && (kinds.is_empty() || kinds.contains(&rec.kind))
        && filter.is_none_or(|f| f.matches(rec))
}

/// Which rows one search may return: those a narrowed search allowed,
/// and none expired at its `now`.
struct RowFilter {
    allowed: Option<HashSet<i64>>,
    skip_expired: bool,
    now: i64,
}

impl RowFilter {
    /// The filter over `p`'s expiry times, or None when every row passes.
    fn bind<'a>(&'a self, p: &'a PartitionIndex) -> Option<impl Fn(i64) -> bool + Sync + 'a> {
        (self.allowed.is_some() || self.skip_expired).then_some(move |row: i64| {
            self.allowed.as_ref().is_none_or(|a| a.contains(&row))
                && !(self.skip_expired && p.expiry.is_expired(row, self.now))
        })
    }
}

/// How the helper of a shared keyword walk reaches the partition and the
/// search's row filter by itself (`memloop_longterm::par`).
struct PartitionReach {
    part: Arc<RwLock<PartitionIndex>>,
    rows: Arc<RowFilter>,
}

impl Reach for PartitionReach {
    fn with(&self, f: &mut dyn FnMut(&KeywordIndex, Allow<'_>)) {
        let Ok(p) = self.part.try_read() else { return };
        let allow_fn = self.rows.bind(&p);
        f(
            &p.keywords,
            allow_fn
                .as_ref()
                .map(|f| f as &(dyn Fn(i64) -> bool + Sync)),
        );
    }
}
