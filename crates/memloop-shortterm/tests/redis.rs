//! The Redis backend against the real Redis on this machine
//! (MEMLOOP_TEST_REDIS, default redis://127.0.0.1:6379).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Stdio};

use memloop_core::short_term::{Role, ShortTermStore, Turn};
use memloop_shortterm::RedisBuffer;

fn url() -> String {
    std::env::var("MEMLOOP_TEST_REDIS").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

fn buffer(prefix: &str, ttl: u64) -> RedisBuffer {
    RedisBuffer::connect(&url(), ttl)
        .expect("Redis must run on 127.0.0.1:6379")
        .with_prefix(prefix)
}

fn fresh_prefix() -> String {
    format!("memloop-test:{}", uuid::Uuid::now_v7())
}

#[test]
fn append_read_clear_and_isolation() {
    let p = fresh_prefix();
    let b = buffer(&p, 600);
    assert!(b.read("t", "s").unwrap().is_empty());
    assert_eq!(
        b.append(
            "t",
            "s",
            &[
                Turn::new(Role::User, "I live in Paris"),
                Turn::new(Role::Assistant, "Noted")
            ]
        )
        .unwrap(),
        2
    );
    b.append("other", "s", &[Turn::new(Role::User, "another tenant")])
        .unwrap();
    // A second handle (another agent instance) sees the same session.
    let again = buffer(&p, 600);
    let got = again.read("t", "s").unwrap();
    assert_eq!(
        got.iter().map(|t| t.content.as_str()).collect::<Vec<_>>(),
        vec!["I live in Paris", "Noted"]
    );
    assert_eq!(got[0].role, "user");
    // A bad turn anywhere in the batch appends nothing.
    assert!(b
        .append(
            "t",
            "s",
            &[Turn::new(Role::User, "fine"), Turn::new(Role::User, "")]
        )
        .is_err());
    assert_eq!(b.read("t", "s").unwrap().len(), 2);
    b.clear("t", "s").unwrap();
    assert!(again.read("t", "s").unwrap().is_empty());
    assert_eq!(b.read("other", "s").unwrap().len(), 1);
    b.clear("other", "s").unwrap();
}

#[test]
fn idle_sessions_expire() {
    let p = fresh_prefix();
    let b = buffer(&p, 1);
    b.append("t", "s", &[Turn::new(Role::User, "short-lived")])
        .unwrap();
    let client = redis::Client::open(url()).unwrap();
    let mut c = client.get_connection().unwrap();
    let ttl: i64 = redis::cmd("TTL")
        .arg(format!("{p}:t:s"))
        .query(&mut c)
        .unwrap();
    assert!((0..=1).contains(&ttl), "ttl {ttl}");
    std::thread::sleep(std::time::Duration::from_millis(2100));
    assert!(b.read("t", "s").unwrap().is_empty());
}

#[test]
fn bad_url_and_unreachable_server_are_clear_errors() {
    let err = RedisBuffer::connect("not a url", 0).err().unwrap();
    assert!(matches!(err, memloop_core::Error::InvalidInput(_)), "{err}");
    let err = RedisBuffer::connect("redis://127.0.0.1:1", 0)
        .err()
        .unwrap();
    assert_eq!(err.class(), memloop_core::ErrorClass::Transient, "{err}");
}

const CHILD_ENV: &str = "MEMLOOP_REDIS_APPENDER";
const PER_PROCESS: usize = 150;

/// Runs only when re-executed by the test below: appends numbered turns one by one.
#[test]
fn appender_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (prefix, name) = spec.split_once('|').unwrap();
    let b = buffer(prefix, 600).with_max_turns_stored(2 * PER_PROCESS);
    for i in 0..PER_PROCESS {
        b.append(
            "t",
            "shared",
            &[Turn::new(Role::User, format!("{name} {i}"))],
        )
        .unwrap();
    }
}

#[test]
fn two_processes_appending_at_once_lose_nothing() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let p = fresh_prefix();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = ["a", "b"]
        .iter()
        .map(|name| {
            Command::new(&exe)
                .args(["--exact", "appender_child", "--test-threads", "1"])
                .env(CHILD_ENV, format!("{p}|{name}"))
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let b = buffer(&p, 600).with_max_turns_stored(2 * PER_PROCESS);
    let turns = b.read("t", "shared").unwrap();
    assert_eq!(turns.len(), 2 * PER_PROCESS);
    assert_eq!(b.read_window("t", "shared").unwrap().first, 0);
    for name in ["a", "b"] {
        let mine: Vec<usize> = turns
            .iter()
            .filter_map(|t| {
                t.content
                    .strip_prefix(&format!("{name} "))
                    .map(|n| n.parse().unwrap())
            })
            .collect();
        assert_eq!(
            mine,
            (0..PER_PROCESS).collect::<Vec<_>>(),
            "{name}'s turns in order, none lost"
        );
    }
    b.clear("t", "shared").unwrap();
}

#[test]
fn summary_is_shared_never_rolls_back_and_expires_with_the_session() {
    use memloop_core::short_term::Summary;
    let p = fresh_prefix();
    let b = buffer(&p, 600);
    assert_eq!(b.summary("t", "s").unwrap(), None);
    let newer = Summary {
        text: "Alice introduced herself".into(),
        covers: 4,
    };
    b.set_summary("t", "s", &newer).unwrap();
    // A slower writer folding fewer turns does not overwrite it.
    let older = Summary {
        text: "stale".into(),
        covers: 2,
    };
    buffer(&p, 600).set_summary("t", "s", &older).unwrap();
    assert_eq!(buffer(&p, 600).summary("t", "s").unwrap(), Some(newer));
    assert_eq!(b.summary("other", "s").unwrap(), None);
    b.clear("t", "s").unwrap();
    assert_eq!(b.summary("t", "s").unwrap(), None);
}

/// A purge of one user deletes every session appended to for that user (turns
/// and summaries, whichever handle appended them) and nothing of anyone else.
#[test]
fn clear_user_forgets_the_users_sessions_and_only_those() {
    use memloop_core::short_term::Summary;
    let p = fresh_prefix();
    let b = buffer(&p, 600);
    let other_handle = buffer(&p, 600);
    b.append_for(
        "t",
        Some("alice"),
        "a1",
        &[Turn::new(Role::User, "alice secret one")],
    )
    .unwrap();
    other_handle
        .append_for(
            "t",
            Some("alice"),
            "a:2",
            &[Turn::new(Role::User, "alice secret two")],
        )
        .unwrap();
    b.set_summary(
        "t",
        "a1",
        &Summary {
            text: "alice summary".into(),
            covers: 1,
        },
    )
    .unwrap();
    b.append_for(
        "t",
        Some("bob"),
        "b1",
        &[Turn::new(Role::User, "bob stays")],
    )
    .unwrap();
    // Same user id in another tenant, and a user id that would collide with
    // a naive "tenant:user" key.
    b.append_for(
        "t2",
        Some("alice"),
        "a1",
        &[Turn::new(Role::User, "other tenant")],
    )
    .unwrap();
    b.append_for(
        "t",
        Some("alice:x"),
        "ax",
        &[Turn::new(Role::User, "colon user")],
    )
    .unwrap();
    // The owner set expires with the sessions.
    let client = redis::Client::open(url()).unwrap();
    let mut c = client.get_connection().unwrap();
    let owner = format!("{p}#user:[\"t\",\"alice\"]");
    let ttl: i64 = redis::cmd("TTL").arg(&owner).query(&mut c).unwrap();
    assert!((1..=600).contains(&ttl), "owner set ttl {ttl}");

    assert_eq!(b.clear_user("t", "alice").unwrap(), 2);
    assert!(b.read("t", "a1").unwrap().is_empty());
    assert!(b.read("t", "a:2").unwrap().is_empty());
    assert_eq!(b.summary("t", "a1").unwrap(), None);
    assert_eq!(b.read("t", "b1").unwrap().len(), 1);
    assert_eq!(b.read("t2", "a1").unwrap().len(), 1);
    assert_eq!(b.read("t", "ax").unwrap().len(), 1);
    // No key of the prefix holds alice's words any more.
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{p}*"))
        .query(&mut c)
        .unwrap();
    for k in &keys {
        let kind: String = redis::cmd("TYPE").arg(k).query(&mut c).unwrap();
        let dump: Vec<String> = match kind.as_str() {
            "list" => redis::cmd("LRANGE")
                .arg(k)
                .arg(0)
                .arg(-1)
                .query(&mut c)
                .unwrap(),
            "set" => redis::cmd("SMEMBERS").arg(k).query(&mut c).unwrap(),
            _ => vec![redis::cmd("GET").arg(k).query(&mut c).unwrap()],
        };
        assert!(
            !dump
                .iter()
                .any(|v| v.contains("alice secret") || v.contains("alice summary")),
            "{k} still holds alice's turns: {dump:?}"
        );
    }
    assert_eq!(b.clear_user("t", "alice").unwrap(), 0);
    for (t, s) in [("t", "b1"), ("t2", "a1"), ("t", "ax")] {
        b.clear(t, s).unwrap();
    }
    let _: i64 = redis::cmd("DEL")
        .arg(format!("{p}#user:[\"t\",\"bob\"]"))
        .arg(format!("{p}#user:[\"t2\",\"alice\"]"))
        .arg(format!("{p}#user:[\"t\",\"alice:x\"]"))
        .query(&mut c)
        .unwrap();
}

/// 5,000 appends of 1 KB leave the newest `max_turns_stored`, and the read
/// says how many went before them; the counter expires with the list and
/// a clear deletes every key of the session.
#[test]
fn a_long_session_is_trimmed_in_the_append() {
    let p = fresh_prefix();
    let b = buffer(&p, 600).with_max_turns_stored(200);
    let text = "z".repeat(1_000);
    for i in 0..5_000 {
        let held = b
            .append("t", "long", &[Turn::new(Role::User, format!("{i} {text}"))])
            .unwrap();
        assert_eq!(held, (i + 1).min(200));
    }
    let w = b.read_window("t", "long").unwrap();
    assert_eq!((w.first, w.turns.len()), (4_800, 200));
    assert!(w.turns[0].content.starts_with("4800 "));
    assert!(w.turns[199].content.starts_with("4999 "));
    assert_eq!(b.read("t", "long").unwrap().len(), 200);
    assert_eq!(b.stats().unwrap().trimmed_turns, Some(4_800));
    // Another handle (another process) reads the same window.
    assert_eq!(
        buffer(&p, 600).read_window("t", "long").unwrap().first,
        4_800
    );

    let client = redis::Client::open(url()).unwrap();
    let mut c = client.get_connection().unwrap();
    let key = format!("{p}:t:long");
    let ttl: i64 = redis::cmd("TTL")
        .arg(format!("{key}:total"))
        .query(&mut c)
        .unwrap();
    assert!(
        (1..=600).contains(&ttl),
        "the counter expires with the list: {ttl}"
    );
    let bytes: i64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(&key)
        .query(&mut c)
        .unwrap();
    eprintln!("Redis memory for one session after 5,000 appends of 1 KB: {bytes} bytes");
    assert!(bytes < 400_000, "{bytes}");

    // Recorded exchanges trim alike, and their ids are bounded.
    for i in 0..300 {
        assert!(b
            .append_exchange(
                "t",
                Some("u"),
                "long",
                &format!("x{i}"),
                &[Turn::new(Role::User, format!("x{i}"))]
            )
            .unwrap());
    }
    assert!(!b
        .append_exchange(
            "t",
            Some("u"),
            "long",
            "x299",
            &[Turn::new(Role::User, "again")]
        )
        .unwrap());
    let w = b.read_window("t", "long").unwrap();
    assert_eq!((w.first, w.turns.len()), (5_100, 200));
    assert_eq!(w.turns[199].content, "x299");
    let ids: i64 = redis::cmd("SCARD")
        .arg(format!("{key}:exchanges"))
        .query(&mut c)
        .unwrap();
    assert_eq!(ids, 200);
    assert_eq!(b.stats().unwrap().trimmed_turns, Some(5_100));

    b.clear("t", "long").unwrap();
    let left: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{key}*"))
        .query(&mut c)
        .unwrap();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(b.read_window("t", "long").unwrap(), Default::default());
    b.clear_user("t", "u").unwrap();
}
