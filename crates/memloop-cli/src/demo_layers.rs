//! `memloop demo --layers three`: an agent that deployed a web app recalls
//! how, and what failed, in a later session; offline. Session 1 records an
//! exchange whose tool calls (OpenAI's shape) failed with EACCES and then
//! worked as the deploy user; session 2 records a clean run (Anthropic's
//! shape); session 3 asks again, and the three-layer context shows the
//! procedure with its pitfall in a section of its own.

use memloop::procedures::from_messages;
use memloop::{said_at, Config, Exchanged, Layers, MemoryLoop, Scope};
use serde_json::{json, Value};

use crate::output::{printable, Output};

const ASK: &str = "The web app is down again after the release. How do I deploy the web app?";

fn first_session() -> Vec<Value> {
    vec![
        json!({"role": "user", "content": "Please deploy the web app to production."}),
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{\"command\":\"git pull origin main\"}"}}]}),
        json!({"role": "tool", "tool_call_id": "c1", "content": "Already up to date."}),
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "c2", "type": "function", "function": {"name": "shell", "arguments": "{\"command\":\"npm run deploy\"}"}}]}),
        json!({"role": "tool", "tool_call_id": "c2", "content": "Error: EACCES: permission denied, open '/srv/web/releases'"}),
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "c3", "type": "function", "function": {"name": "shell", "arguments": "{\"command\":\"sudo -u deploy npm run deploy\"}"}}]}),
        json!({"role": "tool", "tool_call_id": "c3", "content": "deployed release 2026.11.30 to /srv/web"}),
        json!({"role": "assistant", "content": "Deployed: npm run deploy needs the deploy user."}),
    ]
}

fn second_session() -> Vec<Value> {
    vec![
        json!({"role": "user", "content": "Deploy the web app to production, please."}),
        json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "shell", "input": {"command": "git pull origin main"}}]}),
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "Fast-forward"}]}),
        json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": "t2", "name": "shell", "input": {"command": "sudo -u deploy npm run deploy"}}]}),
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "deployed release 2026.12.01"}]}),
        json!({"role": "assistant", "content": "Deployed the hotfix."}),
    ]
}

pub fn run(config: &Config, out: &Output) -> anyhow::Result<()> {
    let mut config = config.clone();
    config.turn.layers = Layers::Three;
    let user = Scope::user("dev").with_tenant("demo-layers");
    let mut report = Vec::new();
    for (i, messages) in [first_session(), second_session()].iter().enumerate() {
        // A fresh loop per session, as a new process would open it.
        let lp = MemoryLoop::open(&config)?;
        if i == 0 {
            lp.memory().forget(&user, true)?;
        }
        let session = format!("deploy-{}", i + 1);
        let scope = user.clone().with_session(&session);
        lp.short_term().clear(&scope.tenant, &session)?;
        if i == 0 {
            // A fact and an episode, so every layer has something to say.
            lp.turn(
                &scope,
                "I work on the platform team; production runs on the host web-01.",
            )?;
        }
        let parsed = from_messages(messages)?;
        let turns = said_at(parsed.messages, None)?;
        let exchange = Exchanged {
            turn_id: Some(&session),
            messages: &turns,
        };
        let recorded = lp.record_with_tools(&scope, exchange, &parsed.tool_calls)?;
        let procedure = recorded
            .trace
            .writes
            .iter()
            .find(|w| w.kind == memloop::Kind::Procedure);
        if !out.json {
            println!(
                "\n=== {session}: the agent ran {} tool calls",
                parsed.tool_calls.len()
            );
            for c in &parsed.tool_calls {
                let mark = if c.is_error { "failed" } else { "ok" };
                println!("  {mark:<6} {} {}", c.name, printable(&c.step().args));
            }
            if let Some(w) = procedure {
                println!("  {} procedure: {}", w.event.as_str(), printable(&w.reason));
            }
        }
        report.push(json!({"session": session, "procedure": procedure}));
    }

    let lp = MemoryLoop::open(&config)?;
    let scope = user.clone().with_session("deploy-3");
    lp.short_term().clear(&scope.tenant, "deploy-3")?;
    let (request, trace) = lp.context(&scope, ASK)?;
    if out.json {
        return out.json_value(&json!({
            "recorded": report,
            "context": {"system": request.system, "layers": trace.layers, "retrieved": trace.retrieved},
        }));
    }
    println!(
        "\n=== deploy-3 (a new session)\nuser> {ASK}\n\nthe system prompt the model would get:"
    );
    for line in request.system.lines() {
        println!("  | {}", printable(line));
    }
    println!("\nsections (tokens used / share of the memory budget):");
    for l in &trace.layers {
        println!(
            "  {:<9} {:>4} / {:>4} tokens, {} of {} retrieved included",
            l.layer.as_str(),
            l.tokens,
            l.budget_tokens,
            l.included,
            l.retrieved
        );
    }
    println!("\nSession 3 never saw sessions 1 and 2: the steps and the pitfall came from the procedural layer.");
    Ok(())
}
