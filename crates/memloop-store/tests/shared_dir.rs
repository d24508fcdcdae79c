//! Several processes on one data directory: writers wait for each other
//! instead of failing busy, a new directory is initialised once however
//! many processes open it together, a purge leaves no copy of the text in
//! any file while another process holds the store open, and the errors of
//! an unusable directory say what to do.
//!
//! The child processes are this test binary run again with `CHILD_ENV` set
//! (see `child`), so they are real processes with their own SQLite
//! connections, file locks and page caches.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use memloop_core::{EmbedderInfo, ErrorClass, NewMemory, Scope};
use memloop_store::prelude::*;
use memloop_store::{Durability, EmbeddedStore, SearchQuery, StoreOptions};

const CHILD_ENV: &str = "MEMLOOP_STORE_TEST_CHILD";
const DIMS: usize = 16;

fn info() -> EmbedderInfo {
    EmbedderInfo {
        model_id: "test-hash".into(),
        dimensions: DIMS,
    }
}

/// A deterministic unit vector per text (the store only needs vectors of
/// the right size; what they mean does not matter here).
fn vector(text: &str) -> Vec<f32> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut v = Vec::with_capacity(DIMS);
    for _ in 0..DIMS {
        for b in text.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        h = h.rotate_left(17);
        v.push(((h >> 40) as f32 / (1u64 << 24) as f32) - 0.5);
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    v.iter().map(|x| x / norm).collect()
}

fn open(dir: &Path, options: StoreOptions) -> memloop_core::Result<EmbeddedStore> {
    EmbeddedStore::open(dir, info(), options)
}

fn add(store: &EmbeddedStore, scope: &Scope, text: &str) -> memloop_core::Result<String> {
    let mut out = store.insert(scope, vec![(NewMemory::text(text), vector(text))])?;
    Ok(out.pop().map(|(r, _)| r.id).unwrap_or_default())
}

/// The child processes: what each does is in `CHILD_ENV` as
/// `mode|dir|arg`. Nothing happens when the variable is not set (the test
/// harness runs this as an ordinary, empty test).
#[test]
fn child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let mut parts = spec.splitn(3, '|');
    let (mode, dir, arg) = (
        parts.next().unwrap(),
        PathBuf::from(parts.next().unwrap()),
        parts.next().unwrap_or(""),
    );
    let mut out = std::io::stdout().lock();
    // The harness has printed "test child ... " without a newline: start
    // our lines on a line of their own.
    writeln!(out).unwrap();
    match mode {
        // Adds memories one per transaction for `millis`, printing each
        // acknowledged one and each error (and going on after an error).
        "writer" => {
            let (name, millis) = arg.split_once(':').unwrap();
            let until = std::time::Instant::now()
                + std::time::Duration::from_millis(millis.parse().unwrap());
            let store = match open(&dir, StoreOptions::default()) {
                Ok(s) => s,
                Err(e) => {
                    writeln!(out, "ERR open {} {e}", e.code()).unwrap();
                    return;
                }
            };
            let scope = Scope::user(format!("user-{name}"));
            for i in 0.. {
                if std::time::Instant::now() >= until {
                    break;
                }
                let text = format!("{name} wrote fact number {i}");
                match add(&store, &scope, &text) {
                    Ok(id) => writeln!(out, "ADD {id} {text}").unwrap(),
                    Err(e) => writeln!(out, "ERR {} {e}", e.code()).unwrap(),
                }
                out.flush().unwrap();
            }
        }
        // Opens a (new) directory and adds one memory.
        "opener" => {
            let text = format!("opener {arg} was here");
            let result = open(&dir, StoreOptions::default())
                .and_then(|s| add(&s, &Scope::user(format!("u{arg}")), &text));
            match result {
                Ok(id) => writeln!(out, "ADD {id} {text}").unwrap(),
                Err(e) => writeln!(out, "ERR {} {e}", e.code()).unwrap(),
            }
        }
        // Holds the store open (after reading the victim's partition, so its
        // connection and indexes have seen the text) until stdin closes.
        "holder" => {
            let store = open(&dir, StoreOptions::default().with_ann_threshold(10)).unwrap();
            let hits = store
                .search(
                    &SearchQuery::new(Scope::user(arg), "zebra"),
                    &vector("zebra"),
                )
                .unwrap();
            writeln!(out, "READY {}", hits.len()).unwrap();
            out.flush().unwrap();
            let mut rest = Vec::new();
            let _ = std::io::stdin().read_to_end(&mut rest);
        }
        // Opens a directory (made read-only around this process) and lists.
        "readonly" => {
            let result = open(&dir, StoreOptions::default()).and_then(|s| s.stats());
            match result {
                Ok(_) => writeln!(out, "OK").unwrap(),
                Err(e) => writeln!(out, "ERR {} {:?} {e}", e.code(), e.class()).unwrap(),
            }
        }
        other => panic!("unknown child mode {other}"),
    }
}

fn spawn(mode: &str, dir: &Path, arg: &str) -> Child {
    child_command(mode, dir, arg).spawn().unwrap()
}

fn child_command(mode: &str, dir: &Path, arg: &str) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "child", "--nocapture", "--test-threads", "1"])
        .env(CHILD_ENV, format!("{mode}|{}|{arg}", dir.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    cmd
}

/// The ADD and ERR lines a child printed (the harness's own lines ignored).
fn results(child: Child) -> (Vec<(String, String)>, Vec<String>) {
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut added = Vec::new();
    let mut errors = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("ADD ") {
            let (id, text) = rest.split_once(' ').unwrap();
            added.push((id.to_string(), text.to_string()));
        } else if let Some(rest) = line.strip_prefix("ERR ") {
            errors.push(rest.to_string());
        }
    }
    (added, errors)
}

/// Five processes add to one directory at once for 30 s, each commit fsynced: every
/// add waits its turn for the write lock (none answers busy), and every
/// acknowledged add is stored with its text. Before writes began with
/// BEGIN IMMEDIATE, an add whose read (the duplicate check) had started
/// before another process committed failed busy at once.
#[test]
fn concurrent_writers_wait_instead_of_failing_busy() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    const WRITERS: usize = 5;
    // The soak the hardening issue asks for: 30 s of five writers.
    const MILLIS: u64 = 30_000;
    let dir = tempfile::tempdir().unwrap();
    // Created first, so this test is about writers, not the first open.
    drop(open(dir.path(), StoreOptions::default()).unwrap());
    let children: Vec<Child> = (0..WRITERS)
        .map(|w| spawn("writer", dir.path(), &format!("w{w}:{MILLIS}")))
        .collect();
    let mut acked = Vec::new();
    let mut errors = Vec::new();
    for c in children {
        let (a, e) = results(c);
        acked.extend(a);
        errors.extend(e);
    }
    assert!(errors.is_empty(), "{} errors: {errors:?}", errors.len());
    // Every writer got its turn, many times over.
    for w in 0..WRITERS {
        let mine = acked
            .iter()
            .filter(|(_, t)| t.starts_with(&format!("w{w} ")))
            .count();
        assert!(
            mine >= 50,
            "writer {w} acknowledged only {mine} adds in {MILLIS} ms"
        );
    }
    let store = open(dir.path(), StoreOptions::default()).unwrap();
    for (id, text) in &acked {
        let rec = store.get(Scope::DEFAULT_TENANT, id).unwrap();
        assert_eq!(&rec.text, text);
    }
    assert_eq!(store.stats().unwrap().memories as usize, acked.len());
    println!(
        "{} adds by {WRITERS} processes in {MILLIS} ms, 0 errors",
        acked.len()
    );
}

/// Four processes open a directory that does not exist yet and add at once,
/// ten times over: each trial gives four stored memories and no error.
/// Before, schema creation raced ("table meta already exists"), and a lock
/// met while switching to WAL was reported as damage.
#[test]
fn first_open_by_several_processes_initialises_once() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let mut errors = Vec::new();
    for trial in 0..10 {
        let dir = root.path().join(format!("trial-{trial}"));
        let children: Vec<Child> = (0..4)
            .map(|p| spawn("opener", &dir, &p.to_string()))
            .collect();
        let mut acked = Vec::new();
        for c in children {
            let (a, e) = results(c);
            acked.extend(a);
            errors.extend(e.into_iter().map(|e| format!("trial {trial}: {e}")));
        }
        let store = open(&dir, StoreOptions::default()).unwrap();
        for (id, text) in &acked {
            assert_eq!(&store.get(Scope::DEFAULT_TENANT, id).unwrap().text, text);
        }
        assert_eq!(store.stats().unwrap().memories as usize, acked.len());
    }
    assert!(errors.is_empty(), "{} errors: {errors:?}", errors.len());
}

/// Same with threads, each with its own handle (its own connection and its
/// own file lock): the in-process path of a server opening per request.
#[test]
fn first_open_by_several_threads_initialises_once() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    for trial in 0..10 {
        let dir = root.path().join(format!("trial-{trial}"));
        let barrier = std::sync::Barrier::new(4);
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|t| {
                    let (dir, barrier) = (&dir, &barrier);
                    s.spawn(move || {
                        barrier.wait();
                        let store = open(dir, StoreOptions::default())?;
                        add(
                            &store,
                            &Scope::user(format!("t{t}")),
                            &format!("thread {t}"),
                        )
                    })
                })
                .collect();
            for h in handles {
                let r = h.join().unwrap();
                assert!(r.is_ok(), "trial {trial}: {:?}", r.err());
            }
        });
        assert_eq!(
            open(&dir, StoreOptions::default())
                .unwrap()
                .stats()
                .unwrap()
                .memories,
            4
        );
    }
}

/// Every file under `dir` (recursively) that contains one of `needles`.
fn files_containing(dir: &Path, needles: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            for n in needles {
                if bytes.windows(n.len()).any(|w| w == n.as_bytes()) {
                    found.push(format!("{} holds {n:?}", path.display()));
                }
            }
        }
    }
    found
}

/// Texts of the user to purge: in the memory text, its context, its
/// metadata, its history (an update) and a queued outbox write.
const SECRETS: [&str; 5] = [
    "zebra-secret-text-one",
    "zebra-secret-text-two-updated",
    "zebra-secret-context",
    "zebra-secret-metadata",
    "zebra-secret-outbox",
];

/// Fills a store with the victim's secrets, enough memories for a saved
/// HNSW index (ann_threshold 10), and a bystander's memories.
fn seed_victim(store: &EmbeddedStore, victim: &Scope, bystander: &Scope) {
    let mut m = NewMemory::text(format!("{} about zebras", SECRETS[0]));
    m.context = Some(format!("{} around it", SECRETS[2]));
    m.metadata = serde_json::json!({ "note": SECRETS[3] });
    let first = store
        .insert(victim, vec![(m.clone(), vector(&m.text))])
        .unwrap()
        .remove(0)
        .0;
    let new_text = format!("{} about zebras", SECRETS[1]);
    store
        .update(
            Scope::DEFAULT_TENANT,
            &first.id,
            memloop_store::MemoryUpdate {
                text: Some((new_text.clone(), vector(&new_text))),
                ..Default::default()
            },
        )
        .unwrap();
    for i in 0..20 {
        add(store, victim, &format!("zebra filler {i} of the victim")).unwrap();
        add(store, bystander, &format!("bystander keeps fact {i}")).unwrap();
    }
    store
        .outbox_push(
            victim,
            &serde_json::json!({ "turn": SECRETS[4] }),
            "the LLM timed out",
        )
        .unwrap();
    // Loads the partition (HNSW from 10 memories) and saves its index files.
    store
        .search(&SearchQuery::new(victim.clone(), "zebra"), &vector("zebra"))
        .unwrap();
    store.flush().unwrap();
}

/// A purge while another process holds the store open (and has read the
/// purged partition) leaves none of the purged texts in any file of the data
/// directory: not in memloop.db, not in memloop.db-wal or -shm, not in the
/// saved index files, not in the outbox. The bystander's memories stay.
/// Before, the text stayed in memloop.db-wal until the other process exited.
#[test]
fn purge_leaves_no_copy_while_another_process_holds_the_store() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions::default().with_ann_threshold(10);
    let store = open(dir.path(), options.clone()).unwrap();
    let victim = Scope::user("victim");
    let bystander = Scope::user("bystander");
    seed_victim(&store, &victim, &bystander);
    let before = files_containing(dir.path(), &SECRETS);
    assert!(
        before.len() >= SECRETS.len(),
        "the secrets should be on disk before the purge: {before:?}"
    );
    assert!(std::fs::read_dir(dir.path().join("index")).unwrap().count() > 0);

    let mut holder = child_command("holder", dir.path(), "victim")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(holder.stdout.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("READY") {
        line.clear();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "the holder ended before it was ready"
        );
    }

    let report = store.forget(&victim, true).unwrap();
    assert_eq!(report.memories_deleted, 21);
    let left = files_containing(dir.path(), &SECRETS);
    // The holder is still running while the files are scanned.
    assert!(holder.try_wait().unwrap().is_none());
    drop(holder.stdin.take());
    holder.wait().unwrap();
    assert!(left.is_empty(), "copies left after the purge: {left:?}");
    assert_eq!(store.outbox_len().unwrap(), 0);
    assert_eq!(
        std::fs::read_dir(dir.path().join("index")).unwrap().count(),
        0,
        "the victim's saved index files are removed"
    );
    let hits = store
        .search(
            &SearchQuery::new(bystander, "bystander"),
            &vector("bystander"),
        )
        .unwrap();
    assert!(!hits.is_empty());
}

/// A connection inside a read transaction pins the WAL: the purge deletes
/// the rows, waits for the reader (busy timeout) and then says, as a busy
/// error, that copies may remain and to run it again. Run again after the
/// reader is done, it leaves nothing.
#[test]
fn purge_behind_a_long_reader_says_so_and_finishes_when_run_again() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions::default()
        .with_ann_threshold(10)
        .with_busy_timeout_ms(200);
    let store = open(dir.path(), options).unwrap();
    let victim = Scope::user("victim");
    seed_victim(&store, &victim, &Scope::user("bystander"));

    let reader = rusqlite::Connection::open(dir.path().join("memloop.db")).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let n: i64 = reader
        .query_row("SELECT count(*) FROM memories", [], |r| r.get(0))
        .unwrap();
    assert!(n > 0);

    let err = store.forget(&victim, true).unwrap_err();
    assert_eq!(err.class(), ErrorClass::Transient, "{err}");
    let message = err.to_string();
    assert!(
        message.contains("memloop.db-wal") && message.contains("run the purge again"),
        "{message}"
    );
    reader.execute_batch("COMMIT").unwrap();
    drop(reader);

    let again = store.forget(&victim, true).unwrap();
    assert_eq!(again.memories_deleted, 0, "the rows went the first time");
    let left = files_containing(dir.path(), &SECRETS);
    assert!(
        left.is_empty(),
        "copies left after the second purge: {left:?}"
    );
}

/// A data directory that is a file: an invalid-input error naming it and
/// saying to choose another, not "File exists (os error 17)".
#[test]
fn a_file_as_data_dir_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("not-a-dir");
    std::fs::write(&file, "hello").unwrap();
    let err = open(&file, StoreOptions::default()).err().unwrap();
    assert_eq!(err.class(), ErrorClass::InvalidInput);
    let m = err.to_string();
    assert!(m.contains(&file.display().to_string()), "{m}");
    assert!(m.contains("is a file, not a directory"), "{m}");
    assert!(m.contains("choose another --data-dir"), "{m}");
    // A path under a file is refused the same way.
    let err = open(&file.join("sub"), StoreOptions::default())
        .err()
        .unwrap();
    assert_eq!(err.class(), ErrorClass::InvalidInput, "{err}");
    assert!(
        err.to_string().contains("choose another --data-dir"),
        "{err}"
    );
}

/// A damaged database names its file and says what to do.
#[test]
fn a_corrupt_database_names_the_file_and_the_remedy() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memloop.db");
    std::fs::write(&db, "this is not a SQLite database ".repeat(200)).unwrap();
    let err = open(dir.path(), StoreOptions::default()).err().unwrap();
    assert_eq!(err.class(), ErrorClass::Corruption, "{err}");
    assert_eq!(err.code(), "corruption");
    let m = err.to_string();
    assert!(m.contains(&db.display().to_string()), "{m}");
    assert!(m.contains("restore"), "{m}");
    assert!(m.contains("backup"), "{m}");
    assert!(m.contains("move it aside"), "{m}");
}

/// Runs the `readonly` child on `dir` made read-only for it. As root (how
/// the tests run here), chmod does not stop writes, so the child runs in its
/// own mount namespace in which `dir` is bind-mounted read-only; as another
/// user, `dir` is chmod 555 while the child runs. None when neither can be
/// done on this machine.
fn run_readonly_child(dir: &Path) -> Option<String> {
    let exe = std::env::current_exe().unwrap();
    let d = dir.display().to_string();
    let out = if is_root() {
        let script = format!(
            "mount --bind '{d}' '{d}' && mount -o remount,bind,ro '{d}' '{d}' || exit 98; \
             touch '{d}/probe' 2>/dev/null && exit 99; \
             exec \"$0\" --exact child --nocapture --test-threads 1"
        );
        let out = Command::new("unshare")
            .args(["-m", "sh", "-c", &script])
            .arg(&exe)
            .env(CHILD_ENV, format!("readonly|{d}|"))
            .stderr(Stdio::null())
            .output()
            .ok()?;
        assert_ne!(
            out.status.code(),
            Some(99),
            "the read-only bind mount of {d} still accepted a write"
        );
        out
    } else {
        use std::os::unix::fs::PermissionsExt;
        let set = |mode| {
            for p in [dir.to_path_buf(), dir.join("index")] {
                if p.exists() {
                    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
                }
            }
        };
        set(0o555);
        let out = child_command("readonly", dir, "").output();
        set(0o755);
        out.ok()?
    };
    if !out.status.success() {
        return None;
    }
    String::from_utf8(out.stdout)
        .ok()?
        .lines()
        .find(|l| l.starts_with("OK") || l.starts_with("ERR"))
        .map(str::to_string)
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .is_some_and(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

/// A read-only data directory (an existing store, and an empty directory)
/// is a permission problem naming the path and the remedy, not damage.
/// Before, it was reported as "store ... is damaged" (exit 4).
#[test]
fn a_read_only_data_dir_is_a_permission_error_not_damage() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let existing = root.path().join("existing");
    {
        let store = open(&existing, StoreOptions::default()).unwrap();
        add(&store, &Scope::user("u"), "written while writable").unwrap();
    }
    let empty = root.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let mut checked = HashMap::new();
    for dir in [&existing, &empty] {
        let Some(line) = run_readonly_child(dir) else {
            eprintln!(
                "SKIPPED a_read_only_data_dir_is_a_permission_error_not_damage: cannot make a directory read-only here (as root this needs `unshare -m` and a bind mount)"
            );
            return;
        };
        assert!(line.starts_with("ERR permission_denied"), "{dir:?}: {line}");
        assert!(!line.contains("damaged"), "{line}");
        assert!(line.contains(&dir.display().to_string()), "{line}");
        assert!(
            line.contains("make it writable or choose another --data-dir"),
            "{line}"
        );
        checked.insert(dir.clone(), line);
    }
    assert_eq!(checked.len(), 2);
}

/// The busy timeout is an option of the store (memloop.toml `[store]
/// busy_timeout_ms`), a few seconds by default, and durability settings do
/// not change it.
#[test]
fn busy_timeout_defaults_to_a_few_seconds() {
    let o = StoreOptions::default().with_durability(Durability::Process);
    assert_eq!(o.busy_timeout_ms, memloop_store::DEFAULT_BUSY_TIMEOUT_MS);
    assert!((2_000..=30_000).contains(&o.busy_timeout_ms));
}

/// Opening an existing store reads; it never waits for the write lock.
/// Setting `auto_vacuum` opens a write transaction, so when every open set
/// it, a process opening the store behind busy writers could starve for
/// the whole busy timeout (and hold `memloop.lock` meanwhile, failing the
/// other openers too): what `concurrent_writers_wait_instead_of_failing_busy`
/// saw under load.
#[test]
fn opening_an_existing_store_does_not_wait_for_writers() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), StoreOptions::default()).unwrap();
    add(&store, &Scope::user("u"), "kept before the writer came").unwrap();
    drop(store);
    let writer = rusqlite::Connection::open(dir.path().join("memloop.db")).unwrap();
    writer.execute_batch("BEGIN IMMEDIATE").unwrap();
    let started = std::time::Instant::now();
    let store = open(
        dir.path(),
        StoreOptions::default().with_busy_timeout_ms(300),
    )
    .expect("an open must not need the write lock another connection holds");
    assert!(started.elapsed() < std::time::Duration::from_millis(300));
    let hits = store
        .search(
            &SearchQuery::new(Scope::user("u"), "kept"),
            &vector("kept before the writer came"),
        )
        .unwrap();
    assert_eq!(hits.len(), 1);
    writer.execute_batch("COMMIT").unwrap();
}

/// A write waiting behind writers that commit back to back (a
/// millisecond between their transactions) gets its turn in those
/// moments. SQLite's busy handler sleeps
/// up to 100 ms between tries and missed nearly all of them (the writer
/// starved and answered busy, as five processes writing at once once did
/// in CI); the store now tries again every 0.1 to 0.6 ms.
#[test]
fn a_write_gets_in_between_back_to_back_commits() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;
    /// The hogs' own busy handler: try again every 300 µs, for ever.
    fn eager(_: i32) -> bool {
        std::thread::sleep(Duration::from_micros(300));
        true
    }
    let dir = tempfile::tempdir().unwrap();
    drop(open(dir.path(), StoreOptions::default()).unwrap());
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let hogs: Vec<_> = (0..2)
        .map(|_| {
            let (path, stop) = (dir.path().join("memloop.db"), stop.clone());
            std::thread::spawn(move || {
                let c = rusqlite::Connection::open(path).unwrap();
                c.busy_handler(Some(eager)).unwrap();
                while !stop.load(Ordering::Relaxed) {
                    c.execute_batch("BEGIN IMMEDIATE").unwrap();
                    std::thread::sleep(Duration::from_millis(5));
                    c.execute_batch("COMMIT").unwrap();
                    // Its next batch's preparation, as an import's: a
                    // hog that began again within microseconds left no
                    // moment to find (the test failed 1 run in 8 so).
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(50));
    let store = open(
        dir.path(),
        StoreOptions::default().with_busy_timeout_ms(2_000),
    )
    .unwrap();
    let mut failures = Vec::new();
    for i in 0..3 {
        if let Err(e) = add(
            &store,
            &Scope::user("u"),
            &format!("write {i} between commits"),
        ) {
            failures.push(e.to_string());
        }
    }
    stop.store(true, Ordering::Relaxed);
    for h in hogs {
        h.join().unwrap();
    }
    assert!(failures.is_empty(), "{failures:?}");
}
