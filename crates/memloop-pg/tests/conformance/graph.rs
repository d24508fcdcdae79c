//! The entity graph on every backend: mentions and relations written with
//! their memory, read only through current memories of the caller's
//! tenant and user, a single-valued relation ended by a later one (also
//! one written late about the past), the graph read as it was (`as_of`),
//! expansion's one hop, and forget taking the names with the memories.

use memloop_core::links::{EntityKind, Links, Mention};
use memloop_core::{NewMemory, Scope};
use memloop_longterm::dump::{DumpLine, RestoreBatch, RestoredMemory};
use memloop_longterm::graph::{GraphRelation, LinkLimits};
use memloop_longterm::LongTermStore;

use crate::backend::Backend;
use crate::cases::{add, alice};

/// 2026-01-01T00:00:00Z, and a day.
const T0: i64 = 1_767_225_600_000;
const DAY: i64 = 86_400_000;

/// A memory true from `day` days after T0 naming `names`, with `relation`
/// (subject, name, object, single-valued?).
fn said(
    text: &str,
    day: i64,
    names: &[&str],
    relation: Option<(&str, &str, &str, bool)>,
) -> NewMemory {
    let mut m = NewMemory::text(text);
    m.valid_from = Some(T0 + day * DAY);
    let mut links = Links::default();
    for n in names {
        links.mention(n, EntityKind::Unknown);
    }
    if let Some((s, r, o, single)) = relation {
        let (s, o) = ((s, EntityKind::Person), (o, EntityKind::Organisation));
        if single {
            links.relate_single(s, r, o);
        } else {
            links.relate(s, r, o);
        }
    }
    m.links = links;
    m
}

fn relations(st: &dyn LongTermStore, scope: &Scope, name: &str, as_of: Option<i64>) -> Vec<String> {
    let Some(l) = st.entity_links(scope, name, as_of).unwrap() else {
        return Vec::new();
    };
    l.relations
        .iter()
        .map(|r: &GraphRelation| format!("{} {} {}", r.subject, r.relation, r.object))
        .collect()
}

pub fn graph_links_current_memories_within_walls(b: &dyn Backend) {
    let s = b.handle();
    let st = s.as_ref();
    let a = alice();
    let sister = add(st, &a, said("Anna is my sister", 0, &["Anna"], None));
    let job = add(
        st,
        &a,
        said(
            "Anna works at Globex",
            1,
            &["Anna", "Globex"],
            Some(("Anna", "works_at", "Globex", true)),
        ),
    );
    add(
        st,
        &a,
        said("Bob likes Initech", 2, &["Bob", "Initech"], None),
    );
    // Another user and another tenant name Anna too: never seen here.
    add(
        st,
        &Scope::user("bob"),
        said("Anna called", 0, &["Anna"], None),
    );
    let other = Scope::user("alice").with_tenant("acme");
    add(st, &other, said("Anna moved", 0, &["Anna", "Oslo"], None));

    let entities = st.graph_entities(&a, None).unwrap();
    assert_eq!(
        entities[0].name, "Anna",
        "most mentioned first: {entities:?}"
    );
    assert_eq!(entities[0].memories, 2);
    assert_eq!(entities[0].kind, EntityKind::Person, "the relation's kind");
    let globex = entities.iter().find(|e| e.name == "Globex").unwrap();
    assert_eq!(globex.kind, EntityKind::Organisation);
    assert!(entities.iter().all(|e| e.name != "Oslo"), "{entities:?}");

    let links = st.entity_links(&a, "anna", None).unwrap().unwrap();
    assert_eq!(links.entity.memories, 2);
    assert_eq!(relations(st, &a, "ANNA", None), ["Anna works_at Globex"]);
    assert_eq!(links.relations[0].memory_id, job);
    assert_eq!(links.relations[0].valid_from, T0 + DAY);
    assert_eq!(links.relations[0].valid_until, None);
    assert!(links.co_mentioned.iter().any(|e| e.name == "Globex"));
    let named: Vec<&str> = links.memories.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(named, [job.as_str(), sister.as_str()], "newest first");
    assert!(st.entity_links(&a, "Nobody", None).unwrap().is_none());
    assert_eq!(
        st.entity_links(&other, "anna", None)
            .unwrap()
            .unwrap()
            .entity
            .memories,
        1
    );

    // A deleted memory links nothing; its name, named by no current
    // memory, is not an entity any more.
    st.delete("default", &job, None).unwrap();
    assert!(relations(st, &a, "Anna", None).is_empty());
    assert!(st.entity_links(&a, "Globex", None).unwrap().is_none());
    assert!(st
        .graph_entities(&a, None)
        .unwrap()
        .iter()
        .all(|e| e.name != "Globex"));

    // Expansion: one hop from a memory to the others naming its entities.
    let visit = add(st, &a, said("Visited Anna in May", 3, &["Anna"], None));
    let limits = LinkLimits {
        max_entity_memories: 10,
        per_entity: 5,
    };
    let linked = st.linked(&a, &[visit.as_str()], &limits).unwrap();
    let reached: Vec<&str> = linked.iter().map(|l| l.record.id.as_str()).collect();
    assert_eq!(reached, [sister.as_str()], "{linked:?}");
    assert_eq!(linked[0].entity, "Anna");
    assert_eq!(linked[0].seed_id, visit);

    // forget takes the scope's memories and the names only they mentioned.
    st.forget(&a, true).unwrap();
    assert!(st.graph_entities(&a, None).unwrap().is_empty());
    assert_eq!(
        st.graph_entities(&Scope::user("bob"), None).unwrap().len(),
        1
    );
}

/// "Anna works at X" from `day`, a single-valued relation.
fn works(text: &str, day: i64, org: &str) -> NewMemory {
    said(
        text,
        day,
        &["Anna", org],
        Some(("Anna", "works_at", org, true)),
    )
}

pub fn single_valued_relations_end_and_as_of_reads_the_past(b: &dyn Backend) {
    let s = b.handle();
    let st = s.as_ref();
    let a = alice();
    add(st, &a, works("Anna works at Acme", 10, "Acme"));
    add(st, &a, works("Anna moved to Globex", 20, "Globex"));
    // A relation holding many objects at once is never ended by another.
    for (day, club) in [(11, "Chess Club"), (21, "Book Club")] {
        add(
            st,
            &a,
            said(
                &format!("Anna joined {club}"),
                day,
                &["Anna", club],
                Some(("Anna", "member_of", club, false)),
            ),
        );
    }
    assert_eq!(
        relations(st, &a, "Anna", None),
        [
            "Anna member_of Book Club",
            "Anna works_at Globex",
            "Anna member_of Chess Club",
        ],
        "the latest employer only"
    );
    let links = st.entity_links(&a, "Anna", None).unwrap().unwrap();
    assert_eq!(links.memories.len(), 4, "both memories stay current");

    // Written late about the past: Initech before Acme. It ends when Acme
    // began, and today's employer stays Globex.
    add(
        st,
        &a,
        works("Anna worked at Initech back then", 1, "Initech"),
    );
    let now = relations(st, &a, "Anna", None);
    assert!(now.contains(&"Anna works_at Globex".to_string()), "{now:?}");
    assert!(
        !now.iter()
            .any(|r| r.contains("Initech") || r.contains("Acme")),
        "{now:?}"
    );

    let at = |day: i64| {
        let mut r: Vec<String> = relations(st, &a, "Anna", Some(T0 + day * DAY))
            .into_iter()
            .filter(|r| r.contains("works_at"))
            .collect();
        r.sort();
        r
    };
    assert!(at(0).is_empty(), "before anything was true: {:?}", at(0));
    assert_eq!(at(5), ["Anna works_at Initech"]);
    assert_eq!(at(10), ["Anna works_at Acme"], "Acme began that day");
    assert_eq!(at(15), ["Anna works_at Acme"]);
    assert_eq!(at(25), ["Anna works_at Globex"]);
    let acme = st.entity_links(&a, "Acme", None).unwrap().unwrap();
    let ended = &acme.relations;
    assert!(ended.is_empty(), "no current relation of Acme's: {ended:?}");
    let then = st
        .entity_links(&a, "Acme", Some(T0 + 15 * DAY))
        .unwrap()
        .unwrap();
    assert_eq!(then.relations[0].valid_until, Some(T0 + 20 * DAY));

    // The graph as it was: on day 5 only Initech's memory was true.
    let names = |day: i64| -> Vec<String> {
        let mut n: Vec<String> = st
            .graph_entities(&a, Some(T0 + day * DAY))
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        n.sort();
        n
    };
    assert_eq!(names(5), ["Anna", "Initech"]);
    assert_eq!(names(12), ["Acme", "Anna", "Chess Club", "Initech"]);
}

/// What a read of the graph shows, now and on each of some days: the
/// entities (with kinds) and Anna's relations with their validity.
fn graph_seen(st: &dyn LongTermStore, scope: &Scope) -> Vec<String> {
    let mut seen = Vec::new();
    for at in [None, Some(5), Some(10), Some(15), Some(25)] {
        let as_of = at.map(|day| T0 + day * DAY);
        let mut names: Vec<String> = st
            .graph_entities(scope, as_of)
            .unwrap()
            .into_iter()
            .map(|e| format!("{} ({:?})", e.name, e.kind))
            .collect();
        names.sort();
        seen.push(format!("{at:?}: {}", names.join(", ")));
        if let Some(l) = st.entity_links(scope, "Anna", as_of).unwrap() {
            let mut rels: Vec<String> = l.relations.iter().map(|r| format!("{r:?}")).collect();
            rels.sort();
            seen.extend(rels);
        }
    }
    seen
}

/// A dump carries each memory's links, with every relation's validity as
/// the writes' reconciling left it; a restore into an emptied store gives
/// back the same graph (now and as of the past), and dumps the same lines.
pub fn a_dump_carries_the_graph(b: &dyn Backend) {
    let s = b.handle();
    let st = s.as_ref();
    let a = alice();
    add(st, &a, works("Anna works at Acme", 10, "Acme"));
    add(st, &a, works("Anna moved to Globex", 20, "Globex"));
    add(
        st,
        &a,
        works("Anna worked at Initech back then", 1, "Initech"),
    );
    add(
        st,
        &a,
        said(
            "Anna joined Chess Club",
            11,
            &["Anna", "Chess Club"],
            Some(("Anna", "member_of", "Chess Club", false)),
        ),
    );
    add(st, &a, said("Nothing named here", 3, &[], None));
    let before = graph_seen(st, &a);
    assert!(
        before
            .iter()
            .any(|l| l.contains("Initech") && l.contains("valid_until: Some")),
        "the late memory's relation ended when Acme began: {before:#?}"
    );
    let dump = |st: &dyn LongTermStore| {
        let mut memories = Vec::new();
        st.dump(None, true, &mut |l| {
            if let DumpLine::Memory(m) = l {
                memories.push(*m);
            }
            Ok(())
        })
        .unwrap();
        memories
    };
    let lines = dump(st);
    assert_eq!(lines.len(), 5);
    let unnamed = lines.iter().find(|m| m.record.text == "Nothing named here");
    assert!(unnamed.unwrap().links.is_empty());
    let json = serde_json::to_string(
        lines
            .iter()
            .find(|m| m.record.text.contains("Initech"))
            .unwrap(),
    )
    .unwrap();
    assert!(json.contains(r#""links":{"mentions":[{"name":"Anna","kind":"person"},{"name":"Initech","kind":"organisation"}],"relations":[{"subject":"Anna","relation":"works_at","object":"Initech","valid_from":"2026-01-02T00:00:00.000Z","valid_until":"2026-01-11T00:00:00.000Z"}]}"#), "{json}");

    st.forget(&a, true).unwrap();
    assert!(st.graph_entities(&a, None).unwrap().is_empty());
    // Links no write could have stored are refused before anything is.
    let (record, embedded, mut links) = lines[0].clone().into_parts();
    links.mentions.push(Mention {
        name: " ?! ".into(),
        kind: EntityKind::Person,
    });
    let bad = RestoreBatch {
        memories: vec![RestoredMemory {
            record,
            embedded: embedded.unwrap(),
            links,
        }],
        history: Vec::new(),
    };
    let err = st.restore(&bad).unwrap_err().to_string();
    assert!(err.contains("is not a name"), "{err}");
    assert!(st.graph_entities(&a, None).unwrap().is_empty());
    let mut batch = RestoreBatch::default();
    for m in lines.clone() {
        let (record, embedded, links) = m.into_parts();
        let embedded = embedded.expect("a dump with vectors has them");
        batch.memories.push(RestoredMemory {
            record,
            embedded,
            links,
        });
    }
    assert_eq!(st.restore(&batch).unwrap().memories, 5);
    let s = b.handle();
    assert_eq!(graph_seen(s.as_ref(), &a), before);
    assert_eq!(dump(s.as_ref()), lines);
    // Another user sees none of it.
    assert!(s
        .graph_entities(&Scope::user("bob"), None)
        .unwrap()
        .is_empty());
}
