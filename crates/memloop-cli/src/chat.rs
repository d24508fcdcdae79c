//! `memloop chat`: the loop as a REPL. Each line is a turn; the reply comes
//! from the configured model. Without one, the chat runs offline and shows
//! the context that would be sent, so memory can be tried with no key.

use std::io::{BufRead, Write};

use clap::Args;
use memloop::{Config, MemoryLoop, Scope};

use crate::output::{printable, printable_lines, Output};

#[derive(Args)]
pub struct ChatArgs {
    #[arg(long, default_value = "me")]
    user: String,
    /// Session id (default: a new one per run); reuse it to resume a shared session.
    #[arg(long)]
    session: Option<String>,
    /// A shared short-term buffer, e.g. redis://127.0.0.1:6379.
    #[arg(long, env = "MEMLOOP_SHORT_TERM")]
    short_term: Option<String>,
    /// Print each turn's trace (what was retrieved, written and why).
    #[arg(long)]
    trace: bool,
}

pub fn run(config: &Config, out: &Output, args: ChatArgs) -> anyhow::Result<()> {
    let mut config = config.clone();
    if args.short_term.is_some() {
        config.short_term.url = args.short_term.clone();
    }
    let lp = MemoryLoop::open(&config)?;
    let session = args
        .session
        .unwrap_or_else(|| format!("chat-{}", chrono::Utc::now().format("%Y%m%dT%H%M%S")));
    let scope = Scope::user(&args.user).with_session(&session);
    if config.llm.is_none() {
        eprintln!(
            "no LLM configured: running offline, showing the context that would be sent instead of a reply.\n\
             To talk to a model, add to the config file (--config FILE):\n  \
             [llm]\n  provider = \"anthropic\"   # or \"openai\" (OpenAI, Ollama, vLLM, llama.cpp: set base_url)\n  \
             model = \"claude-sonnet-4-5\"\n\
             and export ANTHROPIC_API_KEY (or OPENAI_API_KEY); or set MEMLOOP_LLM_PROVIDER and MEMLOOP_LLM_MODEL."
        );
    }
    if !out.json {
        eprintln!(
            "session {session}, user {}; an empty line or Ctrl-D ends.",
            args.user
        );
    }
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    loop {
        if !out.json {
            print!("you> ");
            std::io::stdout().flush()?;
        }
        let Some(line) = lines.next().transpose()? else {
            break;
        };
        let line = line.trim();
        if line.is_empty() || line == "/quit" {
            break;
        }
        // A bad line (too long, say) is reported and the chat goes on.
        let outcome = match lp.turn(&scope, line) {
            Ok(o) => o,
            Err(e) => {
                eprintln!("error: {e}");
                continue;
            }
        };
        if out.json {
            println!(
                "{}",
                serde_json::json!({"reply": outcome.reply, "trace": outcome.trace})
            );
            continue;
        }
        match (&outcome.reply, &outcome.request) {
            (Some(r), _) => println!("assistant> {}", printable_lines(r)),
            (None, Some(req)) => {
                println!(
                    "--- context (offline) ---\n[system]\n{}",
                    printable_lines(&req.system)
                );
                for m in &req.messages {
                    println!("[{}] {}", m.role, printable_lines(&m.content));
                }
                println!("---");
            }
            (None, None) => {}
        }
        let t = &outcome.trace;
        if args.trace {
            for m in &t.retrieved {
                let mark = if m.included { "in prompt" } else { "left out" };
                println!(
                    "  retrieved {:.3} ({mark}) {}",
                    m.score,
                    printable(&m.memory)
                );
            }
            for w in &t.writes {
                println!(
                    "  {:?} {} ({})",
                    w.event,
                    printable(&w.memory),
                    printable(&w.reason)
                );
            }
        }
        println!(
            "  [{} input tokens; {}: {}]",
            t.tokens.input.total_input,
            if t.gate.persist {
                "remembered"
            } else {
                "not kept"
            },
            t.gate.reason
        );
    }
    Ok(())
}
