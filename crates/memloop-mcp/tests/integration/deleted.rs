//! Deletes that delete: memory_forget with an id deletes that memory of
//! the user; memory_get then answers not_found saying it was deleted,
//! unless include_deleted; a superseded fact names its successor; history
//! stays readable.

use serde_json::{json, Value};

use crate::{connect, ok, tool_error};

fn fact_id(v: &Value) -> String {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "fact")
        .unwrap_or_else(|| panic!("no fact in {v}"))["id"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forget_by_id_then_get_is_not_found_unless_include_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let (client, server) = connect(dir.path()).await;
    let c = client.peer();
    let added = ok(
        c,
        "memory_add",
        json!({"text": "Alice keeps bees on the roof", "user_id": "alice"}),
    )
    .await;
    let id = added["results"][0]["id"].as_str().unwrap().to_string();
    let bob = ok(
        c,
        "memory_add",
        json!({"text": "Bob plays the trumpet", "user_id": "bob"}),
    )
    .await;
    let bob_id = bob["results"][0]["id"].as_str().unwrap().to_string();
    let got = ok(c, "memory_get", json!({"id": id})).await;
    assert_eq!(got["status"], "current", "{got}");

    // Another user's memory cannot be deleted by id: not found, untouched.
    let (code, _) = tool_error(
        c,
        "memory_forget",
        json!({"user_id": "alice", "id": bob_id}),
    )
    .await;
    assert_eq!(code, "not_found");
    assert_eq!(
        ok(c, "memory_get", json!({"id": bob_id})).await["status"],
        "current"
    );
    // An id with purge is refused, saying what to do.
    let (code, message) = tool_error(
        c,
        "memory_forget",
        json!({"user_id": "alice", "id": id, "purge": true}),
    )
    .await;
    assert_eq!(code, "invalid_input");
    assert!(message.contains("without purge"), "{message}");

    let forgot = ok(c, "memory_forget", json!({"user_id": "alice", "id": id})).await;
    assert_eq!(forgot["results"][0]["event"], "DELETE", "{forgot}");
    assert_eq!(forgot["results"][0]["id"], id.as_str(), "{forgot}");

    for args in [
        json!({"id": id}),
        json!({"id": id, "include_deleted": false}),
    ] {
        let (code, message) = tool_error(c, "memory_get", args).await;
        assert_eq!(code, "not_found");
        assert!(message.contains("was deleted"), "{message}");
        assert!(message.contains("include_deleted: true"), "{message}");
    }
    let past = ok(c, "memory_get", json!({"id": id, "include_deleted": true})).await;
    assert_eq!(past["memory"], "Alice keeps bees on the roof");
    assert!(past["valid_until"].is_string(), "{past}");
    assert_eq!(past["status"], "deleted", "{past}");
    assert!(past["superseded_by"].is_null(), "{past}");
    let history = ok(c, "memory_history", json!({"id": id})).await;
    let events: Vec<&str> = history["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["ADD", "DELETE"]);
    // The other memories are still there.
    let found = ok(
        c,
        "memory_search",
        json!({"query": "trumpet", "user_id": "bob"}),
    )
    .await;
    assert_eq!(found["results"][0]["id"], bob_id.as_str());
    client.cancel().await.unwrap();
    server.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_superseded_fact_is_not_found_naming_its_successor() {
    let dir = tempfile::tempdir().unwrap();
    let (client, server) = connect(dir.path()).await;
    let c = client.peer();
    let paris = ok(
        c,
        "memory_remember",
        json!({"text": "I live in Paris", "user_id": "carol"}),
    )
    .await;
    let berlin = ok(
        c,
        "memory_remember",
        json!({"text": "I moved to Berlin last month", "user_id": "carol"}),
    )
    .await;
    let (paris_id, berlin_id) = (fact_id(&paris), fact_id(&berlin));
    let (code, message) = tool_error(c, "memory_get", json!({"id": paris_id})).await;
    assert_eq!(code, "not_found");
    assert!(message.contains("was superseded by"), "{message}");
    assert!(message.contains(&berlin_id), "{message}");
    let old = ok(
        c,
        "memory_get",
        json!({"id": paris_id, "include_deleted": true}),
    )
    .await;
    assert_eq!(old["status"], "superseded", "{old}");
    assert_eq!(old["superseded_by"], berlin_id.as_str(), "{old}");
    client.cancel().await.unwrap();
    server.await.unwrap();
}

/// Whether any file under `dir` holds `needle`.
fn on_disk(dir: &std::path::Path, needle: &str) -> bool {
    std::fs::read_dir(dir).unwrap().any(|e| {
        let path = e.unwrap().path();
        if path.is_dir() {
            on_disk(&path, needle)
        } else {
            std::fs::read(&path)
                .unwrap()
                .windows(needle.len())
                .any(|w| w == needle.as_bytes())
        }
    })
}

/// memory_forget with purge, the store open the whole time: the user's
/// texts are in no file of the data directory, their history is gone, the
/// other user's memories stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forget_with_purge_erases_the_users_texts_from_every_file() {
    let dir = tempfile::tempdir().unwrap();
    let (client, server) = connect(dir.path()).await;
    let c = client.peer();
    let added = ok(
        c,
        "memory_add",
        json!({"text": "Alice hides the Zorblaxian key", "user_id": "alice"}),
    )
    .await;
    let id = added["results"][0]["id"].as_str().unwrap().to_string();
    ok(
        c,
        "memory_remember",
        json!({"text": "I keep my Quuxifrond bike in the hall", "user_id": "alice"}),
    )
    .await;
    ok(
        c,
        "memory_add",
        json!({"text": "Bob hides the Plumbozoid key", "user_id": "bob"}),
    )
    .await;
    for word in ["Zorblaxian", "Quuxifrond", "Plumbozoid"] {
        assert!(on_disk(dir.path(), word), "{word} is on disk");
    }
    let forgot = ok(
        c,
        "memory_forget",
        json!({"user_id": "alice", "purge": true}),
    )
    .await;
    assert!(
        forgot["memories_deleted"].as_u64().unwrap() >= 2,
        "{forgot}"
    );
    for word in ["Zorblaxian", "Quuxifrond"] {
        assert!(!on_disk(dir.path(), word), "{word} is still on disk");
    }
    assert!(on_disk(dir.path(), "Plumbozoid"));
    let (code, _) = tool_error(c, "memory_history", json!({"id": id})).await;
    assert_eq!(code, "not_found");
    let (code, _) = tool_error(c, "memory_get", json!({"id": id, "include_deleted": true})).await;
    assert_eq!(code, "not_found");
    client.cancel().await.unwrap();
    server.await.unwrap();
}
