//! The backends the suite runs against. Each test gets a store of its own
//! (a temporary directory, or a database of its own on the test server),
//! so tests run in parallel; `handle` opens one more handle on the same
//! store, as another process or server would.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use memloop_core::time::Clock;
use memloop_core::EmbedderInfo;
use memloop_longterm::LongTermStore;

pub const DIMS: usize = 16;

pub fn info() -> EmbedderInfo {
    EmbedderInfo {
        model_id: "test-hash".into(),
        dimensions: DIMS,
    }
}

pub trait Backend {
    /// Another handle on the same store.
    fn handle(&self) -> Arc<dyn LongTermStore>;
    /// A handle that searches through its vector index (HNSW) at any
    /// partition size, where `handle` scans small partitions exactly.
    fn indexed_handle(&self) -> Arc<dyn LongTermStore>;
    /// A handle that stamps writes and judges expiry by `clock`.
    fn handle_at(&self, clock: Clock) -> Arc<dyn LongTermStore>;
}

pub struct Sqlite {
    dir: tempfile::TempDir,
}

impl Sqlite {
    pub fn new() -> Sqlite {
        Sqlite {
            dir: tempfile::tempdir().unwrap(),
        }
    }
}

impl Backend for Sqlite {
    fn handle(&self) -> Arc<dyn LongTermStore> {
        memloop_store::open(
            self.dir.path(),
            info(),
            memloop_store::StoreOptions::default(),
        )
        .unwrap()
    }

    fn indexed_handle(&self) -> Arc<dyn LongTermStore> {
        let options = memloop_store::StoreOptions::default().with_ann_threshold(1);
        memloop_store::open(self.dir.path(), info(), options).unwrap()
    }

    fn handle_at(&self, clock: Clock) -> Arc<dyn LongTermStore> {
        let options = memloop_store::StoreOptions::default().with_clock(clock);
        memloop_store::open(self.dir.path(), info(), options).unwrap()
    }
}

/// The test server (scripts/pg.sh start; scripts/test.sh exports its URL).
pub fn server_url() -> String {
    std::env::var("MEMLOOP_TEST_PG_URL")
        .unwrap_or_else(|_| "postgres://memloop@127.0.0.1:55432/memloop".to_string())
}

/// The URL of `url` with another database name.
pub fn with_database(url: &str, db: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (url, String::new()),
    };
    let scheme_end = base.find("://").map(|i| i + 3).unwrap_or(0);
    let path_start = base[scheme_end..]
        .find('/')
        .map(|i| scheme_end + i)
        .unwrap_or(base.len());
    format!("{}/{db}{query}", &base[..path_start])
}

/// A database of its own on the test server, dropped afterwards.
pub struct Pg {
    pub url: String,
    db: String,
}

impl Pg {
    pub fn new() -> Pg {
        static N: AtomicUsize = AtomicUsize::new(0);
        let db = format!(
            "memloop_test_{}_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos()
        );
        let admin = server_url();
        let mut client = postgres::Client::connect(&admin, postgres::NoTls).unwrap_or_else(|e| {
            panic!("the PostgreSQL tests need the test server at {admin}: run scripts/pg.sh start ({e})")
        });
        client
            .batch_execute(&format!("CREATE DATABASE {db}"))
            .unwrap();
        Pg {
            url: with_database(&admin, &db),
            db,
        }
    }
}

impl Backend for Pg {
    fn handle(&self) -> Arc<dyn LongTermStore> {
        memloop_pg::open(&self.url, info(), memloop_pg::PgOptions::default()).unwrap()
    }

    fn indexed_handle(&self) -> Arc<dyn LongTermStore> {
        let options = memloop_pg::PgOptions::default().with_exact_threshold(1);
        memloop_pg::open(&self.url, info(), options).unwrap()
    }

    fn handle_at(&self, clock: Clock) -> Arc<dyn LongTermStore> {
        let options = memloop_pg::PgOptions::default().with_clock(clock);
        memloop_pg::open(&self.url, info(), options).unwrap()
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&server_url(), postgres::NoTls) {
            let _ = c.batch_execute(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.db));
        }
    }
}
