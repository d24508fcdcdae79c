#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Several servers, one database: two real `memloop serve` processes, each
//! with its own empty data directory, on one fresh PostgreSQL database. A
//! write through one is read through the other on the next request, two
//! supersessions of one fact racing through both leave one current version,
//! and two tenants see nothing of each other through either server.
//! Needs the test server (scripts/pg.sh); starts it when it can.

use std::sync::{Arc, Barrier};

use serde_json::{json, Value};

mod pg_common;
use pg_common::{call, exchange, server_url, spawn, wait_ready, Database, ALPHA, BRAVO};

fn texts(v: &Value) -> Vec<String> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["memory"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn two_servers_on_one_database_share_one_truth() {
    let Some(admin) = server_url() else {
        return;
    };
    // Dropped last: the servers go first, then their database.
    let db = Database::create(&admin);
    let (a, b) = (spawn(&db.url), spawn(&db.url));
    // Started together: the schema is created once under an advisory lock.
    wait_ready(&a);
    wait_ready(&b);
    let run = std::process::id();

    // (1) Written through A, found through B on the very next request.
    let secret = format!("The spare key {run} hides under the blue teapot");
    let added = call(
        &a,
        ALPHA,
        "POST",
        "/v1/memories",
        json!({"messages": secret, "user_id": "ann", "infer": false}),
    );
    let id = added["results"][0]["id"].as_str().unwrap().to_string();
    let found = call(
        &b,
        ALPHA,
        "POST",
        "/v1/memories/search",
        json!({"query": "where is the spare key", "user_id": "ann"}),
    );
    assert_eq!(
        found["results"][0]["id"], id,
        "B's first search finds A's write: {found}"
    );
    let one = call(&b, ALPHA, "GET", &format!("/v1/memories/{id}"), Value::Null);
    assert_eq!(one["memory"], secret.as_str());

    // (2) One fact superseded through both servers at once, several rounds
    // so the race has chances to interleave both ways.
    for round in 0..3 {
        let user = format!("mover-{round}");
        let paris = call(
            &a,
            ALPHA,
            "POST",
            "/v1/memories",
            json!({"messages": "I live in Paris", "user_id": user, "infer": true}),
        );
        let paris_id = paris["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["kind"] == "fact")
            .unwrap_or_else(|| panic!("no fact distilled from Paris: {paris}"))["id"]
            .as_str()
            .unwrap()
            .to_string();
        let barrier = Arc::new(Barrier::new(2));
        let race = [(&a, "I moved to Berlin"), (&b, "I moved to Madrid")].map(|(s, text)| {
            let (addr, barrier, user) = (s.addr.clone(), barrier.clone(), user.clone());
            std::thread::spawn(move || {
                let body = json!({"messages": text, "user_id": user, "infer": true}).to_string();
                barrier.wait();
                exchange(&addr, "POST", "/v1/memories", ALPHA, &body)
            })
        });
        // Every racing add supersedes something in its own request: Paris
        // (the winner) or the winner's fact (the loser, deciding again
        // when it lost the lock); none waits in the outbox.
        let mut replaced = Vec::new();
        let mut last = None;
        for h in race {
            let (status, body) = h.join().unwrap().expect("a racing add got no answer");
            assert_eq!(status, 200, "round {round}: {body}");
            let v: Value = serde_json::from_str(&body).unwrap();
            let updates: Vec<&Value> = v["results"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["event"] == "UPDATE")
                .collect();
            assert_eq!(updates.len(), 1, "round {round}: one UPDATE each: {body}");
            let previous = updates[0]["previous_memory"].as_str().unwrap().to_string();
            if previous != "User lives in Paris" {
                last = updates[0]["memory"].as_str().map(str::to_string);
            }
            replaced.push(previous);
        }
        assert_eq!(
            replaced
                .iter()
                .filter(|p| *p == "User lives in Paris")
                .count(),
            1,
            "round {round}: one of the two supersedes Paris, the other the winner: {replaced:?}"
        );
        let last = last.expect("the loser superseded the winner");
        for server in [&a, &b] {
            let current = call(
                server,
                ALPHA,
                "GET",
                &format!("/v1/memories?user_id={user}&kind=fact"),
                Value::Null,
            );
            let lives: Vec<&Value> = current["results"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["metadata"]["fact"]["attribute"] == "lives_in")
                .collect();
            assert_eq!(
                lives.len(),
                1,
                "round {round}: one current lives_in: {current}"
            );
            assert_eq!(
                lives[0]["memory"],
                last.as_str(),
                "round {round}: {current}"
            );
        }
        let history = call(
            &b,
            ALPHA,
            "GET",
            &format!("/v1/memories/{paris_id}/history"),
            Value::Null,
        );
        let events: Vec<&str> = history["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["event"].as_str().unwrap())
            .collect();
        assert_eq!(
            events.iter().filter(|e| **e != "ADD").count(),
            1,
            "round {round}: Paris superseded once: {history}"
        );
        let old = call(
            &a,
            ALPHA,
            "GET",
            &format!("/v1/memories/{paris_id}?include_deleted=true"),
            Value::Null,
        );
        assert!(
            !old["valid_until"].is_null(),
            "Paris is no longer current: {old}"
        );
    }

    // (3) Tenants: the same user id under two keys, through both servers.
    let bravo_text = format!("Bravo's spare key {run} is in the red kettle");
    call(
        &b,
        BRAVO,
        "POST",
        "/v1/memories",
        json!({"messages": bravo_text, "user_id": "ann", "infer": false}),
    );
    for server in [&a, &b] {
        let [alpha_sees, bravo_sees] = [ALPHA, BRAVO].map(|key| {
            let hits = call(
                server,
                key,
                "POST",
                "/v1/memories/search",
                json!({"query": "spare key teapot kettle", "user_id": "ann"}),
            );
            let listed = call(server, key, "GET", "/v1/memories?user_id=ann", Value::Null);
            let mut seen = texts(&hits);
            seen.extend(texts(&listed));
            seen
        });
        assert!(alpha_sees.contains(&secret) && bravo_sees.contains(&bravo_text));
        assert!(
            !alpha_sees.contains(&bravo_text),
            "alpha sees bravo's memory on {}",
            server.addr
        );
        assert!(
            !bravo_sees.contains(&secret),
            "bravo sees alpha's memory on {}",
            server.addr
        );
        let (status, body) = exchange(
            &server.addr,
            "GET",
            &format!("/v1/memories/{id}"),
            BRAVO,
            "",
        )
        .unwrap();
        assert_eq!(status, 404, "alpha's id through bravo's key: {body}");
        let entities = call(server, BRAVO, "GET", "/v1/entities", Value::Null);
        assert!(
            !entities.to_string().contains("mover-"),
            "bravo sees alpha's users: {entities}"
        );
    }
}
