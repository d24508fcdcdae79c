#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! nomic-embed-text-v1.5 from its GGUF file against vectors made once by an
//! independent numpy implementation (scripts/make_nomic_reference.py), as
//! memories and as search queries.

mod common;
use common::cosine;

use std::path::PathBuf;

use memloop_core::Embedder;
use memloop_embed::{
    kernel_calibration, local::model_info, locate_model, GemmPath, LocalEmbedder, LocalModel,
    NOMIC_MODEL_ID,
};

#[derive(serde::Deserialize)]
struct Fixture {
    sentences: Vec<String>,
    documents: Vec<Vec<f32>>,
    queries: Vec<Vec<f32>>,
}

fn fixture() -> Fixture {
    common::fixture("nomic_reference.json")
}

fn model_dir() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../models/nomic-embed-text-v1.5"
    ))
}

fn model() -> LocalEmbedder {
    LocalEmbedder::load(&model_dir()).expect("run scripts/fetch-model-nomic.sh")
}

/// The worst cosine of `got` to `want`, each at least 0.999.
fn worst(got: &[Vec<f32>], want: &[Vec<f32>], texts: &[String]) -> f32 {
    assert_eq!(got.len(), want.len());
    let mut worst = 1.0f32;
    for ((g, w), t) in got.iter().zip(want).zip(texts) {
        assert_eq!(g.len(), 768);
        let c = cosine(g, w);
        assert!(c >= 0.999, "{t:?}: cosine {c}");
        worst = worst.min(c);
    }
    worst
}

#[test]
fn memories_and_queries_match_the_reference() {
    // On every matrix kernel this machine runs: int8 (the default where
    // the CPU has VNNI) and bfloat16 round, f32 does not; all within 0.999.
    let fx = fixture();
    let texts: Vec<&str> = fx.sentences.iter().map(String::as_str).collect();
    for path in GemmPath::all_available() {
        let model = LocalEmbedder::load_with_gemm(&model_dir(), path).unwrap();
        let documents = model.embed_batch(&texts).unwrap();
        let w = worst(&documents, &fx.documents, &fx.sentences);
        eprintln!("{path:?}: worst cosine of a memory to the reference: {w}");
        let n = fx.queries.len();
        let queries = model.embed_queries(&texts[..n]).unwrap();
        let w = worst(&queries, &fx.queries, &fx.sentences);
        eprintln!("{path:?}: worst cosine of a query to the reference: {w}");
        // One at a time, as a search embeds its query.
        let single = model.embed_query(texts[0]).unwrap();
        assert!(cosine(&single, &fx.queries[0]) >= 0.999, "{path:?}");
        // The prefixes make a query and a memory of the same words differ.
        for i in 0..n {
            let c = cosine(&queries[i], &documents[i]);
            assert!(c < 0.99, "{path:?}: query and memory {i} alike: cosine {c}");
        }
    }
}

#[test]
fn the_default_kernel_is_the_one_timed_fastest_and_int8_is_a_candidate() {
    let calibration = kernel_calibration(&model_dir());
    let timed: Vec<GemmPath> = calibration.timings.iter().map(|t| t.path).collect();
    assert_eq!(timed.contains(&GemmPath::Int8), GemmPath::Int8.available());
    if std::env::var_os(memloop_embed::GEMM_ENV).is_none() {
        assert_eq!(model().gemm(), calibration.chosen);
    }
}

#[test]
fn the_folder_says_which_model_it_holds() {
    let info = model_info(Some(&model_dir()), None);
    assert_eq!(
        (info.model_id.as_str(), info.dimensions),
        (NOMIC_MODEL_ID, 768)
    );
    assert_eq!(model().info(), info);
}

#[test]
fn a_text_past_the_window_is_read_in_pieces() {
    let model = model();
    let sentence = "The quarterly report lists every supplier with its delivery times. ";
    // About 360 tokens: past the first window (250 of the text's tokens
    // after [CLS], the prefix and [SEP]), within the second (from 186).
    let long = sentence.repeat(30);
    let short = sentence.repeat(3);
    let pieces = model.embed_pieces(&[&long, &short]).unwrap();
    assert_eq!(pieces[0].len(), 1, "one later window");
    assert!(pieces[1].is_empty());
    assert_eq!(pieces[0][0].len(), 768);
}

#[test]
fn a_folder_whose_model_file_is_not_gguf_is_refused_by_name() {
    let dir = std::env::temp_dir().join(format!("memloop-not-gguf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("model.gguf"), b"<html>not found</html>").unwrap();
    let message = match LocalEmbedder::load(&dir) {
        Ok(_) => panic!("a page of HTML loaded as a model"),
        Err(e) => e.to_string(),
    };
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(message.contains("model.gguf"), "{message}");
    assert!(message.contains("not a GGUF file"), "{message}");
}

#[test]
fn the_model_is_found_by_its_name_in_the_checkout() {
    // MEMLOOP_MODEL_DIR, when a test run sets it to all-MiniLM-L6-v2, is
    // passed over for a model named otherwise.
    let dir = locate_model(None, Some(LocalModel::Nomic)).unwrap();
    assert_eq!(LocalModel::held_by(&dir), Some(LocalModel::Nomic));
    assert!(
        dir.ends_with("models/nomic-embed-text-v1.5"),
        "{}",
        dir.display()
    );
    let info = model_info(None, Some(LocalModel::Nomic));
    assert_eq!(
        (info.model_id.as_str(), info.dimensions),
        (NOMIC_MODEL_ID, 768)
    );
}
