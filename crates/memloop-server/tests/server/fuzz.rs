//! Malformed and random bodies at every route that takes one: never a 500,
//! never a dropped connection, always a JSON answer (an error body when
//! refused).

use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use proptest::prelude::*;
use serde_json::{json, Value};

use crate::*;

const ROUTES: [(&str, &str); 6] = [
    ("POST", "/v1/memories"),
    ("POST", "/v1/memories/search"),
    ("POST", "/v1/context"),
    ("POST", "/v1/turn"),
    ("POST", "/v1/sessions/s1/messages"),
    ("PUT", "/v1/memories/{id}"),
];

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop_oneof![
            Just("messages"),
            Just("user_id"),
            Just("agent_id"),
            Just("run_id"),
            Just("session_id"),
            Just("metadata"),
            Just("infer"),
            Just("query"),
            Just("top_k"),
            Just("limit"),
            Just("filters"),
            Just("input"),
            Just("text"),
            Just("role"),
            Just("content"),
            Just("kind"),
            Just("kinds"),
            Just("importance"),
            Just("threshold"),
            Just("AND"),
            Just("OR"),
            Just("NOT"),
            Just("gte"),
            Just("in"),
            Just("nin"),
            Just("created_at"),
        ]
        .prop_map(str::to_string),
        "[a-z_.]{1,8}",
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-2.0f64..1e6).prop_map(|f| json!(f)),
        any::<f64>()
            .prop_filter("JSON numbers are finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        prop_oneof![
            Just("user"),
            Just("assistant"),
            Just("system"),
            Just("tool"),
            Just("alice"),
            Just("s1"),
            Just("fact"),
            Just("episode"),
            Just("I live in Lisbon"),
            Just("topic = \"food\" AND rating >= 4"),
            Just("2024-05-01"),
            Just(""),
            Just(" "),
        ]
        .prop_map(|s| Value::String(s.to_string())),
        any::<String>().prop_map(Value::String),
    ]
}

fn arb_json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn text() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => prop_oneof![
            Just("I moved to Lisbon in May"), Just("My sister Emma is a nurse"),
            Just("I'm allergic to peanuts"), Just("hi"), Just("Actually, I no longer live in Lisbon"),
            Just("Remember that my dentist appointment is on 2024-06-03"),
        ]
        .prop_map(|t| json!(t)),
        2 => any::<String>().prop_map(Value::String),
        1 => prop_oneof![Just(""), Just("   "), Just("\u{0}"), Just("\n\t")].prop_map(|t| json!(t)),
        1 => (32_000usize..34_000).prop_map(|n| json!("x".repeat(n))),
        1 => leaf(),
    ]
}

fn id() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => prop_oneof![Just("alice"), Just("bob"), Just("s1"), Just("agent-7")].prop_map(|t| json!(t)),
        1 => prop_oneof![Just(""), Just(" "), Just("a\u{1f}b"), Just("new\nline")].prop_map(|t| json!(t)),
        1 => (250usize..260).prop_map(|n| json!("u".repeat(n))),
        1 => any::<String>().prop_map(Value::String),
        1 => leaf(),
    ]
}

fn filter() -> impl Strategy<Value = Value> {
    let field = prop_oneof![
        Just("topic"),
        Just("rating"),
        Just("created_at"),
        Just("kind"),
        Just("user_id"),
        Just("session_id"),
        Just("importance"),
        Just("metadata.a.b"),
        Just("role"),
        Just(""),
    ]
    .prop_map(str::to_string);
    let op = prop_oneof![
        Just("eq"),
        Just("ne"),
        Just("gt"),
        Just("gte"),
        Just("lt"),
        Just("lte"),
        Just("in"),
        Just("nin"),
        Just("contains"),
        Just("icontains"),
        Just("near"),
    ]
    .prop_map(str::to_string);
    let cond = prop_oneof![
        (field.clone(), leaf()).prop_map(|(f, v)| json!({ f: v })),
        (field, op, arb_json()).prop_map(|(f, o, v)| json!({ f: { o: v } })),
    ];
    let tree = cond.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| json!({ "AND": v })),
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| json!({ "OR": v })),
            inner.prop_map(|v| json!({ "NOT": v })),
        ]
    });
    prop_oneof![
        4 => tree,
        1 => prop_oneof![
            Just("topic = \"food\" AND (rating >= 4 OR tag IN [\"a\", \"b\"])"),
            Just("NOT (kind = fact"), Just("created_at > 2024-13-45"), Just("a.b.c != null"),
        ]
        .prop_map(|t| json!(t)),
        1 => arb_json(),
    ]
}

fn messages() -> impl Strategy<Value = Value> {
    let role = prop_oneof![
        5 => prop_oneof![Just("user"), Just("assistant"), Just("system"), Just("tool")].prop_map(|r| json!(r)),
        1 => leaf(),
    ];
    prop_oneof![
        text(),
        prop::collection::vec(
            (role, text()).prop_map(|(r, c)| json!({"role": r, "content": c})),
            0..4
        )
        .prop_map(Value::Array),
    ]
}

fn object(fields: Vec<(&'static str, Option<Value>)>) -> Value {
    Value::Object(
        fields
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k.to_string(), v)))
            .collect(),
    )
}

/// Bodies shaped like each route's requests, with plausible and
/// implausible values, so they get past parsing into the handlers, the
/// store, the filter parser and the loop.
fn shaped(route: usize) -> BoxedStrategy<Value> {
    let o = |s: BoxedStrategy<Value>| prop::option::weighted(0.7, s);
    let meta = prop_oneof![
        3 => prop::collection::btree_map("[a-z]{1,5}", leaf(), 0..4)
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        1 => leaf(),
    ]
    .boxed();
    let number = prop_oneof![
        (0u64..1200).prop_map(|n| json!(n)),
        (-1.0f64..2.0).prop_map(|f| json!(f)),
        leaf(),
    ]
    .boxed();
    match route % ROUTES.len() {
        0 => (
            messages(),
            o(id().boxed()),
            o(id().boxed()),
            o(id().boxed()),
            o(meta),
            o(any::<bool>().prop_map(Value::Bool).boxed()),
            o(prop_oneof![Just(json!("fact")), Just(json!("episode")), leaf()].boxed()),
            o(number),
        )
            .prop_map(|(m, u, a, r, meta, infer, kind, imp)| {
                object(vec![
                    ("messages", Some(m)),
                    ("user_id", u),
                    ("agent_id", a),
                    ("run_id", r),
                    ("metadata", meta),
                    ("infer", infer),
                    ("kind", kind),
                    ("importance", imp),
                ])
            })
            .boxed(),
        1 => (
            text(),
            o(id().boxed()),
            o(id().boxed()),
            o(number.clone()),
            o(filter().boxed()),
            o(number),
        )
            .prop_map(|(q, u, r, k, f, t)| {
                object(vec![
                    ("query", Some(q)),
                    ("user_id", u),
                    ("run_id", r),
                    ("top_k", k),
                    ("filters", f),
                    ("threshold", t),
                ])
            })
            .boxed(),
        2 | 3 => (text(), o(id().boxed()), o(id().boxed()), o(id().boxed()))
            .prop_map(|(i, u, a, r)| {
                object(vec![
                    ("input", Some(i)),
                    ("user_id", u),
                    ("agent_id", a),
                    ("run_id", r),
                ])
            })
            .boxed(),
        4 => messages().prop_map(|m| json!({ "messages": m })).boxed(),
        _ => (o(text().boxed()), o(meta))
            .prop_map(|(t, m)| object(vec![("text", t), ("metadata", m)]))
            .boxed(),
    }
}

fn routed() -> impl Strategy<Value = (usize, Value)> {
    (0usize..ROUTES.len()).prop_flat_map(|r| shaped(r).prop_map(move |b| (r, b)))
}

fn check(rt: &tokio::runtime::Runtime, s: &TestServer, id: &str, route: usize, body: Vec<u8>) {
    let (method, path) = ROUTES[route % ROUTES.len()];
    let path = path.replace("{id}", id);
    let req = Request::builder()
        .method(method)
        .uri(&path)
        .header("authorization", format!("Bearer {KEY_A}"))
        .header("content-type", "application/json")
        .body(Body::from(body.clone()))
        .unwrap();
    let a = rt.block_on(send(&s.app, req));
    let shown = String::from_utf8_lossy(&body);
    assert!(
        a.status.as_u16() < 500 || a.code() == "llm_not_configured",
        "{method} {path} {shown} -> {} {}",
        a.status,
        a.text
    );
    assert!(
        !a.body.is_null(),
        "{method} {path} {shown} -> not JSON: {}",
        a.text
    );
    if !a.status.is_success() {
        assert!(a.body["error"]["code"].is_string(), "{}", a.text);
        assert!(a.body["error"]["message"].is_string(), "{}", a.text);
    }
}

struct Fixture {
    rt: tokio::runtime::Runtime,
    server: TestServer,
    id: String,
}

fn fixture() -> Fixture {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let llm: Arc<dyn memloop::Llm> = Arc::new(StubLlm::replying("ok"));
    let server = server_with(
        ServerConfig {
            api_keys: keys_ab(),
            ..ServerConfig::default()
        },
        Some(llm),
    );
    let id = rt.block_on(add_raw(
        &server.app,
        KEY_A,
        "alice",
        &["a memory to update"],
    ))[0]
        .clone();
    Fixture { rt, server, id }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_json_never_breaks_the_server(route in 0usize..6, body in arb_json()) {
        thread_local!(static F: Fixture = fixture());
        F.with(|f| check(&f.rt, &f.server, &f.id, route, body.to_string().into_bytes()));
    }


    #[test]
    fn random_bytes_never_break_the_server(route in 0usize..6, body in prop::collection::vec(any::<u8>(), 0..300)) {
        thread_local!(static F: Fixture = fixture());
        F.with(|f| check(&f.rt, &f.server, &f.id, route, body));
    }

    #[test]
    fn truncated_and_corrupted_requests_never_break_the_server(
        route in 0usize..6, cut in 0usize..200, flip in 0usize..200, byte in any::<u8>(),
    ) {
        thread_local!(static F: Fixture = fixture());
        let valid = json!({
            "messages": [{"role": "user", "content": "I moved to Lisbon in May"}],
            "query": "where do I live?", "input": "where do I live?", "text": "new text",
            "user_id": "alice", "run_id": "s1", "infer": false, "top_k": 5,
            "filters": {"AND": [{"role": "user"}, {"created_at": {"gte": "2020-01-01"}}]},
        })
        .to_string()
        .into_bytes();
        let mut body = valid[..cut.min(valid.len())].to_vec();
        if !body.is_empty() {
            let i = flip % body.len();
            body[i] = byte;
        }
        F.with(|f| check(&f.rt, &f.server, &f.id, route, body));
    }
}

proptest! {
    // Most of these reach the store, the filter parser or the loop: more cases.
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn request_shaped_json_never_breaks_the_server((route, body) in routed()) {
        thread_local!(static F: Fixture = fixture());
        F.with(|f| check(&f.rt, &f.server, &f.id, route, body.to_string().into_bytes()));
    }
}
