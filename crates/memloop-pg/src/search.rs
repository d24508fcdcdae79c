//! Hybrid search in one partition, as the embedded store does it: the
//! vector and keyword signals each give `candidates` rows, their scores
//! fused by `memloop_core::fusion`, a speaker named in the query lifts what
//! that speaker said, and a hit holding a superseded claim names (and ranks
//! below) its replacement.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use memloop_core::{Error, Result, SearchHit};
use memloop_longterm::pieces::{by_row, discounted, VectorHit};
use memloop_longterm::{rank, SearchQuery};
use pgvector::HalfVector;

use crate::keyword_cache::{KeywordQuery, Position, Prepared};
use crate::pool::Tx;
use crate::read::{get_in, kinds_param, numbered, NARROWING};
use crate::rows::{rank_inputs_from_row, record_from_row, RANK_INPUT_COLUMNS, RECORD_COLUMNS};
use crate::{terms, PgStore, Tenancy};

/// The rows a search looks through: the current ones (not expired at
/// `$NOW`), those valid at `$AS_OF`, or every version. Each variant names
/// both parameters, so every statement takes the same ones.
fn indexed(q: &SearchQuery) -> &'static str {
    match (q.as_of, q.include_superseded) {
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

/// The nearest current memories' vectors: their first vectors and their
/// later pieces (schema version 4), each list an HNSW walk of its own
/// table (the pieces table is empty unless memories outgrow the model's
/// window) of `2 × $3`, so the `2 × $3` nearest of both are the nearest
/// vectors overall, as the embedded store takes them, one row each; the
/// caller ranks each memory by its best, discounted for its pieces among
/// them (`memloop_longterm::pieces`), as the embedded store does.
const VECTOR_ANN: &str = "WITH m AS (SELECT rid, embedding <#> $1 AS d FROM memories \
       WHERE partition = $2 AND valid_until IS NULL AND (expires_at IS NULL OR expires_at > $4) \
       ORDER BY embedding <#> $1 LIMIT 2 * $3::bigint), \
     p AS (SELECT rid, embedding <#> $1 AS d FROM pieces \
       WHERE partition = $2 AND valid_until IS NULL AND (expires_at IS NULL OR expires_at > $4) \
       ORDER BY embedding <#> $1 LIMIT 2 * $3::bigint), \
     near AS (SELECT rid, d FROM (SELECT * FROM m UNION ALL SELECT * FROM p) a \
       ORDER BY d, rid LIMIT 2 * $3::bigint) \
     SELECT near.rid, (-near.d)::real, x.metadata->>'speaker' FROM near JOIN memories x ON x.rid = near.rid \
     ORDER BY near.d, near.rid";

/// The exact scan over the rows a search looks through, pieces included:
/// the `2 × N` nearest vectors, one row each, ranked by the caller as
/// `VECTOR_ANN`'s are.
/// Each distance carries its row's speaker, so nothing joins the scanned
/// rows back to the distances: on freshly written tables, whose statistics
/// said the partition was empty, that join was planned as a nested loop
/// computing every distance again for every row (quadratic: 0.3 s at 419
/// memories, 1.1 s at 663, the LoCoMo eval's p99).
const VECTOR_EXACT: &str = "WITH v AS MATERIALIZED ( \
       SELECT rid, embedding, metadata->>'speaker' AS speaker FROM memories \
       WHERE partition = $PART AND {indexed} AND ($ALLOWED::bigint[] IS NULL OR rid = ANY($ALLOWED))), \
     e AS (SELECT rid, embedding <#> $Q AS d, speaker FROM v \
           UNION ALL SELECT p.rid, p.embedding <#> $Q, v.speaker FROM pieces p JOIN v ON v.rid = p.rid \
           WHERE p.partition = $PART) \
     SELECT rid, (-d)::real, speaker FROM e ORDER BY d, rid LIMIT 2 * $N::bigint";

/// Each memory once, at its best vector's similarity, ranked by it less
/// the discount for its other vectors among the nearest
/// (`memloop_longterm::pieces`): up to `k`, best first, with who said it.
fn by_memory(vectors: Hits, k: usize) -> VectorHits {
    let speakers: HashMap<i64, Option<String>> =
        vectors.iter().map(|(r, _, s)| (*r, s.clone())).collect();
    discounted(by_row(vectors.iter().map(|(r, s, _)| (*r, *s))), k)
        .into_iter()
        .map(|h| (h, speakers.get(&h.row).cloned().flatten()))
        .collect()
}

/// The vector side's memories with who said each.
type VectorHits = Vec<(VectorHit, Option<String>)>;

/// BM25 (k1 1.2, b 0.75, as the embedded index) over term frequencies read
/// from the tsvector, for a search of the past (postings hold the current
/// rows only): weight A positions count 1, B `$CW` × the row's
/// `context_scale`; only the query's lexemes are weighed.
const BM25_SUM: &str =
    "sum(q.idf * u.tf * 2.2 / (u.tf + 1.2 * (0.25 + 0.75 * d.doc_len::float8 / st.avgdl)))::real";
const TF: &str = "CROSS JOIN LATERAL (SELECT x.lexeme, \
       (SELECT count(*) FILTER (WHERE w = 'A') + $CW::float8 * d.context_scale * count(*) FILTER (WHERE w = 'B') \
        FROM unnest(x.weights) AS w)::float8 AS tf \
     FROM unnest(d.tsv) AS x WHERE x.lexeme = ANY($TERMS::text[])) u JOIN q ON q.term = u.lexeme";

/// The current rows' BM25 from the postings of the query's terms (schema
/// version 2): an index-only scan of their entries, scored as `BM25_SUM`
/// scores a tsvector (the same terms, frequencies and lengths, so the same
/// scores), the expired and the narrowed-out left out before the cut. It
/// replaced scoring each matching row's tsvector (31 ms for the 2,470 rows
/// of 8,880 an OR query of common words matched; docs/benchmarks.md).
/// Each term's statistics and postings are read by a lateral lookup on
/// both key columns (`OFFSET 0` keeps the planner from flattening it),
/// whatever the planner thinks of the tables: with
/// statistics that lagged the eval's fresh writes, plain joins read every
/// `term_stats` row of the partition for each posting, or every posting of
/// the partition, 0.8 to 1.3 s a search on 600 memories.
const KEYWORD_CURRENT: &str = "WITH st AS (SELECT docs::float8 AS n, greatest(total_len / docs::float8, 1.0) AS avgdl \
                     FROM partition_stats WHERE partition = $PART AND docs > 0), \
         q AS MATERIALIZED (SELECT t.term, ln(1 + (st.n - coalesce(ts.df, 0) + 0.5) / (coalesce(ts.df, 0) + 0.5)) AS idf \
               FROM st CROSS JOIN unnest($TERMS::text[]) AS t(term) \
               LEFT JOIN LATERAL (SELECT df FROM term_stats \
                                  WHERE partition = $PART AND term = t.term OFFSET 0) ts ON true), \
         u AS (SELECT p.rid, q.idf, (p.tf_text + $CW::float8 * p.tf_context)::float8 AS tf, p.doc_len \
               FROM q CROSS JOIN LATERAL (SELECT rid, tf_text, tf_context, doc_len FROM postings \
                                          WHERE partition = $PART AND term = q.term \
                                            AND (expires_at IS NULL OR expires_at > $NOW::bigint) \
                                            AND ($ALLOWED::bigint[] IS NULL OR rid = ANY($ALLOWED)) \
                                          OFFSET 0) p \
               WHERE $AS_OF::bigint IS NULL AND $TSQ::text IS NOT NULL), \
         top AS (SELECT u.rid, \
                        sum(u.idf * u.tf * 2.2 / (u.tf + 1.2 * (0.25 + 0.75 * u.doc_len::float8 / st.avgdl)))::real AS score \
                 FROM u CROSS JOIN st GROUP BY u.rid ORDER BY score DESC, u.rid LIMIT $N) \
         SELECT top.rid, top.score, d.metadata->>'speaker' \
         FROM top JOIN memories d ON d.rid = top.rid ORDER BY top.score DESC, top.rid";

fn keyword_past_sql(q: &SearchQuery) -> String {
    format!(
        "WITH v AS MATERIALIZED (SELECT rid, tsv, doc_len, context_scale, metadata->>'speaker' AS speaker FROM memories \
                                 WHERE partition = $PART AND {}), \
         st AS (SELECT count(*)::float8 AS n, greatest(sum(doc_len)::float8 / count(*)::float8, 1.0) AS avgdl \
                FROM v HAVING count(*) > 0), \
         df AS (SELECT x.lexeme AS term, count(*) AS df FROM v CROSS JOIN LATERAL unnest(v.tsv) AS x \
                WHERE x.lexeme = ANY($TERMS::text[]) GROUP BY 1), \
         q AS (SELECT t.term, ln(1 + (st.n - coalesce(df.df, 0) + 0.5) / (coalesce(df.df, 0) + 0.5)) AS idf \
               FROM st CROSS JOIN unnest($TERMS::text[]) AS t(term) LEFT JOIN df ON df.term = t.term) \
         SELECT d.rid, {BM25_SUM} AS score, min(d.speaker) \
         FROM v d CROSS JOIN st {TF} \
         WHERE d.tsv @@ $TSQ::text::tsquery AND ($ALLOWED::bigint[] IS NULL OR d.rid = ANY($ALLOWED)) \
         GROUP BY d.rid ORDER BY score DESC, d.rid LIMIT $N",
        indexed(q)
    )
}

const KEYWORD_PARAMS: &[&str] = &["PART", "TERMS", "TSQ", "ALLOWED", "CW", "AS_OF", "NOW", "N"];

/// (rid, score, speaker) of one signal's candidates, best first.
type Hits = Vec<(i64, f32, Option<String>)>;

fn hits(rows: Vec<postgres::Row>) -> Hits {
    rows.iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect()
}

impl PgStore {
    pub(crate) fn search(&self, q: &SearchQuery, vector: &[f32]) -> Result<Vec<SearchHit>> {
        // Counted while it runs: a search splits its keyword walk only
        // while a core is free (`memloop_longterm::par`).
        let _busy = memloop_longterm::par::Busy::start();
        let partition = q.scope.partition()?;
        self.check_dims(vector)?;
        q.check()?;
        // A time window that filters narrows too (see memloop-store).
        let restricted = q.filter.is_some()
            || !q.kinds.is_empty()
            || (q.scope.user_id.is_some() && q.scope.agent_id.is_some())
            || q.scope.session_id.is_some()
            || q.time.is_some_and(|t| t.filters());
        let past = q.as_of.is_some() || q.include_superseded;
        let (terms, tsquery) = terms::query(self.analyzer(), &q.text);
        let n = q.candidates.max(q.top_k) as i64;
        let query_words = rank::query_words(&q.text);
        let qvec = HalfVector::from_f32_slice(vector);
        let cw = f64::from(self.options.context_weight);
        let ef = self.options.ef_search.max(n).clamp(1, 1000).to_string();
        let tenant = q.scope.tenant.as_str();
        let now = self.now();
        // One snapshot for every statement: read committed would let a
        // supersession committed between the narrowing and the ranking hide
        // both the old fact (no longer current) and the new (not narrowed
        // in), and a writer reconciling against this search would then add
        // a second current fact where it should have superseded.
        self.snapshot(Tenancy::One(tenant), |tx| {
            // Plans for these values, never a cached generic one: a generic
            // plan cannot tell the partition's share of the table and
            // sorted all of a 20k-row partition by distance (127 ms)
            // instead of walking the HNSW index (20-50 ms, docs/postgres.md).
            // With the HNSW walk's settings, in the same round trip.
            tx.query(
                "SELECT set_config('plan_cache_mode', 'force_custom_plan', true), \
                        set_config('hnsw.ef_search', $1, true), \
                        set_config('hnsw.iterative_scan', 'strict_order', true)",
                &[&ef],
            )?;
            let allowed: Option<Vec<i64>> = if restricted {
                Some(self.allowed_rows(tx, &partition, q, now)?)
            } else {
                None
            };
            let (docs, position) = partition_position(tx, &partition)?;
            let wants_keywords = tsquery.is_some() && q.keyword_weight > 0.0;
            // The current rows from this process's copy of the partition's
            // keyword index, at this snapshot; the past, or a snapshot
            // older than the copy, from SQL.
            let copy = if wants_keywords && !past {
                self.keywords
                    .prepare(tx, &partition, position, self.options.context_weight)?
            } else {
                Prepared::Sql
            };
            let allowed_set: Option<HashSet<i64>> =
                allowed.as_ref().map(|a| a.iter().copied().collect());
            let kq = KeywordQuery {
                terms: &terms,
                limit: n as usize,
                now,
                allowed: allowed_set.as_ref(),
            };
            let ann = q.vector_weight > 0.0
                && !past
                && allowed.is_none()
                && docs >= self.options.exact_threshold;
            let vector_side = |tx: &mut Tx<'_>| -> Result<VectorHits> {
                if q.vector_weight <= 0.0 {
                    Ok(Vec::new())
                } else if ann {
                    let near = hits(tx.query(VECTOR_ANN, &[&qvec, &partition, &n, &now])?);
                    Ok(by_memory(near, n as usize))
                } else {
                    let sql = numbered(
                        &VECTOR_EXACT.replace("{indexed}", indexed(q)),
                        &["PART", "ALLOWED", "AS_OF", "NOW", "Q", "N"],
                    );
                    let near =
                        hits(tx.query(&sql, &[&partition, &allowed, &q.as_of, &now, &qvec, &n])?);
                    Ok(by_memory(near, n as usize))
                }
            };
            // A large partition's two sides at once: BM25 on another
            // thread while the HNSW walk runs in the database (a thread
            // costs more than a small partition's whole keyword search).
            let (vec_hits, in_memory) = if ann && matches!(copy, Prepared::Ready { .. }) {
                std::thread::scope(|scope| {
                    let keyword_side = scope.spawn(|| self.keywords.run(&copy, &kq));
                    let vec_hits = vector_side(tx);
                    // A panicked ranking is asked of SQL instead.
                    (vec_hits, keyword_side.join().ok().flatten())
                })
            } else {
                (vector_side(tx), self.keywords.run(&copy, &kq))
            };
            let vectors = vec_hits?;
            // The similarities (and speakers) as hits, for the speaker lift.
            let vec_hits: Hits = vectors
                .iter()
                .map(|(h, speaker)| (h.row, h.similarity, speaker.clone()))
                .collect();
            let kw_hits: Hits = match (&tsquery, in_memory) {
                (Some(_), Some(found)) if wants_keywords => {
                    with_speakers(tx, found, &vec_hits, q.speaker_boost > 0.0)?
                }
                (Some(tsq), None) if wants_keywords => {
                    let sql = if past {
                        keyword_past_sql(q)
                    } else {
                        KEYWORD_CURRENT.to_string()
                    };
                    let sql = numbered(&sql, KEYWORD_PARAMS);
                    hits(tx.query(
                        &sql,
                        &[&partition, &terms, tsq, &allowed, &cw, &q.as_of, &now, &n],
                    )?)
                }
                _ => Vec::new(),
            };
            let spoken: HashSet<i64> = if q.speaker_boost > 0.0 {
                vec_hits
                    .iter()
                    .chain(&kw_hits)
                    .filter(|h| {
                        h.2.as_deref().is_some_and(|s| {
                            rank::speaker_words(s)
                                .iter()
                                .any(|w| query_words.contains(w))
                        })
                    })
                    .map(|h| h.0)
                    .collect()
            } else {
                HashSet::new()
            };
            let pairs = |h: &Hits| h.iter().map(|h| (h.0, h.1)).collect::<Vec<_>>();
            let vectors: Vec<VectorHit> = vectors.into_iter().map(|(h, _)| h).collect();
            let mut ranked = rank::fuse_candidates(q, &vectors, &pairs(&kw_hits), &spoken);
            // Both reads go through the one transaction, one after the other.
            let shared = RefCell::new(&mut *tx);
            let records = ranked.cut_and_hydrate(
                q,
                now,
                |rids, _| {
                    let tx = &mut **shared.borrow_mut();
                    let mut inputs = by_rid(tx, RANK_INPUT_COLUMNS, rids, rank_inputs_from_row)?;
                    // This handle's retrievals not yet written count too.
                    self.access.merge_into(tenant, inputs.values_mut());
                    Ok(inputs)
                },
                |rids| {
                    let tx = &mut **shared.borrow_mut();
                    let mut records = by_rid(tx, RECORD_COLUMNS, rids, record_from_row)?;
                    self.access.merge_into(tenant, records.values_mut());
                    Ok(records)
                },
            )?;
            let mut out = ranked.into_hits(&records, q, now);
            rank::finish(&mut out, q.top_k, now, |id| match get_in(tx, tenant, id) {
                Ok(rec) => Ok(Some(rec)),
                Err(Error::NotFound(_)) => Ok(None),
                Err(e) => Err(e),
            })?;
            Ok(out)
        })
    }

    /// The rows a narrowed search may return: agent, session and kind in
    /// SQL, a metadata filter on each record.
    fn allowed_rows(
        &self,
        tx: &mut Tx<'_>,
        partition: &str,
        q: &SearchQuery,
        now: i64,
    ) -> Result<Vec<i64>> {
        let kinds = kinds_param(&q.kinds);
        let cols = if q.filter.is_some() {
            RECORD_COLUMNS
        } else {
            "rid"
        };
        let sql = numbered(
            &format!(
                "SELECT {cols} FROM memories WHERE partition = $PART AND {} AND {NARROWING} \
                 AND ($FROM::bigint IS NULL OR valid_from >= $FROM) \
                 AND ($UNTIL::bigint IS NULL OR valid_from < $UNTIL)",
                indexed(q)
            ),
            &[
                "PART", "AS_OF", "NOW", "AGENT", "SESSION", "KINDS", "FROM", "UNTIL",
            ],
        );
        // The window's bounds when it filters.
        let window = q.time.filter(|t| t.filters());
        let (from, until) = (window.and_then(|t| t.start), window.and_then(|t| t.end));
        let rows = tx.query(
            &sql,
            &[
                &partition,
                &q.as_of,
                &now,
                &q.scope.agent_id,
                &q.scope.session_id,
                &kinds,
                &from,
                &until,
            ],
        )?;
        let Some(filter) = &q.filter else {
            return Ok(rows.iter().map(|r| r.get(0)).collect());
        };
        let mut out = Vec::new();
        for row in &rows {
            let (rid, rec) = record_from_row(row)?;
            if q.scope.admits(&rec.scope) && filter.matches(&rec) {
                out.push(rid);
            }
        }
        Ok(out)
    }
}

/// Current memories in the partition (the trigger-kept count), and where
/// its keyword index stands at this snapshot.
fn partition_position(tx: &mut Tx<'_>, partition: &str) -> Result<(i64, Position)> {
    let row = tx.query_one(
        "SELECT s.docs, s.version, \
                (SELECT value::bigint FROM memloop_meta WHERE key = 'keyword_log_floor') \
         FROM (SELECT 1) one LEFT JOIN partition_stats s ON s.partition = $1",
        &[&partition],
    )?;
    let docs: Option<i64> = row.get(0);
    let version: Option<i64> = row.get(1);
    let floor: Option<i64> = row.get(2);
    Ok((
        docs.unwrap_or(0),
        Position {
            version: version.filter(|_| docs.unwrap_or(0) > 0),
            floor: floor.unwrap_or(0),
        },
    ))
}

/// In-memory keyword hits with who said each (for the speaker lift),
/// taken from the vector hits where they overlap and read for the rest.
fn with_speakers(
    tx: &mut Tx<'_>,
    found: Vec<(i64, f32)>,
    vec_hits: &Hits,
    wanted: bool,
) -> Result<Hits> {
    let mut known: HashMap<i64, Option<String>> = HashMap::new();
    if wanted {
        for h in vec_hits {
            known.insert(h.0, h.2.clone());
        }
        let missing: Vec<i64> = found
            .iter()
            .map(|h| h.0)
            .filter(|r| !known.contains_key(r))
            .collect();
        if !missing.is_empty() {
            for r in tx.query(
                "SELECT rid, metadata->>'speaker' FROM memories WHERE rid = ANY($1)",
                &[&missing],
            )? {
                known.insert(r.get(0), r.get(1));
            }
        }
    }
    Ok(found
        .into_iter()
        .map(|(rid, score)| (rid, score, known.get(&rid).cloned().flatten()))
        .collect())
}

/// `columns` of the given rows, each mapped by `from_row` to (rid, T).
fn by_rid<T>(
    tx: &mut Tx<'_>,
    columns: &str,
    rids: &[i64],
    from_row: fn(&postgres::Row) -> Result<(i64, T)>,
) -> Result<HashMap<i64, T>> {
    if rids.is_empty() {
        return Ok(HashMap::new());
    }
    let rows = tx.query(
        &format!("SELECT {columns} FROM memories WHERE rid = ANY($1)"),
        &[&rids],
    )?;
    rows.iter().map(from_row).collect()
}
