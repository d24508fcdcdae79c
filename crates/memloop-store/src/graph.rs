//! The entity graph in the store's SQLite (tables `entities`, `mentions`,
//! `relations`, schema.rs): written in the transaction that writes the
//! memory, read by `memloop entities` / `memloop links` and by search's
//! entity expansion. Only current memories link: a deleted, superseded or
//! expired one keeps its mentions for history but no read follows them
//! (except a read `as_of` a moment it was true); `forget` deletes them with
//! the rows, and the names nothing mentions. A relation holds for a time
//! (`valid_from`, `valid_until`): a single-valued one ends when a later
//! memory gives its subject another object.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};

use memloop_core::links::{entity_key, EntityKind, Links, Mention};
use memloop_core::{MemoryRecord, Result, Scope};
use memloop_longterm::dump::{DumpedLinks, DumpedRelation};
use memloop_longterm::graph::{reach, EntityLinks, GraphEntity, GraphRelation, LinkLimits, Linked};
use memloop_longterm::LinksFn;
use rusqlite::{params, Connection, OptionalExtension, Transaction};

use crate::rows::{record_from_row, RECORD_COLUMNS};
use crate::{sql_err, EmbeddedStore};

/// A current memory of the scope (partition ?1, agent ?2, session ?3, now ?4),
/// as a condition on table alias `m`.
const CURRENT_IN_SCOPE: &str = "m.partition = ?1 AND m.valid_until IS NULL \
     AND (m.expires_at IS NULL OR m.expires_at > ?4) \
     AND (?2 IS NULL OR m.agent_id = ?2) AND (?3 IS NULL OR m.session_id = ?3)";

/// A memory of the scope true at ?4, as `CURRENT_IN_SCOPE` with `as_of`.
const TRUE_THEN_IN_SCOPE: &str = "m.partition = ?1 AND m.valid_from <= ?4 \
     AND (m.valid_until IS NULL OR m.valid_until > ?4) \
     AND (?2 IS NULL OR m.agent_id = ?2) AND (?3 IS NULL OR m.session_id = ?3)";

/// The memories a read follows (table alias `m`) and the relations that
/// hold (alias `r`): now, or at `as_of` (parameter ?4 either way).
fn visible(as_of: Option<i64>) -> (&'static str, &'static str) {
    match as_of {
        None => (CURRENT_IN_SCOPE, "r.valid_until IS NULL"),
        Some(_) => (
            TRUE_THEN_IN_SCOPE,
            "r.valid_from <= ?4 AND (r.valid_until IS NULL OR r.valid_until > ?4)",
        ),
    }
}

/// Writes a memory's mentions and relations inside its transaction. A
/// single-valued relation (`Relation::single`) retires the subject's
/// relations of that name to other objects that held before
/// `valid_from` (the memory's), and ends at once if another object was
/// stated for a later time (a memory written late about the past).
pub(crate) fn write_links(
    tx: &Transaction<'_>,
    partition: &str,
    row: i64,
    valid_from: i64,
    links: &Links,
) -> Result<()> {
    let mut ids: HashMap<String, i64> = HashMap::new();
    for m in &links.mentions {
        let id = entity_id(tx, partition, &m.name, m.kind)?;
        ids.insert(entity_key(&m.name), id);
        add_mention(tx, id, row)?;
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
            tx.prepare_cached(
                "UPDATE relations SET valid_until = ?4 WHERE subject = ?1 AND relation = ?2 \
                 AND object <> ?3 AND valid_until IS NULL AND valid_from <= ?4",
            )
            .map_err(sql_err)?
            .execute(params![s, r.relation, o, valid_from])
            .map_err(sql_err)?;
            until = tx
                .prepare_cached(
                    "SELECT min(valid_from) FROM relations WHERE subject = ?1 AND relation = ?2 \
                     AND object <> ?3 AND valid_from > ?4",
                )
                .map_err(sql_err)?
                .query_row(params![s, r.relation, o, valid_from], |x| x.get(0))
                .map_err(sql_err)?;
        }
        add_relation(tx, (s, &r.relation, o), row, (valid_from, until))?;
    }
    Ok(())
}

fn add_mention(tx: &Transaction<'_>, entity: i64, row: i64) -> Result<()> {
    tx.prepare_cached("INSERT OR IGNORE INTO mentions (entity, memory_row) VALUES (?1, ?2)")
        .map_err(sql_err)?
        .execute(params![entity, row])
        .map_err(sql_err)?;
    Ok(())
}

/// `subject relation object`, stated by memory `row`, holding from
/// `valid_from` until `valid_until`.
fn add_relation(
    tx: &Transaction<'_>,
    (subject, relation, object): (i64, &str, i64),
    row: i64,
    (valid_from, valid_until): (i64, Option<i64>),
) -> Result<()> {
    tx.prepare_cached(
        "INSERT OR IGNORE INTO relations (subject, relation, object, memory_row, valid_from, valid_until) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )
    .map_err(sql_err)?
    .execute(params![subject, relation, object, row, valid_from, valid_until])
    .map_err(sql_err)?;
    Ok(())
}

/// A memory's links as a dump holds them: mentions by entity key,
/// relations by their ends' keys (the order every backend dumps in).
pub(crate) fn dumped_links(conn: &Connection, row: i64) -> Result<DumpedLinks> {
    let mentions = conn
        .prepare_cached(
            "SELECT e.name, e.kind FROM mentions x JOIN entities e ON e.id = x.entity \
             WHERE x.memory_row = ?1 ORDER BY e.key",
        )
        .map_err(sql_err)?
        .query_map([row], |r| {
            Ok(Mention {
                name: r.get(0)?,
                kind: EntityKind::parse(&r.get::<_, String>(1)?),
            })
        })
        .map_err(sql_err)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(sql_err)?;
    let relations = conn
        .prepare_cached(
            "SELECT s.name, r.relation, o.name, r.valid_from, r.valid_until FROM relations r \
             JOIN entities s ON s.id = r.subject JOIN entities o ON o.id = r.object \
             WHERE r.memory_row = ?1 ORDER BY s.key, r.relation, o.key",
        )
        .map_err(sql_err)?
        .query_map([row], |r| {
            Ok(DumpedRelation {
                subject: r.get(0)?,
                relation: r.get(1)?,
                object: r.get(2)?,
                valid_from: r.get(3)?,
                valid_until: r.get(4)?,
            })
        })
        .map_err(sql_err)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(sql_err)?;
    Ok(DumpedLinks {
        mentions,
        relations,
    })
}

/// Writes a restored memory's links back as they were dumped: each
/// relation with the validity it had, none retired or ended here (the
/// dump holds what the writes' reconciling left).
pub(crate) fn restore_links(
    tx: &Transaction<'_>,
    partition: &str,
    row: i64,
    links: &DumpedLinks,
) -> Result<()> {
    for m in &links.mentions {
        let id = entity_id(tx, partition, &m.name, m.kind)?;
        add_mention(tx, id, row)?;
    }
    for r in &links.relations {
        let s = entity_id(tx, partition, &r.subject, EntityKind::Unknown)?;
        let o = entity_id(tx, partition, &r.object, EntityKind::Unknown)?;
        add_relation(tx, (s, &r.relation, o), row, (r.valid_from, r.valid_until))?;
    }
    Ok(())
}

/// Replaces a memory's links (its text changed).
pub(crate) fn replace_links(
    tx: &Transaction<'_>,
    partition: &str,
    row: i64,
    valid_from: i64,
    links: &Links,
) -> Result<()> {
    tx.execute("DELETE FROM mentions WHERE memory_row = ?1", [row])
        .map_err(sql_err)?;
    tx.execute("DELETE FROM relations WHERE memory_row = ?1", [row])
        .map_err(sql_err)?;
    write_links(tx, partition, row, valid_from, links)?;
    drop_unmentioned(tx, partition)?;
    Ok(())
}

/// Deletes the partition's entities no memory mentions (after rows went):
/// with `secure_delete` and the purge's vacuum, a purged name leaves no
/// trace in the file.
pub(crate) fn drop_unmentioned(tx: &Transaction<'_>, partition: &str) -> Result<usize> {
    tx.execute(
        "DELETE FROM entities WHERE partition = ?1 \
         AND NOT EXISTS (SELECT 1 FROM mentions WHERE entity = entities.id)",
        [partition],
    )
    .map_err(sql_err)
}

/// The entity's id in the partition, created on first mention; a known kind
/// replaces an unknown one.
fn entity_id(tx: &Transaction<'_>, partition: &str, name: &str, kind: EntityKind) -> Result<i64> {
    let key = entity_key(name);
    let found: Option<(i64, String)> = tx
        .prepare_cached("SELECT id, kind FROM entities WHERE partition = ?1 AND key = ?2")
        .map_err(sql_err)?
        .query_row(params![partition, key], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
        .map_err(sql_err)?;
    match found {
        Some((id, old)) => {
            if EntityKind::parse(&old) == EntityKind::Unknown && kind != EntityKind::Unknown {
                tx.execute(
                    "UPDATE entities SET kind = ?1 WHERE id = ?2",
                    params![kind.as_str(), id],
                )
                .map_err(sql_err)?;
            }
            Ok(id)
        }
        None => {
            tx.prepare_cached(
                "INSERT INTO entities (partition, key, name, kind) VALUES (?1, ?2, ?3, ?4)",
            )
            .map_err(sql_err)?
            .execute(params![partition, key, name.trim(), kind.as_str()])
            .map_err(sql_err)?;
            Ok(tx.last_insert_rowid())
        }
    }
}

/// The SQL parameters of `CURRENT_IN_SCOPE` (?4: now) or of
/// `TRUE_THEN_IN_SCOPE` (?4: the moment asked).
fn scope_params(scope: &Scope, at: i64) -> Result<(String, Option<String>, Option<String>, i64)> {
    Ok((
        scope.partition()?,
        scope.agent_id.clone(),
        scope.session_id.clone(),
        at,
    ))
}

fn entity_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<GraphEntity> {
    Ok(GraphEntity {
        name: r.get(0)?,
        kind: EntityKind::parse(&r.get::<_, String>(1)?),
        memories: r.get(2)?,
    })
}

impl EmbeddedStore {
    /// `Upkeep::relink`: memories without mentions, by row, a batch per
    /// transaction; each is checked again inside it, so a write that gave
    /// one links meanwhile is left as it wrote them.
    pub(crate) fn relink(
        &self,
        derive: &LinksFn<'_>,
        progress: &dyn Fn(usize, usize),
    ) -> Result<usize> {
        const BATCH: i64 = 256;
        const UNLINKED: &str = "NOT EXISTS (SELECT 1 FROM mentions WHERE memory_row = m.row)";
        let total: i64 = self
            .conn()
            .query_row(
                &format!("SELECT count(*) FROM memories m WHERE {UNLINKED}"),
                [],
                |r| r.get(0),
            )
            .map_err(sql_err)?;
        let (mut done, mut linked, mut last_row) = (0usize, 0usize, 0i64);
        loop {
            type Unlinked = (i64, String, String, String, i64);
            let batch: Vec<Unlinked> = {
                let conn = self.conn();
                let mut stmt = conn
                    .prepare_cached(&format!(
                        "SELECT row, partition, text, metadata, valid_from FROM memories m \
                         WHERE row > ?1 AND {UNLINKED} ORDER BY row LIMIT ?2"
                    ))
                    .map_err(sql_err)?;
                let rows = stmt
                    .query_map(params![last_row, BATCH], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                    })
                    .map_err(sql_err)?;
                rows.collect::<rusqlite::Result<_>>().map_err(sql_err)?
            };
            let Some(&(last, ..)) = batch.last() else {
                break;
            };
            let derived: Vec<Links> = batch
                .iter()
                .map(|(_, _, text, metadata, _)| {
                    derive(text, &serde_json::from_str(metadata).unwrap_or_default())
                })
                .collect();
            let mut conn = self.conn();
            let tx = crate::write_tx(&mut conn)?;
            for ((row, partition, _, _, valid_from), links) in batch.iter().zip(&derived) {
                let unlinked: bool = tx
                    .prepare_cached(
                        "SELECT NOT EXISTS (SELECT 1 FROM mentions WHERE memory_row = ?1)",
                    )
                    .map_err(sql_err)?
                    .query_row([row], |r| r.get(0))
                    .map_err(sql_err)?;
                if unlinked && !links.mentions.is_empty() {
                    write_links(&tx, partition, *row, *valid_from, links)?;
                    linked += 1;
                }
            }
            tx.commit().map_err(sql_err)?;
            done += batch.len();
            last_row = last;
            progress(done, total.max(0) as usize);
        }
        Ok(linked)
    }

    pub(crate) fn graph_entities(
        &self,
        scope: &Scope,
        as_of: Option<i64>,
    ) -> Result<Vec<GraphEntity>> {
        let (p, agent, session, now) = scope_params(scope, as_of.unwrap_or(self.now()))?;
        let (memories, _) = visible(as_of);
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT e.name, e.kind, count(*) FROM entities e \
                 JOIN mentions x ON x.entity = e.id JOIN memories m ON m.row = x.memory_row \
                 WHERE e.partition = ?1 AND {memories} \
                 GROUP BY e.id ORDER BY 3 DESC, e.key"
            ))
            .map_err(sql_err)?;
        let rows = stmt
            .query_map(params![p, agent, session, now], entity_from_row)
            .map_err(sql_err)?;
        rows.collect::<rusqlite::Result<_>>().map_err(sql_err)
    }

    pub(crate) fn entity_links(
        &self,
        scope: &Scope,
        name: &str,
        as_of: Option<i64>,
    ) -> Result<Option<EntityLinks>> {
        let (p, agent, session, now) = scope_params(scope, as_of.unwrap_or(self.now()))?;
        let (in_scope, holds) = visible(as_of);
        let conn = self.conn();
        let found: Option<(i64, String, String)> = conn
            .prepare_cached("SELECT id, name, kind FROM entities WHERE partition = ?1 AND key = ?2")
            .map_err(sql_err)?
            .query_row(params![p, entity_key(name)], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()
            .map_err(sql_err)?;
        let Some((id, name, kind)) = found else {
            return Ok(None);
        };
        let memories = mentioning(&conn, id, in_scope, (&p, &agent, &session, now), 100)?;
        if memories.is_empty() {
            return Ok(None);
        }
        let relations = {
            let mut stmt = conn
                .prepare_cached(&format!(
                    "SELECT s.name, r.relation, o.name, m.id, r.valid_from, r.valid_until \
                     FROM relations r \
                     JOIN entities s ON s.id = r.subject JOIN entities o ON o.id = r.object \
                     JOIN memories m ON m.row = r.memory_row \
                     WHERE (r.subject = ?5 OR r.object = ?5) AND {in_scope} AND {holds} \
                     ORDER BY r.valid_from DESC, m.created_at DESC"
                ))
                .map_err(sql_err)?;
            let rows = stmt
                .query_map(params![p, agent, session, now, id], |r| {
                    Ok(GraphRelation {
                        subject: r.get(0)?,
                        relation: r.get(1)?,
                        object: r.get(2)?,
                        memory_id: r.get(3)?,
                        valid_from: r.get(4)?,
                        valid_until: r.get(5)?,
                    })
                })
                .map_err(sql_err)?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
                .map_err(sql_err)?
        };
        let co_mentioned = {
            let mut stmt = conn
                .prepare_cached(&format!(
                    "SELECT e.name, e.kind, count(*) FROM mentions x \
                     JOIN mentions y ON y.memory_row = x.memory_row AND y.entity <> x.entity \
                     JOIN entities e ON e.id = y.entity JOIN memories m ON m.row = x.memory_row \
                     WHERE x.entity = ?5 AND {in_scope} \
                     GROUP BY e.id ORDER BY 3 DESC, e.key LIMIT 50"
                ))
                .map_err(sql_err)?;
            let rows = stmt
                .query_map(params![p, agent, session, now, id], entity_from_row)
                .map_err(sql_err)?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
                .map_err(sql_err)?
        };
        Ok(Some(EntityLinks {
            entity: GraphEntity {
                name,
                kind: EntityKind::parse(&kind),
                memories: memories.len() as i64,
            },
            relations,
            co_mentioned,
            memories,
        }))
    }

    pub(crate) fn linked(
        &self,
        scope: &Scope,
        seed_ids: &[&str],
        limits: &LinkLimits,
    ) -> Result<Vec<Linked>> {
        let (p, agent, session, now) = scope_params(scope, self.now())?;
        let conn = self.conn();
        let seeds: HashSet<&str> = seed_ids.iter().copied().collect();
        // (seed, entity id, entity name), seeds in the order given.
        let mut via: Vec<(String, i64, String)> = Vec::new();
        {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT e.id, e.name FROM memories s JOIN mentions x ON x.memory_row = s.row \
                     JOIN entities e ON e.id = x.entity WHERE s.id = ?1 AND s.partition = ?2",
                )
                .map_err(sql_err)?;
            for seed in seed_ids {
                let rows = stmt
                    .query_map(params![seed, p], |r| Ok((r.get::<_, i64>(0)?, r.get(1)?)))
                    .map_err(sql_err)?;
                for r in rows {
                    let (id, name) = r.map_err(sql_err)?;
                    via.push((seed.to_string(), id, name));
                }
            }
        }
        let mut counted: HashMap<i64, usize> = HashMap::new();
        let mut reached: HashMap<i64, Vec<MemoryRecord>> = HashMap::new();
        let mut out = Vec::new();
        for (seed, entity, name) in via {
            let count = match counted.get(&entity) {
                Some(&n) => n,
                None => {
                    let n: i64 = conn
                        .prepare_cached(&format!(
                            "SELECT count(*) FROM mentions x JOIN memories m ON m.row = x.memory_row \
                             WHERE x.entity = ?5 AND {CURRENT_IN_SCOPE}"
                        ))
                        .map_err(sql_err)?
                        .query_row(params![p, agent, session, now, entity], |r| r.get(0))
                        .map_err(sql_err)?;
                    counted.insert(entity, n.max(0) as usize);
                    n.max(0) as usize
                }
            };
            if !limits.follows(count) {
                continue;
            }
            let found = match reached.entry(entity) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => e.insert(mentioning(
                    &conn,
                    entity,
                    CURRENT_IN_SCOPE,
                    (&p, &agent, &session, now),
                    limits.per_entity + seeds.len(),
                )?),
            };
            reach(&mut out, (&seed, &name, count), found, &seeds, limits);
        }
        Ok(out)
    }
}

/// Memories of the scope (`in_scope`: current, or true then) mentioning
/// `entity`, newest first.
fn mentioning(
    conn: &Connection,
    entity: i64,
    in_scope: &str,
    (p, agent, session, now): (&str, &Option<String>, &Option<String>, i64),
    limit: usize,
) -> Result<Vec<MemoryRecord>> {
    let cols = RECORD_COLUMNS
        .split(", ")
        .map(|c| format!("m.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ");
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {cols} FROM mentions x JOIN memories m ON m.row = x.memory_row \
             WHERE x.entity = ?5 AND {in_scope} ORDER BY m.created_at DESC, m.row DESC LIMIT ?6"
        ))
        .map_err(sql_err)?;
    let rows = stmt
        .query_map(
            params![p, agent, session, now, entity, limit as i64],
            record_from_row,
        )
        .map_err(sql_err)?;
    let mut out = Vec::new();
    for r in rows {
        out.push(r.map_err(sql_err)?.1);
    }
    Ok(out)
}
