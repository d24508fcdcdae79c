#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Long texts in pieces, with the real model: what the first window does
//! not read is embedded in later windows, and a query about a text's end
//! finds it there.

use memloop_core::Embedder;
use memloop_embed::LocalEmbedder;

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn the_end_of_a_long_text_is_found_in_its_pieces() {
    let model = LocalEmbedder::locate_and_load(None).unwrap();
    let filler =
        "The build server compiles the project, runs the linter and uploads the artifacts. "
            .repeat(30);
    let long =
        format!("{filler}Finally, my grandmother's apple orchard in Normandy has forty trees.");
    let short = "A short note about the weather.";
    let pieces = model.embed_pieces(&[short, &long]).unwrap();
    assert_eq!(pieces.len(), 2);
    assert!(pieces[0].is_empty(), "a short text has no pieces");
    assert!(!pieces[1].is_empty(), "a long text has pieces");
    assert!(model.count_tokens(&long) >= 256);
    for v in &pieces[1] {
        assert_eq!(v.len(), 384);
        assert!((dot(v, v) - 1.0).abs() < 1e-3, "unit length");
    }
    let q = model
        .embed("how many trees are in the orchard in Normandy")
        .unwrap();
    let first = model.embed(&long).unwrap();
    let best = pieces[1]
        .iter()
        .map(|v| dot(&q, v))
        .fold(f32::MIN, f32::max);
    assert!(
        best > dot(&q, &first) + 0.1,
        "the last piece ({best}) should answer far better than the start ({})",
        dot(&q, &first)
    );
}
