//! nomic-embed-text-v1.5 from its GGUF file: the encoder (`Bert::load_gguf`)
//! and its tokenizer, bert-base-uncased's WordPiece, rebuilt from the
//! vocabulary the file carries.

use std::path::Path;

use memloop_core::{Error, Result};
use serde_json::{json, Map, Value as Json};
use tokenizers::Tokenizer;

use super::gguf::{Gguf, Value};

pub const MODEL_ID: &str = "nomic-ai/nomic-embed-text-v1.5";
/// The model's output width.
pub const DIMENSIONS: usize = 768;
/// The model's file in its folder (what scripts/fetch-model-nomic.sh writes).
pub const FILE: &str = "model.gguf";
/// The folder it is fetched into.
pub const DIR_NAME: &str = "nomic-embed-text-v1.5";
/// The model reads up to 2,048 tokens, but one vector for so much text
/// averages a fact away among the rest: windows of 256 tokens, as
/// all-MiniLM-L6-v2 reads, with longer texts embedded in pieces. On long
/// technical conversations (`memloop bench --write-long-jsonl`, 2 users)
/// dense R@10 was 0.617 with windows of 512 and 0.800 with 256, whose
/// attention is also cheaper (the eval's whole run 289 s against 201 s).
pub const MAX_TOKENS: usize = 256;
/// The task prefixes the model was trained with: memories are documents,
/// searches are queries (without them, LoCoMo dev R@5 of dense retrieval
/// fell from 0.643 to 0.585 in a reference implementation).
pub const DOCUMENT_PREFIX: &str = "search_document: ";
pub const QUERY_PREFIX: &str = "search_query: ";

/// GGUF's token type of a control token ([CLS], [SEP], [PAD], …).
const CONTROL: i64 = 3;

/// The tokenizer of a nomic-bert GGUF file. llama.cpp's converter writes a
/// WordPiece vocabulary the SentencePiece way: a piece that starts a word
/// gets a leading '▁', a continuation loses its '##'. Undone here, the
/// vocabulary is bert-base-uncased's again, entry for entry.
pub fn tokenizer(g: &Gguf, path: &Path) -> Result<Tokenizer> {
    let invalid = |reason: String| Error::ModelInvalid {
        path: path.to_path_buf(),
        reason,
    };
    if g.text("tokenizer.ggml.model")? != "bert" {
        return Err(invalid("the tokenizer is not a BERT WordPiece one".into()));
    }
    let tokens = g.array("tokenizer.ggml.tokens")?;
    let types = g.array("tokenizer.ggml.token_type")?;
    if tokens.len() != types.len() {
        return Err(invalid("token types do not match the tokens".into()));
    }
    let mut vocab = Map::new();
    let mut specials = Vec::new();
    for (id, (token, kind)) in tokens.iter().zip(types).enumerate() {
        let (Value::Text(token), Value::Int(kind)) = (token, kind) else {
            return Err(invalid("the vocabulary is not a list of strings".into()));
        };
        let piece = if let Some(word_start) = token.strip_prefix('\u{2581}') {
            word_start.to_string()
        } else if *kind == CONTROL || is_unused(token) {
            token.clone()
        } else {
            format!("##{token}")
        };
        if *kind == CONTROL {
            specials.push(json!({
                "id": id, "content": piece, "special": true, "single_word": false,
                "lstrip": false, "rstrip": false, "normalized": false
            }));
        }
        if vocab.insert(piece, json!(id)).is_some() {
            return Err(invalid(format!("token {id} repeats an earlier one")));
        }
    }
    let special_id = |name: &str| {
        vocab
            .get(name)
            .cloned()
            .ok_or_else(|| invalid(format!("the vocabulary has no {name}")))
    };
    let (cls, sep) = (special_id("[CLS]")?, special_id("[SEP]")?);
    let sequence = |id: &str| json!({"Sequence": {"id": id, "type_id": 0}});
    let special = |id: &str| json!({"SpecialToken": {"id": id, "type_id": 0}});
    let spec: Json = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": specials,
        "normalizer": {
            "type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
            "strip_accents": null, "lowercase": true
        },
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [special("[CLS]"), sequence("A"), special("[SEP]")],
            "pair": [special("[CLS]"), sequence("A"), special("[SEP]"), sequence("B"), special("[SEP]")],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [cls], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [sep], "tokens": ["[SEP]"]}
            }
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {
            "type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100, "vocab": vocab
        }
    });
    spec.to_string()
        .parse::<Tokenizer>()
        .map_err(|e| invalid(format!("its vocabulary makes no tokenizer: {e}")))
}

/// BERT's placeholder tokens ("[unused12]"), whole words of their own.
fn is_unused(token: &str) -> bool {
    token
        .strip_prefix("[unused")
        .and_then(|rest| rest.strip_suffix(']'))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::is_unused;

    #[test]
    fn only_numbered_placeholders_are_unused() {
        assert!(is_unused("[unused0]"));
        assert!(is_unused("[unused993]"));
        assert!(!is_unused("[unused]"));
        assert!(!is_unused("unused1"));
        assert!(!is_unused("[unusedx]"));
    }
}
