//! `memloop eval suite`: several datasets in one run and one table, so a
//! retrieval change is judged on every category of each at once. A change
//! that lifts one dataset's figure while another's category falls is
//! what this table is for (docs/retrieval.md, "Three datasets").

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use memloop::Config;
use serde_json::{json, Value};

use super::{evaluate, format, locomo, Dataset, MethodArgs};
use crate::output::Output;

#[derive(Args)]
pub struct SuiteArgs {
    /// Datasets: a LoCoMo file (`.json`), an eval-format file (`.jsonl`),
    /// or `synthetic-long:N` (N synthetic users of long technical
    /// conversations, made in memory). `@K` after any of them keeps every
    /// K-th conversation (`lme-s-dev.jsonl@4`), for quick runs.
    #[arg(required = true)]
    datasets: Vec<String>,
    /// Write every dataset's report, as `eval --json` gives it, to this file.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write each question's evidence and top-10 turns into this folder,
    /// one JSONL file per dataset.
    #[arg(long)]
    details: Option<PathBuf>,
    #[command(flatten)]
    method: MethodArgs,
}

/// What one argument names: where the conversations come from and which
/// of them to keep.
#[derive(Debug, PartialEq)]
struct Spec {
    source: Source,
    every: usize,
    label: String,
}

#[derive(Debug, PartialEq)]
enum Source {
    Locomo(PathBuf),
    Jsonl(PathBuf),
    SyntheticLong(usize),
}

fn parse_spec(arg: &str) -> anyhow::Result<Spec> {
    // `@K` only where digits follow: a path may hold an `@` of its own.
    let sample = arg
        .rsplit_once('@')
        .filter(|(_, k)| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()));
    let (name, every) = match sample {
        Some((name, k)) => {
            let every: usize = k.parse().ok().filter(|&k| k > 0).with_context(|| {
                format!("{arg:?}: after @ give a whole number above 0 (every K-th conversation)")
            })?;
            (name, every)
        }
        None => (arg, 1),
    };
    let source = if let Some(n) = name.strip_prefix("synthetic-long:") {
        let users = n.parse().ok().filter(|&u| u > 0).with_context(|| {
            format!("{arg:?}: synthetic-long:N takes a number of users above 0")
        })?;
        Source::SyntheticLong(users)
    } else if name.ends_with(".json") {
        Source::Locomo(PathBuf::from(name))
    } else if name.ends_with(".jsonl") {
        Source::Jsonl(PathBuf::from(name))
    } else {
        anyhow::bail!(
            "{arg:?}: name a LoCoMo file (.json), an eval-format file (.jsonl; decompress a .zst \
             with `zstd -d` first) or synthetic-long:N"
        );
    };
    let label = Path::new(name)
        .file_name()
        .map_or(name.into(), |f| f.to_string_lossy().into_owned());
    let label = if every > 1 {
        format!("{label} (every {every})")
    } else {
        label
    };
    Ok(Spec {
        source,
        every,
        label,
    })
}

fn load(spec: &Spec) -> anyhow::Result<Dataset> {
    let (kind, conversations, skips) = match &spec.source {
        Source::Locomo(p) => {
            let (c, s) = locomo::load(p)?;
            ("locomo", c, s)
        }
        Source::Jsonl(p) => ("jsonl", format::read_jsonl(p)?, Default::default()),
        Source::SyntheticLong(users) => (
            "synthetic-long",
            crate::longcorpus::conversations(
                crate::longcorpus::LONG_SEED,
                *users,
                crate::longcorpus::TURNS,
                crate::longcorpus::QUESTIONS,
            ),
            Default::default(),
        ),
    };
    let conversations = conversations.into_iter().step_by(spec.every).collect();
    Ok(Dataset::new(kind, conversations, skips))
}

pub fn run(config: &Config, out: &Output, a: &SuiteArgs) -> anyhow::Result<()> {
    // Every argument is read before the first (long) run starts.
    let specs = a
        .datasets
        .iter()
        .map(|d| parse_spec(d))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let embedder = crate::local_model::load(config, "memloop eval suite")?;
    if let Some(dir) = &a.details {
        std::fs::create_dir_all(dir)?;
    }
    let mut reports = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let mut dataset = load(spec)?;
        if let Some(n) = a.method.limit {
            dataset.conversations.truncate(n);
        }
        let details = a
            .details
            .as_ref()
            .map(|d| d.join(format!("{i}-details.jsonl")));
        let report = evaluate(
            config,
            out,
            &embedder,
            &a.method,
            dataset,
            details.as_deref(),
        )?;
        reports.push(json!({"dataset": spec.label, "report": report}));
    }
    let doc =
        json!({"model": memloop::Embedder::info(embedder.as_ref()).model_id, "datasets": reports});
    if let Some(path) = &a.out {
        std::fs::write(path, serde_json::to_string_pretty(&doc)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if out.json {
        return out.json_value(&doc);
    }
    print!("{}", table(&doc));
    Ok(())
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// One row per category and one for the overall figures of each dataset:
/// the default's R@5 and R@10 beside both baselines' R@10, and a `<` where
/// the default falls below the better baseline.
fn table(doc: &Value) -> String {
    let mut s = format!("model: {}\n", doc["model"].as_str().unwrap_or("?"));
    s.push_str(&format!(
        "{:<34} {:>5} {:>7} {:>7} {:>8} {:>8}\n",
        "dataset / category", "n", "R@5", "R@10", "bm25@10", "dense@10"
    ));
    for d in doc["datasets"].as_array().into_iter().flatten() {
        let r = &d["report"];
        let line = |label: &str, v: &Value, b: &Value, dn: &Value| {
            let (r10, b10, d10) = (
                num(&v["recall"]["10"]),
                num(&b["recall"]["10"]),
                num(&dn["recall"]["10"]),
            );
            let below = if r10 + 1e-9 < b10.max(d10) { " <" } else { "" };
            format!(
                "{label:<34} {:>5} {:>7.3} {:>7.3} {:>8.3} {:>8.3}{below}\n",
                v["questions"],
                num(&v["recall"]["5"]),
                r10,
                b10,
                d10
            )
        };
        let (bm25, dense) = (&r["baselines"]["bm25"], &r["baselines"]["dense"]);
        let title = format!(
            "{} ({:.0} s)",
            d["dataset"].as_str().unwrap_or("?"),
            num(&r["elapsed_s"])
        );
        s.push_str(&line(&title, r, bm25, dense));
        for (id, c) in r["per_category"].as_object().into_iter().flatten() {
            let label = match c["name"].as_str() {
                Some(name) if name != id => format!("  {id} {name}"),
                _ => format!("  {id}"),
            };
            let label: String = label.chars().take(34).collect();
            s.push_str(&line(
                &label,
                c,
                &bm25["per_category"][id],
                &dense["per_category"][id],
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_name_their_source_and_sample() {
        let s = parse_spec("../shared/data/lme-s-dev.jsonl@4").unwrap();
        assert_eq!(
            s.source,
            Source::Jsonl(PathBuf::from("../shared/data/lme-s-dev.jsonl"))
        );
        assert_eq!(
            (s.every, s.label.as_str()),
            (4, "lme-s-dev.jsonl (every 4)")
        );
        let s = parse_spec("locomo-dev.json").unwrap();
        assert_eq!(s.source, Source::Locomo(PathBuf::from("locomo-dev.json")));
        assert_eq!(s.every, 1);
        assert_eq!(
            parse_spec("synthetic-long:6").unwrap().source,
            Source::SyntheticLong(6)
        );
        for bad in [
            "x.jsonl@0",
            "x.jsonl@a",
            "synthetic-long:0",
            "data.jsonl.zst",
        ] {
            let e = parse_spec(bad).unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
    }

    #[test]
    fn the_table_marks_a_default_below_a_baseline() {
        let block = |r10: f64| json!({"questions": 3, "recall": {"5": 0.5, "10": r10}});
        let mut report = block(0.6);
        report["elapsed_s"] = json!(1.0);
        report["per_category"] = json!({"1": block(0.9)});
        report["per_category"]["1"]["name"] = json!("single");
        let mut bm25 = block(0.7);
        bm25["per_category"] = json!({"1": block(0.8)});
        let mut dense = block(0.5);
        dense["per_category"] = json!({"1": block(0.5)});
        report["baselines"] = json!({"bm25": bm25, "dense": dense});
        let doc = json!({"model": "m", "datasets": [{"dataset": "d", "report": report}]});
        let t = table(&doc);
        let lines: Vec<&str> = t.lines().collect();
        assert!(
            lines[2].starts_with("d (1 s)") && lines[2].ends_with(" <"),
            "{t}"
        );
        assert!(
            lines[3].starts_with("  1 single") && !lines[3].ends_with('<'),
            "{t}"
        );
    }
}
