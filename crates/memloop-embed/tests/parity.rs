#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The local embedder against vectors made once by sentence-transformers
//! (scripts/make_reference_vectors.py), and batch against single encoding.

mod common;
use common::cosine;

use memloop_core::Embedder;
use memloop_embed::{GemmPath, LocalEmbedder};

#[derive(serde::Deserialize)]
struct Fixture {
    sentences: Vec<String>,
    vectors: Vec<Vec<f32>>,
}

fn fixture() -> Fixture {
    common::fixture("minilm_reference.json")
}

#[test]
fn matches_sentence_transformers_reference() {
    let fx = fixture();
    let model = LocalEmbedder::locate_and_load(None).unwrap();
    let texts: Vec<&str> = fx.sentences.iter().map(String::as_str).collect();
    let got = model.embed_batch(&texts).unwrap();
    assert_eq!(got.len(), fx.vectors.len());
    let mut worst = 1.0f32;
    for (i, (g, want)) in got.iter().zip(&fx.vectors).enumerate() {
        assert_eq!(g.len(), 384);
        let c = cosine(g, want);
        assert!(c >= 0.99, "sentence {i} {:?}: cosine {c}", &fx.sentences[i]);
        worst = worst.min(c);
    }
    eprintln!("worst cosine to the reference: {worst}");
    // Far tighter than the 0.99 bound: the same arithmetic in f32.
    assert!(worst > 0.9999, "worst cosine {worst}");
}

#[test]
fn single_texts_read_bf16_weights_and_stay_close() {
    // On the avx512 path one text at a time is a product of few rows, which
    // reads the bfloat16 copy of the weights (gemm::HALF_MAX_ROWS); on
    // avx512bf16 and amx every product rounds to bfloat16: close to the
    // batch and to the reference, not bit-equal.
    let fx = fixture();
    let model = LocalEmbedder::locate_and_load(None).unwrap();
    let texts: Vec<&str> = fx.sentences.iter().map(String::as_str).collect();
    let batch = model.embed_batch(&texts).unwrap();
    let (mut worst_batch, mut worst_ref) = (1.0f32, 1.0f32);
    for ((t, b), want) in texts.iter().zip(&batch).zip(&fx.vectors) {
        let single = model.embed(t).unwrap();
        worst_batch = worst_batch.min(cosine(&single, b));
        worst_ref = worst_ref.min(cosine(&single, want));
    }
    eprintln!("single vs batch: worst cosine {worst_batch}; vs reference {worst_ref}");
    assert!(worst_batch > 0.9999, "single vs batch: {worst_batch}");
    assert!(worst_ref > 0.9999, "single vs reference: {worst_ref}");
}

#[test]
fn empty_text_still_embeds() {
    let model = LocalEmbedder::locate_and_load(None).unwrap();
    let v = model.embed("").unwrap();
    assert!((v.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-4);
}

#[test]
fn every_matrix_kernel_gives_the_same_vectors() {
    // Each kernel this machine runs (MEMLOOP_GEMM's choices), batch and
    // single text, against sentence-transformers and against each other.
    // AMX and AVX512-BF16 round activations and weights to bfloat16 (f32
    // sums): a looser bound than f32's, still far above what retrieval
    // notices.
    let fx = fixture();
    let texts: Vec<&str> = fx.sentences.iter().map(String::as_str).collect();
    let dir = memloop_embed::locate_model_dir(None).unwrap();
    let mut runs = Vec::new();
    for path in GemmPath::all_available() {
        let model = LocalEmbedder::load_with_gemm(&dir, path).unwrap();
        assert_eq!(model.gemm(), path);
        let batch = model.embed_batch(&texts).unwrap();
        let single: Vec<Vec<f32>> = texts.iter().map(|t| model.embed(t).unwrap()).collect();
        // int8 is not this model's default (GemmPath::best): its
        // feed-forward output rounds to 0.9968.
        let bound = match path {
            GemmPath::Int8 => 0.995,
            GemmPath::Amx | GemmPath::Bf16 => 0.999,
            _ => 0.9999,
        };
        for (vectors, how) in [(&batch, "batch"), (&single, "single")] {
            let worst = vectors
                .iter()
                .zip(&fx.vectors)
                .map(|(g, w)| cosine(g, w))
                .fold(1.0f32, f32::min);
            eprintln!("{path:?} {how}: worst cosine to the reference {worst}");
            assert!(worst >= bound, "{path:?} {how}: {worst}");
        }
        runs.push((path, batch));
    }
    for (pa, a) in &runs {
        for (pb, b) in &runs {
            let worst = a
                .iter()
                .zip(b)
                .map(|(x, y)| cosine(x, y))
                .fold(1.0f32, f32::min);
            let bound = if [pa, pb].contains(&&GemmPath::Int8) {
                0.995
            } else {
                0.999
            };
            assert!(worst >= bound, "{pa:?} vs {pb:?}: {worst}");
        }
    }
}

#[test]
fn the_default_kernel_is_timed_at_load_and_never_int8_for_this_model() {
    // int8 keeps all-MiniLM-L6-v2 only within a cosine of 0.9968 (above),
    // below the 0.999 every default kernel holds: calibration leaves it out.
    let dir = memloop_embed::locate_model_dir(None).unwrap();
    let calibration = memloop_embed::kernel_calibration(&dir);
    assert!(calibration.timings.iter().all(|t| t.path != GemmPath::Int8));
    assert_ne!(calibration.chosen, GemmPath::Int8);
    if std::env::var_os(memloop_embed::GEMM_ENV).is_none() {
        let model = LocalEmbedder::load(&dir).unwrap();
        assert_eq!(model.gemm(), calibration.chosen);
    }
}
