//! `memloop session append|show|clear`: inspect and edit a short-term buffer.
//! The in-process buffer lives and dies with one process, so these commands
//! work on a shared backend: `--short-term redis://…`.

use clap::{Args, Subcommand};
use memloop::short_term::{Role, Turn};
use memloop::{Config, Error, Scope, ShortTermConfig};

use crate::output::{printable, Output};

#[derive(Args)]
pub struct SessionArgs {
    /// The shared short-term buffer, e.g. redis://127.0.0.1:6379
    /// (default: `[short_term] url`).
    #[arg(long, global = true, env = "MEMLOOP_SHORT_TERM")]
    short_term: Option<String>,
    /// Seconds an idle session is kept (0: forever; default: `[short_term]
    /// ttl_secs`, a day). A session keeps its newest `[short_term]
    /// max_turns_stored` turns.
    #[arg(long, global = true)]
    ttl_secs: Option<u64>,
    #[command(subcommand)]
    command: SessionCommand,
}

#[derive(Subcommand)]
enum SessionCommand {
    /// Append one turn.
    Append {
        #[arg(long)]
        session: String,
        /// Whose session it is: recorded with the turn, so that
        /// `memloop forget --user U --purge` clears it too.
        #[arg(long)]
        user: Option<String>,
        #[arg(long, default_value = "user")]
        role: String,
        text: Vec<String>,
    },
    /// Print a session's turns, oldest first.
    Show {
        #[arg(long)]
        session: String,
    },
    /// Forget a session's turns.
    Clear {
        #[arg(long)]
        session: String,
    },
}

pub fn run(config: &Config, out: &Output, a: SessionArgs) -> anyhow::Result<()> {
    let Some(url) = a.short_term.or_else(|| config.short_term.url.clone()) else {
        return Err(Error::invalid(
            "the in-process short-term buffer lives inside one process: pass --short-term redis://HOST:PORT (or MEMLOOP_SHORT_TERM) to work on a shared one",
        )
        .into());
    };
    let buffer = ShortTermConfig {
        url: Some(url),
        ttl_secs: a.ttl_secs.unwrap_or(config.short_term.ttl_secs),
        ..config.short_term.clone()
    }
    .build()?;
    let tenant = Scope::DEFAULT_TENANT;
    match a.command {
        SessionCommand::Append {
            session,
            user,
            role,
            text,
        } => {
            if let Some(u) = &user {
                Scope::user(u.as_str()).validate()?;
            }
            let turns = [Turn::new(Role::parse(&role)?, text.join(" "))];
            let len = buffer.append_for(tenant, user.as_deref(), &session, &turns)?;
            if out.json {
                return out.json_value(&serde_json::json!({"session": session, "turns": len}));
            }
            println!("session {session}: {len} turns");
        }
        SessionCommand::Show { session } => {
            let turns = buffer.read(tenant, &session)?;
            if out.json {
                return out.json_value(&serde_json::json!({ "turns": turns }));
            }
            for t in &turns {
                println!("{:<9} {}", t.role.as_str(), printable(&t.content));
            }
        }
        SessionCommand::Clear { session } => {
            buffer.clear(tenant, &session)?;
            if out.json {
                return out.json_value(&serde_json::json!({"session": session, "cleared": true}));
            }
            println!("session {session} cleared");
        }
    }
    Ok(())
}
