//! A cross-encoder the user runs, over HTTP, in either common wire format
//! (`RerankFormat`): one POST per search, no retry (a retry could not
//! finish within the stage's timeout).

use std::time::Duration;

use memloop_core::{Error, Result};
use memloop_http::JsonClient;
use serde_json::{json, Value};

use super::config::{RerankConfig, RerankFormat};
use super::Reranker;

/// A candidate's text is cut to this many characters before it is sent: a
/// cross-encoder reads a few hundred tokens at most, and a memory can hold
/// 64 KiB.
const MAX_CHARS: usize = 2000;

pub struct HttpReranker {
    client: JsonClient,
    url: String,
    format: RerankFormat,
    model: Option<String>,
    auth: Option<String>,
}

impl HttpReranker {
    /// From `[rerank]` (`url` required); each call gives up after `timeout`.
    pub fn new(cfg: &RerankConfig, timeout: Duration) -> Result<HttpReranker> {
        let base = cfg
            .url
            .as_deref()
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .ok_or_else(|| Error::invalid("[rerank] url is missing"))?;
        let Some((_, rest)) = base
            .split_once("://")
            .filter(|(s, _)| *s == "http" || *s == "https")
        else {
            return Err(Error::invalid(
                "[rerank] url is not an http:// or https:// address",
            ));
        };
        // The address is shown in every search's answer and in logs: a
        // credential in it would be too.
        let authority = rest.split('/').next().unwrap_or_default();
        if authority.contains('@') || base.contains('?') {
            return Err(Error::invalid(
                "[rerank] url carries credentials or a query: give the bare address, and the key as [rerank] api_key",
            ));
        }
        Ok(HttpReranker {
            client: JsonClient::new(timeout, 0, Duration::ZERO),
            url: endpoint(base, cfg.format),
            format: cfg.format,
            model: cfg.model.clone(),
            auth: cfg.api_key.as_ref().map(|k| format!("Bearer {k}")),
        })
    }
}

/// `base` as given when its path already ends in `rerank`, else with the
/// format's path added.
fn endpoint(base: &str, format: RerankFormat) -> String {
    let base = base.trim_end_matches('/');
    if base.ends_with("rerank") {
        return base.to_string();
    }
    match format {
        RerankFormat::Tei => format!("{base}/rerank"),
        RerankFormat::Cohere if base.ends_with("/v1") => format!("{base}/rerank"),
        RerankFormat::Cohere => format!("{base}/v1/rerank"),
    }
}

fn advice(status: u16) -> &'static str {
    match status {
        401 | 403 => "check [rerank] api_key",
        404 => "check [rerank] url and format (text-embeddings-inference serves /rerank, Cohere-style servers /v1/rerank)",
        _ => "check [rerank] url, format and model",
    }
}

fn cut(text: &str) -> &str {
    match text.char_indices().nth(MAX_CHARS) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

impl Reranker for HttpReranker {
    fn name(&self) -> String {
        let format = match self.format {
            RerankFormat::Tei => "tei",
            RerankFormat::Cohere => "cohere",
        };
        format!("http {format} {}", self.url)
    }

    fn scores(&self, query: &str, texts: &[String]) -> Result<Vec<(usize, f32)>> {
        let docs: Vec<&str> = texts.iter().map(|t| cut(t)).collect();
        let body = match self.format {
            RerankFormat::Tei => json!({"query": query, "texts": docs, "truncate": true}),
            RerankFormat::Cohere => {
                let mut b = json!({"query": query, "documents": docs, "top_n": docs.len()});
                if let Some(m) = &self.model {
                    b["model"] = json!(m);
                }
                b
            }
        };
        let headers: Vec<(&str, &str)> = self
            .auth
            .as_deref()
            .map(|a| vec![("authorization", a)])
            .unwrap_or_default();
        let reply = self.client.post_json(&self.url, &headers, &body, advice)?;
        match self.format {
            RerankFormat::Tei => pairs(&reply.body, "score"),
            RerankFormat::Cohere => pairs(
                reply.body.get("results").unwrap_or(&Value::Null),
                "relevance_score",
            ),
        }
        .map_err(|what| Error::Remote(format!("{} answered {what}", self.url)))
    }
}

/// `[{"index": i, <score>: s}, …]` as pairs, or what was wrong with it.
fn pairs(list: &Value, score: &str) -> std::result::Result<Vec<(usize, f32)>, String> {
    let items = list
        .as_array()
        .ok_or_else(|| "no list of results".to_string())?;
    items
        .iter()
        .map(|item| {
            let index = item.get("index").and_then(Value::as_u64);
            let s = item.get(score).and_then(Value::as_f64);
            match (index, s) {
                (Some(i), Some(s)) => Ok((i as usize, s as f32)),
                _ => Err(format!("a result without an index and a {score}: {item}")),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_takes_the_formats_path_unless_given() {
        assert_eq!(
            endpoint("http://h:8080", RerankFormat::Tei),
            "http://h:8080/rerank"
        );
        assert_eq!(
            endpoint("http://h:8080/", RerankFormat::Cohere),
            "http://h:8080/v1/rerank"
        );
        assert_eq!(
            endpoint("http://h/v1", RerankFormat::Cohere),
            "http://h/v1/rerank"
        );
        assert_eq!(
            endpoint("http://h/api/rerank", RerankFormat::Tei),
            "http://h/api/rerank"
        );
    }

    #[test]
    fn long_texts_are_cut_at_a_character() {
        let t = "é".repeat(MAX_CHARS + 5);
        assert_eq!(cut(&t).chars().count(), MAX_CHARS);
        assert_eq!(cut("short"), "short");
    }

    #[test]
    fn results_without_an_index_or_score_are_refused() {
        assert!(pairs(&json!([{"index": 0, "score": 0.5}]), "score").is_ok());
        assert!(pairs(&json!([{"index": -1, "score": 0.5}]), "score").is_err());
        assert!(pairs(&json!([{"index": 0}]), "score").is_err());
        assert!(pairs(&json!({"index": 0}), "score").is_err());
    }
}
