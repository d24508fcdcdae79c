//! Random add / update / delete / reopen sequences against a HashMap model.

use std::collections::HashMap;

use memloop::{ListQuery, NewMemory, Scope, SearchQuery};
use proptest::prelude::*;

use crate::open;

#[derive(Debug, Clone)]
enum Op {
    Add(usize, u8),
    Update(usize, u8),
    Delete(usize),
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..3usize, any::<u8>()).prop_map(|(u, w)| Op::Add(u, w)),
        2 => (any::<usize>(), any::<u8>()).prop_map(|(i, w)| Op::Update(i, w)),
        2 => any::<usize>().prop_map(Op::Delete),
        1 => Just(Op::Reopen),
    ]
}

const WORDS: &[&str] = &[
    "apples",
    "bicycles",
    "canoes",
    "dragons",
    "elephants",
    "fjords",
    "guitars",
    "harbours",
];

fn text(w: u8) -> String {
    format!(
        "I keep thinking about {} and {}",
        WORDS[(w % 8) as usize],
        WORDS[(w / 8 % 8) as usize]
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn store_matches_model(ops in proptest::collection::vec(op(), 1..25)) {
        let dir = tempfile::tempdir().unwrap();
        let mut m = open(dir.path());
        // id -> (user, text, current)
        let mut model: HashMap<String, (usize, String, bool)> = HashMap::new();
        let mut order: Vec<String> = Vec::new();
        for op in ops {
            match op {
                Op::Add(u, w) => {
                    let scope = Scope::user(format!("user{u}"));
                    let r = m.add(&scope, NewMemory::text(text(w))).unwrap();
                    let dup = model.values().any(|(mu, mt, cur)| *mu == u && *cur && mt == &text(w));
                    prop_assert_eq!(r.event == memloop::Event::Noop, dup);
                    if !dup {
                        model.insert(r.id.clone(), (u, text(w), true));
                        order.push(r.id);
                    }
                }
                Op::Update(i, w) if !order.is_empty() => {
                    let id = &order[i % order.len()];
                    let entry = model.get_mut(id).unwrap();
                    let res = m.update(id, &text(w));
                    if entry.2 {
                        res.unwrap();
                        entry.1 = text(w);
                    } else {
                        prop_assert!(res.is_err());
                    }
                }
                Op::Delete(i) if !order.is_empty() => {
                    let id = &order[i % order.len()];
                    let entry = model.get_mut(id).unwrap();
                    let res = m.delete(id);
                    prop_assert_eq!(res.is_ok(), entry.2);
                    entry.2 = false;
                }
                Op::Reopen => {
                    drop(m);
                    m = open(dir.path());
                }
                _ => {}
            }
        }
        for (id, (u, t, current)) in &model {
            let rec = m.get_with(Scope::DEFAULT_TENANT, id, memloop::Lookup::IncludeDeleted).unwrap();
            prop_assert_eq!(&rec.text, t);
            prop_assert_eq!(rec.valid_until.is_none(), *current);
            prop_assert_eq!(rec.scope.user_id.clone(), Some(format!("user{u}")));
        }
        for u in 0..3 {
            let scope = Scope::user(format!("user{u}"));
            let mut listed: Vec<String> = m.list(&ListQuery { scope: scope.clone(), ..Default::default() }).unwrap().into_iter().map(|r| r.id).collect();
            let mut want: Vec<String> = model.iter().filter(|(_, (mu, _, c))| *mu == u && *c).map(|(id, _)| id.clone()).collect();
            listed.sort();
            want.sort();
            prop_assert_eq!(&listed, &want);
            // Search sees exactly the current memories of this user.
            if !want.is_empty() {
                let mut q = SearchQuery::new(scope, "thinking about");
                q.top_k = 100;
                let mut found: Vec<String> = m.search(&q).unwrap().into_iter().map(|h| h.record.id).collect();
                found.sort();
                prop_assert_eq!(found, want);
            }
        }
    }
}
