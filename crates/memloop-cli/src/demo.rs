//! `memloop demo`: a scripted conversation over two sessions on the embedded
//! default, no network. Session 1 states facts and preferences; the store is
//! closed and reopened (as a new process would); session 2 asks about them.
//! Each turn shows what was retrieved, whether it was persisted and why, and
//! the input tokens against sending the whole history. Runs in the "demo"
//! tenant of the data directory, which it clears first.

use std::time::Instant;

use memloop::context::MESSAGE_OVERHEAD;
use memloop::{Config, MemoryLoop, Scope, TurnOutcome};

use crate::output::{printable, printable_lines, Output};

const SESSIONS: &[(&str, &[&str])] = &[
    (
        "demo-session-1",
        &[
            "Hi there!",
            "I'm vegetarian and allergic to peanuts.",
            "I work night shifts as a nurse at the city hospital.",
            "My daughter Emma starts school in September.",
            "I always book a window seat when I fly.",
            "Thanks, that's all for today!",
        ],
    ),
    (
        "demo-session-2",
        &[
            "Hello again!",
            "I am cooking dinner tonight: any foods I should avoid?",
            "When am I usually at work?",
            "Which seat should I pick on my flight to Lisbon?",
            "What's coming up for my daughter this autumn?",
        ],
    ),
];

pub fn run(config: &Config, out: &Output) -> anyhow::Result<()> {
    let started = Instant::now();
    let user = Scope::user("alice").with_tenant("demo");
    let mut history: Vec<String> = Vec::new();
    let mut turns = Vec::new();
    for (i, (session, inputs)) in SESSIONS.iter().enumerate() {
        // A fresh loop per session: the store is closed and reopened, as by a
        // new process, and the in-process buffer starts empty.
        let lp = MemoryLoop::open(config)?;
        if i == 0 {
            lp.memory().forget(&user, true)?;
        }
        lp.short_term().clear(&user.tenant, session)?;
        if !out.json {
            println!(
                "\n=== {session} (store opened from {})",
                config.data_dir.display()
            );
        }
        let scope = user.clone().with_session(*session);
        for input in *inputs {
            let outcome = lp.turn(&scope, input)?;
            let full = full_history_tokens(&lp, &history, input);
            history.push(input.to_string());
            if let Some(r) = &outcome.reply {
                history.push(r.clone());
            }
            if !out.json {
                print_turn(&outcome, input, full);
            }
            turns.push(turn_json(session, input, &outcome, full));
        }
    }
    if out.json {
        return out.json_value(&serde_json::json!({ "turns": turns }));
    }
    println!(
        "\nSession 2 never saw session 1's turns: what it knew came from the long-term store.\n\
         No LLM is configured, so no reply is generated; set [llm] in the config (or \
         MEMLOOP_LLM_PROVIDER and MEMLOOP_LLM_MODEL) and `memloop chat` talks to a model.\n\
         Total {:.1} s.",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// What sending every earlier turn would cost: system prompt, all turns, input.
fn full_history_tokens(lp: &MemoryLoop, history: &[String], input: &str) -> usize {
    let count = |s: &str| lp.tokens().count(s);
    count(&lp.config().system_prompt)
        + history
            .iter()
            .map(|t| count(t) + MESSAGE_OVERHEAD)
            .sum::<usize>()
        + count(input)
        + MESSAGE_OVERHEAD
}

fn turn_json(session: &str, input: &str, o: &TurnOutcome, full: usize) -> serde_json::Value {
    let retrieved: Vec<_> = o
        .trace
        .retrieved
        .iter()
        .map(|m| {
            serde_json::json!({"id": m.id, "memory": m.memory, "score": m.score, "included": m.included})
        })
        .collect();
    serde_json::json!({
        "session": session,
        "input": input,
        "reply": o.reply,
        "retrieved": retrieved,
        "persisted": o.trace.gate.persist,
        "reason": o.trace.gate.reason,
        "writes": o.trace.writes,
        "input_tokens": o.trace.tokens.input.total_input,
        "full_history_tokens": full,
    })
}

fn print_turn(o: &TurnOutcome, input: &str, full: usize) {
    let t = &o.trace;
    println!("\nuser> {input}");
    for m in t.retrieved.iter().filter(|m| m.included).take(3) {
        println!("  recalled  {:.3}  {}", m.score, printable(&m.memory));
    }
    if let Some(r) = &o.reply {
        println!("assistant> {}", printable_lines(r));
    }
    let verdict = if t.gate.persist {
        "persisted"
    } else {
        "not persisted"
    };
    println!("  {verdict}: {}", t.gate.reason);
    println!(
        "  input tokens {} (full history: {full}); loop overhead {:.2} ms",
        t.tokens.input.total_input,
        t.timings.overhead_us as f64 / 1e3
    );
}
