//! A memory's keyword terms are analysed when it is written and kept in
//! its row (schema version 7): a partition loaded after a reopen indexes
//! them as stored, an updated text stores its new terms, and rows written
//! before the column (terms NULL) are analysed from their text as before.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use memloop_core::{NewMemory, Scope};
use memloop_store::prelude::*;
use memloop_store::{EmbeddedStore, MemoryUpdate, SearchQuery, StoreOptions};

mod common;
use common::{info, vector};

fn open(dir: &Path) -> EmbeddedStore {
    EmbeddedStore::open(dir, info(), StoreOptions::default()).unwrap()
}

/// The texts a keyword-only search for `words` finds.
fn found(store: &EmbeddedStore, scope: &Scope, words: &str) -> Vec<String> {
    let mut q = SearchQuery::new(scope.clone(), words);
    q.vector_weight = 0.0;
    store
        .search(&q, &vector(0))
        .unwrap()
        .into_iter()
        .map(|h| h.record.text)
        .collect()
}

fn sql(dir: &Path, statement: &str) {
    let conn = rusqlite::Connection::open(dir.join(memloop_store::DB_FILE)).unwrap();
    conn.execute(statement, []).unwrap();
}

fn seed(dir: &Path, scope: &Scope) -> String {
    let store = open(dir);
    let mut with_context = NewMemory::text("Melanie painted a sunrise");
    with_context.context = Some("Caroline: what did you do at the lake?".into());
    let written = store
        .insert(
            scope,
            vec![
                (
                    NewMemory::text("Caroline went hiking in the hills"),
                    vector(1),
                ),
                (with_context, vector(2)),
            ],
        )
        .unwrap();
    written[0].0.id.clone()
}

#[test]
fn a_reloaded_partition_indexes_the_terms_its_rows_keep() {
    let dir = tempfile::tempdir().unwrap();
    let scope = Scope::user("u");
    seed(dir.path(), &scope);
    // Texts the index would analyse differently: a load that analysed
    // them again would no longer find the hike or the lake.
    sql(
        dir.path(),
        "UPDATE memories SET text = 'unrelated words', context = NULL",
    );
    let store = open(dir.path());
    assert_eq!(found(&store, &scope, "hikes"), vec!["unrelated words"]);
    assert_eq!(found(&store, &scope, "lake"), vec!["unrelated words"]);
    assert!(found(&store, &scope, "unrelated").is_empty());
}

#[test]
fn an_updated_text_keeps_its_new_terms() {
    let dir = tempfile::tempdir().unwrap();
    let scope = Scope::user("u");
    let id = seed(dir.path(), &scope);
    {
        let store = open(dir.path());
        let change = MemoryUpdate {
            text: Some(("Caroline went kayaking on the river".into(), vector(3))),
            ..Default::default()
        };
        store.update("default", &id, change).unwrap();
    }
    let store = open(dir.path());
    assert!(found(&store, &scope, "hiking").is_empty());
    assert_eq!(
        found(&store, &scope, "kayak"),
        vec!["Caroline went kayaking on the river"]
    );
}

#[test]
fn rows_without_stored_terms_are_analysed_from_their_text() {
    let dir = tempfile::tempdir().unwrap();
    let scope = Scope::user("u");
    seed(dir.path(), &scope);
    // As a row written before schema version 7 has it.
    sql(dir.path(), "UPDATE memories SET terms = NULL");
    let store = open(dir.path());
    assert_eq!(
        found(&store, &scope, "hikes"),
        vec!["Caroline went hiking in the hills"]
    );
    assert_eq!(
        found(&store, &scope, "lake"),
        vec!["Melanie painted a sunrise"]
    );
}
