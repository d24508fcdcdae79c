//! The entity graph in PostgreSQL (tables `entities`, `mentions`,
//! `relations`, schema.rs version 9), kept as the embedded store keeps it
//! (`memloop-store`'s `graph.rs`): written in the transaction that writes
//! the memory, read through current memories only (or those true at
//! `as_of`), gone with the memory's row. A single-valued relation
//! (`Relation::single`) ends the subject's earlier one to another object.
//!
//! Writers that name the same entity take turns on its row (the upsert
//! locks it to the commit, entities in key order so two writers never wait
//! on each other in a circle): a second `works_at` for one person sees the
//! first one committed and retires it.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};

use memloop_core::links::{entity_key, EntityKind, Links, Mention};
use memloop_core::{MemoryRecord, Result, Scope};
use memloop_longterm::dump::{DumpedLinks, DumpedRelation};
use memloop_longterm::graph::{reach, EntityLinks, GraphEntity, GraphRelation, LinkLimits, Linked};
use memloop_longterm::LinksFn;
use postgres::Row;

use crate::pool::Tx;
use crate::rows::{record_from_row, RECORD_COLUMNS};
use crate::{PgStore, Tenancy};

/// A current memory of the scope (partition $1, agent $2, session $3, now
/// $4), as a condition on table alias `m`.
const CURRENT_IN_SCOPE: &str = "m.partition = $1 AND m.valid_until IS NULL \
     AND (m.expires_at IS NULL OR m.expires_at > $4::bigint) \
     AND ($2::text IS NULL OR m.agent_id = $2) AND ($3::text IS NULL OR m.session_id = $3)";

/// A memory of the scope true at $4.
const TRUE_THEN_IN_SCOPE: &str = "m.partition = $1 AND m.valid_from <= $4::bigint \
     AND (m.valid_until IS NULL OR m.valid_until > $4::bigint) \
     AND ($2::text IS NULL OR m.agent_id = $2) AND ($3::text IS NULL OR m.session_id = $3)";

/// The memories a read follows (alias `m`) and the relations that hold
/// (alias `r`): now, or at `as_of` ($4 either way).
fn visible(as_of: Option<i64>) -> (&'static str, &'static str) {
    match as_of {
        None => (CURRENT_IN_SCOPE, "r.valid_until IS NULL"),
        Some(_) => (
            TRUE_THEN_IN_SCOPE,
            "r.valid_from <= $4::bigint AND (r.valid_until IS NULL OR r.valid_until > $4::bigint)",
        ),
    }
}

/// Writes a memory's mentions and relations inside its transaction.
pub(crate) fn write_links(
    tx: &mut Tx<'_>,
    (tenant, partition): (&str, &str),
    rid: i64,
    valid_from: i64,
    links: &Links,
) -> Result<()> {
    let mut mentions: Vec<_> = links.mentions.iter().collect();
    mentions.sort_by_key(|m| entity_key(&m.name));
    let mut ids: HashMap<String, i64> = HashMap::new();
    for m in mentions {
        let key = entity_key(&m.name);
        if key.is_empty() || ids.contains_key(&key) {
            continue;
        }
        let id = entity_id(tx, (tenant, partition), &m.name, m.kind)?;
        ids.insert(key, id);
        add_mention(tx, tenant, id, rid)?;
    }
    for r in &links.relations {
        let (Some(&s), Some(&o)) = (
            ids.get(&entity_key(&r.subject)),
            ids.get(&entity_key(&r.object)),
        ) else {
            continue; // `Links::relate` mentions both ends; a hand-built one may not.
        };
        let mut until: Option<i64> = None;
        if r.single {
            tx.execute(
                "UPDATE relations SET valid_until = $4 WHERE subject = $1 AND relation = $2 \
                 AND object <> $3 AND valid_until IS NULL AND valid_from <= $4",
                &[&s, &r.relation, &o, &valid_from],
            )?;
            until = tx
                .query_one(
                    "SELECT min(valid_from) FROM relations WHERE subject = $1 AND relation = $2 \
                     AND object <> $3 AND valid_from > $4",
                    &[&s, &r.relation, &o, &valid_from],
                )?
                .get(0);
        }
        add_relation(tx, tenant, (s, &r.relation, o), rid, (valid_from, until))?;
    }
    Ok(())
}

fn add_mention(tx: &mut Tx<'_>, tenant: &str, entity: i64, rid: i64) -> Result<()> {
    tx.execute(
        "INSERT INTO mentions (entity, rid, tenant) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
        &[&entity, &rid, &tenant],
    )?;
    Ok(())
}

/// `subject relation object`, stated by memory `rid`, holding from
/// `valid_from` until `valid_until`.
fn add_relation(
    tx: &mut Tx<'_>,
    tenant: &str,
    (subject, relation, object): (i64, &str, i64),
    rid: i64,
    (valid_from, valid_until): (i64, Option<i64>),
) -> Result<()> {
    tx.execute(
        "INSERT INTO relations (subject, relation, object, rid, tenant, valid_from, valid_until) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
        &[
            &subject,
            &relation,
            &object,
            &rid,
            &tenant,
            &valid_from,
            &valid_until,
        ],
    )?;
    Ok(())
}

/// The entity's id in the partition, created on first mention. A known
/// kind replaces an unknown one; the upsert also locks the row to the
/// commit (see the module's note).
fn entity_id(
    tx: &mut Tx<'_>,
    (tenant, partition): (&str, &str),
    name: &str,
    kind: EntityKind,
) -> Result<i64> {
    let row = tx.query_one(
        "INSERT INTO entities (partition, tenant, key, name, kind) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (partition, key) DO UPDATE SET kind = CASE \
             WHEN entities.kind = 'unknown' THEN EXCLUDED.kind ELSE entities.kind END \
         RETURNING id",
        &[
            &partition,
            &tenant,
            &entity_key(name),
            &name.trim(),
            &kind.as_str(),
        ],
    )?;
    Ok(row.get(0))
}

/// The links of the memories `rids` as a dump holds them, in the embedded
/// store's order (byte order of the entity keys), two queries in all.
pub(crate) fn dumped_links(tx: &mut Tx<'_>, rids: &[i64]) -> Result<HashMap<i64, DumpedLinks>> {
    let mut links: HashMap<i64, DumpedLinks> = HashMap::new();
    for r in tx.query(
        "SELECT x.rid, e.name, e.kind FROM mentions x JOIN entities e ON e.id = x.entity \
         WHERE x.rid = ANY($1) ORDER BY x.rid, e.key COLLATE \"C\"",
        &[&rids],
    )? {
        links.entry(r.get(0)).or_default().mentions.push(Mention {
            name: r.get(1),
            kind: EntityKind::parse(r.get(2)),
        });
    }
    for r in tx.query(
        "SELECT r.rid, s.name, r.relation, o.name, r.valid_from, r.valid_until FROM relations r \
         JOIN entities s ON s.id = r.subject JOIN entities o ON o.id = r.object \
         WHERE r.rid = ANY($1) \
         ORDER BY r.rid, s.key COLLATE \"C\", r.relation COLLATE \"C\", o.key COLLATE \"C\"",
        &[&rids],
    )? {
        links
            .entry(r.get(0))
            .or_default()
            .relations
            .push(DumpedRelation {
                subject: r.get(1),
                relation: r.get(2),
                object: r.get(3),
                valid_from: r.get(4),
                valid_until: r.get(5),
            });
    }
    Ok(links)
}

/// Writes a restored memory's links back as they were dumped: each
/// relation with the validity it had, none retired or ended here (the
/// dump holds what the writes' reconciling left). Entities in key order,
/// as `write_links` takes them.
pub(crate) fn restore_links(
    tx: &mut Tx<'_>,
    (tenant, partition): (&str, &str),
    rid: i64,
    links: &DumpedLinks,
) -> Result<()> {
    let mut names: Vec<(&str, EntityKind)> = links
        .mentions
        .iter()
        .map(|m| (m.name.as_str(), m.kind))
        .chain(links.relations.iter().flat_map(|r| {
            [
                (r.subject.as_str(), EntityKind::Unknown),
                (r.object.as_str(), EntityKind::Unknown),
            ]
        }))
        .collect();
    names.sort_by_key(|(name, _)| entity_key(name));
    let mut ids: HashMap<String, i64> = HashMap::new();
    for (name, kind) in names {
        let key = entity_key(name);
        if key.is_empty() || ids.contains_key(&key) {
            continue;
        }
        ids.insert(key, entity_id(tx, (tenant, partition), name, kind)?);
    }
    for m in &links.mentions {
        let Some(&id) = ids.get(&entity_key(&m.name)) else {
            continue;
        };
        add_mention(tx, tenant, id, rid)?;
    }
    for r in &links.relations {
        let (Some(&s), Some(&o)) = (
            ids.get(&entity_key(&r.subject)),
            ids.get(&entity_key(&r.object)),
        ) else {
            continue;
        };
        let validity = (r.valid_from, r.valid_until);
        add_relation(tx, tenant, (s, &r.relation, o), rid, validity)?;
    }
    Ok(())
}

/// Replaces a memory's links (its text changed); the names only it
/// mentioned go.
pub(crate) fn replace_links(
    tx: &mut Tx<'_>,
    (tenant, partition): (&str, &str),
    rid: i64,
    valid_from: i64,
    links: &Links,
) -> Result<()> {
    let before: Vec<i64> = tx
        .query(
            "DELETE FROM mentions WHERE rid = $1 RETURNING entity",
            &[&rid],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    tx.execute("DELETE FROM relations WHERE rid = $1", &[&rid])?;
    write_links(tx, (tenant, partition), rid, valid_from, links)?;
    tx.execute(
        "DELETE FROM entities e WHERE e.id = ANY($1) \
         AND NOT EXISTS (SELECT 1 FROM mentions x WHERE x.entity = e.id)",
        &[&before],
    )?;
    Ok(())
}

/// Deletes the partition's entities no memory mentions (after a forget).
pub(crate) fn drop_unmentioned(tx: &mut Tx<'_>, partition: &str) -> Result<u64> {
    tx.execute(
        "DELETE FROM entities e WHERE e.partition = $1 \
         AND NOT EXISTS (SELECT 1 FROM mentions x WHERE x.entity = e.id)",
        &[&partition],
    )
}

fn entity_from_row(r: &Row) -> GraphEntity {
    GraphEntity {
        name: r.get(0),
        kind: EntityKind::parse(r.get::<_, &str>(1)),
        memories: r.get(2),
    }
}

/// The scope as the statements' first four parameters.
struct ScopeParams {
    partition: String,
    agent: Option<String>,
    session: Option<String>,
    at: i64,
}

impl ScopeParams {
    fn new(scope: &Scope, at: i64) -> Result<ScopeParams> {
        Ok(ScopeParams {
            partition: scope.partition()?,
            agent: scope.agent_id.clone(),
            session: scope.session_id.clone(),
            at,
        })
    }
}

impl PgStore {
    /// `Upkeep::relink`: memories without mentions, by row, a batch per
    /// transaction; each is checked again inside it, so a write that gave
    /// one links meanwhile is left as it wrote them.
    pub(crate) fn relink(
        &self,
        derive: &LinksFn<'_>,
        progress: &dyn Fn(usize, usize),
    ) -> Result<usize> {
        const BATCH: i64 = 256;
        const UNLINKED: &str = "NOT EXISTS (SELECT 1 FROM mentions x WHERE x.rid = m.rid)";
        let total: i64 = self.tx(Tenancy::All, |tx| {
            Ok(tx
                .query_one(
                    &format!("SELECT count(*) FROM memories m WHERE {UNLINKED}"),
                    &[],
                )?
                .get(0))
        })?;
        let (mut done, mut linked, mut last) = (0usize, 0usize, 0i64);
        loop {
            let batch: Vec<Row> = self.tx(Tenancy::All, |tx| {
                tx.query(
                    &format!(
                        "SELECT rid, tenant, partition, text, metadata, valid_from FROM memories m \
                         WHERE rid > $1 AND {UNLINKED} ORDER BY rid LIMIT $2"
                    ),
                    &[&last, &BATCH],
                )
            })?;
            let Some(batch_last) = batch.last().map(|r| r.get::<_, i64>(0)) else {
                break;
            };
            let derived: Vec<Links> = batch
                .iter()
                .map(|r| derive(r.get(3), &r.get::<_, serde_json::Value>(4)))
                .collect();
            linked += self.tx(Tenancy::All, |tx| {
                let mut n = 0;
                for (r, links) in batch.iter().zip(&derived) {
                    let rid: i64 = r.get(0);
                    let unlinked: bool = tx
                        .query_one(
                            "SELECT NOT EXISTS (SELECT 1 FROM mentions WHERE rid = $1)",
                            &[&rid],
                        )?
                        .get(0);
                    if unlinked && !links.mentions.is_empty() {
                        write_links(tx, (r.get(1), r.get(2)), rid, r.get(5), links)?;
                        n += 1;
                    }
                }
                Ok(n)
            })?;
            done += batch.len();
            last = batch_last;
            progress(done, total.max(0) as usize);
        }
        Ok(linked)
    }

    pub(crate) fn graph_entities(
        &self,
        scope: &Scope,
        as_of: Option<i64>,
    ) -> Result<Vec<GraphEntity>> {
        let p = ScopeParams::new(scope, as_of.unwrap_or(self.now()))?;
        let (in_scope, _) = visible(as_of);
        let sql = format!(
            "SELECT e.name, e.kind, count(*) FROM entities e \
             JOIN mentions x ON x.entity = e.id JOIN memories m ON m.rid = x.rid \
             WHERE e.partition = $1 AND {in_scope} \
             GROUP BY e.id ORDER BY 3 DESC, e.key"
        );
        self.snapshot(Tenancy::One(&scope.tenant), |tx| {
            let rows = tx.query(&sql, &[&p.partition, &p.agent, &p.session, &p.at])?;
            Ok(rows.iter().map(entity_from_row).collect())
        })
    }

    pub(crate) fn entity_links(
        &self,
        scope: &Scope,
        name: &str,
        as_of: Option<i64>,
    ) -> Result<Option<EntityLinks>> {
        let p = ScopeParams::new(scope, as_of.unwrap_or(self.now()))?;
        let (in_scope, holds) = visible(as_of);
        let key = entity_key(name);
        self.snapshot(Tenancy::One(&scope.tenant), |tx| {
            let Some(found) = tx.query_opt(
                "SELECT id, name, kind FROM entities WHERE partition = $1 AND key = $2",
                &[&p.partition, &key],
            )?
            else {
                return Ok(None);
            };
            let id: i64 = found.get(0);
            let memories = mentioning(tx, id, in_scope, &p, 100)?;
            if memories.is_empty() {
                return Ok(None);
            }
            let relations = tx
                .query(
                    &format!(
                        "SELECT s.name, r.relation, o.name, m.id, r.valid_from, r.valid_until \
                         FROM relations r \
                         JOIN entities s ON s.id = r.subject JOIN entities o ON o.id = r.object \
                         JOIN memories m ON m.rid = r.rid \
                         WHERE (r.subject = $5 OR r.object = $5) AND {in_scope} AND {holds} \
                         ORDER BY r.valid_from DESC, m.created_at DESC"
                    ),
                    &[&p.partition, &p.agent, &p.session, &p.at, &id],
                )?
                .iter()
                .map(|r| GraphRelation {
                    subject: r.get(0),
                    relation: r.get(1),
                    object: r.get(2),
                    memory_id: r.get(3),
                    valid_from: r.get(4),
                    valid_until: r.get(5),
                })
                .collect();
            let co_mentioned = tx
                .query(
                    &format!(
                        "SELECT e.name, e.kind, count(*) FROM mentions x \
                         JOIN mentions y ON y.rid = x.rid AND y.entity <> x.entity \
                         JOIN entities e ON e.id = y.entity JOIN memories m ON m.rid = x.rid \
                         WHERE x.entity = $5 AND {in_scope} \
                         GROUP BY e.id ORDER BY 3 DESC, e.key LIMIT 50"
                    ),
                    &[&p.partition, &p.agent, &p.session, &p.at, &id],
                )?
                .iter()
                .map(entity_from_row)
                .collect();
            Ok(Some(EntityLinks {
                entity: GraphEntity {
                    name: found.get(1),
                    kind: EntityKind::parse(found.get::<_, &str>(2)),
                    memories: memories.len() as i64,
                },
                relations,
                co_mentioned,
                memories,
            }))
        })
    }

    pub(crate) fn linked(
        &self,
        scope: &Scope,
        seed_ids: &[&str],
        limits: &LinkLimits,
    ) -> Result<Vec<Linked>> {
        let p = ScopeParams::new(scope, self.now())?;
        let seeds: HashSet<&str> = seed_ids.iter().copied().collect();
        let seed_list: Vec<String> = seed_ids.iter().map(|s| s.to_string()).collect();
        self.snapshot(Tenancy::One(&scope.tenant), |tx| {
            // (seed, entity id, entity name, current memories naming it), seeds in order.
            let via = tx.query(
                &format!(
                    "SELECT s.id, e.id, e.name, \
                        (SELECT count(*) FROM mentions y JOIN memories m ON m.rid = y.rid \
                         WHERE y.entity = e.id AND {CURRENT_IN_SCOPE}) \
                     FROM unnest($5::text[]) WITH ORDINALITY AS seed(id, ord) \
                     JOIN memories s ON s.id = seed.id AND s.partition = $1 \
                     JOIN mentions x ON x.rid = s.rid JOIN entities e ON e.id = x.entity \
                     ORDER BY seed.ord, e.key"
                ),
                &[&p.partition, &p.agent, &p.session, &p.at, &seed_list],
            )?;
            let mut reached: HashMap<i64, Vec<MemoryRecord>> = HashMap::new();
            let mut out = Vec::new();
            for row in &via {
                let (seed, entity, name): (String, i64, String) =
                    (row.get(0), row.get(1), row.get(2));
                let count = row.get::<_, i64>(3).max(0) as usize;
                if !limits.follows(count) {
                    continue;
                }
                let found = match reached.entry(entity) {
                    Entry::Occupied(e) => e.into_mut(),
                    Entry::Vacant(e) => e.insert(mentioning(
                        tx,
                        entity,
                        CURRENT_IN_SCOPE,
                        &p,
                        limits.per_entity + seeds.len(),
                    )?),
                };
                reach(&mut out, (&seed, &name, count), found, &seeds, limits);
            }
            Ok(out)
        })
    }
}

/// Memories of the scope (`in_scope`: current, or true then) naming
/// `entity`, newest first.
fn mentioning(
    tx: &mut Tx<'_>,
    entity: i64,
    in_scope: &str,
    p: &ScopeParams,
    limit: usize,
) -> Result<Vec<MemoryRecord>> {
    let cols = RECORD_COLUMNS
        .split(',')
        .map(|c| format!("m.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ");
    let rows = tx.query(
        &format!(
            "SELECT {cols} FROM mentions x JOIN memories m ON m.rid = x.rid \
             WHERE x.entity = $5 AND {in_scope} ORDER BY m.created_at DESC, m.rid DESC LIMIT $6"
        ),
        &[
            &p.partition,
            &p.agent,
            &p.session,
            &p.at,
            &entity,
            &(limit as i64),
        ],
    )?;
    rows.iter()
        .map(|r| record_from_row(r).map(|(_, rec)| rec))
        .collect()
}
