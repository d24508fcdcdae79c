//! The OpenAPI document lists exactly the router's routes, and its response
//! schemas name every field real responses carry.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::*;

/// Every route the router serves.
const ROUTES: [(&str, &str); 30] = [
    ("post", "/v1/memories"),
    ("get", "/v1/memories"),
    ("delete", "/v1/memories"),
    ("post", "/v1/memories/search"),
    ("get", "/v1/memories/{id}"),
    ("put", "/v1/memories/{id}"),
    ("delete", "/v1/memories/{id}"),
    ("get", "/v1/memories/{id}/history"),
    ("post", "/v1/context"),
    ("post", "/v1/turn"),
    ("post", "/v1/turn/record"),
    ("post", "/v1/procedures"),
    ("post", "/v1/procedures/search"),
    ("get", "/v1/sessions"),
    ("post", "/v1/sessions/{id}/messages"),
    ("get", "/v1/sessions/{id}"),
    ("delete", "/v1/sessions/{id}"),
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("get", "/metrics"),
    ("get", "/openapi.json"),
    ("get", "/v1/ping"),
    ("post", "/v3/memories/add"),
    ("post", "/v3/memories/search"),
    ("post", "/v3/memories"),
    ("get", "/v1/entities"),
    ("delete", "/v2/entities/{kind}/{name}"),
    ("get", "/v1/entities/{name}/links"),
    ("get", "/v1/users"),
    ("get", "/v1/traces"),
];

async fn document(app: &axum::Router) -> Value {
    call(app, "GET", "/openapi.json", None, None)
        .await
        .ok()
        .clone()
}

fn operations(doc: &Value) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            if [
                "get", "put", "post", "delete", "patch", "head", "options", "trace",
            ]
            .contains(&method.as_str())
            {
                out.insert((method.clone(), path.clone()));
            }
        }
    }
    out
}

#[tokio::test]
async fn the_document_lists_every_route_and_only_those() {
    let s = server();
    let doc = document(&s.app).await;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let expected: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    assert_eq!(operations(&doc), expected);

    // Each documented operation is routed (not the no-route or 405 answer).
    for (method, path) in operations(&doc) {
        let uri = path
            .replace("{id}", "some-id")
            .replace("{kind}", "user")
            .replace("{name}", "nobody");
        let body = (method == "post" || method == "put").then(|| json!({}));
        let a = call(&s.app, &method.to_uppercase(), &uri, Some(KEY_A), body).await;
        assert_ne!(a.code(), "no_route", "{method} {path}");
        assert_ne!(a.status, 405, "{method} {path}");
    }

    // Auth is declared: a bearer scheme, required except on the probes and the document.
    assert_eq!(
        doc["components"]["securitySchemes"]["api_key"]["scheme"],
        "bearer"
    );
    assert!(doc["security"].as_array().is_some_and(|s| !s.is_empty()));
    for public in ["/healthz", "/readyz", "/openapi.json"] {
        assert_eq!(
            doc["paths"][public]["get"]["security"],
            json!([{}]),
            "{public}"
        );
    }
    assert!(doc["paths"]["/metrics"]["get"]["security"].is_null());
    // Every route documents its errors with the error body.
    for (method, path) in operations(&doc) {
        let responses = doc["paths"][&path][&method]["responses"]
            .as_object()
            .unwrap();
        assert!(responses.contains_key("200"), "{method} {path}");
    }
}

/// Property names of a schema in the document, through `$ref` and `allOf`.
fn properties(doc: &Value, schema: &Value) -> BTreeSet<String> {
    if let Some(r) = schema["$ref"].as_str() {
        let name = r.trim_start_matches("#/components/schemas/");
        return properties(doc, &doc["components"]["schemas"][name]);
    }
    let mut out: BTreeSet<String> = schema["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    for part in schema["allOf"].as_array().into_iter().flatten() {
        out.extend(properties(doc, part));
    }
    out
}

fn named(doc: &Value, name: &str) -> BTreeSet<String> {
    let p = properties(
        doc,
        &json!({"$ref": format!("#/components/schemas/{name}")}),
    );
    assert!(!p.is_empty(), "schema {name} missing");
    p
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

fn assert_subset(found: &BTreeSet<String>, documented: &BTreeSet<String>, what: &str) {
    let missing: Vec<_> = found.difference(documented).collect();
    assert!(
        missing.is_empty(),
        "{what}: undocumented fields {missing:?}"
    );
}

#[tokio::test]
async fn response_schemas_match_real_responses() {
    let s = server();
    let app = &s.app;
    let doc = document(app).await;
    let ids = add_raw(app, KEY_A, "alice", &["Alice likes green tea"]).await;
    let id = &ids[0];

    let g = call(app, "GET", &format!("/v1/memories/{id}"), Some(KEY_A), None).await;
    assert_subset(&keys(g.ok()), &named(&doc, "MemoryByIdDoc"), "memory");

    let q = call(
        app,
        "POST",
        "/v1/memories/search",
        Some(KEY_A),
        Some(json!({"query": "tea", "user_id": "alice"})),
    )
    .await;
    let hit = &q.ok()["results"][0];
    assert_subset(&keys(hit), &named(&doc, "SearchHitDoc"), "search hit");
    assert_subset(
        &keys(&hit["scores"]),
        &named(&doc, "SignalScoresDoc"),
        "scores",
    );

    let u = call(
        app,
        "PUT",
        &format!("/v1/memories/{id}"),
        Some(KEY_A),
        Some(json!({"text": "Alice likes black tea"})),
    )
    .await;
    assert_subset(&keys(u.ok()), &named(&doc, "WriteResponse"), "update");
    assert_subset(
        &keys(&u.body["results"][0]),
        &named(&doc, "WriteResultDoc"),
        "write result",
    );

    let h = call(
        app,
        "GET",
        &format!("/v1/memories/{id}/history"),
        Some(KEY_A),
        None,
    )
    .await;
    assert_subset(
        &keys(&h.ok()["results"][0]),
        &named(&doc, "HistoryEntryDoc"),
        "history",
    );

    let i = call(
        app,
        "POST",
        "/v1/memories",
        Some(KEY_A),
        Some(json!({"messages": "I live in Lisbon", "user_id": "alice"})),
    )
    .await;
    assert_subset(&keys(i.ok()), &named(&doc, "WriteResponse"), "infer add");
    for r in i.body["results"].as_array().unwrap() {
        assert_subset(
            &keys(r),
            &named(&doc, "WriteResultDoc"),
            "infer write result",
        );
    }

    let c = call(
        app,
        "POST",
        "/v1/context",
        Some(KEY_A),
        Some(json!({"input": "tea?", "user_id": "alice", "run_id": "s"})),
    )
    .await;
    assert_subset(&keys(c.ok()), &named(&doc, "ContextResponse"), "context");
    let f = call(
        app,
        "DELETE",
        "/v1/memories?user_id=alice",
        Some(KEY_A),
        None,
    )
    .await;
    assert_subset(&keys(f.ok()), &named(&doc, "ForgetResponse"), "forget");
    let e = call(app, "GET", "/v1/memories/nope", Some(KEY_A), None).await;
    assert_subset(&keys(&e.body), &named(&doc, "ErrorBody"), "error");
    assert_subset(
        &keys(&e.body["error"]),
        &named(&doc, "ErrorDetail"),
        "error detail",
    );
    let sess = call(app, "GET", "/v1/sessions/s", Some(KEY_A), None).await;
    assert_subset(&keys(sess.ok()), &named(&doc, "SessionResponse"), "session");
    call(
        app,
        "POST",
        "/v1/memories",
        Some(KEY_A),
        Some(json!({"messages": "Alice plays chess", "user_id": "alice", "run_id": "s1", "infer": false})),
    )
    .await
    .ok();
    let axis = call(app, "GET", "/v1/sessions?user_id=alice", Some(KEY_A), None).await;
    assert_subset(
        &keys(axis.ok()),
        &named(&doc, "SessionsResponse"),
        "sessions",
    );
    let first = &axis.body["sessions"][0];
    assert_eq!(first["id"], "s1", "{}", axis.body);
    assert_subset(&keys(first), &named(&doc, "SessionInfoDoc"), "session info");

    let run = json!({"user_id": "alice", "task": "brew tea", "outcome": "failure",
        "steps": [{"tool": "kettle", "args": "boil", "ok": false, "error": "no water"}]});
    let p = call(app, "POST", "/v1/procedures", Some(KEY_A), Some(run)).await;
    assert_subset(
        &keys(p.ok()),
        &named(&doc, "ProcedureWriteResponse"),
        "procedure write",
    );
    let w = &p.body["results"][0];
    assert_subset(
        &keys(w),
        &named(&doc, "ProcedureWriteDoc"),
        "procedure write result",
    );
    assert_subset(
        &keys(&w["procedure"]),
        &named(&doc, "ProcedureDoc"),
        "procedure",
    );
    let q = json!({"user_id": "alice", "query": "brew tea"});
    let found = call(app, "POST", "/v1/procedures/search", Some(KEY_A), Some(q)).await;
    assert_subset(
        &keys(found.ok()),
        &named(&doc, "ProcedureSearchResponse"),
        "procedure search",
    );
    let hit = &found.body["results"][0];
    assert_subset(&keys(hit), &named(&doc, "ProcedureHitDoc"), "procedure hit");

    let users = call(app, "GET", "/v1/users", Some(KEY_A), None).await;
    assert_subset(&keys(users.ok()), &named(&doc, "UsersResponse"), "users");
    let user = &users.body["results"][0];
    assert_eq!(user["id"], "alice");
    assert_subset(&keys(user), &named(&doc, "UserDoc"), "user");
    let traces = call(app, "GET", "/v1/traces", Some(KEY_A), None).await;
    assert_subset(&keys(traces.ok()), &named(&doc, "TracesResponse"), "traces");
    assert_subset(
        &keys(&hit["scores"]),
        &named(&doc, "ProcedureScoresDoc"),
        "procedure scores",
    );
    assert_subset(
        &keys(&hit["signals"]),
        &named(&doc, "SignalScoresDoc"),
        "procedure signals",
    );
}

/// Every request that carries a scope documents its three fields: the
/// bodies through the shared `ScopeFields` schema, the query strings as
/// three optional parameters (not one object named `scope`).
#[tokio::test]
async fn every_scoped_request_documents_the_scope_fields() {
    let s = server();
    let doc = document(&s.app).await;
    let scope: BTreeSet<String> = ["user_id", "agent_id", "run_id"].map(String::from).into();
    for body in ["AddRequest", "SearchRequest", "LoopRequest", "ListRequest"] {
        let fields = named(&doc, body);
        assert!(scope.is_subset(&fields), "{body}: {fields:?}");
    }
    let shared = &doc["components"]["schemas"]["ScopeFields"];
    assert!(shared["required"].as_array().is_none_or(Vec::is_empty));
    for field in &scope {
        let description = shared["properties"][field]["description"].as_str();
        assert!(description.is_some_and(|d| !d.is_empty()), "{field}");
    }
    for (method, path) in [
        ("get", "/v1/memories"),
        ("delete", "/v1/memories"),
        ("get", "/v1/sessions"),
    ] {
        let params = doc["paths"][path][method]["parameters"].as_array().unwrap();
        let query: BTreeSet<String> = params
            .iter()
            .filter(|p| p["in"] == "query")
            .map(|p| p["name"].as_str().unwrap().to_string())
            .collect();
        assert!(scope.is_subset(&query), "{method} {path}: {query:?}");
        assert!(!query.contains("scope"), "{method} {path}");
        for p in params
            .iter()
            .filter(|p| scope.contains(p["name"].as_str().unwrap()))
        {
            assert_eq!(p["required"], false, "{method} {path}: {p}");
        }
    }
}
