//! One blocking JSON POST with timeouts and retries, shared by every remote
//! endpoint memloop calls (`memloop-embed`'s OpenAI-compatible embedder and
//! `memloop-llm`'s chat providers), so they fail and retry alike.
//!
//! Transient failures (429, 5xx, network errors, timeouts, a reply cut off
//! mid-read) are retried with exponential backoff, or after the server's
//! `retry-after` when it sends one. Any other 4xx is the caller's mistake and
//! is returned at once as [`Error::RemoteRejected`], with the provider's own
//! message and the caller's advice on what to fix.

use std::time::Duration;

use memloop_core::{Error, Result};
use serde::Serialize;
use serde_json::Value;

/// The longest `retry-after` we sleep for: a caller waiting on a chat turn or
/// a search is better served by an error than by a minutes-long stall.
const RETRY_AFTER_CAP: Duration = Duration::from_secs(30);
/// Backoff stops doubling here, so a large `max_retries` cannot overflow.
const BACKOFF_CAP: Duration = Duration::from_secs(30);

pub struct JsonClient {
    agent: ureq::Agent,
    max_retries: u32,
    retry_base: Duration,
}

/// A parsed 2xx reply and how many attempts it took (1 = no retry).
pub struct Reply {
    pub body: Value,
    pub attempts: u32,
}

/// What went wrong with one attempt.
enum Failure {
    Retry { msg: String, wait: Option<Duration> },
    Fatal(Error),
}

impl JsonClient {
    /// `timeout` bounds each attempt; `max_retries` counts attempts after the
    /// first; `retry_base` is the first backoff, doubled on each retry.
    pub fn new(timeout: Duration, max_retries: u32, retry_base: Duration) -> JsonClient {
        let agent = ureq::AgentBuilder::new().timeout(timeout).build();
        JsonClient {
            agent,
            max_retries,
            retry_base,
        }
    }

    /// POSTs `body` as JSON. `advice(status)` tells the user what to fix when
    /// the endpoint rejects the request with a 4xx other than 429.
    pub fn post_json<B: Serialize + ?Sized>(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        body: &B,
        advice: fn(u16) -> &'static str,
    ) -> Result<Reply> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let (msg, wait) = match self.attempt(url, headers, body, advice) {
                Ok(body) => {
                    return Ok(Reply {
                        body,
                        attempts: attempt,
                    })
                }
                Err(Failure::Fatal(e)) => return Err(e),
                Err(Failure::Retry { msg, wait }) => (msg, wait),
            };
            if attempt > self.max_retries {
                return Err(Error::Remote(format!(
                    "{msg} (gave up after {attempt} attempts)"
                )));
            }
            std::thread::sleep(wait.unwrap_or_else(|| self.backoff(attempt - 1)));
        }
    }

    fn attempt<B: Serialize + ?Sized>(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        body: &B,
        advice: fn(u16) -> &'static str,
    ) -> std::result::Result<Value, Failure> {
        let mut req = self.agent.post(url).set("content-type", "application/json");
        for (name, value) in headers {
            req = req.set(name, value);
        }
        match req.send_json(body) {
            Ok(resp) => {
                // A body cut off mid-read is a network fault; one that arrives
                // whole but is not JSON will not improve on retry.
                let text = resp.into_string().map_err(|e| Failure::Retry {
                    msg: format!("{url}: reading the reply failed: {e}"),
                    wait: None,
                })?;
                serde_json::from_str(&text).map_err(|e| {
                    Failure::Fatal(Error::Remote(format!(
                        "{url} sent a reply that is not JSON ({e}): {}",
                        snippet(&text)
                    )))
                })
            }
            Err(ureq::Error::Status(code, resp)) => {
                let wait = resp
                    .header("retry-after")
                    .and_then(|s| s.trim().parse::<u64>().ok())
                    .map(|s| Duration::from_secs(s).min(RETRY_AFTER_CAP));
                let detail = error_detail(&resp.into_string().unwrap_or_default());
                let msg = format!("{url} answered {code}: {detail}");
                if code == 429 || code >= 500 {
                    Err(Failure::Retry { msg, wait })
                } else {
                    let fix = advice(code);
                    Err(Failure::Fatal(Error::RemoteRejected(format!(
                        "{msg}; {fix}"
                    ))))
                }
            }
            Err(ureq::Error::Transport(t)) => match t.kind() {
                // A malformed URL is configuration, not weather.
                ureq::ErrorKind::InvalidUrl | ureq::ErrorKind::UnknownScheme => Err(
                    Failure::Fatal(Error::invalid(format!("{t}: check base_url"))),
                ),
                // ureq's transport errors already name the URL.
                _ => Err(Failure::Retry {
                    msg: t.to_string(),
                    wait: None,
                }),
            },
        }
    }

    /// `base << retry`, capped.
    fn backoff(&self, retry: u32) -> Duration {
        self.retry_base
            .saturating_mul(1 << retry.min(16))
            .min(BACKOFF_CAP)
    }
}

/// The provider's own explanation when the body has one (both Anthropic and
/// OpenAI put it at `error.message`), else the start of the raw body.
fn error_detail(text: &str) -> String {
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| snippet(text))
}

fn snippet(text: &str) -> String {
    let s: String = text.chars().take(300).collect();
    if s.trim().is_empty() {
        "(empty body)".to_string()
    } else {
        s
    }
}

/// True when `url` points at `host` (any scheme, port or path).
pub fn is_host(url: &str, host: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let name = authority.rsplit('@').next().unwrap_or("");
    let name = name.split(':').next().unwrap_or("");
    name.eq_ignore_ascii_case(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_matching() {
        assert!(is_host("https://api.openai.com/v1", "api.openai.com"));
        assert!(is_host("https://API.openai.com:443", "api.openai.com"));
        assert!(!is_host("http://localhost:11434/v1", "api.openai.com"));
        assert!(!is_host(
            "https://api.openai.com.evil.io/v1",
            "api.openai.com"
        ));
        assert!(!is_host(
            "https://proxy.io/api.openai.com",
            "api.openai.com"
        ));
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let c = JsonClient::new(Duration::from_secs(1), 3, Duration::from_millis(200));
        assert_eq!(c.backoff(0), Duration::from_millis(200));
        assert_eq!(c.backoff(2), Duration::from_millis(800));
        assert_eq!(c.backoff(40), BACKOFF_CAP);
    }

    #[test]
    fn detail_prefers_provider_message() {
        let anthropic = r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
        assert_eq!(error_detail(anthropic), "invalid x-api-key");
        assert_eq!(
            error_detail("<html>bad gateway</html>"),
            "<html>bad gateway</html>"
        );
        assert_eq!(error_detail(""), "(empty body)");
    }
}
