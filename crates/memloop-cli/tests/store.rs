//! The real `memloop` binary on data directories that cannot be used as
//! they are (a file, a damaged database, a read-only mount), on a new
//! directory opened by several processes at once, and `forget --purge`
//! clearing the user's short-term sessions in the real Redis on this machine.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

use memloop::short_term::{Role, ShortTermStore, Turn};
use memloop::RedisBuffer;

const BIN: &str = env!("CARGO_BIN_EXE_memloop");
const REDIS: &str = "redis://127.0.0.1:6379";

fn memloop(dir: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.arg("--data-dir")
        .arg(dir)
        .env_remove("MEMLOOP_DATA_DIR")
        .env_remove("MEMLOOP_CONFIG")
        .env_remove("MEMLOOP_SHORT_TERM")
        .env_remove("RUST_BACKTRACE");
    cmd
}

fn run(dir: &Path, args: &[&str]) -> Output {
    memloop(dir).args(args).output().unwrap()
}

/// Exit code and the one stderr line of a failed run.
fn failure(out: &Output) -> (Option<i32>, String) {
    let stderr = String::from_utf8(out.stderr.clone()).unwrap();
    (out.status.code(), stderr.trim().to_string())
}

#[test]
fn a_file_as_data_dir_says_to_choose_another() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("memories.txt");
    std::fs::write(&file, "not a directory").unwrap();
    let (code, err) = failure(&run(&file, &["list", "--user", "alice"]));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&file.display().to_string()), "{err}");
    assert!(
        err.contains("is a file, not a directory; choose another --data-dir"),
        "{err}"
    );
    assert!(!err.contains("os error 17"), "{err}");
}

#[test]
fn a_corrupt_database_names_the_file_and_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memloop.db");
    std::fs::write(&db, "garbage, not SQLite ".repeat(300)).unwrap();
    let (code, err) = failure(&run(dir.path(), &["list", "--user", "alice"]));
    assert_eq!(code, Some(4), "{err}");
    assert!(err.contains(&db.display().to_string()), "{err}");
    assert!(err.contains("restore"), "{err}");
    assert!(err.contains("from a backup"), "{err}");
    assert!(err.contains("move it aside"), "{err}");
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

/// `memloop list` on `dir` made read-only for it: as root (chmod does not
/// stop root's writes) in a mount namespace of its own where `dir` is a
/// read-only bind mount, else with `dir` chmod 555. None when neither works.
fn run_read_only(dir: &Path, args: &[&str]) -> Option<Output> {
    let d = dir.display().to_string();
    if is_root() {
        let script = format!(
            "mount --bind '{d}' '{d}' && mount -o remount,bind,ro '{d}' '{d}' || exit 98; \
             touch '{d}/probe' 2>/dev/null && exit 99; exec \"$0\" --data-dir '{d}' \"$@\""
        );
        let out = Command::new("unshare")
            .args(["-m", "sh", "-c", &script, BIN])
            .args(args)
            .env_remove("MEMLOOP_DATA_DIR")
            .env_remove("MEMLOOP_CONFIG")
            .env_remove("MEMLOOP_SHORT_TERM")
            .output()
            .ok()?;
        assert_ne!(out.status.code(), Some(99), "the ro mount took a write");
        (out.status.code() != Some(98) && out.status.code().is_some()).then_some(out)
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
        let out = run(dir, args);
        set(0o755);
        Some(out)
    }
}

/// A read-only data directory, with a store in it or empty, is reported as
/// a permission problem naming the path and the remedy; before, it was
/// "store ... is damaged" with exit 4.
#[test]
fn a_read_only_data_dir_says_make_it_writable() {
    let root = tempfile::tempdir().unwrap();
    let existing = root.path().join("existing");
    assert!(
        run(&existing, &["add", "--user", "alice", "Alice likes tea"])
            .status
            .success()
    );
    let empty = root.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for dir in [&existing, &empty] {
        let Some(out) = run_read_only(dir, &["list", "--user", "alice", "--json"]) else {
            eprintln!(
                "SKIPPED a_read_only_data_dir_says_make_it_writable: cannot make a directory read-only here (as root this needs `unshare -m` and a bind mount)"
            );
            return;
        };
        let (code, err) = failure(&out);
        assert_ne!(code, Some(0), "{dir:?}");
        assert_ne!(code, Some(4), "not damage: {err}");
        assert!(!err.contains("damaged"), "{err}");
        assert!(err.contains(&dir.display().to_string()), "{err}");
        assert!(
            err.contains("make it writable or choose another --data-dir"),
            "{err}"
        );
        let body: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(body["error"]["code"], "permission_denied", "{body}");
    }
}

/// Four `memloop add` processes on a directory that does not exist yet, five
/// times: every add succeeds and is stored. Before, most trials failed
/// ("table meta already exists", busy, or "store is damaged: database is
/// locked").
#[test]
fn first_adds_of_several_processes_on_a_new_dir_all_succeed() {
    let root = tempfile::tempdir().unwrap();
    for trial in 0..5 {
        let dir = root.path().join(format!("new-{trial}"));
        let children: Vec<_> = (0..4)
            .map(|p| {
                memloop(&dir)
                    .args(["add", "--user", &format!("u{p}"), &format!("fact of {p}")])
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for c in children {
            let out = c.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "trial {trial}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        for p in 0..4 {
            let out = run(&dir, &["list", "--user", &format!("u{p}"), "--json"]);
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(v["results"].as_array().unwrap().len(), 1, "{v}");
        }
    }
}

/// `--ttl 9999999999d` is refused (it fits in an i64 but ends after year
/// 9999, and was stored as an expires_at that is not RFC 3339).
#[test]
fn a_ttl_beyond_a_century_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &[
            "add",
            "--user",
            "alice",
            "Alice is in Paris",
            "--ttl",
            "9999999999d",
        ],
    );
    let (code, err) = failure(&out);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--ttl") && err.contains("100 years"), "{err}");
    let ok = run(
        dir.path(),
        &[
            "add",
            "--user",
            "alice",
            "Alice is in Rome",
            "--ttl",
            "36525d",
            "--json",
        ],
    );
    assert!(ok.status.success());
    let v: serde_json::Value = serde_json::from_slice(&ok.stdout).unwrap();
    let id = v["results"][0]["id"].as_str().unwrap();
    let got = run(dir.path(), &["get", id, "--json"]);
    let rec: serde_json::Value = serde_json::from_slice(&got.stdout).unwrap();
    let expires = rec["expires_at"].as_str().unwrap();
    assert!(
        chrono::DateTime::parse_from_rfc3339(expires).is_ok(),
        "{expires}"
    );
}

/// `forget --purge --user U` with a Redis short-term buffer configured
/// clears U's sessions (turns and summaries) and no one else's.
#[test]
fn purge_clears_the_users_short_term_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let tag = format!("{}-{}", std::process::id(), memloop::now_millis());
    let (victim, other) = (format!("victim-{tag}"), format!("other-{tag}"));
    let (s1, s2, s3) = (
        format!("purge-a-{tag}"),
        format!("purge-b-{tag}"),
        format!("purge-c-{tag}"),
    );
    let tenant = memloop::Scope::DEFAULT_TENANT;
    let redis = RedisBuffer::connect(REDIS, 600).expect("Redis must run on 127.0.0.1:6379");
    redis
        .append_for(
            tenant,
            Some(&victim),
            &s1,
            &[Turn::new(Role::User, "victim turn one")],
        )
        .unwrap();
    redis
        .append_for(
            tenant,
            Some(&victim),
            &s2,
            &[Turn::new(Role::User, "victim turn two")],
        )
        .unwrap();
    redis
        .set_summary(
            tenant,
            &s1,
            &memloop::short_term::Summary {
                text: "victim summary".into(),
                covers: 1,
            },
        )
        .unwrap();
    redis
        .append_for(
            tenant,
            Some(&other),
            &s3,
            &[Turn::new(Role::User, "other turn")],
        )
        .unwrap();
    assert!(
        run(dir.path(), &["add", "--user", &victim, "Victim likes tea"])
            .status
            .success()
    );

    let out = memloop(dir.path())
        .env("MEMLOOP_SHORT_TERM", REDIS)
        .args(["forget", "--purge", "--user", &victim, "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["memories_deleted"], 1, "{v}");
    assert_eq!(v["short_term_sessions_cleared"], 2, "{v}");
    assert!(redis.read(tenant, &s1).unwrap().is_empty());
    assert!(redis.read(tenant, &s2).unwrap().is_empty());
    assert_eq!(redis.summary(tenant, &s1).unwrap(), None);
    assert_eq!(redis.read(tenant, &s3).unwrap().len(), 1);
    assert_eq!(redis.clear_user(tenant, &other).unwrap(), 1);
}
