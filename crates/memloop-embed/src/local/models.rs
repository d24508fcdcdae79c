//! The local models by name (`[embedder] model`), the folders they are
//! fetched into, and which one a folder holds.

use std::path::Path;

use memloop_core::{Error, Result};

/// A model the local embedder runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocalModel {
    /// all-MiniLM-L6-v2: 384 dimensions, the default.
    Small,
    /// nomic-embed-text-v1.5: 768 dimensions, stronger and about ten times
    /// the arithmetic per text (docs/retrieval.md, docs/benchmarks.md).
    Nomic,
}

impl LocalModel {
    /// The names `[embedder] model` takes for each model: a short one and
    /// the model's own.
    const NAMES: [(LocalModel, [&'static str; 2]); 2] = [
        (LocalModel::Small, ["small", super::MODEL_DIR_NAME]),
        (LocalModel::Nomic, ["nomic", super::nomic::DIR_NAME]),
    ];

    /// The model `name` names; an error listing the names otherwise.
    pub fn parse(name: &str) -> Result<LocalModel> {
        let wanted = name.trim();
        Self::NAMES
            .iter()
            .find(|(_, names)| names.iter().any(|n| n.eq_ignore_ascii_case(wanted)))
            .map(|(model, _)| *model)
            .ok_or_else(|| {
                let known: Vec<&str> = Self::NAMES.iter().flat_map(|(_, n)| *n).collect();
                Error::invalid(format!(
                    "[embedder] model \"{name}\" is not a local model; use one of: {}",
                    known.join(", ")
                ))
            })
    }

    /// The folder it is fetched into, under `models/` or the user cache.
    pub fn folder(self) -> &'static str {
        match self {
            LocalModel::Small => super::MODEL_DIR_NAME,
            LocalModel::Nomic => super::nomic::DIR_NAME,
        }
    }

    /// The script that fetches it, from a checkout of the repository.
    pub fn fetch_script(self) -> &'static str {
        match self {
            LocalModel::Small => "scripts/fetch-model.sh",
            LocalModel::Nomic => "scripts/fetch-model-nomic.sh",
        }
    }

    /// The width of its vectors.
    pub fn dimensions(self) -> usize {
        match self {
            LocalModel::Small => super::DIMENSIONS,
            LocalModel::Nomic => super::nomic::DIMENSIONS,
        }
    }

    /// The model's own name.
    pub fn id(self) -> &'static str {
        match self {
            LocalModel::Small => super::MODEL_ID,
            LocalModel::Nomic => super::nomic::MODEL_ID,
        }
    }

    /// The model `dir` holds, if any: nomic's `model.gguf` is looked for
    /// before all-MiniLM-L6-v2's three files.
    pub fn held_by(dir: &Path) -> Option<LocalModel> {
        if dir.join(super::nomic::FILE).is_file() {
            Some(LocalModel::Nomic)
        } else if super::REQUIRED_FILES.iter().all(|f| dir.join(f).is_file()) {
            Some(LocalModel::Small)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_short_and_long_in_any_case_and_refuses_others_listing_them() {
        assert_eq!(LocalModel::parse("small").unwrap(), LocalModel::Small);
        assert_eq!(
            LocalModel::parse("all-minilm-l6-v2").unwrap(),
            LocalModel::Small
        );
        assert_eq!(LocalModel::parse(" Nomic ").unwrap(), LocalModel::Nomic);
        assert_eq!(
            LocalModel::parse("nomic-embed-text-v1.5").unwrap(),
            LocalModel::Nomic
        );
        let e = LocalModel::parse("bge-small").unwrap_err().to_string();
        assert!(e.contains("\"bge-small\" is not a local model"), "{e}");
        assert!(e.contains("small, all-MiniLM-L6-v2, nomic"), "{e}");
    }

    #[test]
    fn a_folder_says_which_model_it_holds() {
        let dir = std::env::temp_dir().join(format!("memloop-held-by-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(LocalModel::held_by(&dir), None);
        for f in super::super::REQUIRED_FILES {
            std::fs::write(dir.join(f), b"x").unwrap();
        }
        assert_eq!(LocalModel::held_by(&dir), Some(LocalModel::Small));
        std::fs::write(dir.join(super::super::nomic::FILE), b"x").unwrap();
        assert_eq!(LocalModel::held_by(&dir), Some(LocalModel::Nomic));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
