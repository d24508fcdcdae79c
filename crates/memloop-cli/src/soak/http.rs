//! One worker's connection to the server under soak: a blocking client
//! holding one keep-alive connection, each call timed from send to the
//! last byte of the answer.

use std::time::{Duration, Instant};

use serde_json::Value;

/// A call's outcome: the status (0 when no answer came), the body, and
/// how long it took.
pub struct Answer {
    pub status: u16,
    pub body: Value,
    pub took: Duration,
    /// A transport failure (refused, reset, timed out), when no answer came.
    pub failure: Option<String>,
}

impl Answer {
    pub fn ok(&self) -> bool {
        self.status == 200
    }

    /// What the server answered, for an error report.
    pub fn describe(&self) -> String {
        match &self.failure {
            Some(f) => format!("no answer: {f}"),
            None => {
                let body = self.body.to_string();
                let cut: String = body.chars().take(200).collect();
                format!("{} {cut}", self.status)
            }
        }
    }
}

pub struct Client {
    agent: ureq::Agent,
    base: String,
}

impl Client {
    pub fn new(base: &str) -> Client {
        let agent = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(60))
            .max_idle_connections_per_host(1)
            .build();
        Client {
            agent,
            base: base.trim_end_matches('/').to_string(),
        }
    }

    pub fn get(&self, path: &str) -> Answer {
        self.send("GET", path, None)
    }

    pub fn delete(&self, path: &str) -> Answer {
        self.send("DELETE", path, None)
    }

    pub fn post(&self, path: &str, body: &Value) -> Answer {
        self.send("POST", path, Some(body))
    }

    /// The raw text of a GET (for `/metrics`), or None.
    pub fn text(&self, path: &str) -> Option<String> {
        let resp = self
            .agent
            .get(&format!("{}{path}", self.base))
            .call()
            .ok()?;
        resp.into_string().ok()
    }

    fn send(&self, method: &str, path: &str, body: Option<&Value>) -> Answer {
        let req = self.agent.request(method, &format!("{}{path}", self.base));
        let start = Instant::now();
        let result = match body {
            Some(b) => req.send_json(b),
            None => req.call(),
        };
        let (status, resp, failure) = match result {
            Ok(r) => (r.status(), Some(r), None),
            Err(ureq::Error::Status(code, r)) => (code, Some(r), None),
            Err(ureq::Error::Transport(t)) => (0, None, Some(t.to_string())),
        };
        let body = resp
            .and_then(|r| r.into_json::<Value>().ok())
            .unwrap_or(Value::Null);
        Answer {
            status,
            body,
            took: start.elapsed(),
            failure,
        }
    }
}

/// Only a loopback address: a soak is a heavy load, never aimed at
/// someone else's server by a typo.
pub fn check_loopback(url: &str) -> anyhow::Result<()> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| anyhow::anyhow!("--url {url:?}: give http://127.0.0.1:PORT"))?;
    let host = rest.split('/').next().unwrap_or("");
    let host = match host.rsplit_once(':') {
        Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h,
        _ => host,
    };
    let loopback = match host.trim_start_matches('[').trim_end_matches(']') {
        "localhost" => true,
        h => h
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
    };
    if !loopback {
        anyhow::bail!(
            "--url {url:?} is not a loopback address: the soak only drives a server on this machine (127.0.0.1, [::1], localhost)"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_urls_are_driven() {
        for ok in [
            "http://127.0.0.1:8420",
            "http://localhost:1/",
            "http://[::1]:9000",
        ] {
            assert!(check_loopback(ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://10.0.0.1:8420",
            "http://example.com",
            "https://127.0.0.1:1",
            "127.0.0.1:8420",
        ] {
            assert!(check_loopback(bad).is_err(), "{bad}");
        }
    }
}
