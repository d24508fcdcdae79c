//! The procedural layer through the public API, on the real SQLite store and
//! the real model: recording and merging runs (with history), pitfalls,
//! ranking, tool calls of a recorded exchange, and three-layer assembly.

use std::sync::Arc;

use memloop::procedures::from_messages;
use memloop::{
    Event, Exchanged, InProcessBuffer, Kind, Layers, LoopConfig, MemoryLoop, NewMemory, Outcome,
    ProcedureQuery, ProcedureRun, Scope, Step,
};
use serde_json::json;

fn step(args: &str, ok: bool, error: Option<&str>) -> Step {
    Step {
        tool: "shell".into(),
        args: args.into(),
        result: String::new(),
        ok,
        error: error.map(str::to_string),
    }
}

fn run(task: &str, steps: Vec<Step>, outcome: Outcome, id: &str) -> ProcedureRun {
    ProcedureRun {
        task: task.into(),
        steps,
        outcome,
        error: None,
        at: None,
        execution_id: Some(id.into()),
    }
}

fn good() -> Vec<Step> {
    vec![
        step("git pull", true, None),
        step("sudo -u deploy npm run deploy", true, None),
    ]
}

fn bad() -> Vec<Step> {
    vec![
        step("git pull", true, None),
        step("npm run deploy", false, Some("EACCES")),
    ]
}

#[test]
fn success_failure_success_merge_into_one_procedure_with_history() {
    let dir = tempfile::tempdir().unwrap();
    let m = crate::open(dir.path());
    let ops = Scope::user("ops").with_session("monday");
    let task = "deploy the web app";
    let a = m
        .record_procedure(&ops, run(task, good(), Outcome::Success, "r1"))
        .unwrap();
    assert_eq!(a.event, Event::Add);
    // Another session, a paraphrase of the task: the same procedure.
    let tuesday = Scope::user("ops").with_session("tuesday");
    let b = m
        .record_procedure(
            &tuesday,
            run("deploy the webapp", bad(), Outcome::Failure, "r2"),
        )
        .unwrap();
    assert_eq!(b.event, Event::Update, "{b:?}");
    assert_eq!(b.previous_id.as_deref(), Some(a.id.as_str()));
    let c = m
        .record_procedure(&tuesday, run(task, good(), Outcome::Success, "r3"))
        .unwrap();
    assert_eq!(c.event, Event::Update);
    assert_eq!((c.procedure.successes, c.procedure.failures), (2, 1));
    assert_eq!(c.procedure.last_outcome, Outcome::Success);
    assert_eq!(
        c.procedure.pitfalls[0].sentence(),
        "`shell npm run deploy` failed with EACCES; `shell sudo -u deploy npm run deploy` worked"
    );
    // A replay of r3 counts nothing.
    let replay = m
        .record_procedure(&tuesday, run(task, good(), Outcome::Success, "r3"))
        .unwrap();
    assert_eq!(replay.event, Event::Noop);
    assert_eq!(replay.id, c.id);

    // One current procedure; the versions are in history.
    let current = m
        .list(&memloop::ListQuery {
            scope: Scope::user("ops"),
            kinds: vec![Kind::Procedure],
            limit: 100,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(current.len(), 1, "{current:?}");
    let history = m.history(&a.id).unwrap();
    assert!(
        history.iter().any(|h| h.event == Event::Update),
        "{history:?}"
    );

    // A different task is a procedure of its own.
    let other = m
        .record_procedure(
            &ops,
            run(
                "rotate the database password",
                good(),
                Outcome::Success,
                "r4",
            ),
        )
        .unwrap();
    assert_eq!(other.event, Event::Add);
}

#[test]
fn ranking_multiplies_similarity_success_and_recency() {
    let dir = tempfile::tempdir().unwrap();
    let m = crate::open(dir.path());
    let ops = Scope::user("ops");
    // Two procedures for near tasks: one that keeps failing, one that works.
    for (i, o) in [Outcome::Failure, Outcome::Failure, Outcome::Failure]
        .iter()
        .enumerate()
    {
        m.record_procedure(
            &ops,
            run("restart the nginx web server", bad(), *o, &format!("f{i}")),
        )
        .unwrap();
    }
    for i in 0..3 {
        m.record_procedure(
            &ops,
            run(
                "restart the web server",
                good(),
                Outcome::Success,
                &format!("s{i}"),
            ),
        )
        .unwrap();
    }
    let hits = m
        .search_procedures(&ProcedureQuery::new(
            ops.clone(),
            "restart the nginx web server",
        ))
        .unwrap();
    assert_eq!(hits.len(), 2, "{hits:?}");
    let [best, worst] = [&hits[0], &hits[1]];
    // The failing one is the closer match, and still ranks second.
    assert!(
        worst.scores.similarity >= best.scores.similarity,
        "{hits:?}"
    );
    assert_eq!(best.procedure.as_ref().unwrap().successes, 3);
    assert!((worst.scores.success_rate - 0.2).abs() < 1e-6);
    assert!((best.scores.success_rate - 0.8).abs() < 1e-6);
    for h in &hits {
        let s = h.scores;
        assert!((s.score - s.similarity * s.success_rate * s.recency).abs() < 1e-6);
        assert!(s.recency > 0.99, "just ran: {s:?}");
    }
    // An unrelated task finds nothing by meaning alone.
    let none = m
        .search_procedures(&ProcedureQuery::new(ops, "what is my sister's name"))
        .unwrap();
    assert!(none.is_empty(), "{none:?}");
}

#[test]
fn bad_runs_are_refused_naming_the_field_and_store_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let m = crate::open(dir.path());
    let ops = Scope::user("ops");
    for (doc, field) in [
        (
            json!({"task": "", "steps": [{"tool": "x"}], "outcome": "success"}),
            "task",
        ),
        (
            json!({"task": "t", "steps": [], "outcome": "success"}),
            "steps",
        ),
        (
            json!({"task": "t", "steps": [{"tool": "x"}], "outcome": "meh"}),
            "outcome",
        ),
        (
            json!({"task": "t", "steps": [{"args": "x"}], "outcome": "success"}),
            "tool",
        ),
        (
            json!({"task": "t", "steps": [{"tool": "x", "colour": 1}], "outcome": "success"}),
            "colour",
        ),
    ] {
        let err = ProcedureRun::from_json(doc.clone())
            .unwrap_err()
            .to_string();
        assert!(err.contains(field), "{doc}: {err}");
    }
    let mut long = run("t", good(), Outcome::Success, "x");
    long.steps[0].result = "x".repeat(5000);
    assert!(m
        .record_procedure(&ops, long)
        .unwrap_err()
        .to_string()
        .contains("steps[0].result"));
    assert_eq!(
        m.count(&memloop::ListQuery {
            scope: ops,
            limit: 100,
            ..Default::default()
        })
        .unwrap(),
        0
    );
}

fn three_layers(memory: memloop::Memory) -> MemoryLoop {
    let cfg = LoopConfig {
        layers: Layers::Three,
        ..LoopConfig::default()
    };
    MemoryLoop::new(Arc::new(memory), Arc::new(InProcessBuffer::new()), cfg).unwrap()
}

#[test]
fn a_recorded_exchange_with_tool_calls_is_recalled_with_its_pitfall_in_its_own_section() {
    let dir = tempfile::tempdir().unwrap();
    let lp = three_layers(crate::open(dir.path()));
    let s1 = Scope::user("dev").with_session("s1");
    let messages = [
        json!({"role": "user", "content": "Deploy the web app to production."}),
        json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": "a", "name": "shell", "input": {"command": "npm run deploy"}}]}),
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": "EACCES: permission denied", "is_error": true}]}),
        json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": "b", "name": "shell", "input": {"command": "sudo -u deploy npm run deploy"}}]}),
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b", "content": "deployed"}]}),
        json!({"role": "assistant", "content": "Deployed."}),
    ];
    let parsed = from_messages(&messages).unwrap();
    let turns = memloop::said_at(parsed.messages, None).unwrap();
    let exchange = Exchanged {
        turn_id: Some("t1"),
        messages: &turns,
    };
    let rec = lp
        .record_with_tools(&s1, exchange, &parsed.tool_calls)
        .unwrap();
    let w = rec
        .trace
        .writes
        .iter()
        .find(|w| w.kind == Kind::Procedure)
        .unwrap();
    assert_eq!(w.event, Event::Add, "{:?}", rec.trace);
    // A replay of the same exchange counts the run once.
    let again = lp
        .record_with_tools(&s1, exchange, &parsed.tool_calls)
        .unwrap();
    let w2 = again
        .trace
        .writes
        .iter()
        .find(|w| w.kind == Kind::Procedure)
        .unwrap();
    assert_eq!(w2.event, Event::Noop);
    lp.memory()
        .add(
            &Scope::user("dev"),
            NewMemory::text("User deploys from the office VPN"),
        )
        .unwrap();

    let s2 = Scope::user("dev").with_session("s2");
    let (request, trace) = lp.context(&s2, "How do I deploy the web app?").unwrap();
    let procs = request.system.find("How tasks were done before").unwrap();
    let section = &request.system[procs..];
    assert!(
        section.contains("sudo -u deploy npm run deploy"),
        "{}",
        request.system
    );
    assert!(
        section.contains("pitfall: last time `shell npm run deploy` failed with EACCES"),
        "{}",
        request.system
    );
    // Each section has its place in the trace, within budget.
    let kinds: Vec<Kind> = trace.layers.iter().map(|l| l.layer).collect();
    assert_eq!(kinds, [Kind::Fact, Kind::Procedure, Kind::Episode]);
    let used: usize = trace.layers.iter().map(|l| l.tokens).sum();
    assert_eq!(used, trace.tokens.input.memories);
    assert!(used <= lp.config().budget.memory_tokens);
    let p = trace
        .retrieved
        .iter()
        .find(|m| m.kind == Kind::Procedure)
        .unwrap();
    assert!(p.included && p.procedure.is_some(), "{p:?}");
    assert!(trace.layers[1].included == 1);
}

#[test]
fn two_layer_mode_keeps_one_block_and_no_layers_in_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let memory = crate::open(dir.path());
    memory
        .add(
            &Scope::user("dev"),
            NewMemory::text("User deploys from the office VPN"),
        )
        .unwrap();
    let lp = MemoryLoop::new(
        Arc::new(memory),
        Arc::new(InProcessBuffer::new()),
        LoopConfig::default(),
    )
    .unwrap();
    let (request, trace) = lp
        .context(&Scope::user("dev").with_session("s"), "how do I deploy?")
        .unwrap();
    assert!(request.system.contains(memloop::context::MEMORY_HEADING));
    assert!(!request.system.contains("How tasks were done before"));
    assert!(trace.layers.is_empty());
    let v = serde_json::to_value(&trace).unwrap();
    assert!(v.get("layers").is_none());
    assert!(v["retrieved"][0].get("procedure").is_none());
}

/// The line between "the same task" and "another task" (SAME_TASK_COSINE),
/// measured on the real model: rewordings merge, other targets do not.
#[test]
fn the_same_task_line_separates_rewordings_from_other_tasks() {
    let e = crate::embedder();
    let cos = |a: &str, b: &str| {
        let (a, b) = (
            memloop::procedures::task_key(a),
            memloop::procedures::task_key(b),
        );
        let v = e.embed_batch(&[&a, &b]).unwrap();
        v[0].iter().zip(&v[1]).map(|(x, y)| x * y).sum::<f32>()
    };
    let line = memloop::procedures::SAME_TASK_COSINE;
    for (a, b) in [
        ("deploy the web app", "deploy the webapp"),
        ("deploy the web app", "Deploy the web app."),
        ("restart the web server", "restart the webserver"),
    ] {
        let c = cos(a, b);
        println!("same    {c:.3}  {a:?} / {b:?}");
        assert!(c >= line, "{a:?} / {b:?}: {c}");
    }
    for (a, b) in [
        ("deploy the web app", "deploy the api server"),
        ("deploy the web app", "roll back the web app"),
        ("restart the web server", "restart the nginx web server"),
        ("rotate the database password", "reset the database"),
    ] {
        let c = cos(a, b);
        println!("differ  {c:.3}  {a:?} / {b:?}");
        assert!(c < line, "{a:?} / {b:?}: {c}");
    }
}
