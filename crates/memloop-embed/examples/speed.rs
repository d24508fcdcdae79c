use memloop_core::Embedder;
use std::time::Instant;
fn main() {
    let lines: Vec<String> = std::fs::read_to_string("/tmp/chat_lines.txt")
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(String::from)
        .collect();
    let threads: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().unwrap())
        .unwrap_or(1);
    let m = memloop_embed::MiniLmEmbedder::locate_and_load(None)
        .unwrap()
        .with_threads(threads);
    let mut times = vec![];
    for l in lines.iter().take(200) {
        let t = Instant::now();
        m.embed(l).unwrap();
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let t = Instant::now();
    for c in lines.chunks(32) {
        let v: Vec<&str> = c.iter().map(|s| s.as_str()).collect();
        m.embed_batch(&v).unwrap();
    }
    println!(
        "threads {threads} single p50 {:.2} ms p99 {:.2}; batch32 {:.0} sent/s",
        times[100],
        times[197],
        lines.len() as f64 / t.elapsed().as_secs_f64()
    );
}
