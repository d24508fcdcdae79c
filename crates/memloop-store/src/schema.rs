//! The SQLite schema and its migrations. `PRAGMA user_version` holds the
//! version; each migration runs in one transaction, so a crash mid-migration
//! leaves the previous version intact.

use memloop_core::{Error, Result};
use rusqlite::{Connection, TransactionBehavior};

use crate::sql_err;

/// Migrations in order; index i takes the schema from version i to i + 1.
const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

-- The source of truth: every memory, current or superseded. `row` is the key
-- the derived indexes use (AUTOINCREMENT: never reused, so a stale index entry
-- can never point at another memory); `id` is the public id.
CREATE TABLE memories (
    row INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    partition TEXT NOT NULL,
    tenant TEXT NOT NULL,
    user_id TEXT,
    agent_id TEXT,
    session_id TEXT,
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    metadata TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    valid_from INTEGER NOT NULL,
    valid_until INTEGER,
    expires_at INTEGER,
    importance REAL NOT NULL,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_accessed_at INTEGER,
    provenance TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    context TEXT,
    embedding BLOB NOT NULL
);
CREATE INDEX memories_by_partition ON memories (partition, valid_until);
CREATE INDEX memories_by_hash ON memories (partition, content_hash);

-- Every change, oldest first; survives deletes (only forget --purge drops it).
CREATE TABLE history (
    seq INTEGER PRIMARY KEY,
    memory_id TEXT NOT NULL,
    partition TEXT NOT NULL,
    event TEXT NOT NULL,
    old_text TEXT,
    new_text TEXT,
    actor TEXT NOT NULL,
    reason TEXT,
    at INTEGER NOT NULL
);
CREATE INDEX history_by_memory ON history (memory_id, seq);
CREATE INDEX history_by_partition ON history (partition);

-- Rows whose indexed state changed, in commit order: how the in-memory
-- indexes (of this process or another one on the same directory) catch up,
-- and how a saved ANN index is brought up to date after a crash.
CREATE TABLE index_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    partition TEXT NOT NULL,
    row INTEGER NOT NULL
);
CREATE INDEX index_log_by_partition ON index_log (partition, seq);
"#,
    r#"
-- Long-term writes that could not finish (the LLM failed, timed out or
-- answered nonsense): kept until a later turn or `memloop gc` replays them.
CREATE TABLE outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant TEXT NOT NULL,
    scope TEXT NOT NULL,
    payload TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    created_at INTEGER NOT NULL,
    next_at INTEGER NOT NULL
);
CREATE INDEX outbox_due ON outbox (next_at);
"#,
    r#"
-- What replaced a memory's claim: for a superseded fact, its successor; for
-- an episode, the fact that superseded one it was distilled into (the
-- episode stays current, as said, but is known to hold a stale claim).
ALTER TABLE memories ADD COLUMN superseded_by TEXT;
"#,
    r#"
-- What gc reads to find expired memories without scanning the table.
CREATE INDEX memories_by_expiry ON memories (expires_at) WHERE expires_at IS NOT NULL;
"#,
    r#"
-- The entity graph (graph.rs): the names a partition's memories mention,
-- which memory mentions which, and typed relations a memory states.
-- Mentions and relations go with their memory's row (ON DELETE CASCADE);
-- forget removes the names no memory mentions any more.
CREATE TABLE entities (
    id INTEGER PRIMARY KEY,
    partition TEXT NOT NULL,
    key TEXT NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    UNIQUE (partition, key)
);
CREATE TABLE mentions (
    entity INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    memory_row INTEGER NOT NULL REFERENCES memories (row) ON DELETE CASCADE,
    PRIMARY KEY (entity, memory_row)
) WITHOUT ROWID;
CREATE INDEX mentions_by_memory ON mentions (memory_row);
CREATE TABLE relations (
    subject INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    relation TEXT NOT NULL,
    object INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    memory_row INTEGER NOT NULL REFERENCES memories (row) ON DELETE CASCADE,
    PRIMARY KEY (subject, relation, object, memory_row)
) WITHOUT ROWID;
CREATE INDEX relations_by_object ON relations (object);
CREATE INDEX relations_by_memory ON relations (memory_row);
"#,
    r#"
-- The duplicate check (write.rs) looks up current memories by content
-- hash. Its index held every version under the full 64-digit hash, and
-- its keys, in no order a delete follows, had most of its pages rewritten
-- by every chunk of a gc. Now: current memories only, under the hash's
-- first 16 digits (64 bits; the check compares the whole hash), about
-- half the size. A virtual column, so nothing is stored twice.
DROP INDEX memories_by_hash;
ALTER TABLE memories ADD COLUMN hash_key TEXT
    GENERATED ALWAYS AS (substr(content_hash, 1, 16)) VIRTUAL;
CREATE INDEX memories_by_hash_key ON memories (partition, hash_key)
    WHERE valid_until IS NULL;
"#,
    r#"
-- A memory's keyword terms, analysed when it is written (stored_terms.rs):
-- loading a partition reads them instead of stemming every text again.
-- Rows written before stay NULL and are analysed at load, as before.
ALTER TABLE memories ADD COLUMN terms TEXT;
"#,
    r#"
-- The duplicate check's index keyed by the whole content hash again, not
-- by a computed prefix: an index on a function's result makes SQLite keep
-- a statement journal for every DELETE of many memories (the function
-- might fail midway), and gc's deletes copied each page they touched into
-- it and called the function on each row. Current memories only, as
-- before. Dropping a virtual column rewrites no row.
DROP INDEX memories_by_hash_key;
ALTER TABLE memories DROP COLUMN hash_key;
CREATE INDEX memories_current_by_hash ON memories (partition, content_hash)
    WHERE valid_until IS NULL;
"#,
    r#"
-- A relation holds for a time (graph.rs): from its memory's valid_from
-- until a later memory gives the subject another object of a
-- single-valued relation (works_at, lives_in). Relations written before
-- hold from their memory's valid_from and have not ended.
ALTER TABLE relations ADD COLUMN valid_from INTEGER NOT NULL DEFAULT 0;
ALTER TABLE relations ADD COLUMN valid_until INTEGER;
UPDATE relations SET valid_from = coalesce(
    (SELECT valid_from FROM memories WHERE row = relations.memory_row), 0);
"#,
];

pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

fn user_version(conn: &Connection) -> Result<i64> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(sql_err)
}

/// Brings the schema up to date. Each step runs in an exclusive transaction
/// that reads the version again inside it: of several processes opening a
/// new directory at once, one creates the tables and the others, waiting on
/// the lock, find the step already done (without the re-check, the second
/// one failed with "table meta already exists").
pub fn migrate(conn: &mut Connection) -> Result<()> {
    let current = user_version(conn)?;
    if current > SCHEMA_VERSION {
        return Err(Error::SchemaTooNew {
            found: current,
            supported: SCHEMA_VERSION,
        });
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Exclusive)
            .map_err(sql_err)?;
        let now = user_version(&tx)?;
        if now > SCHEMA_VERSION {
            return Err(Error::SchemaTooNew {
                found: now,
                supported: SCHEMA_VERSION,
            });
        }
        if now > i as i64 {
            // Another process did this step while we waited for the lock.
            continue;
        }
        tx.execute_batch(sql).map_err(sql_err)?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)
            .map_err(sql_err)?;
        tx.commit().map_err(sql_err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row written under every earlier schema is found by the
    /// duplicate check's index after the migrations.
    #[test]
    fn rows_written_before_are_found_by_the_hash_index() {
        for version in [5, 7] {
            let mut conn = Connection::open_in_memory().unwrap();
            for sql in &MIGRATIONS[..version] {
                conn.execute_batch(sql).unwrap();
            }
            conn.pragma_update(None, "user_version", version as i64)
                .unwrap();
            conn.execute(
                "INSERT INTO memories (id, partition, tenant, kind, text, metadata, created_at, \
                 updated_at, valid_from, importance, provenance, content_hash, embedding) \
                 VALUES ('a', 'p', 't', 'fact', 'x', '{}', 0, 0, 0, 0.5, '{}', \
                 '0123456789abcdef0123', x'00')",
                [],
            )
            .unwrap();
            migrate(&mut conn).unwrap();
            assert_eq!(user_version(&conn).unwrap(), SCHEMA_VERSION);
            let id: String = conn
                .query_row(
                    "SELECT id FROM memories INDEXED BY memories_current_by_hash \
                     WHERE partition = 'p' AND content_hash = '0123456789abcdef0123' \
                     AND valid_until IS NULL",
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(id, "a", "from schema {version}");
        }
    }

    /// A relation written before relations had a validity holds from its
    /// memory's `valid_from` and has not ended.
    #[test]
    fn relations_written_before_hold_from_their_memory() {
        let before = MIGRATIONS.len() - 1;
        let mut conn = Connection::open_in_memory().unwrap();
        for sql in &MIGRATIONS[..before] {
            conn.execute_batch(sql).unwrap();
        }
        conn.pragma_update(None, "user_version", before as i64)
            .unwrap();
        conn.execute_batch(
            "INSERT INTO memories (id, partition, tenant, kind, text, metadata, created_at, \
             updated_at, valid_from, importance, provenance, content_hash, embedding) \
             VALUES ('a', 'p', 't', 'fact', 'Anna works at Acme', '{}', 9, 9, 1234, 0.5, '{}', 'h', x'00'); \
             INSERT INTO entities (id, partition, key, name, kind) VALUES \
             (1, 'p', 'anna', 'Anna', 'person'), (2, 'p', 'acme', 'Acme', 'organisation'); \
             INSERT INTO relations (subject, relation, object, memory_row) VALUES (1, 'works_at', 2, 1);",
        )
        .unwrap();
        migrate(&mut conn).unwrap();
        let (from, until): (i64, Option<i64>) = conn
            .query_row("SELECT valid_from, valid_until FROM relations", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!((from, until), (1234, None));
    }

    /// Every index of `memories` is keyed by stored columns: an expression
    /// or a generated column in a key makes every DELETE of many memories
    /// (gc's) keep a statement journal (see the last migration).
    #[test]
    fn no_index_of_memories_is_keyed_by_a_computed_value() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn).unwrap();
        let generated: Vec<String> = conn
            .prepare("SELECT name FROM pragma_table_xinfo('memories') WHERE hidden IN (2, 3)")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        let keys: Vec<(String, i64, Option<String>)> = conn
            .prepare(
                "SELECT il.name, ii.cid, ii.name FROM pragma_index_list('memories') AS il, \
                 pragma_index_info(il.name) AS ii",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert!(keys.len() >= 5, "{keys:?}");
        for (index, cid, column) in keys {
            assert!(cid >= 0, "{index} is keyed by an expression");
            let column = column.unwrap_or_default();
            assert!(!generated.contains(&column), "{index} is keyed by {column}");
        }
    }
}
