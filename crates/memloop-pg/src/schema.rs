//! The PostgreSQL schema and its migrations, versioned like the embedded
//! store's: `memloop_schema` holds the version, and every step runs in one
//! transaction under an advisory lock, so servers starting together on a
//! new database create it once and a crash mid-migration leaves the
//! previous version intact.

use memloop_core::{Error, Result};

use crate::pool::Tx;

/// Any constant both sides agree on: the lock serialising migrations.
const MIGRATION_LOCK: i64 = 0x006d_656d_6c6f_6f70;

/// Who may see a row: the tenant the transaction set, or every tenant in
/// the store-wide transactions (stats, reindex, the outbox replay). With
/// neither set, nothing: a query that forgot its tenant finds no rows.
const WALL: &str = "tenant = current_setting('memloop.tenant', true) \
                    OR current_setting('memloop.all_tenants', true) = 'on'";

/// Migration i takes the schema from version i to i + 1. `{dims}` is the
/// embedder's dimension count (pgvector's HNSW needs a fixed one).
fn migrations(dims: usize) -> Vec<String> {
    let rls = |table: &str| {
        format!(
            "ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;\n\
             ALTER TABLE {table} FORCE ROW LEVEL SECURITY;\n\
             CREATE POLICY tenant_wall ON {table} USING ({WALL}) WITH CHECK ({WALL});\n"
        )
    };
    let first = format!(
        r#"
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE memloop_meta (key text PRIMARY KEY, value text NOT NULL);

-- The source of truth: every memory, current or not. `rid` is the internal
-- key search works with; `id` the public one. `tsv` holds the analyser's
-- terms (weight A: the text, B: its context) and `doc_len` their weighted
-- count, from which search computes BM25 as the embedded store does.
CREATE TABLE memories (
    rid bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id text NOT NULL UNIQUE,
    partition text NOT NULL,
    tenant text NOT NULL,
    user_id text,
    agent_id text,
    session_id text,
    kind text NOT NULL,
    text text NOT NULL,
    context text,
    metadata jsonb NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    valid_from bigint NOT NULL,
    valid_until bigint,
    expires_at bigint,
    importance real NOT NULL,
    access_count bigint NOT NULL DEFAULT 0,
    last_accessed_at bigint,
    provenance jsonb NOT NULL,
    content_hash text NOT NULL,
    superseded_by text,
    embedding vector({dims}) NOT NULL,
    tsv tsvector NOT NULL,
    doc_len real NOT NULL
);
CREATE INDEX memories_by_partition ON memories (partition, created_at DESC, rid DESC);
CREATE INDEX memories_by_hash ON memories (partition, content_hash) WHERE valid_until IS NULL;
CREATE INDEX memories_by_tenant ON memories (tenant) WHERE valid_until IS NULL;
CREATE INDEX memories_terms ON memories USING gin (tsv) WHERE valid_until IS NULL;
-- Inner product: the embedder's vectors have unit length, so it is the
-- cosine similarity, as in the embedded store.
CREATE INDEX memories_hnsw ON memories USING hnsw (embedding vector_ip_ops) WHERE valid_until IS NULL;

-- Every change, oldest first; survives deletes (only forget --purge drops it).
CREATE TABLE history (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    memory_id text NOT NULL,
    tenant text NOT NULL,
    partition text NOT NULL,
    event text NOT NULL,
    old_text text,
    new_text text,
    actor text NOT NULL,
    reason text,
    at bigint NOT NULL
);
CREATE INDEX history_by_memory ON history (memory_id, seq);
CREATE INDEX history_by_partition ON history (partition);

CREATE TABLE outbox (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant text NOT NULL,
    scope jsonb NOT NULL,
    payload jsonb NOT NULL,
    attempts integer NOT NULL DEFAULT 0,
    last_error text,
    created_at bigint NOT NULL,
    next_at bigint NOT NULL
);
CREATE INDEX outbox_due ON outbox (next_at, id);

-- BM25's statistics over each partition's current memories, kept by a
-- trigger in the same transaction as the change.
CREATE TABLE partition_stats (
    partition text PRIMARY KEY,
    tenant text NOT NULL,
    docs bigint NOT NULL,
    total_len double precision NOT NULL
);
CREATE TABLE term_stats (
    partition text NOT NULL,
    tenant text NOT NULL,
    term text NOT NULL,
    df bigint NOT NULL,
    PRIMARY KEY (partition, term)
);

CREATE FUNCTION memloop_keep_stats() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.valid_until IS NULL THEN
        UPDATE partition_stats SET docs = docs - 1, total_len = total_len - OLD.doc_len
            WHERE partition = OLD.partition;
        UPDATE term_stats SET df = df - 1
            WHERE partition = OLD.partition AND term IN (SELECT lexeme FROM unnest(OLD.tsv));
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.valid_until IS NULL THEN
        INSERT INTO partition_stats (partition, tenant, docs, total_len)
            VALUES (NEW.partition, NEW.tenant, 1, NEW.doc_len)
            ON CONFLICT (partition) DO UPDATE
            SET docs = partition_stats.docs + 1, total_len = partition_stats.total_len + EXCLUDED.total_len;
        INSERT INTO term_stats (partition, tenant, term, df)
            SELECT NEW.partition, NEW.tenant, lexeme, 1 FROM unnest(NEW.tsv) ORDER BY lexeme
            ON CONFLICT (partition, term) DO UPDATE SET df = term_stats.df + 1;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER memories_keep_stats
    AFTER INSERT OR DELETE OR UPDATE OF tsv, doc_len, valid_until ON memories
    FOR EACH ROW EXECUTE FUNCTION memloop_keep_stats();
"#
    ) + &[
        "memories",
        "history",
        "outbox",
        "partition_stats",
        "term_stats",
    ]
    .iter()
    .map(|t| rls(t))
    .collect::<String>();
    vec![
        first,
        postings() + &rls("postings"),
        bulk_deletes(),
        pieces(dims) + &rls("pieces"),
        NO_TSV_INDEX.to_string(),
        wall_once(),
        keyword_log(),
        HALF_VECTORS.to_string(),
        graph(),
        context_bound(),
    ]
}

/// Version 10: a memory's context weighs at most `CONTEXT_WORDS` in all
/// (`memloop_longterm::keyword::bounded_context_weight`), as in the
/// embedded index: each row keeps the share of `context_weight` its
/// context terms weigh at, and its postings their context frequencies
/// scaled by it. The rows written before are weighed again here: what
/// their context weighed is their length less their own terms (counted
/// from the tsvector's A positions), so neither the context weight they
/// were written with nor the context's words (a tsvector keeps 256
/// positions of a lexeme) need be known. Each such update goes through the
/// statistics trigger, so their postings, lengths and the keyword log
/// follow.
fn context_bound() -> String {
    let bound = f64::from(memloop_longterm::keyword::CONTEXT_WORDS);
    format!(
        r#"
SELECT set_config('memloop.all_tenants', 'on', true);
ALTER TABLE memories ADD COLUMN context_scale real NOT NULL DEFAULT 1;
{keep_stats}
UPDATE memories m SET context_scale = ({bound}::float8 / c.weighed)::real, doc_len = c.own + {bound}::float8
    FROM (SELECT rid, own, doc_len - own AS weighed
          FROM (SELECT rid, doc_len::float8,
                       (SELECT count(*) FROM unnest(tsv) AS x, unnest(x.weights) AS w WHERE w = 'A')::float8 AS own
                FROM memories WHERE context IS NOT NULL) counted
          WHERE doc_len - own > {bound}::float8) c
    WHERE m.rid = c.rid;
"#,
        keep_stats = keep_stats(" * NEW.context_scale")
    )
}

/// Version 9: the entity graph (graph.rs), as the embedded store keeps it:
/// the names a partition's memories mention, which memory mentions which,
/// and the typed relations a memory states, each holding from its
/// memory's `valid_from` until a later memory gives the subject another
/// object of a single-valued relation. Mentions and relations go with
/// their memory's row; every table is behind the tenant wall.
fn graph() -> String {
    let mut sql = r#"
CREATE TABLE entities (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    partition text NOT NULL,
    tenant text NOT NULL,
    key text NOT NULL,
    name text NOT NULL,
    kind text NOT NULL,
    UNIQUE (partition, key)
);
CREATE TABLE mentions (
    entity bigint NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    rid bigint NOT NULL REFERENCES memories (rid) ON DELETE CASCADE,
    tenant text NOT NULL,
    PRIMARY KEY (entity, rid)
);
CREATE INDEX mentions_by_memory ON mentions (rid);
CREATE TABLE relations (
    subject bigint NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    relation text NOT NULL,
    object bigint NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    rid bigint NOT NULL REFERENCES memories (rid) ON DELETE CASCADE,
    tenant text NOT NULL,
    valid_from bigint NOT NULL,
    valid_until bigint,
    PRIMARY KEY (subject, relation, object, rid)
);
CREATE INDEX relations_by_object ON relations (object);
CREATE INDEX relations_by_memory ON relations (rid);
"#
    .to_string();
    for t in ["entities", "mentions", "relations"] {
        sql += &format!(
            "ALTER TABLE {t} ENABLE ROW LEVEL SECURITY;\n\
             ALTER TABLE {t} FORCE ROW LEVEL SECURITY;\n\
             CREATE POLICY tenant_wall ON {t} USING ({WALL_ONCE}) WITH CHECK ({WALL_ONCE});\n"
        );
    }
    sql
}

/// Version 8: vectors at half precision (pgvector's `halfvec`), as the
/// embedded store keeps them: a row's 384 dimensions take 768 bytes
/// instead of 1,536, so the HNSW graph of 100,000 memories is half the
/// pages, fits the buffer cache where the full one did not, and its walk
/// reads half the bytes (docs/benchmarks.md). Each table keeps the
/// dimensions its column has.
const HALF_VECTORS: &str = r#"
DO $$
DECLARE
    t text;
    dims int;
BEGIN
    FOREACH t IN ARRAY ARRAY['memories', 'pieces'] LOOP
        SELECT atttypmod INTO dims FROM pg_attribute
            WHERE attrelid = t::regclass AND attname = 'embedding';
        EXECUTE format(
            'DROP INDEX %1$s_hnsw; '
            'ALTER TABLE %1$s ALTER COLUMN embedding TYPE halfvec(%2$s) USING embedding::halfvec(%2$s); '
            'CREATE INDEX %1$s_hnsw ON %1$s USING hnsw (embedding halfvec_ip_ops) WHERE valid_until IS NULL',
            t, dims);
    END LOOP;
END $$;
"#;

/// The tables behind the tenant wall.
const WALLED: [&str; 7] = [
    "memories",
    "history",
    "outbox",
    "partition_stats",
    "term_stats",
    "postings",
    "pieces",
];

/// The wall with each setting read once per statement: a scalar subquery
/// is an InitPlan, where the bare `current_setting` calls of [`WALL`] were
/// evaluated again for every row a scan touched. A keyword search at
/// 100,000 memories reads some 46,000 postings, and its statement took a
/// fifth less with this wall (docs/postgres.md, "Tenants").
const WALL_ONCE: &str = "tenant = (SELECT current_setting('memloop.tenant', true)) \
                         OR (SELECT current_setting('memloop.all_tenants', true)) = 'on'";

/// Version 6: every table's wall as [`WALL_ONCE`], same rows.
fn wall_once() -> String {
    WALLED
        .iter()
        .map(|t| {
            format!(
                "ALTER POLICY tenant_wall ON {t} USING ({WALL_ONCE}) WITH CHECK ({WALL_ONCE});\n"
            )
        })
        .collect()
}

/// Version 7: a change log of each partition's keyword state, so a
/// process can keep the partition's BM25 index in memory and bring it up
/// to date with the few rows changed since it last looked
/// (`keyword_cache.rs`), instead of reading every posting of the query's
/// terms per search (46,000 of them, some 45 ms, at 100,000 memories).
///
/// Every change to a partition's current rows (the triggers that keep its
/// statistics) sets the partition's `version` to the next value of one
/// sequence and logs the changed rows under it. The value is taken after
/// the statistics row is locked, and the lock is held to the commit, so a
/// partition's versions grow in commit order: a snapshot that sees
/// version V sees every log entry up to V. `memloop_meta`'s
/// `keyword_log_floor` says up to which version entries were pruned; a
/// process further behind reads the partition whole again.
fn keyword_log() -> String {
    format!(
        r#"
CREATE SEQUENCE memloop_keyword_version;
ALTER TABLE partition_stats ADD COLUMN version bigint NOT NULL DEFAULT 0;
CREATE TABLE keyword_log (
    partition text NOT NULL,
    version bigint NOT NULL,
    rid bigint NOT NULL,
    tenant text NOT NULL,
    at bigint NOT NULL DEFAULT (extract(epoch FROM clock_timestamp()) * 1000)::bigint,
    PRIMARY KEY (partition, version, rid)
);
CREATE INDEX keyword_log_by_age ON keyword_log (at);
ALTER TABLE keyword_log ENABLE ROW LEVEL SECURITY;
ALTER TABLE keyword_log FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_wall ON keyword_log USING ({WALL_ONCE}) WITH CHECK ({WALL_ONCE});

{keep_stats}CREATE OR REPLACE FUNCTION memloop_forget_stats() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE partition_stats s SET docs = s.docs - g.docs, total_len = s.total_len - g.len,
                                 version = nextval('memloop_keyword_version')
        FROM (SELECT partition, count(*) AS docs, sum(doc_len) AS len
              FROM gone WHERE valid_until IS NULL GROUP BY partition) g
        WHERE s.partition = g.partition;
    INSERT INTO keyword_log (partition, version, rid, tenant)
        SELECT gone.partition, s.version, gone.rid, gone.tenant
        FROM gone JOIN partition_stats s ON s.partition = gone.partition
        WHERE gone.valid_until IS NULL;
    UPDATE term_stats t SET df = t.df - g.n
        FROM (SELECT gone.partition, x.lexeme AS term, count(*) AS n
              FROM gone CROSS JOIN LATERAL unnest(gone.tsv) AS x
              WHERE gone.valid_until IS NULL GROUP BY 1, 2) g
        WHERE t.partition = g.partition AND t.term = g.term;
    DELETE FROM postings p
        USING (SELECT gone.partition, x.lexeme AS term, gone.rid
               FROM gone CROSS JOIN LATERAL unnest(gone.tsv) AS x
               WHERE gone.valid_until IS NULL) g
        WHERE p.partition = g.partition AND p.term = g.term AND p.rid = g.rid;
    RETURN NULL;
END $$;
"#,
        keep_stats = keep_stats("")
    )
}

/// The trigger function that keeps a partition's statistics, postings and
/// keyword log with its rows (versions 7 and 10). A posting's context
/// frequency is the count of the row's context positions times
/// `context_scale` (an SQL suffix: empty before version 10, which added
/// the column).
fn keep_stats(context_scale: &str) -> String {
    format!(
        r#"CREATE OR REPLACE FUNCTION memloop_keep_stats() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v bigint;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.valid_until IS NULL THEN
        UPDATE partition_stats SET docs = docs - 1, total_len = total_len - OLD.doc_len
            WHERE partition = OLD.partition;
        UPDATE term_stats SET df = df - 1
            WHERE partition = OLD.partition AND term IN (SELECT lexeme FROM unnest(OLD.tsv));
        DELETE FROM postings
            WHERE partition = OLD.partition AND term IN (SELECT lexeme FROM unnest(OLD.tsv))
              AND rid = OLD.rid;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.valid_until IS NULL THEN
        INSERT INTO partition_stats (partition, tenant, docs, total_len)
            VALUES (NEW.partition, NEW.tenant, 1, NEW.doc_len)
            ON CONFLICT (partition) DO UPDATE
            SET docs = partition_stats.docs + 1, total_len = partition_stats.total_len + EXCLUDED.total_len;
        INSERT INTO term_stats (partition, tenant, term, df)
            SELECT NEW.partition, NEW.tenant, lexeme, 1 FROM unnest(NEW.tsv) ORDER BY lexeme
            ON CONFLICT (partition, term) DO UPDATE SET df = term_stats.df + 1;
        INSERT INTO postings (partition, term, rid, tenant, tf_text, tf_context, doc_len, expires_at)
            SELECT NEW.partition, x.lexeme, NEW.rid, NEW.tenant,
                   (SELECT count(*) FILTER (WHERE w = 'A') FROM unnest(x.weights) AS w),
                   (SELECT count(*) FILTER (WHERE w = 'B') FROM unnest(x.weights) AS w){context_scale},
                   NEW.doc_len, NEW.expires_at
            FROM unnest(NEW.tsv) AS x;
    END IF;
    -- The statistics row is locked now (updated above): the version is
    -- taken under the lock.
    IF TG_OP = 'INSERT' AND NEW.valid_until IS NULL THEN
        UPDATE partition_stats SET version = nextval('memloop_keyword_version')
            WHERE partition = NEW.partition RETURNING version INTO v;
        INSERT INTO keyword_log (partition, version, rid, tenant) VALUES (NEW.partition, v, NEW.rid, NEW.tenant);
    ELSIF TG_OP = 'UPDATE' AND (OLD.valid_until IS NULL OR NEW.valid_until IS NULL) THEN
        UPDATE partition_stats SET version = nextval('memloop_keyword_version')
            WHERE partition = OLD.partition RETURNING version INTO v;
        INSERT INTO keyword_log (partition, version, rid, tenant) VALUES (OLD.partition, v, OLD.rid, OLD.tenant);
    END IF;
    RETURN NULL;
END $$;

"#
    )
}

/// Version 5: the tsvector's GIN index goes. Since the postings (version
/// 2) no search reads it: the current rows' BM25 reads postings, and a
/// search of the past scores the tsvectors of the partition's versions it
/// has already read. Yet every write still added each term to it (and, once
/// its pending list filled, merged the list into the index inside some
/// unlucky write).
const NO_TSV_INDEX: &str = "DROP INDEX IF EXISTS memories_terms;";

/// Version 4: a long memory's later vectors (docs/retrieval.md, "Long
/// memories in pieces"), one row each. The memory's partition, validity and
/// expiry are kept beside them (the expiry and validity by a trigger, so
/// every write path keeps them without knowing), for their HNSW index to
/// filter as the memories' does; they go with their memory's row.
fn pieces(dims: usize) -> String {
    format!(
        r#"
CREATE TABLE pieces (
    rid bigint NOT NULL REFERENCES memories (rid) ON DELETE CASCADE,
    ord smallint NOT NULL,
    partition text NOT NULL,
    tenant text NOT NULL,
    valid_until bigint,
    expires_at bigint,
    embedding vector({dims}) NOT NULL,
    PRIMARY KEY (rid, ord)
);
CREATE INDEX pieces_by_partition ON pieces (partition);
CREATE INDEX pieces_hnsw ON pieces USING hnsw (embedding vector_ip_ops) WHERE valid_until IS NULL;
CREATE FUNCTION memloop_keep_pieces() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE pieces SET valid_until = NEW.valid_until, expires_at = NEW.expires_at WHERE rid = NEW.rid;
    RETURN NULL;
END $$;
CREATE TRIGGER memories_keep_pieces
    AFTER UPDATE OF valid_until, expires_at ON memories
    FOR EACH ROW
    WHEN (OLD.valid_until IS DISTINCT FROM NEW.valid_until OR OLD.expires_at IS DISTINCT FROM NEW.expires_at)
    EXECUTE FUNCTION memloop_keep_pieces();
"#
    )
}

/// Version 3: a DELETE of many rows (a purge, gc's batches) keeps the
/// statistics and postings once per statement, from the deleted rows as a
/// set. Row by row, each deleted memory updated the same `term_stats` rows
/// again inside one transaction, every update adding a version the next
/// had to step over: a purge of 100,000 memories had not finished after 8
/// minutes. Inserts and updates stay row by row (the trigger of version 2).
fn bulk_deletes() -> String {
    r#"
CREATE FUNCTION memloop_forget_stats() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE partition_stats s SET docs = s.docs - g.docs, total_len = s.total_len - g.len
        FROM (SELECT partition, count(*) AS docs, sum(doc_len) AS len
              FROM gone WHERE valid_until IS NULL GROUP BY partition) g
        WHERE s.partition = g.partition;
    UPDATE term_stats t SET df = t.df - g.n
        FROM (SELECT gone.partition, x.lexeme AS term, count(*) AS n
              FROM gone CROSS JOIN LATERAL unnest(gone.tsv) AS x
              WHERE gone.valid_until IS NULL GROUP BY 1, 2) g
        WHERE t.partition = g.partition AND t.term = g.term;
    DELETE FROM postings p
        USING (SELECT gone.partition, x.lexeme AS term, gone.rid
               FROM gone CROSS JOIN LATERAL unnest(gone.tsv) AS x
               WHERE gone.valid_until IS NULL) g
        WHERE p.partition = g.partition AND p.term = g.term AND p.rid = g.rid;
    RETURN NULL;
END $$;
DROP TRIGGER memories_keep_stats ON memories;
CREATE TRIGGER memories_keep_stats
    AFTER INSERT OR UPDATE OF tsv, doc_len, valid_until, expires_at ON memories
    FOR EACH ROW EXECUTE FUNCTION memloop_keep_stats();
CREATE TRIGGER memories_forget_stats
    AFTER DELETE ON memories REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION memloop_forget_stats();
"#
    .to_string()
}

/// Version 2: postings. Keyword search read every matching row's tsvector
/// and scored it (31 ms for the 2,470 rows an OR query of common words
/// matched among 8,880, docs/benchmarks.md); each current memory's terms as
/// rows of their own, with what BM25 needs in the index, let it read only
/// the query's terms' entries. Kept by the statistics trigger, so every
/// write path (and a purge, gc, an import) keeps them without knowing.
fn postings() -> String {
    r#"
SELECT set_config('memloop.all_tenants', 'on', true);
-- One row per term of each current memory: its frequency in the text
-- (weight A) and in the context (weight B, weighed at search time by
-- `context_weight`), with the memory's length and expiry, so the keyword
-- search is an index-only scan of the query's terms.
CREATE TABLE postings (
    partition text NOT NULL,
    term text NOT NULL,
    rid bigint NOT NULL,
    tenant text NOT NULL,
    tf_text real NOT NULL,
    tf_context real NOT NULL,
    doc_len real NOT NULL,
    expires_at bigint,
    PRIMARY KEY (partition, term, rid) INCLUDE (tenant, tf_text, tf_context, doc_len, expires_at)
);
INSERT INTO postings (partition, term, rid, tenant, tf_text, tf_context, doc_len, expires_at)
    SELECT m.partition, x.lexeme, m.rid, m.tenant,
           (SELECT count(*) FILTER (WHERE w = 'A') FROM unnest(x.weights) AS w),
           (SELECT count(*) FILTER (WHERE w = 'B') FROM unnest(x.weights) AS w),
           m.doc_len, m.expires_at
    FROM memories m CROSS JOIN LATERAL unnest(m.tsv) AS x
    WHERE m.valid_until IS NULL;

CREATE OR REPLACE FUNCTION memloop_keep_stats() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.valid_until IS NULL THEN
        UPDATE partition_stats SET docs = docs - 1, total_len = total_len - OLD.doc_len
            WHERE partition = OLD.partition;
        UPDATE term_stats SET df = df - 1
            WHERE partition = OLD.partition AND term IN (SELECT lexeme FROM unnest(OLD.tsv));
        DELETE FROM postings
            WHERE partition = OLD.partition AND term IN (SELECT lexeme FROM unnest(OLD.tsv))
              AND rid = OLD.rid;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.valid_until IS NULL THEN
        INSERT INTO partition_stats (partition, tenant, docs, total_len)
            VALUES (NEW.partition, NEW.tenant, 1, NEW.doc_len)
            ON CONFLICT (partition) DO UPDATE
            SET docs = partition_stats.docs + 1, total_len = partition_stats.total_len + EXCLUDED.total_len;
        INSERT INTO term_stats (partition, tenant, term, df)
            SELECT NEW.partition, NEW.tenant, lexeme, 1 FROM unnest(NEW.tsv) ORDER BY lexeme
            ON CONFLICT (partition, term) DO UPDATE SET df = term_stats.df + 1;
        INSERT INTO postings (partition, term, rid, tenant, tf_text, tf_context, doc_len, expires_at)
            SELECT NEW.partition, x.lexeme, NEW.rid, NEW.tenant,
                   (SELECT count(*) FILTER (WHERE w = 'A') FROM unnest(x.weights) AS w),
                   (SELECT count(*) FILTER (WHERE w = 'B') FROM unnest(x.weights) AS w),
                   NEW.doc_len, NEW.expires_at
            FROM unnest(NEW.tsv) AS x;
    END IF;
    RETURN NULL;
END $$;
-- A new expiry is a posting's too.
DROP TRIGGER memories_keep_stats ON memories;
CREATE TRIGGER memories_keep_stats
    AFTER INSERT OR DELETE OR UPDATE OF tsv, doc_len, valid_until, expires_at ON memories
    FOR EACH ROW EXECUTE FUNCTION memloop_keep_stats();
"#
    .to_string()
}

/// Brings the schema up to date, in one transaction under the migration lock.
pub fn migrate(tx: &mut Tx<'_>, dims: usize) -> Result<i64> {
    tx.query("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    tx.batch("CREATE TABLE IF NOT EXISTS memloop_schema (version bigint NOT NULL)")?;
    let current: i64 = match tx.query_opt("SELECT version FROM memloop_schema", &[])? {
        Some(row) => row.get(0),
        None => {
            tx.execute("INSERT INTO memloop_schema (version) VALUES (0)", &[])?;
            0
        }
    };
    let all = migrations(dims);
    let supported = all.len() as i64;
    if current > supported {
        return Err(Error::SchemaTooNew {
            found: current,
            supported,
        });
    }
    for sql in all.iter().skip(current.max(0) as usize) {
        tx.batch(sql)?;
    }
    tx.execute("UPDATE memloop_schema SET version = $1", &[&supported])?;
    Ok(supported)
}
