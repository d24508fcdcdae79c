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
    let b = buffer(prefix, 600);
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
    let b = buffer(&p, 600);
    let turns = b.read("t", "shared").unwrap();
    assert_eq!(turns.len(), 2 * PER_PROCESS);
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
