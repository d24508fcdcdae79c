//! What only the PostgreSQL store promises: the database itself keeps
//! tenants apart (row-level security), a role that would bypass it is
//! refused, an unreachable server is a transient error naming the URL
//! without its password, and a store opened while the server is down
//! works once it answers. Needs the test server (scripts/pg.sh start).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "conformance/backend.rs"]
#[allow(dead_code)]
mod backend;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use backend::{info, Backend, Pg};
use memloop_core::{ErrorClass, NewMemory, Scope};
use memloop_longterm::{ListQuery, LongTermStore};

fn unit(i: usize) -> Vec<f32> {
    let mut v = vec![0.0; backend::DIMS];
    v[i % backend::DIMS] = 1.0;
    v
}

#[test]
fn row_level_security_hides_other_tenants_from_plain_sql() {
    let pg = Pg::new();
    let store = pg.handle();
    for (tenant, text) in [("acme", "acme secret"), ("globex", "globex secret")] {
        store
            .insert(
                &Scope::user("u").with_tenant(tenant),
                vec![(NewMemory::text(text), unit(1))],
            )
            .unwrap();
    }
    // The same role the store uses, talking SQL directly.
    let mut c = postgres::Client::connect(&pg.url, postgres::NoTls).unwrap();
    let count = |c: &mut postgres::Client, sql: &str| -> i64 {
        let mut tx = c.transaction().unwrap();
        tx.batch_execute(sql).unwrap();
        let n = tx
            .query_one("SELECT count(*) FROM memories", &[])
            .unwrap()
            .get(0);
        tx.rollback().unwrap();
        n
    };
    assert_eq!(count(&mut c, "SELECT 1"), 0, "no tenant set: no rows");
    assert_eq!(
        count(&mut c, "SELECT set_config('memloop.tenant', 'acme', true)"),
        1
    );
    let mut tx = c.transaction().unwrap();
    tx.batch_execute("SELECT set_config('memloop.tenant', 'acme', true)")
        .unwrap();
    let texts: Vec<String> = tx
        .query("SELECT text FROM memories", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(texts, vec!["acme secret"]);
    // Writing into another tenant is refused by the database itself.
    let err = tx
        .execute(
            "UPDATE memories SET tenant = 'globex' WHERE text = 'acme secret'",
            &[],
        )
        .unwrap_err();
    assert!(err.to_string().contains("row-level security") || err.code().is_some());
}

#[test]
fn no_write_keeps_an_index_that_no_search_reads() {
    let pg = Pg::new();
    let _store = pg.handle();
    let mut c = postgres::Client::connect(&pg.url, postgres::NoTls).unwrap();
    let version: i64 = c
        .query_one("SELECT version FROM memloop_schema", &[])
        .unwrap()
        .get(0);
    assert!(version >= 5, "schema at version {version}");
    // Keyword search reads the postings (schema v2): a GIN index of the
    // tsvector would only cost every write (schema v5 drops it).
    let gin: Vec<String> = c
        .query(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'memories' \
             AND indexdef ILIKE '%USING gin%'",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(gin.is_empty(), "GIN indexes left on memories: {gin:?}");
}

/// Vectors are kept at half precision (schema v8), as the embedded store
/// keeps them, and both HNSW indexes compare halves.
#[test]
fn vectors_are_kept_at_half_precision() {
    let pg = Pg::new();
    let _store = pg.handle();
    let mut c = postgres::Client::connect(&pg.url, postgres::NoTls).unwrap();
    for table in ["memories", "pieces"] {
        let column: String = c
            .query_one(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute \
                 WHERE attrelid = $1::text::regclass AND attname = 'embedding'",
                &[&table],
            )
            .unwrap()
            .get(0);
        assert_eq!(column, format!("halfvec({})", info().dimensions), "{table}");
        let index: String = c
            .query_one(
                "SELECT indexdef FROM pg_indexes WHERE indexname = $1",
                &[&format!("{table}_hnsw")],
            )
            .unwrap()
            .get(0);
        assert!(index.contains("halfvec_ip_ops"), "{index}");
    }
}

#[test]
fn the_tenant_wall_reads_its_settings_once_per_statement() {
    let pg = Pg::new();
    let _store = pg.handle();
    let mut c = postgres::Client::connect(&pg.url, postgres::NoTls).unwrap();
    let walls: Vec<(String, String, String)> = c
        .query(
            "SELECT tablename::text, qual, with_check FROM pg_policies WHERE policyname = 'tenant_wall'",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    // Every table that holds a tenant's rows is behind the wall.
    let mut tenanted: Vec<String> = c
        .query(
            "SELECT table_name::text FROM information_schema.columns \
             WHERE table_schema = 'public' AND column_name = 'tenant'",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    tenanted.sort();
    let mut walled: Vec<String> = walls.iter().map(|w| w.0.clone()).collect();
    walled.sort();
    assert_eq!(walled, tenanted);
    assert_eq!(walls.len(), 11, "{walls:?}");
    // Each setting in a scalar subquery (an InitPlan, once per statement),
    // never a bare call evaluated for every row a scan touches.
    for (table, qual, check) in &walls {
        for expr in [qual, check] {
            let calls = expr.matches("current_setting(").count();
            let once = expr.matches("SELECT current_setting(").count();
            assert_eq!((calls, once), (2, 2), "{table}: {expr}");
        }
    }
    // Which rows the wall lets through is unchanged
    // (row_level_security_hides_other_tenants_from_plain_sql).
}

#[test]
fn a_role_that_bypasses_row_level_security_is_refused() {
    let pg = Pg::new();
    // scripts/pg.sh's server lets its superuser `postgres` in from loopback.
    let url = pg.url.replacen("memloop@", "postgres@", 1);
    let err = match memloop_pg::open(&url, info(), memloop_pg::PgOptions::default()) {
        Ok(_) => panic!("a superuser was accepted"),
        Err(e) => e,
    };
    assert_eq!(err.class(), ErrorClass::InvalidInput, "{err}");
    assert!(err.to_string().contains("row-level security"), "{err}");
}

#[test]
fn an_unreachable_server_is_transient_and_named_without_password() {
    // Nothing listens on port 1.
    let url = "postgres://memloop:hunter2@127.0.0.1:1/memloop";
    let opts = memloop_pg::PgOptions::default().with_retry_timeout_ms(300);
    // Opening succeeds: the server may come up later.
    let store = memloop_pg::open(url, info(), opts).unwrap();
    let err = store.get("default", "x").unwrap_err();
    assert_eq!(err.class(), ErrorClass::Transient, "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("postgres://memloop@127.0.0.1:1/memloop"),
        "{msg}"
    );
    assert!(!msg.contains("hunter2"), "{msg}");
    assert_eq!(store.location(), "postgres://memloop@127.0.0.1:1/memloop");
}

/// A loopback TCP forwarder to the test server that can be cut (every
/// connection dropped, new ones refused) and restored, as a server restart
/// or a network fault looks to a client.
struct Forwarder {
    port: u16,
    up: Arc<AtomicBool>,
    generation: Arc<AtomicUsize>,
}

impl Forwarder {
    fn new(target: &str) -> Forwarder {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        Forwarder {
            port,
            up: Arc::new(AtomicBool::new(false)),
            generation: Arc::new(AtomicUsize::new(0)),
        }
        .with_target(target)
    }

    fn with_target(self, target: &str) -> Forwarder {
        let (up, generation, port, target) = (
            self.up.clone(),
            self.generation.clone(),
            self.port,
            target.to_string(),
        );
        std::thread::spawn(move || loop {
            if !up.load(Ordering::SeqCst) {
                std::thread::park_timeout(Duration::from_millis(5));
                continue;
            }
            let Ok(listener) = TcpListener::bind(("127.0.0.1", port)) else {
                continue;
            };
            listener.set_nonblocking(true).unwrap();
            let born = generation.load(Ordering::SeqCst);
            while up.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((client, _)) => {
                        client.set_nonblocking(false).unwrap();
                        let server = TcpStream::connect(&target).unwrap();
                        for (mut from, mut to) in [
                            (client.try_clone().unwrap(), server.try_clone().unwrap()),
                            (server, client),
                        ] {
                            let generation = generation.clone();
                            std::thread::spawn(move || {
                                let mut buf = [0u8; 16384];
                                loop {
                                    match from.read(&mut buf) {
                                        Ok(n)
                                            if n > 0
                                                && generation.load(Ordering::SeqCst) == born =>
                                        {
                                            if to.write_all(&buf[..n]).is_err() {
                                                break;
                                            }
                                        }
                                        _ => break,
                                    }
                                }
                                let _ = from.shutdown(Shutdown::Both);
                                let _ = to.shutdown(Shutdown::Both);
                            });
                        }
                    }
                    Err(_) => std::thread::park_timeout(Duration::from_millis(2)),
                }
            }
        });
        self
    }

    fn start(&self) {
        self.up.store(true, Ordering::SeqCst);
    }

    /// Drops every open connection (at their next packet) and refuses new ones.
    fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        self.generation.fetch_add(1, Ordering::SeqCst);
    }
}

fn via(url: &str, port: u16) -> String {
    url.replacen("127.0.0.1:55432", &format!("127.0.0.1:{port}"), 1)
}

#[test]
fn a_store_opened_while_the_server_is_down_works_once_it_answers() {
    let pg = Pg::new();
    let fwd = Forwarder::new("127.0.0.1:55432");
    let url = via(&pg.url, fwd.port);
    assert_ne!(url, pg.url, "the test server must be on 127.0.0.1:55432");
    let opts = memloop_pg::PgOptions::default().with_retry_timeout_ms(200);
    let store = memloop_pg::open(&url, info(), opts).unwrap();
    let err = store.stats().unwrap_err();
    assert_eq!(err.class(), ErrorClass::Transient, "{err}");
    fwd.start();
    let scope = Scope::user("u");
    store
        .insert(&scope, vec![(NewMemory::text("here at last"), unit(2))])
        .unwrap();
    assert_eq!(store.stats().unwrap().current, 1);
}

#[test]
fn connections_cut_under_load_lose_no_acknowledged_write() {
    let pg = Pg::new();
    let fwd = Forwarder::new("127.0.0.1:55432");
    fwd.start();
    let url = via(&pg.url, fwd.port);
    let store: Arc<dyn LongTermStore> = memloop_pg::open(
        &url,
        info(),
        memloop_pg::PgOptions::default().with_retry_timeout_ms(5_000),
    )
    .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let (store, stop) = (store.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut acked = Vec::new();
                let mut failed = 0;
                let mut i = 0;
                while !stop.load(Ordering::SeqCst) && i < 400 {
                    let text = format!("writer {w} note {i}");
                    match store.insert(&Scope::user("u"), vec![(NewMemory::text(&text), unit(i))]) {
                        Ok(_) => acked.push(text),
                        Err(e) => {
                            assert_eq!(e.class(), ErrorClass::Transient, "{e}");
                            failed += 1;
                        }
                    }
                    i += 1;
                }
                (acked, failed)
            })
        })
        .collect();
    // Three outages while the writers run.
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(150));
        fwd.cut();
        std::thread::sleep(Duration::from_millis(100));
        fwd.start();
    }
    stop.store(true, Ordering::SeqCst);
    let mut acked = Vec::new();
    for w in writers {
        let (a, _) = w.join().unwrap();
        acked.extend(a);
    }
    assert!(!acked.is_empty());
    // Read back directly from the server, not through the forwarder.
    let direct = pg.handle();
    let q = ListQuery {
        scope: Scope::user("u"),
        limit: 1000,
        ..Default::default()
    };
    let mut stored: Vec<String> = direct
        .list(&q)
        .unwrap()
        .into_iter()
        .map(|r| r.text)
        .collect();
    stored.sort();
    for text in &acked {
        assert!(
            stored.binary_search(text).is_ok(),
            "acknowledged {text:?} was lost"
        );
    }
    // The store kept working after the outages without being reopened.
    store
        .insert(
            &Scope::user("u"),
            vec![(NewMemory::text("after the storm"), unit(3))],
        )
        .unwrap();
}

/// Keyword-only hits (id, BM25) of a query.
fn bm25_hits(store: &dyn LongTermStore, scope: &Scope, text: &str) -> Vec<(String, f32)> {
    let q = memloop_longterm::SearchQuery {
        vector_weight: 0.0,
        top_k: 20,
        ..memloop_longterm::SearchQuery::new(scope.clone(), text)
    };
    store
        .search(&q, &unit(0))
        .unwrap()
        .into_iter()
        .map(|h| (h.record.id, h.scores.bm25.unwrap_or(-1.0)))
        .collect()
}

/// The keyword index a server keeps in memory (`keyword_cache.rs`) answers
/// as the postings read in SQL do, while another server writes, supersedes,
/// deletes and expires, and after the change log was pruned past it.
#[test]
fn in_memory_keyword_search_follows_other_servers_writes() {
    let pg = Pg::new();
    let open = |docs: u64| {
        let options = memloop_pg::PgOptions::default().with_keyword_cache_docs(docs);
        memloop_pg::open(&pg.url, info(), options).unwrap()
    };
    let (reader, writer, sql) = (open(1_000_000), open(1_000_000), open(0));
    let scope = Scope::user("kim");
    let words = [
        "tea", "coffee", "berlin", "paris", "sister", "garden", "piano", "morning", "train",
        "river", "bread", "winter",
    ];
    let mut seed: u64 = 7;
    let mut next = move |n: usize| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) as usize % n
    };
    let mut sentence = |len: usize| -> String {
        (0..len)
            .map(|_| words[next(words.len())])
            .collect::<Vec<_>>()
            .join(" ")
    };
    let queries = [
        "tea berlin",
        "sister piano morning",
        "river",
        "bread winter coffee paris",
    ];
    let agree = |phase: &str| {
        for q in queries {
            let (got, want) = (
                bm25_hits(reader.as_ref(), &scope, q),
                bm25_hits(sql.as_ref(), &scope, q),
            );
            assert_eq!(
                got.len(),
                want.len(),
                "{phase}, {q:?}: {got:?} against {want:?}"
            );
            for ((gi, gs), (wi, ws)) in got.iter().zip(&want) {
                assert!(
                    (gs - ws).abs() < 1e-4,
                    "{phase}, {q:?}: {got:?} against {want:?}"
                );
                // Ties may come in either order; a different score may not.
                assert!(gi == wi || (gs - ws).abs() < 1e-4);
            }
            assert!(
                !want.is_empty() || phase == "purged",
                "{phase}, {q:?}: nothing found"
            );
        }
    };
    let mut ids = Vec::new();
    let add_some = |n: usize, sentence: &mut dyn FnMut(usize) -> String, ids: &mut Vec<String>| {
        let batch: Vec<(NewMemory, Vec<f32>)> = (0..n)
            .map(|i| (NewMemory::text(sentence(3 + i % 5)), unit(i)))
            .collect();
        for (rec, _) in writer.insert(&scope, batch).unwrap() {
            ids.push(rec.id);
        }
    };
    add_some(60, &mut sentence, &mut ids);
    agree("first load");
    add_some(5, &mut sentence, &mut ids);
    writer.delete("default", &ids[3], None).unwrap();
    let replaced = ids[10].clone();
    writer
        .supersede(
            &scope,
            &replaced,
            (NewMemory::text("tea in berlin with my sister"), unit(1)),
            "moved",
        )
        .unwrap();
    let mut gone = NewMemory::text("tea berlin river bread");
    gone.expires_at = Some(memloop_core::now_millis() - 1);
    writer.insert(&scope, vec![(gone, unit(2))]).unwrap();
    agree("caught up");
    // Writes the reader has not seen, then the log pruned past them: the
    // reader's copy cannot catch up and reads the partition whole.
    add_some(3, &mut sentence, &mut ids);
    writer.delete("default", &ids[20], None).unwrap();
    let mut c = postgres::Client::connect(&pg.url, postgres::NoTls).unwrap();
    c.batch_execute(
        "BEGIN; SELECT set_config('memloop.all_tenants', 'on', true); UPDATE keyword_log SET at = 0; COMMIT;",
    )
    .unwrap();
    assert!(writer.compact().unwrap() > 0, "no log entry pruned");
    agree("reloaded past the floor");
    writer.forget(&scope, true).unwrap();
    agree("purged");
    assert!(bm25_hits(reader.as_ref(), &scope, "tea").is_empty());
}

/// Schema version 10 bounds what a memory's context weighs in all
/// (`CONTEXT_WORDS`); the rows written before it are weighed again by the
/// migration, so they score as rows written after it do, in SQL and in
/// the in-memory keyword index alike.
#[test]
fn the_migration_weighs_old_long_contexts_as_new_ones_are() {
    let pg = Pg::new();
    let open = |docs: u64| {
        let options = memloop_pg::PgOptions::default().with_keyword_cache_docs(docs);
        memloop_pg::open(&pg.url, info(), options).unwrap()
    };
    let scope = Scope::user("kim");
    let store = open(0);
    let mut beside = NewMemory::text("apple banana");
    beside.context = Some(format!("{} apple", ["cherry"; 999].join(" ")));
    store
        .insert(
            &scope,
            vec![(beside, unit(1)), (NewMemory::text("apple"), unit(2))],
        )
        .unwrap();
    let written_after = bm25_hits(store.as_ref(), &scope, "apple cherry");
    drop(store);
    let mut c = postgres::Client::connect(&pg.url, postgres::NoTls).unwrap();
    let row = |c: &mut postgres::Client| -> (f32, f32) {
        let mut tx = c.transaction().unwrap();
        tx.batch_execute("SELECT set_config('memloop.all_tenants', 'on', true)")
            .unwrap();
        let r = tx
            .query_one(
                "SELECT m.doc_len, p.tf_context FROM memories m JOIN postings p ON p.rid = m.rid \
                 WHERE m.text = 'apple banana' AND p.term = 'cherri'",
                &[],
            )
            .unwrap();
        (r.get(0), r.get(1))
    };
    // Its 1000 context words weigh CONTEXT_WORDS in all, not 500; the
    // tsvector keeps 256 of the word's positions.
    let bound = memloop_longterm::keyword::CONTEXT_WORDS;
    let scale = bound / 500.0;
    let new = row(&mut c);
    assert!((new.0 - (2.0 + bound)).abs() < 1e-3, "length {new:?}");
    assert!((new.1 - 256.0 * scale).abs() < 1e-3, "{new:?}");
    // The row as schema version 9 kept it: its context at 0.5 a word (a
    // length of 502), in its row, its postings and the partition's
    // statistics, and no context_scale column.
    c.batch_execute(
        "SELECT set_config('memloop.all_tenants', 'on', false);
         ALTER TABLE memories DISABLE TRIGGER memories_keep_stats;
         UPDATE memories SET doc_len = 502 WHERE text = 'apple banana';
         ALTER TABLE memories ENABLE TRIGGER memories_keep_stats;
         UPDATE postings p SET tf_context = p.tf_context / m.context_scale, doc_len = 502
             FROM memories m WHERE m.rid = p.rid AND m.text = 'apple banana';
         UPDATE partition_stats SET total_len = 503;
         ALTER TABLE memories DROP COLUMN context_scale;
         UPDATE memloop_schema SET version = 9;",
    )
    .unwrap();
    let old = row(&mut c);
    assert!(
        old.0 == 502.0 && (old.1 - 256.0).abs() < 1e-2,
        "the old row: {old:?}"
    );
    let (sql, cached) = (open(0), open(1_000_000));
    let migrated = row(&mut c);
    assert!(
        (migrated.0 - new.0).abs() < 1e-3 && (migrated.1 - new.1).abs() < 1e-3,
        "{migrated:?} against {new:?}"
    );
    for store in [sql, cached] {
        let got = bm25_hits(store.as_ref(), &scope, "apple cherry");
        assert_eq!(got.len(), written_after.len(), "{got:?}");
        for ((gi, gs), (wi, ws)) in got.iter().zip(&written_after) {
            assert_eq!(gi, wi, "{got:?} against {written_after:?}");
            assert!((gs - ws).abs() < 1e-4, "{got:?} against {written_after:?}");
        }
    }
}
