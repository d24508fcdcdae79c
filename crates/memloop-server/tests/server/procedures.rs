//! `POST /v1/procedures` and `/v1/procedures/search` over a real socket,
//! and tool calls of a recorded exchange becoming a procedure.

use serde_json::json;

use crate::socket::{bearer, http, start_keyed};
use crate::{KEY_A, KEY_B};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_merge_and_are_found_with_pitfalls_in_the_callers_tenant() {
    let run = start_keyed().await;
    let addr = run.addr;
    let failure = json!({"user_id": "ops", "task": "deploy the web app", "outcome": "failure",
        "steps": [{"tool": "shell", "args": "npm run deploy", "ok": false, "error": "EACCES"}],
        "execution_id": "ci-1"});
    let a = http(
        addr,
        "POST",
        "/v1/procedures",
        bearer(KEY_A),
        Some(failure.clone()),
    )
    .await
    .unwrap();
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["results"][0]["event"], "ADD");
    let success = json!({"user_id": "ops", "task": "Deploy the web app.", "outcome": "success",
        "steps": [{"tool": "shell", "args": "sudo -u deploy npm run deploy", "result": "deployed"}],
        "execution_id": "ci-2", "at": "2026-11-30T09:15:00Z"});
    let b = http(addr, "POST", "/v1/procedures", bearer(KEY_A), Some(success))
        .await
        .unwrap();
    assert_eq!(b.body["results"][0]["event"], "UPDATE", "{}", b.body);
    assert_eq!(
        b.body["results"][0]["previous_id"],
        a.body["results"][0]["id"]
    );
    // A retried request counts nothing.
    let again = http(addr, "POST", "/v1/procedures", bearer(KEY_A), Some(failure))
        .await
        .unwrap();
    assert_eq!(again.body["results"][0]["event"], "NOOP", "{}", again.body);

    let q = json!({"user_id": "ops", "query": "deploy the web app", "top_k": 3});
    let found = http(
        addr,
        "POST",
        "/v1/procedures/search",
        bearer(KEY_A),
        Some(q.clone()),
    )
    .await
    .unwrap();
    assert_eq!(found.status, 200, "{}", found.body);
    let top = &found.body["results"][0];
    assert_eq!(top["procedure"]["successes"], 1);
    assert_eq!(top["procedure"]["failures"], 1);
    assert_eq!(
        top["pitfalls"][0],
        "`shell npm run deploy` failed with EACCES; `shell sudo -u deploy npm run deploy` worked"
    );
    let s = &top["scores"];
    let product = s["similarity"].as_f64().unwrap()
        * s["success_rate"].as_f64().unwrap()
        * s["recency"].as_f64().unwrap();
    assert!(
        (product - top["score"].as_f64().unwrap()).abs() < 1e-4,
        "{top}"
    );
    // Another tenant's key finds nothing of it.
    let other = http(
        addr,
        "POST",
        "/v1/procedures/search",
        bearer(KEY_B),
        Some(q),
    )
    .await
    .unwrap();
    assert_eq!(other.body["results"], json!([]), "{}", other.body);

    // Bad runs are refused naming the field; nothing is stored.
    for (body, says) in [
        (
            json!({"user_id": "ops", "task": "t", "outcome": "success", "steps": []}),
            "steps",
        ),
        (
            json!({"user_id": "ops", "task": "t", "outcome": "done", "steps": [{"tool": "x"}]}),
            "outcome",
        ),
        (
            json!({"task": "t", "outcome": "success", "steps": [{"tool": "x"}]}),
            "user_id",
        ),
        (
            json!({"user_id": "ops", "task": "t", "outcome": "success", "steps": [{"tool": "x", "ok": "yes"}]}),
            "ok",
        ),
    ] {
        let r = http(
            addr,
            "POST",
            "/v1/procedures",
            bearer(KEY_A),
            Some(body.clone()),
        )
        .await
        .unwrap();
        assert_eq!(r.status, 400, "{body}: {}", r.body);
        let msg = r.body["error"]["message"].as_str().unwrap();
        assert!(msg.contains(says), "{body}: {msg}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_exchange_with_openai_tool_calls_is_a_procedure() {
    let run = start_keyed().await;
    let body = json!({"user_id": "dev", "run_id": "s1", "turn_id": "t1", "messages": [
        {"role": "user", "content": "rotate the staging TLS certificate"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "shell", "arguments": "{\"command\":\"certbot renew\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Congratulations, all renewals succeeded"},
        {"role": "assistant", "content": "Renewed."}
    ]});
    let r = http(
        run.addr,
        "POST",
        "/v1/turn/record",
        bearer(KEY_A),
        Some(body),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let writes = r.body["writes"].as_array().unwrap();
    let p = writes.iter().find(|w| w["kind"] == "procedure").unwrap();
    assert_eq!(p["event"], "ADD", "{}", r.body);
    assert!(
        p["memory"]
            .as_str()
            .unwrap()
            .contains("shell certbot renew"),
        "{p}"
    );
    let q = json!({"user_id": "dev", "query": "renew the TLS certificate"});
    let found = http(
        run.addr,
        "POST",
        "/v1/procedures/search",
        bearer(KEY_A),
        Some(q),
    )
    .await
    .unwrap();
    assert_eq!(found.body["results"][0]["id"], p["id"], "{}", found.body);
}
