//! The filter language: text and JSON forms, dates, limits, and fuzzing of both parsers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use memloop_core::filter::*;
use memloop_core::MemoryRecord;
use memloop_core::{Kind, Provenance, Scope};
use serde_json::json;
use serde_json::Value;

fn record(metadata: Value) -> MemoryRecord {
    MemoryRecord {
        id: "m1".into(),
        text: "t".into(),
        context: None,
        kind: Kind::Fact,
        scope: Scope::user("u"),
        metadata,
        created_at: parse_date("2024-05-01").unwrap(),
        updated_at: 0,
        valid_from: 0,
        valid_until: None,
        expires_at: None,
        importance: 0.5,
        access_count: 0,
        last_accessed_at: None,
        provenance: Provenance::default(),
        content_hash: String::new(),
        superseded_by: None,
    }
}

#[test]
fn text_and_json_forms_agree() {
    let r = record(json!({"category": "food", "rating": 4, "tag": "b"}));
    let text =
        Filter::parse(r#"category = "food" AND (rating >= 4 OR tag IN ["a", "b"])"#).unwrap();
    let js = Filter::from_json(&json!({"AND": [{"category": "food"},
        {"OR": [{"rating": {"gte": 4}}, {"tag": {"in": ["a", "b"]}}]}]}))
    .unwrap();
    assert!(text.matches(&r));
    assert!(js.matches(&r));
    let r2 = record(json!({"category": "food", "rating": 2, "tag": "c"}));
    assert!(!text.matches(&r2));
    assert!(!js.matches(&r2));
}

#[test]
fn mem0s_not_takes_a_list_none_of_which_may_hold() {
    let r = record(json!({"topic": "food", "rating": 2}));
    let not = |v| Filter::from_json(&v).unwrap().matches(&r);
    assert!(!not(json!({"NOT": [{"topic": "food"}]})));
    assert!(not(json!({"NOT": [{"topic": "travel"}]})));
    assert!(!not(
        json!({"NOT": [{"topic": "travel"}, {"rating": {"lt": 3}}]})
    ));
    assert!(not(
        json!({"NOT": [{"topic": "travel"}, {"rating": {"gt": 3}}]})
    ));
    // memloop's own form, an object, is unchanged.
    assert!(!not(json!({"NOT": {"topic": "food"}})));
    assert!(Filter::from_json(&json!({"NOT": [3]})).is_err());
}

#[test]
fn mem0s_contains_icontains_and_wildcard() {
    let r =
        record(json!({"note": "Loves Sci-Fi films", "tags": ["Movies", "books"], "none": null}));
    let holds = |v| Filter::from_json(&v).unwrap().matches(&r);
    assert!(holds(json!({"note": {"contains": "Sci-Fi"}})));
    assert!(!holds(json!({"note": {"contains": "sci-fi"}})));
    assert!(holds(json!({"note": {"icontains": "sci-fi"}})));
    assert!(holds(json!({"tags": {"contains": "books"}})));
    assert!(!holds(json!({"tags": {"contains": "book"}})));
    assert!(holds(json!({"tags": {"icontains": "movies"}})));
    assert!(!holds(json!({"missing": {"contains": "x"}})));
    assert!(holds(json!({"note": "*"})));
    assert!(!holds(json!({"missing": "*"})));
    assert!(!holds(json!({"none": "*"})));
    assert!(holds(json!({"NOT": [{"missing": "*"}]})));
    let e = Filter::from_json(&json!({"note": {"icontains": 3}})).unwrap_err();
    assert!(e.to_string().contains("takes a text"), "{e}");
    let e = Filter::from_json(&json!({"note": {"like": "x"}})).unwrap_err();
    assert!(e.to_string().contains("contains, icontains"), "{e}");
}

#[test]
fn dates_compare_as_dates() {
    let r = record(json!({"due": "2024-06-01T10:00:00Z"}));
    assert!(Filter::parse("due > 2024-05-31").unwrap().matches(&r));
    assert!(!Filter::parse("due < 2024-05-31").unwrap().matches(&r));
    assert!(
        Filter::parse("created_at >= 2024-05-01 AND created_at < '2024-05-02'")
            .unwrap()
            .matches(&r)
    );
}

#[test]
fn ne_not_in_and_missing_fields() {
    let r = record(json!({"a": 1}));
    assert!(Filter::parse("b != 1").unwrap().matches(&r));
    assert!(Filter::parse("a NOT IN [2, 3]").unwrap().matches(&r));
    assert!(!Filter::parse("b = 1").unwrap().matches(&r));
    assert!(Filter::parse("NOT a = 2").unwrap().matches(&r));
    assert!(Filter::parse("kind = fact").unwrap().matches(&r));
    // Strings are not ordered: a > on text never matches.
    assert!(!Filter::parse("kind > a").unwrap().matches(&r));
}

#[test]
fn bad_expressions_say_what_is_wrong() {
    for bad in [
        "",
        "a =",
        "a = 1 AND",
        "(a = 1",
        "a ~ 1",
        "a IN 3",
        "= 1",
        "a = 'x",
    ] {
        let err = Filter::parse(bad).unwrap_err().to_string();
        assert!(err.starts_with("invalid input: bad filter"), "{bad}: {err}");
    }
    assert!(Filter::from_json(&json!({"a": {"like": 1}})).is_err());
    assert!(Filter::from_json(&json!([1])).is_err());
}

#[test]
fn deep_nesting_is_refused_not_a_stack_overflow() {
    // The shapes that aborted the server: thousands of parentheses and NOTs.
    for text in [
        format!("{}a = 1{}", "(".repeat(1_600), ")".repeat(1_600)),
        format!("{}a = 1", "(".repeat(3_000)),
        format!(
            "{}a = 1",
            "NOT "
                .repeat(20_000)
                .chars()
                .take(16_000)
                .collect::<String>()
        ),
        format!("{}a = 1", "NOT (".repeat(2_000)),
    ] {
        let err = Filter::parse(&text).unwrap_err().to_string();
        assert!(err.contains("nests more than 32 levels"), "{err}");
    }
    // Built by hand: `json!` serialises an embedded value, which would recurse.
    let mut deep = json!({"a": 1});
    for i in 0..5_000 {
        let mut m = serde_json::Map::new();
        if i % 2 == 0 {
            m.insert("NOT".into(), deep);
        } else {
            m.insert("AND".into(), Value::Array(vec![deep]));
        }
        deep = Value::Object(m);
    }
    let err = Filter::from_json(&deep).unwrap_err().to_string();
    assert!(err.contains("nests more than 32 levels"), "{err}");
    // serde_json's own drop of such a value recurses too; take it apart by hand.
    while let Value::Object(mut m) = deep {
        deep = match m.remove("NOT").or_else(|| m.remove("AND")) {
            Some(Value::Array(mut v)) => v.pop().unwrap_or(Value::Null),
            Some(v) => v,
            None => Value::Null,
        };
    }
}

#[test]
fn nesting_up_to_the_limit_still_parses_and_matches() {
    let r = record(json!({"a": 1}));
    let depth = MAX_FILTER_DEPTH;
    let ok = format!("{}a = 1{}", "(".repeat(depth), ")".repeat(depth));
    assert!(Filter::parse(&ok).unwrap().matches(&r));
    let nots = format!("{}a = 1", "NOT NOT ".repeat(depth / 2));
    assert!(Filter::parse(&nots).unwrap().matches(&r));
    let over = format!("({ok})");
    assert!(Filter::parse(&over).is_err());
    let mut js = json!({"a": 1});
    for _ in 0..depth - 1 {
        js = json!({ "AND": [js] });
    }
    assert!(Filter::from_json(&js).unwrap().matches(&r));
    assert!(Filter::from_json(&json!({ "OR": [js] })).is_err());
}

#[test]
fn overlong_text_is_refused_with_its_size() {
    let long = format!("tag IN [{}]", vec!["\"x\""; 5_000].join(","));
    let err = Filter::parse(&long).unwrap_err().to_string();
    assert!(err.contains("bytes long") && err.contains("16384"), "{err}");
}

fn json_filter() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(json!(1)),
        Just(json!("x")),
        Just(json!(null)),
        Just(json!([1, "a"])),
        Just(json!({"gte": 3})),
        Just(json!({"in": [1, 2]})),
        Just(json!({"like": 1})),
        "[a-zA-Z_.]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(48, 256, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(|v| json!({ "AND": v })),
            proptest::collection::vec(inner.clone(), 0..4).prop_map(|v| json!({ "or": v })),
            inner.clone().prop_map(|v| json!({ "NOT": v })),
            ("[a-z._]{1,6}", inner).prop_map(|(k, v)| json!({ k: v })),
        ]
    })
}

proptest::proptest! {
    #[test]
    fn parser_never_panics(s in ".{0,40}") {
        let _ = Filter::parse(&s);
    }

    /// Long strings built from the filter language's own pieces reach
    /// far deeper and wider than random characters do.
    #[test]
    fn parser_never_panics_on_filter_shaped_text(
        parts in proptest::collection::vec(
            proptest::sample::select(vec![
                "(", ")", "NOT ", " AND ", " OR ", "a = 1", "b IN [1, 'x']",
                "c NOT IN []", "d >= 2024-05-01", "'", "\"", "[", "]", ",", "!", " ",
            ]),
            0..3_000,
        )
    ) {
        let text: String = parts.concat();
        if let Ok(f) = Filter::parse(&text) {
            let _ = f.matches(&record(json!({"a": 1, "b": "x"})));
        }
    }

    #[test]
    fn json_form_never_panics(v in json_filter()) {
        if let Ok(f) = Filter::from_json(&v) {
            let _ = f.matches(&record(json!({"a": 1})));
        }
    }

    #[test]
    fn dates_never_panic(s in "\\PC{0,40}", digits in "[0-9+-]{1,12}-[0-9]{1,3}-[0-9]{1,3}") {
        let _ = parse_date(&s);
        let _ = parse_date(&digits);
    }
}
