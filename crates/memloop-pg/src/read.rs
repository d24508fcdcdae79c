//! Reads: get, list, count, entities, history, stats.

use std::collections::HashMap;

use memloop_core::Scope;
use memloop_core::{Error, Event, HistoryEntry, Kind, MemoryRecord, Result};
use memloop_longterm::{number_sessions, Entity, ListQuery, SessionInfo, Stats, MAX_LIMIT};

use crate::pool::Tx;
use crate::rows::{record_from_row, RECORD_COLUMNS};
use crate::{PgStore, Tenancy};

/// Which versions a query sees: the SQL condition, with `$AS_OF` and `$NOW`
/// standing for the parameters given (each variant names both, so every
/// statement takes the same parameters).
pub(crate) fn visibility(include_superseded: bool, as_of: Option<i64>) -> &'static str {
    match (as_of, include_superseded) {
        (Some(_), _) => {
            "valid_from <= $AS_OF::bigint AND (valid_until IS NULL OR valid_until > $AS_OF::bigint) \
             AND $NOW::bigint IS NOT NULL"
        }
        (None, true) => "$AS_OF::bigint IS NULL AND $NOW::bigint IS NOT NULL",
        (None, false) => {
            "valid_until IS NULL AND (expires_at IS NULL OR expires_at > $NOW::bigint) \
             AND $AS_OF::bigint IS NULL"
        }
    }
}

/// The scope and kind narrowing every list and search applies in SQL
/// (`Scope::admits` within a partition); metadata filters run in Rust.
pub(crate) const NARROWING: &str = "($AGENT::text IS NULL OR agent_id = $AGENT) \
     AND ($SESSION::text IS NULL OR session_id = $SESSION) \
     AND ($KINDS::text[] IS NULL OR kind = ANY($KINDS))";

pub(crate) fn kinds_param(kinds: &[Kind]) -> Option<Vec<&'static str>> {
    if kinds.is_empty() {
        None
    } else {
        Some(kinds.iter().map(|k| k.as_str()).collect())
    }
}

/// Fills the named placeholders of `sql` with positional ones: `names[i]` becomes `$i+1`.
pub(crate) fn numbered(sql: &str, names: &[&str]) -> String {
    let mut out = sql.to_string();
    for (i, n) in names.iter().enumerate() {
        out = out.replace(&format!("${n}"), &format!("${}", i + 1));
    }
    out
}

impl PgStore {
    pub(crate) fn get(&self, tenant: &str, id: &str) -> Result<MemoryRecord> {
        self.tx(Tenancy::One(tenant), |tx| get_in(tx, tenant, id))
    }

    pub(crate) fn list(&self, q: &ListQuery) -> Result<Vec<MemoryRecord>> {
        let limit = if q.limit == 0 {
            100
        } else {
            q.limit.min(MAX_LIMIT)
        };
        self.scan(q, Some((limit, q.offset)))
    }

    pub(crate) fn count(&self, q: &ListQuery) -> Result<usize> {
        if q.filter.is_none() {
            let partition = q.scope.partition()?;
            let now = self.now();
            let kinds = kinds_param(&q.kinds);
            let sql = numbered(
                &format!(
                    "SELECT count(*) FROM memories WHERE partition = $PART AND {} AND {NARROWING}",
                    visibility(q.include_superseded, q.as_of)
                ),
                &["PART", "AGENT", "SESSION", "KINDS", "AS_OF", "NOW"],
            );
            return self.tx(Tenancy::One(&q.scope.tenant), |tx| {
                let n: i64 = tx
                    .query_one(
                        &sql,
                        &[
                            &partition,
                            &q.scope.agent_id,
                            &q.scope.session_id,
                            &kinds,
                            &q.as_of,
                            &now,
                        ],
                    )?
                    .get(0);
                Ok(n.max(0) as usize)
            });
        }
        Ok(self.scan(q, None)?.len())
    }

    /// The memories of the query's scope it admits, newest first; paged in
    /// SQL unless a metadata filter must look at each record first.
    fn scan(&self, q: &ListQuery, page: Option<(usize, usize)>) -> Result<Vec<MemoryRecord>> {
        let partition = q.scope.partition()?;
        let now = self.now();
        let kinds = kinds_param(&q.kinds);
        let in_sql = q.filter.is_none();
        let (limit, offset) = match page {
            Some((l, o)) if in_sql => (l as i64, o as i64),
            _ => (i64::MAX, 0),
        };
        let sql = numbered(
            &format!(
                "SELECT {RECORD_COLUMNS} FROM memories WHERE partition = $PART AND {} AND {NARROWING} \
                 ORDER BY created_at DESC, rid DESC LIMIT $LIMIT OFFSET $OFFSET",
                visibility(q.include_superseded, q.as_of)
            ),
            &["PART", "AGENT", "SESSION", "KINDS", "AS_OF", "NOW", "LIMIT", "OFFSET"],
        );
        let records = self.tx(Tenancy::One(&q.scope.tenant), |tx| {
            let rows = tx.query(
                &sql,
                &[
                    &partition,
                    &q.scope.agent_id,
                    &q.scope.session_id,
                    &kinds,
                    &q.as_of,
                    &now,
                    &limit,
                    &offset,
                ],
            )?;
            rows.iter()
                .map(|r| record_from_row(r).map(|(_, rec)| rec))
                .collect::<Result<Vec<_>>>()
        })?;
        if in_sql {
            return Ok(records);
        }
        let admitted = records.into_iter().filter(|rec| {
            q.scope.admits(&rec.scope) && q.filter.as_ref().is_none_or(|f| f.matches(rec))
        });
        Ok(match page {
            Some((l, o)) => admitted.skip(o).take(l).collect(),
            None => admitted.collect(),
        })
    }

    pub(crate) fn entities(&self, tenant: &str) -> Result<Vec<Entity>> {
        self.tx(Tenancy::One(tenant), |tx| {
            let rows = tx.query(
                "SELECT user_id IS NULL, coalesce(user_id, agent_id), count(*), min(created_at), max(updated_at) \
                 FROM memories WHERE tenant = $1 AND valid_until IS NULL \
                 AND (expires_at IS NULL OR expires_at > $2) \
                 GROUP BY 1, 2 ORDER BY coalesce(user_id, agent_id) COLLATE \"C\", 1",
                &[&tenant, &self.now()],
            )?;
            Ok(rows
                .iter()
                .map(|r| Entity {
                    kind: if r.get::<_, bool>(0) { "agent" } else { "user" },
                    name: r.get::<_, Option<String>>(1).unwrap_or_default(),
                    memories: r.get(2),
                    created_at: r.get(3),
                    updated_at: r.get(4),
                })
                .collect())
        })
    }

    /// The scope's sessions, newest first, timed by their episodes when
    /// they have any (as the embedded store does).
    pub(crate) fn sessions(&self, scope: &Scope) -> Result<Vec<SessionInfo>> {
        let partition = scope.partition()?;
        let raw = self.tx(Tenancy::One(&scope.tenant), |tx| {
            let rows = tx.query(
                "SELECT session_id, \
                 coalesce(min(CASE WHEN kind = 'episode' THEN valid_from END), min(valid_from)), \
                 coalesce(max(CASE WHEN kind = 'episode' THEN valid_from END), max(valid_from)), \
                 count(*) FROM memories \
                 WHERE partition = $1 AND valid_until IS NULL AND session_id IS NOT NULL \
                 AND (expires_at IS NULL OR expires_at > $2) \
                 AND ($3::text IS NULL OR agent_id = $3::text) \
                 GROUP BY session_id",
                &[&partition, &self.now(), &scope.agent_id],
            )?;
            Ok(rows
                .iter()
                .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
                .collect::<Vec<(String, i64, i64, i64)>>())
        })?;
        Ok(number_sessions(scope, raw))
    }

    pub(crate) fn history(&self, tenant: &str, id: &str) -> Result<Vec<HistoryEntry>> {
        let out = self.tx(Tenancy::One(tenant), |tx| {
            let rows = tx.query(
                "SELECT seq, memory_id, event, old_text, new_text, at, actor, reason \
                 FROM history WHERE memory_id = $1 AND tenant = $2 ORDER BY seq",
                &[&id, &tenant],
            )?;
            Ok(rows
                .iter()
                .map(|r| HistoryEntry {
                    id: r.get(0),
                    memory_id: r.get(1),
                    event: Event::parse(r.get(2)).unwrap_or(Event::Noop),
                    old_memory: r.get(3),
                    new_memory: r.get(4),
                    at: r.get(5),
                    actor: r.get(6),
                    reason: r.get(7),
                })
                .collect::<Vec<_>>())
        })?;
        if out.is_empty() {
            return Err(Error::NotFound(id.to_string()));
        }
        Ok(out)
    }

    pub(crate) fn stats(&self) -> Result<Stats> {
        self.tx(Tenancy::All, |tx| {
            let one =
                |tx: &mut Tx<'_>, sql: &str| -> Result<i64> { Ok(tx.query_one(sql, &[])?.get(0)) };
            let memories = one(tx, "SELECT count(*) FROM memories")?;
            let now = self.now();
            let row = tx.query_one(
                "SELECT count(*) FILTER (WHERE expires_at IS NULL OR expires_at > $1), \
                 count(*) FILTER (WHERE expires_at <= $1) FROM memories WHERE valid_until IS NULL",
                &[&now],
            )?;
            let (current, expired): (i64, i64) = (row.get(0), row.get(1));
            let partitions = one(tx, "SELECT count(DISTINCT partition) FROM memories")?;
            let history_entries = one(tx, "SELECT count(*) FROM history")?;
            let database_bytes = one(
                tx,
                "SELECT (pg_total_relation_size('memories') + pg_total_relation_size('history') \
                 + pg_total_relation_size('outbox') + pg_total_relation_size('term_stats') \
                 + pg_total_relation_size('postings'))::bigint",
            )?;
            let schema_version = one(tx, "SELECT version FROM memloop_schema")?;
            let mut by_kind = HashMap::new();
            for r in tx.query(
                "SELECT kind, count(*) FROM memories WHERE valid_until IS NULL \
                 AND (expires_at IS NULL OR expires_at > $1) GROUP BY kind",
                &[&now],
            )? {
                by_kind.insert(r.get::<_, String>(0), r.get::<_, i64>(1));
            }
            let hnsw = one(
                tx,
                &format!(
                    "SELECT count(*) FROM partition_stats WHERE docs >= {}",
                    self.options.exact_threshold
                ),
            )?;
            Ok(Stats {
                memories,
                current,
                superseded: memories - current - expired,
                expired,
                by_kind,
                partitions,
                history_entries,
                database_bytes: database_bytes.max(0) as u64,
                embedder: self.embedder.clone(),
                schema_version,
                loaded_partitions: 0,
                hnsw_partitions: hnsw.max(0) as usize,
            })
        })
    }
}

pub(crate) fn get_in(tx: &mut Tx<'_>, tenant: &str, id: &str) -> Result<MemoryRecord> {
    let row = tx.query_opt(
        &format!("SELECT {RECORD_COLUMNS} FROM memories WHERE id = $1"),
        &[&id],
    )?;
    match row {
        Some(row) => {
            let (_, rec) = record_from_row(&row)?;
            if rec.scope.tenant == tenant {
                Ok(rec)
            } else {
                Err(Error::NotFound(id.to_string()))
            }
        }
        None => Err(Error::NotFound(id.to_string())),
    }
}
