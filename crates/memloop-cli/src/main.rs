//! The `memloop` command line.

mod chat;
mod commands;
mod demo;
mod demo_layers;
mod graph;
mod mcp;
mod output;
mod procedures;
mod remember;
mod serve;
mod session;
mod soak;
mod timeline;
mod transfer;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use memloop::{Config, Error, ErrorClass, Lookup};

#[derive(Parser)]
#[command(
    name = "memloop",
    version,
    about = "Memory engine for LLM agents",
    propagate_version = true
)]
struct Cli {
    /// Data directory (default: the platform data dir, e.g. ~/.local/share/memloop).
    #[arg(long, global = true, env = "MEMLOOP_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Long-term store on PostgreSQL (postgres://USER@HOST:PORT/DB) instead
    /// of the data directory; also `[store] url`.
    #[arg(long, global = true, env = "MEMLOOP_STORE")]
    store: Option<String>,
    /// Machine-readable JSON on stdout (and nothing else there).
    #[arg(long, global = true)]
    json: bool,
    /// Log each turn's memory_retrieval and memory_write events to stderr.
    #[arg(long, global = true, value_enum)]
    log_format: Option<LogFormat>,
    /// Configuration file (TOML); environment variables override it.
    #[arg(long, global = true, env = "MEMLOOP_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

/// Whose memories: at least a user or an agent for writes and searches.
#[derive(Args, Clone, Default)]
pub struct ScopeArgs {
    #[arg(long)]
    pub user: Option<String>,
    #[arg(long)]
    pub agent: Option<String>,
    /// Session (run) id: narrows to one session.
    #[arg(long)]
    pub session: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Store text as memories, as given (no extraction).
    Add(commands::AddArgs),
    /// Run the write pipeline on a user turn: gate, extract facts, reconcile (ADD/UPDATE/DELETE/NOOP).
    Remember(remember::RememberArgs),
    /// Hybrid search (meaning + keywords) in a scope.
    Search(commands::SearchArgs),
    /// Show one current memory by id (a deleted, superseded or expired one: not found, exit 3).
    Get {
        id: String,
        /// Show it even if it was deleted, superseded or expired (with its status, valid_until, superseded_by).
        #[arg(long)]
        include_deleted: bool,
    },
    /// List the memories of a scope, newest first.
    List(commands::ListArgs),
    /// Replace a memory's text (recorded in history).
    Update(commands::UpdateArgs),
    /// Delete a memory: `get` no longer finds it; its history stays.
    Delete { id: String },
    /// Every change to one memory, oldest first.
    History { id: String },
    /// Delete every memory of a scope (--purge also drops their history and erases their text from every file of the data directory).
    Forget {
        #[command(flatten)]
        scope: ScopeArgs,
        #[arg(long)]
        purge: bool,
    },
    /// The people, places, organisations, pets and things a scope's memories name.
    Entities(graph::EntitiesArgs),
    /// One entity: its relations, the entities named with it, the memories naming it.
    Links(graph::LinksArgs),
    /// A user's sessions on the time axis, newest first: ordinal (1 = the first), start, end, memories.
    Sessions(timeline::SessionsArgs),
    /// The procedural layer: record runs of a task, find procedures for one.
    #[command(subcommand)]
    Procedures(procedures::ProceduresCommand),
    /// Counts and sizes of the store.
    Stats,
    /// Re-embed every memory with the configured embedder.
    Reindex,
    /// Write the store (or one user) as JSONL to stdout: a backup, or a move to another backend (docs/export.md).
    Export(transfer::ExportArgs),
    /// Read a file written by `export` into the store; what is stored already is skipped.
    Import(transfer::ImportArgs),
    /// Replay queued long-term writes, save derived indexes, prune the change log.
    Gc,
    /// A scripted two-session conversation through the loop, offline: what was recalled, kept and why.
    Demo {
        /// `three`: the procedural layer's demo instead (a procedure and a
        /// pitfall recalled in a later session, in a three-layer context).
        #[arg(long, default_value = "two", value_parser = ["two", "three"])]
        layers: String,
    },
    /// Talk through the loop (a REPL); offline it shows the assembled context.
    Chat(chat::ChatArgs),
    /// Speed figures: embedding, add, import, search, recall, open time, memory.
    Bench(memloop_bench::bench::BenchArgs),
    /// Inspect and edit a shared short-term buffer (--short-term redis://…).
    Session(session::SessionArgs),
    /// Retrieval quality on long conversations (LoCoMo, or the generic JSONL format).
    #[command(subcommand)]
    Eval(memloop_bench::eval::EvalCommand),
    /// Serve the REST API (Mem0-style routes, the loop, sessions, metrics).
    Serve(serve::ServeArgs),
    /// Serve the memory tools over MCP on stdin/stdout (for Claude Code, Cursor, OpenClaw).
    Mcp,
    /// Drive a mixed load against a `memloop serve` on loopback and check it holds (scripts/soak.sh, docs/soak.md).
    Soak(soak::SoakArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    if !matches!(cli.command, Command::Serve(_)) {
        quiet_on_closed_stdout();
    }
    let json = cli.json;
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let (code, message, class) = describe(&e);
            report(json && !e.is::<output::Reported>(), code, &message);
            ExitCode::from(exit_code(class))
        }
    }
}

fn report(json: bool, code: &str, message: &str) {
    eprintln!("error: {}", one_line(message));
    if json {
        let body = serde_json::json!({"error": {"code": code, "message": message}});
        println!("{body}");
    }
}

/// Help and version print as usual; a usage mistake becomes the same one-line
/// error (and JSON body with --json) as every other error, exit code 2.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        };
    }
    let rendered = e.render().to_string();
    let first = rendered.lines().next().unwrap_or("invalid arguments");
    let message = format!(
        "{} (see `memloop --help`)",
        first.trim_start_matches("error: ")
    );
    report(
        std::env::args().any(|a| a == "--json"),
        "invalid_input",
        &message,
    );
    ExitCode::from(2)
}

fn describe(e: &anyhow::Error) -> (&'static str, String, Option<ErrorClass>) {
    match e.downcast_ref::<Error>() {
        Some(me) => (me.code(), me.to_string(), Some(me.class())),
        None => ("error", format!("{e:#}"), None),
    }
}

/// The message on one line: control characters (a newline in an id or a
/// file name echoed back) are escaped, so stderr gets exactly one line.
fn one_line(message: &str) -> String {
    output::printable(message).into_owned()
}

/// `memloop list | head -1`: when the reader goes away, end quietly as other
/// Unix tools do, instead of panicking in `println!` (exit 101). Rust starts
/// programs with SIGPIPE ignored, so a write to a closed pipe returns EPIPE
/// and `println!` panics; restoring the default lets the kernel end the
/// process. The server keeps ignoring it: its sockets must never end it.
#[allow(unsafe_code)]
fn quiet_on_closed_stdout() {
    // SAFETY: `signal` with SIG_DFL installs no handler code; it is called once,
    // before any thread is started, so no other thread races on the disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// 1 other, 2 invalid input, 3 not found, 4 damaged or mismatched store or model, 5 retry may help.
fn exit_code(class: Option<ErrorClass>) -> u8 {
    match class {
        Some(ErrorClass::InvalidInput) => 2,
        Some(ErrorClass::NotFound) => 3,
        Some(ErrorClass::Corruption) => 4,
        Some(ErrorClass::Transient) => 5,
        Some(ErrorClass::Internal) | None => 1,
    }
}

/// Structured events to stderr, so stdout stays the command's output.
fn init_logs(format: LogFormat) {
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(tracing::Level::INFO);
    // A second subscriber cannot be installed; the first one stays.
    let _ = match format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let mut config = Config::load(cli.config.as_deref())?;
    if let Some(dir) = cli.data_dir {
        config.data_dir = dir;
    }
    if let Some(url) = cli.store {
        config.store.url = Some(url).filter(|u| !u.is_empty());
    }
    if !matches!(
        cli.command,
        Command::Serve(_) | Command::Mcp | Command::Chat(_)
    ) {
        // A one-shot command ends long before an interval would pass: no
        // background sweeper (`memloop gc` sweeps on demand).
        config.forgetting.gc_interval = None;
    }
    let out = output::Output { json: cli.json };
    if let Some(format) = cli.log_format {
        init_logs(format);
    }
    match cli.command {
        Command::Add(a) => commands::add(&config, &out, a),
        Command::Remember(a) => remember::run(&config, &out, a),
        Command::Search(a) => commands::search(&config, &out, a),
        Command::Get {
            id,
            include_deleted,
        } => commands::get(&config, &out, &id, Lookup::include_deleted(include_deleted)),
        Command::List(a) => commands::list(&config, &out, a),
        Command::Update(a) => commands::update(&config, &out, a),
        Command::Delete { id } => commands::delete(&config, &out, &id),
        Command::History { id } => commands::history(&config, &out, &id),
        Command::Forget { scope, purge } => commands::forget(&config, &out, &scope, purge),
        Command::Entities(a) => graph::entities(&config, &out, a),
        Command::Links(a) => graph::links(&config, &out, a),
        Command::Sessions(a) => timeline::run(&config, &out, a),
        Command::Procedures(c) => procedures::run(&config, &out, c),
        Command::Stats => commands::stats(&config, &out),
        Command::Reindex => commands::reindex(&config, &out),
        Command::Export(a) => transfer::export(&config, a),
        Command::Import(a) => transfer::import(&config, &out, a),
        Command::Gc => commands::gc(&config, &out),
        Command::Demo { layers } if layers == "three" => demo_layers::run(&config, &out),
        Command::Demo { .. } => demo::run(&config, &out),
        Command::Chat(a) => chat::run(&config, &out, a),
        Command::Bench(a) => memloop_bench::bench::run(&config, &out.tools(), a),
        Command::Eval(c) => memloop_bench::eval::run(&config, &out.tools(), c),
        Command::Session(a) => session::run(&config, &out, a),
        Command::Serve(a) => serve::run(&config, cli.config.as_deref(), cli.log_format, a),
        Command::Mcp => mcp::run(&config),
        Command::Soak(a) => soak::run(&out, a),
    }
}
