//! `memloop forget --user U --purge` leaves no byte of U's texts in any
//! file of the data directory, done as a user would do it: the real
//! binary, one process per command (each closes the store as it exits),
//! texts stored as memories, in metadata, in history (an update, and
//! memories forgotten earlier without purge), as a turn queued in the
//! outbox (the LLM unreachable), and a saved HNSW index (the partition
//! past `ann_threshold`). Every file is scanned for each text as written,
//! in lower and upper case, and in the forms the keyword index makes of
//! it (stems); the other user's texts must still be found, so the scan
//! can fail.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_memloop");

/// The victim's distinctive words, each stored a different way (see `seed`).
const VICTIM: [&str; 6] = [
    "Zorblaxian",   // a memory's text
    "Quuxifrondel", // its metadata
    "Flimflorpery", // a text an update replaced: history only
    "Snarkwidgets", // memories forgotten (not purged) earlier: history, free pages
    "Vexillotrons", // a turn queued in the outbox (and its episode)
    "Glimbertraxi", // the updated text
];
/// The bystander's, stored the same ways.
const BYSTANDER: [&str; 3] = ["Plumbozoidal", "Wobbletrunks", "Crindlemaxed"];
const VICTIM_ID: &str = "victim-Hexaquorl";
const BYSTANDER_ID: &str = "bystander-Ostrivane";

struct Dir {
    _tmp: tempfile::TempDir,
    data: PathBuf,
    config: PathBuf,
}

impl Dir {
    /// A data directory and a config: HNSW from 10 memories, and an LLM at
    /// a closed port (no retries), so a remembered turn's fact extraction
    /// fails and the turn is queued in the outbox.
    fn new() -> Dir {
        let tmp = tempfile::tempdir().unwrap();
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        let config = tmp.path().join("memloop.toml");
        std::fs::write(
            &config,
            format!(
                "[store]\nann_threshold = 10\n\n[llm]\nprovider = \"openai\"\nmodel = \"none\"\n\
                 base_url = \"http://127.0.0.1:{port}/v1\"\napi_key = \"k\"\nmax_retries = 0\n\
                 timeout_secs = 2\n"
            ),
        )
        .unwrap();
        Dir {
            data: tmp.path().join("data"),
            config,
            _tmp: tmp,
        }
    }

    fn run(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let out = Command::new(BIN)
            .arg("--data-dir")
            .arg(&self.data)
            .arg("--config")
            .arg(&self.config)
            .args(args)
            .env_remove("MEMLOOP_DATA_DIR")
            .env_remove("MEMLOOP_CONFIG")
            .env_remove("MEMLOOP_SHORT_TERM")
            .env_remove("OPENAI_API_KEY")
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    }

    fn ok(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let (code, stdout, stderr) = self.run(&all);
        assert_eq!(code, Some(0), "memloop {args:?}: {stderr}");
        serde_json::from_str(&stdout).unwrap()
    }

    fn first_id(v: &Value) -> String {
        v["results"][0]["id"].as_str().unwrap().to_string()
    }
}

/// Stores `words` for `user` in every way a text can reach the store;
/// returns the id of the updated memory.
fn seed(d: &Dir, user: &str, words: &[&str]) -> String {
    let w = |i: usize| words[i % words.len()];
    // A memory's text, with a distinctive metadata value.
    let meta = format!(r#"{{"note": "{}"}}"#, w(1));
    d.ok(&[
        "add",
        "--user",
        user,
        "--metadata",
        &meta,
        &format!("My neighbour {} plays the tuba", w(0)),
    ]);
    // A text replaced by an update stays in history only.
    let id = Dir::first_id(&d.ok(&[
        "add",
        "--user",
        user,
        &format!("I keep a {} in the garden shed", w(2)),
    ]));
    d.ok(&[
        "update",
        &id,
        &format!("I keep a {} in the garden shed", w(5)),
    ]);
    // A memory forgotten without purge: its row goes, its history stays.
    d.ok(&[
        "add",
        "--user",
        user,
        "--agent",
        "helper",
        &format!("Remind me about the {} order", w(3)),
    ]);
    // A long one (its text spills into overflow pages): forgetting it frees
    // whole pages, which deletes leave as they were (secure_delete FAST)
    // until the purge removes every free page from the file.
    let long = format!("Notes on the {} order: ", w(3)) + &format!("{} again. ", w(3)).repeat(500);
    d.ok(&["add", "--user", user, "--agent", "helper", &long]);
    let gone = d.ok(&["forget", "--user", user, "--agent", "helper"]);
    assert_eq!(gone["memories_deleted"], 2, "{gone}");
    // A remembered turn: its episode is stored, its fact extraction fails
    // (the LLM is unreachable) and the turn waits in the outbox.
    let r = d.ok(&[
        "remember",
        "--user",
        user,
        "--no-gate",
        &format!("I am going to the {} festival next week", w(4)),
    ]);
    let notes = r["notes"].to_string();
    assert!(notes.contains("queued as outbox entry"), "{r}");
    id
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The byte forms a word may take on disk: as written, lower and upper
/// case, and the keyword analyser's terms (lower case, stemmed). User ids
/// are stored as given, never analysed.
fn forms(word: &str) -> Vec<String> {
    let mut f = vec![word.to_string(), word.to_lowercase(), word.to_uppercase()];
    if ![VICTIM_ID, BYSTANDER_ID].contains(&word) {
        f.extend(memloop::text::Analyzer::default().terms(word));
    }
    f.sort();
    f.dedup();
    f
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// Which of `words` (in any of their forms) some file holds, with the file.
fn found(dir: &Path, words: &[&str]) -> Vec<(String, String)> {
    let contents: Vec<(PathBuf, Vec<u8>)> = files(dir)
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    let mut hits = Vec::new();
    for word in words {
        for form in forms(word) {
            for (path, bytes) in &contents {
                if contains(bytes, &form) {
                    hits.push((form.clone(), path.display().to_string()));
                }
            }
        }
    }
    hits
}

/// The data directory holds only the files the scan is meant to cover:
/// the database and its WAL and shared-memory files, the init lock, and
/// saved index files (an HNSW graph, its sidecar and the keyword index
/// saved beside it). A file of any other
/// kind would be a copy nobody looked at.
fn assert_only_known_files(dir: &Path) {
    for p in files(dir) {
        let rel = p.strip_prefix(dir).unwrap().to_string_lossy().to_string();
        let known = matches!(
            rel.as_str(),
            "memloop.db" | "memloop.db-wal" | "memloop.db-shm" | "memloop.lock"
        ) || rel.strip_prefix("index/").is_some_and(|f| {
            let (stem, ext) = f.rsplit_once('.').unwrap_or((f, ""));
            stem.len() == 32
                && stem.bytes().all(|b| b.is_ascii_hexdigit())
                && matches!(ext, "usearch" | "json" | "keywords")
        });
        assert!(known, "an unexpected file in the data directory: {rel}");
    }
}

#[test]
fn a_purge_leaves_no_byte_of_the_users_texts_in_any_file() {
    let d = Dir::new();
    let victim_updated = seed(&d, VICTIM_ID, &VICTIM);
    seed(&d, BYSTANDER_ID, &BYSTANDER);
    // Enough of the victim's memories for an HNSW index; a search loads it
    // and the process saves it as it exits.
    let filler: String = (0..12)
        .map(|i| format!("ordinary note {i} about the weather\n"))
        .collect();
    let file = d.data.parent().unwrap().join("filler.txt");
    std::fs::write(&file, filler).unwrap();
    d.ok(&["add", "--user", VICTIM_ID, "--file", file.to_str().unwrap()]);
    d.ok(&["search", "--user", VICTIM_ID, "tuba"]);
    d.ok(&["search", "--user", BYSTANDER_ID, "tuba"]);
    let saved = files(&d.data.join("index"));
    assert!(
        saved
            .iter()
            .any(|p| p.extension().is_some_and(|e| e == "usearch")),
        "the victim's HNSW index is saved before the purge: {saved:?}"
    );
    assert!(
        saved
            .iter()
            .any(|p| p.extension().is_some_and(|e| e == "keywords")),
        "the victim's keyword index (stems of the texts) is saved before the purge: {saved:?}"
    );

    // Before: every word is on disk, so the scan below can find them.
    let mut everyone: Vec<&str> = VICTIM.to_vec();
    everyone.extend(BYSTANDER);
    everyone.extend([VICTIM_ID, BYSTANDER_ID]);
    let before = found(&d.data, &everyone);
    for word in &everyone {
        assert!(
            before.iter().any(|(f, _)| f == word),
            "{word} should be on disk before the purge: {before:?}"
        );
    }

    let purged = d.ok(&["forget", "--user", VICTIM_ID, "--purge"]);
    // 2 added, 1 episode of the remembered turn, 12 fillers (the one
    // forgotten earlier is already gone).
    assert_eq!(purged["memories_deleted"], 15, "{purged}");

    let mut victim_words: Vec<&str> = VICTIM.to_vec();
    victim_words.push(VICTIM_ID);
    let left = found(&d.data, &victim_words);
    assert!(left.is_empty(), "copies left after the purge: {left:?}");
    let kept = found(&d.data, &BYSTANDER);
    for word in BYSTANDER {
        assert!(
            kept.iter().any(|(f, _)| f == word),
            "the bystander's {word} must stay: {kept:?}"
        );
    }
    assert_only_known_files(&d.data);

    // And through the front door: nothing of the victim answers.
    let (code, _, err) = d.run(&["get", &victim_updated, "--include-deleted"]);
    assert_eq!(code, Some(3), "{err}");
    let (code, _, err) = d.run(&["history", &victim_updated]);
    assert_eq!(code, Some(3), "{err}");
    let hits = d.ok(&["search", "--user", VICTIM_ID, "tuba festival shed"]);
    assert_eq!(hits["results"], serde_json::json!([]), "{hits}");
    let hits = d.ok(&["search", "--user", BYSTANDER_ID, "tuba"]);
    assert!(
        hits["results"][0]["memory"]
            .as_str()
            .unwrap()
            .contains(BYSTANDER[0]),
        "{hits}"
    );
}
