//! Deletes that delete: after `DELETE /v1/memories/{id}` a GET answers 404
//! as Mem0 does, saying it was deleted; `?include_deleted=true` reads it
//! with `valid_until`; a superseded memory answers 404 naming its
//! successor; history stays readable.

use serde_json::json;

use crate::{add_raw, call, server, KEY_A, KEY_B};

#[tokio::test]
async fn a_deleted_memory_answers_404_unless_include_deleted() {
    let s = server();
    let app = &s.app;
    let id = add_raw(app, KEY_A, "alice", &["Alice keeps bees on the roof"]).await[0].clone();
    let uri = format!("/v1/memories/{id}");
    let g = call(app, "GET", &uri, Some(KEY_A), None).await;
    assert_eq!(g.ok()["status"], "current", "{}", g.text);
    assert!(g.body["superseded_by"].is_null(), "{}", g.text);

    call(app, "DELETE", &uri, Some(KEY_A), None).await.ok();

    for query in ["", "?include_deleted=false"] {
        let g = call(app, "GET", &format!("{uri}{query}"), Some(KEY_A), None).await;
        g.assert_error(404, "not_found");
        let message = g.body["error"]["message"].as_str().unwrap();
        assert!(message.contains("was deleted"), "{message}");
        assert!(message.contains("include_deleted=true"), "{message}");
    }
    let g = call(
        app,
        "GET",
        &format!("{uri}?include_deleted=true"),
        Some(KEY_A),
        None,
    )
    .await;
    let v = g.ok();
    assert_eq!(v["memory"], "Alice keeps bees on the roof");
    assert!(v["valid_until"].is_string(), "{v}");
    assert_eq!(v["status"], "deleted", "{v}");
    assert!(v["superseded_by"].is_null(), "{v}");

    // History stays readable.
    let h = call(app, "GET", &format!("{uri}/history"), Some(KEY_A), None).await;
    let events: Vec<&str> = h.ok()["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["ADD", "DELETE"]);

    // Updating or deleting it again is refused as before (400), and
    // another tenant cannot read it even with include_deleted.
    call(
        app,
        "PUT",
        &uri,
        Some(KEY_A),
        Some(json!({"text": "Alice keeps wasps"})),
    )
    .await
    .assert_error(400, "invalid_input");
    call(app, "DELETE", &uri, Some(KEY_A), None)
        .await
        .assert_error(400, "invalid_input");
    let other = call(
        app,
        "GET",
        &format!("{uri}?include_deleted=true"),
        Some(KEY_B),
        None,
    )
    .await;
    other.assert_error(404, "not_found");
    assert!(
        !other.text.contains("was deleted"),
        "another tenant learns nothing: {}",
        other.text
    );
    call(
        app,
        "GET",
        &format!("{uri}?include_deleted=perhaps"),
        Some(KEY_A),
        None,
    )
    .await
    .assert_error(400, "invalid_query");
}

#[tokio::test]
async fn a_superseded_memory_answers_404_naming_its_successor() {
    let s = server();
    let app = &s.app;
    let remember =
        |text: &str| json!({"messages": [{"role": "user", "content": text}], "user_id": "carol"});
    let paris = call(
        app,
        "POST",
        "/v1/memories",
        Some(KEY_A),
        Some(remember("I live in Paris")),
    )
    .await;
    let fact = |v: &serde_json::Value| {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["kind"] == "fact")
            .unwrap_or_else(|| panic!("no fact in {v}"))["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let paris_id = fact(paris.ok());
    let berlin = call(
        app,
        "POST",
        "/v1/memories",
        Some(KEY_A),
        Some(remember("I moved to Berlin last month")),
    )
    .await;
    let berlin_id = fact(berlin.ok());
    assert_ne!(paris_id, berlin_id);

    let uri = format!("/v1/memories/{paris_id}");
    let g = call(app, "GET", &uri, Some(KEY_A), None).await;
    g.assert_error(404, "not_found");
    let message = g.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("was superseded by"), "{message}");
    assert!(message.contains(&berlin_id), "{message}");
    let g = call(
        app,
        "GET",
        &format!("{uri}?include_deleted=true"),
        Some(KEY_A),
        None,
    )
    .await;
    let v = g.ok();
    assert_eq!(v["status"], "superseded", "{v}");
    assert_eq!(v["superseded_by"], berlin_id.as_str(), "{v}");
    assert!(v["valid_until"].is_string(), "{v}");
    let g = call(
        app,
        "GET",
        &format!("/v1/memories/{berlin_id}"),
        Some(KEY_A),
        None,
    )
    .await;
    assert_eq!(g.ok()["status"], "current");
}

/// Every file under `dir` that holds `needle`.
fn files_holding(dir: &std::path::Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if std::fs::read(&path)
                .unwrap()
                .windows(needle.len())
                .any(|w| w == needle.as_bytes())
            {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

/// `DELETE /v1/memories?user_id=…&purge=true` on a running server (the
/// store open the whole time): no byte of the user's texts in any file of
/// the data directory, their history gone, the other user's still there.
#[tokio::test]
async fn a_purge_erases_the_users_texts_from_every_file_while_the_server_runs() {
    let s = server();
    let app = &s.app;
    let dir = std::path::PathBuf::from(s.state.memory().store().location());
    let id = add_raw(app, KEY_A, "alice", &["Alice hides the Zorblaxian key"]).await[0].clone();
    call(
        app,
        "PUT",
        &format!("/v1/memories/{id}"),
        Some(KEY_A),
        Some(json!({"text": "Alice hides the Quuxifrond key"})),
    )
    .await
    .ok();
    add_raw(app, KEY_A, "bob", &["Bob hides the Plumbozoid key"]).await;
    for word in ["Zorblaxian", "Quuxifrond", "Plumbozoid"] {
        assert!(!files_holding(&dir, word).is_empty(), "{word} is on disk");
    }

    let f = call(
        app,
        "DELETE",
        "/v1/memories?user_id=alice&purge=true",
        Some(KEY_A),
        None,
    )
    .await;
    assert_eq!(f.ok()["memories_deleted"], 1, "{}", f.text);
    assert_eq!(f.body["history_deleted"], 2, "{}", f.text);
    for word in ["Zorblaxian", "Quuxifrond"] {
        let left = files_holding(&dir, word);
        assert!(left.is_empty(), "{word} left in {left:?}");
    }
    assert!(!files_holding(&dir, "Plumbozoid").is_empty());
    call(
        app,
        "GET",
        &format!("/v1/memories/{id}?include_deleted=true"),
        Some(KEY_A),
        None,
    )
    .await
    .assert_error(404, "not_found");
    call(
        app,
        "GET",
        &format!("/v1/memories/{id}/history"),
        Some(KEY_A),
        None,
    )
    .await
    .assert_error(404, "not_found");
}
