//! `memloop mcp`: the memory tools over the Model Context Protocol on
//! stdin/stdout, for MCP clients that start memloop as a subprocess
//! (Claude Code, Cursor, OpenClaw). stdout carries only the protocol;
//! messages go to stderr. Tools and client setup: docs/mcp.md.

use memloop::Config;

pub fn run(config: &Config) -> anyhow::Result<()> {
    eprintln!(
        "memloop mcp: serving {} over stdio; close stdin to stop",
        config.data_dir.display()
    );
    match memloop_mcp::run_stdio(config) {
        Ok(()) => Ok(()),
        // Keep memloop's own errors typed, so the exit code says what kind.
        Err(memloop_mcp::ServeError::Memloop(e)) => Err(e.into()),
        Err(e) => Err(e.into()),
    }
}
