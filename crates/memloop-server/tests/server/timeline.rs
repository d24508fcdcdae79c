//! Sessions on the time axis over REST: past conversations added with a
//! `timestamp` (Mem0's Unix seconds, or RFC 3339) are listed by
//! `GET /v1/sessions` where they were said, per tenant.

use serde_json::json;

use crate::*;

/// 2023-05-08T00:00:00Z in Unix seconds.
const MAY_8: i64 = 1_683_504_000;
const DAY: i64 = 86_400;

#[tokio::test]
async fn timestamped_adds_are_listed_on_the_time_axis() {
    let s = server();
    let app = &s.app;
    // Written newest first; infer false and true, seconds and RFC 3339.
    let writes = [
        json!({"messages": "We planned the Lisbon trip", "user_id": "ann", "run_id": "s3",
               "infer": false, "timestamp": MAY_8 + 20 * DAY}),
        json!({"messages": [{"role": "user", "content": "I started a pottery class."}],
               "user_id": "ann", "run_id": "s2", "timestamp": "2023-05-15T10:00:00Z"}),
        json!({"messages": "My cat is called Miso", "user_id": "ann", "run_id": "s1",
               "infer": false, "timestamp": MAY_8}),
    ];
    for body in writes {
        let a = call(app, "POST", "/v1/memories", Some(KEY_A), Some(body.clone())).await;
        assert!(
            !a.ok()["results"].as_array().unwrap().is_empty(),
            "{body}: {}",
            a.text
        );
    }
    // The other tenant's ann has a session of her own.
    call(
        app,
        "POST",
        "/v1/memories",
        Some(KEY_B),
        Some(json!({"messages": "bravo note", "user_id": "ann", "run_id": "b1", "infer": false})),
    )
    .await
    .ok();

    let a = call(app, "GET", "/v1/sessions?user_id=ann", Some(KEY_A), None).await;
    let sessions = a.ok()["sessions"].as_array().unwrap().clone();
    let got: Vec<(String, u64, String, String)> = sessions
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap().to_string(),
                s["ordinal"].as_u64().unwrap(),
                s["started_at"].as_str().unwrap().to_string(),
                s["ended_at"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let at = |t: &str| t.to_string();
    assert_eq!(
        got,
        vec![
            (
                at("s3"),
                3,
                at("2023-05-28T00:00:00.000Z"),
                at("2023-05-28T00:00:00.000Z")
            ),
            (
                at("s2"),
                2,
                at("2023-05-15T10:00:00.000Z"),
                at("2023-05-15T10:00:00.000Z")
            ),
            (
                at("s1"),
                1,
                at("2023-05-08T00:00:00.000Z"),
                at("2023-05-08T00:00:00.000Z")
            ),
        ],
        "{}",
        a.text
    );
    // The pipeline's memories (episode and facts) carry the time said.
    let listed = call(
        app,
        "GET",
        "/v1/memories?user_id=ann&run_id=s2",
        Some(KEY_A),
        None,
    )
    .await;
    let listed = listed.ok()["results"].as_array().unwrap().clone();
    assert_eq!(
        sessions[1]["memories"].as_u64().unwrap() as usize,
        listed.len()
    );
    for m in &listed {
        assert_eq!(m["valid_from"], "2023-05-15T10:00:00.000Z", "{m}");
    }

    let b = call(app, "GET", "/v1/sessions?user_id=ann", Some(KEY_B), None).await;
    let b = b.ok()["sessions"].as_array().unwrap().clone();
    assert_eq!(b.len(), 1);
    assert_eq!(
        (b[0]["id"].as_str(), b[0]["ordinal"].as_u64()),
        (Some("b1"), Some(1))
    );
    // One session named: that one, with its place among all.
    let one = call(
        app,
        "GET",
        "/v1/sessions?user_id=ann&run_id=s2",
        Some(KEY_A),
        None,
    )
    .await;
    assert_eq!(one.ok()["sessions"][0]["ordinal"], 2, "{}", one.text);
    assert_eq!(one.body["sessions"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn bad_timestamps_and_missing_scopes_are_refused() {
    let s = server();
    let app = &s.app;
    for ts in [json!("last tuesday"), json!(true), json!(1e20)] {
        let a = call(
            app,
            "POST",
            "/v1/memories",
            Some(KEY_A),
            Some(json!({"messages": "x y z", "user_id": "ann", "infer": false, "timestamp": ts})),
        )
        .await;
        a.assert_error(400, "invalid_input");
        assert!(a.text.contains("timestamp"), "{}", a.text);
    }
    let listed = call(app, "GET", "/v1/memories?user_id=ann", Some(KEY_A), None).await;
    assert!(listed.ok()["results"].as_array().unwrap().is_empty());
    call(app, "GET", "/v1/sessions", Some(KEY_A), None)
        .await
        .assert_error(400, "invalid_input");
    call(app, "GET", "/v1/sessions?user_id=ann", None, None)
        .await
        .assert_error(401, "unauthorized");
    let none = call(app, "GET", "/v1/sessions?user_id=nobody", Some(KEY_A), None).await;
    assert_eq!(none.ok()["sessions"], json!([]));
}
