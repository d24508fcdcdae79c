#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! `memloop reindex` with the real binary and the real model: every memory
//! is embedded again, and memories written before the store kept an entity
//! graph (their mentions and relations taken out here, as a store from
//! before schema version 9 has none) get the links a write derives, on the
//! embedded store and on PostgreSQL alike. Needs the test server
//! (scripts/pg.sh) for the PostgreSQL half.

use serde_json::Value;

mod common;
mod pg_common;
use common::Store;
use pg_common::{server_url, Database};

/// The binary on a data directory of its own, or on a database.
struct Cli {
    store: Store,
    url: Option<String>,
}

impl Cli {
    fn ok(&self, args: &[&str]) -> Value {
        let mut all: Vec<&str> = self
            .url
            .iter()
            .flat_map(|u| ["--store", u.as_str()])
            .collect();
        all.extend(args);
        self.store.ok(&all)
    }
}

/// Writes memories that name people, places and kin for two users;
/// returns what the graph reads (each user's entities, Anna's links) as
/// written.
fn write_and_read(cli: &Cli) -> Vec<Value> {
    for (user, text) in [
        ("alice", "My sister Anna works at Acme in Lisbon"),
        ("alice", "Anna moved to Globex last week"),
        ("alice", "I like green tea"),
        ("bob", "Bob met Carlos at the Porto chess club"),
    ] {
        cli.ok(&["add", "--user", user, text]);
    }
    graph(cli)
}

fn graph(cli: &Cli) -> Vec<Value> {
    vec![
        cli.ok(&["entities", "--user", "alice"]),
        cli.ok(&["entities", "--user", "bob"]),
        cli.ok(&["links", "Anna", "--user", "alice"]),
    ]
}

/// The graph as written, taken out and given back by `reindex`; a second
/// `reindex` links nothing more.
fn relinks(cli: &Cli, take_out_graph: impl Fn()) {
    let written = write_and_read(cli);
    let alice = written[0].to_string();
    assert!(
        alice.contains("Anna") && alice.contains("Globex"),
        "{alice}"
    );
    assert!(written[1].to_string().contains("Carlos"), "{written:?}");
    assert!(
        !written[1].to_string().contains("Anna"),
        "one user's names are not another's: {written:?}"
    );

    // "My sister Anna": a relation, not only names.
    assert!(
        !written[2]["relations"].as_array().unwrap().is_empty(),
        "{written:?}"
    );

    take_out_graph();
    for user in ["alice", "bob"] {
        let none = cli.ok(&["entities", "--user", user]);
        assert_eq!(none["entities"], serde_json::json!([]), "{none}");
    }

    let report = cli.ok(&["reindex"]);
    assert_eq!(report["reindexed"], 4, "{report}");
    // Three of the four memories name something; the tea does not.
    assert_eq!(report["linked"], 3, "{report}");
    assert_eq!(graph(cli), written);

    let again = cli.ok(&["reindex"]);
    assert_eq!(again["linked"], 0, "{again}");
    assert_eq!(graph(cli), written);
}

#[test]
fn reindex_gives_the_embedded_store_its_graph_back() {
    let cli = Cli {
        store: Store::new(),
        url: None,
    };
    let file = cli.store.path().join("memloop.db");
    relinks(&cli, || {
        let db = rusqlite::Connection::open(&file).unwrap();
        db.execute_batch("DELETE FROM relations; DELETE FROM mentions; DELETE FROM entities;")
            .unwrap();
    });
}

#[test]
fn reindex_gives_postgres_its_graph_back() {
    let Some(admin) = server_url() else { return };
    let db = Database::create(&admin);
    let cli = Cli {
        store: Store::new(),
        url: Some(db.url.clone()),
    };
    relinks(&cli, || {
        let mut c = postgres::Client::connect(&db.url, postgres::NoTls).unwrap();
        // The owner is bound by the tables' row-level security too.
        c.batch_execute(
            "BEGIN; SET LOCAL memloop.all_tenants = 'on'; \
             DELETE FROM relations; DELETE FROM mentions; DELETE FROM entities; COMMIT;",
        )
        .unwrap();
    });
}
