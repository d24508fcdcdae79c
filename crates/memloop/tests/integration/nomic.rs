//! nomic-embed-text-v1.5 as the configured local model: a store written with
//! all-MiniLM-L6-v2 refuses it until `reindex`, which moves every memory to
//! its 768 dimensions; then searches embed their query as a query.

use memloop::{Config, EmbedderConfig, Memory, NewMemory, Scope, SearchQuery};

fn nomic_config(dir: &std::path::Path) -> Config {
    let mut cfg = Config::default().with_data_dir(dir);
    // By name: found in the checkout's models/ folder, where
    // scripts/fetch-model-nomic.sh puts it.
    cfg.embedder = EmbedderConfig::Local {
        model: Some("nomic".into()),
        model_dir: None,
        threads: None,
    };
    cfg
}

#[test]
fn a_model_name_that_is_not_a_model_or_contradicts_model_dir_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = Config::default().with_data_dir(dir.path());
    cfg.embedder = EmbedderConfig::Local {
        model: Some("bge-small".into()),
        model_dir: None,
        threads: None,
    };
    let Err(e) = Memory::open_with(&cfg) else {
        panic!("an unknown model name opened a store")
    };
    assert!(
        e.to_string()
            .contains("use one of: small, all-MiniLM-L6-v2, nomic"),
        "{e}"
    );
    let minilm = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/all-MiniLM-L6-v2");
    cfg.embedder = EmbedderConfig::Local {
        model: Some("nomic-embed-text-v1.5".into()),
        model_dir: Some(minilm.into()),
        threads: None,
    };
    let m = Memory::open_with(&cfg).unwrap();
    let Err(e) = m.add(&Scope::user("dana"), NewMemory::text("I keep bees")) else {
        panic!("a folder holding another model was used")
    };
    let e = e.to_string();
    assert!(
        e.contains("holds sentence-transformers/all-MiniLM-L6-v2, but [embedder] model asks for nomic-ai/nomic-embed-text-v1.5"),
        "{e}"
    );
    // Nothing was written.
    assert_eq!(m.stats().unwrap().memories, 0);
}

#[test]
fn a_store_moves_to_nomic_by_reindex_and_searches_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let carol = Scope::user("carol");
    let texts = [
        "My sister Anna plays the cello in an orchestra.",
        "I live in Paris and work as a nurse.",
        "We adopted a grey cat called Miso last spring.",
    ];
    {
        let m = crate::open(dir.path());
        for t in texts {
            m.add(&carol, NewMemory::text(t)).unwrap();
        }
    }
    let cfg = nomic_config(dir.path());
    let query = SearchQuery::new(carol.clone(), "which instrument does her sibling perform");
    let refused = Memory::open_with(&cfg).and_then(|m| m.search(&query));
    let Err(refusal) = refused else {
        panic!("a store of another model was searched");
    };
    let message = refusal.to_string();
    assert!(message.contains("memloop reindex"), "{message}");

    assert_eq!(Memory::reindex(&cfg, &|_, _| {}).unwrap(), texts.len());
    let m = Memory::open_with(&cfg).unwrap();
    assert_eq!(m.embedder().info().dimensions, 768);
    let hits = m.search(&query).unwrap();
    assert_eq!(hits.len(), texts.len());
    // No word of the question is in the memory: the vectors find it.
    assert_eq!(hits[0].record.text, texts[0]);
    let pet = m
        .search(&SearchQuery::new(carol, "which pet do they keep"))
        .unwrap();
    assert_eq!(pet[0].record.text, texts[2]);
}
