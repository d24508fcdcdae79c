//! ARCHITECTURE.md is the map a newcomer reads first: it must stay true.
//! Every crate of the workspace has a section, and every file or folder a
//! crate's section names (`name.rs`, `name/`, `name.ts`) exists in that
//! crate.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The map's sections: (heading, text below it).
fn sections(map: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in map.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            out.push((h.trim().to_string(), String::new()));
        } else if let Some((_, body)) = out.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    out
}

/// The folder a section describes: a crate (`## memloop-store`, `##
/// memloop (facade)`) or another part of the repository (`##
/// integrations/openclaw`); None for sections about the whole.
fn folder_of(heading: &str) -> Option<PathBuf> {
    let name = heading.split_whitespace().next()?;
    let a_crate = root().join("crates").join(name);
    if a_crate.join("Cargo.toml").is_file() {
        return Some(a_crate);
    }
    let other = root().join(name);
    (name.contains('/') && other.is_dir()).then_some(other)
}

/// The file and folder names in backticks: `x.rs`, `x.ts`, `x/`.
fn named_paths(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| {
            !t.contains(' ')
                && (t.ends_with(".rs") || t.ends_with(".ts") || (t.ends_with('/') && t.len() > 1))
        })
        .map(str::to_string)
        .collect()
}

/// Every file and folder below `dir`, as paths relative to it.
fn tree(dir: &Path, base: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().to_string();
        if name == "node_modules" || name == "target" || name.starts_with('.') {
            continue;
        }
        let rel = p.strip_prefix(base).unwrap().to_string_lossy().to_string();
        if p.is_dir() {
            out.push(format!("{rel}/"));
            tree(&p, base, out);
        } else {
            out.push(rel);
        }
    }
}

/// Whether `file` (relative to its crate) is `named`, which may be a
/// file name alone and hold one `*` (`bench*.rs`).
fn matches(file: &str, named: &str) -> bool {
    // The last component, a folder's with its trailing slash.
    let last = file
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(file);
    let last = if file.ends_with('/') {
        format!("{last}/")
    } else {
        last.to_string()
    };
    let glob = |candidate: &str| match named.split_once('*') {
        Some((a, b)) => {
            candidate.starts_with(a)
                && candidate.ends_with(b)
                && candidate.len() >= a.len() + b.len()
        }
        None => candidate == named,
    };
    glob(&last) || file == named || file.ends_with(&format!("/{named}"))
}

#[test]
fn every_crate_has_a_section_and_every_named_file_exists() {
    let map = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let sections = sections(&map);
    let headings: Vec<String> = sections
        .iter()
        .filter_map(|(h, _)| h.split_whitespace().next().map(str::to_string))
        .collect();
    let mut missing = Vec::new();
    for e in std::fs::read_dir(root().join("crates")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if e.path().join("Cargo.toml").is_file() && !headings.contains(&name) {
            // A test-only crate is named in the overview instead.
            if !map.contains(&format!("{name} (dev-only)")) {
                missing.push(name);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "crates without a section in ARCHITECTURE.md: {missing:?}"
    );

    let mut unknown = Vec::new();
    let mut checked = 0;
    for (heading, body) in &sections {
        let Some(folder) = folder_of(heading) else {
            continue;
        };
        let mut files = Vec::new();
        tree(&folder, &folder, &mut files);
        for named in named_paths(body) {
            checked += 1;
            let found = files.iter().any(|f| matches(f, &named));
            if !found {
                unknown.push(format!("{heading}: {named}"));
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} names checked: is the map still parsed?"
    );
    assert!(
        unknown.is_empty(),
        "ARCHITECTURE.md names what does not exist: {unknown:#?}"
    );
}
