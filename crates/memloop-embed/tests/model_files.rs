//! A damaged model folder (a download cut short) is refused with the file
//! at fault and what to do: fetch the model again.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use memloop_core::ErrorClass;
use memloop_embed::LocalEmbedder;

fn model_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../models/all-MiniLM-L6-v2")
}

#[test]
fn a_truncated_model_file_says_to_fetch_it_again() {
    let src = model_dir();
    // A folder of its own (this crate has no tempfile dependency), removed at the end.
    let dir = std::env::temp_dir().join(format!("memloop-truncated-model-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["config.json", "tokenizer.json"] {
        std::fs::copy(src.join(f), dir.as_path().join(f)).expect("run scripts/fetch-model.sh");
    }
    // The first 64 KiB of the weights: a header promising tensors the file
    // no longer holds, as a download cut short leaves it.
    let weights = std::fs::read(src.join("model.safetensors")).unwrap();
    std::fs::write(dir.as_path().join("model.safetensors"), &weights[..65_536]).unwrap();
    let err = LocalEmbedder::load(dir.as_path()).err().unwrap();
    assert_eq!(err.class(), ErrorClass::Corruption, "{err}");
    let m = err.to_string();
    assert!(
        m.contains("model.safetensors") || m.contains(&dir.as_path().display().to_string()),
        "{m}"
    );
    assert!(m.contains("run scripts/fetch-model.sh again"), "{m}");
    std::fs::remove_dir_all(&dir).unwrap();
}
