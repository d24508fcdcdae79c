//! How the tools print: a table on stdout and progress bars on stderr, or
//! with `--json` one JSON document on stdout and no bars.

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

/// Where a tool's figures go (the CLI builds it from `--json`).
pub struct Output {
    pub json: bool,
}

impl Output {
    /// One JSON document on stdout.
    pub fn json_value<T: Serialize>(&self, v: &T) -> anyhow::Result<()> {
        println!("{}", serde_json::to_string_pretty(v)?);
        Ok(())
    }
}

/// A progress bar on stderr for a long phase; none with --json, whose
/// callers are programs (stdout stays one JSON document either way).
pub fn progress_bar(out: &Output, len: u64, label: &str) -> ProgressBar {
    if out.json {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    if let Ok(style) =
        ProgressStyle::with_template("{msg:>18} [{bar:30}] {pos}/{len} {per_sec} eta {eta}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(label.to_string());
    bar
}
