//! memory_record_procedure and memory_search_procedures: a failed run, then
//! a successful one of the same task, found with its pitfall.

use serde_json::json;

use crate::{ok, tool_error};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_then_a_success_is_one_procedure_with_its_pitfall() {
    let dir = tempfile::tempdir().unwrap();
    let (client, _server) = crate::connect(dir.path()).await;
    let c = client.peer();
    let failed = ok(
        c,
        "memory_record_procedure",
        json!({"user_id": "ops", "task": "deploy the web app", "outcome": "failure",
               "steps": [{"tool": "shell", "args": "git pull"},
                         {"tool": "shell", "args": "npm run deploy", "ok": false, "error": "EACCES"}],
               "execution_id": "run-1"}),
    )
    .await;
    assert_eq!(failed["results"][0]["event"], "ADD", "{failed}");
    let worked = ok(
        c,
        "memory_record_procedure",
        json!({"user_id": "ops", "task": "deploy the web app", "outcome": "success",
               "steps": [{"tool": "shell", "args": "git pull"},
                         {"tool": "shell", "args": "sudo -u deploy npm run deploy"}],
               "execution_id": "run-2"}),
    )
    .await;
    assert_eq!(worked["results"][0]["event"], "UPDATE", "{worked}");
    let again = ok(
        c,
        "memory_record_procedure",
        json!({"user_id": "ops", "task": "deploy the web app", "outcome": "success",
               "steps": [{"tool": "shell", "args": "git pull"}], "execution_id": "run-2"}),
    )
    .await;
    assert_eq!(again["results"][0]["event"], "NOOP", "{again}");

    let found = ok(
        c,
        "memory_search_procedures",
        json!({"user_id": "ops", "query": "how do I deploy the web app?"}),
    )
    .await;
    let top = &found["results"][0];
    assert_eq!(top["procedure"]["successes"], 1, "{found}");
    assert_eq!(top["procedure"]["failures"], 1, "{found}");
    assert_eq!(
        top["pitfalls"][0],
        "`shell npm run deploy` failed with EACCES; `shell sudo -u deploy npm run deploy` worked",
        "{found}"
    );
    assert!(top["scores"]["success_rate"].as_f64().unwrap() > 0.49);

    let (code, message) = tool_error(
        c,
        "memory_record_procedure",
        json!({"user_id": "ops", "task": "x", "outcome": "sort of", "steps": [{"tool": "t"}]}),
    )
    .await;
    assert_eq!(code, "invalid_input");
    assert!(message.contains("outcome"), "{message}");
}
