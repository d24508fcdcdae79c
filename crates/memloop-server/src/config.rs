//! Server settings: the address, API keys bound to tenants, limits. Read from
//! the `[server]` table of the configuration file, then the environment.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use memloop::{Error, Result, Scope};
use serde::Deserialize;
use sha2::{Digest, Sha256};

/// Where `memloop serve` listens unless told otherwise.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8420";

/// API keys bound to tenants. Only the keys' sha256 digests are kept, and a
/// presented key is compared with every digest in constant time.
#[derive(Clone, Default)]
pub struct ApiKeys {
    entries: Vec<([u8; 32], String)>,
}

impl std::fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tenants: Vec<&str> = self.entries.iter().map(|(_, t)| t.as_str()).collect();
        write!(
            f,
            "ApiKeys({} keys for tenants {tenants:?})",
            self.entries.len()
        )
    }
}

fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

/// Equal without an early exit: the time taken says nothing about where two
/// digests differ.
fn same(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

fn check_tenant(tenant: &str) -> Result<()> {
    Scope::user("-")
        .with_tenant(tenant)
        .validate()
        .map_err(|_| {
            Error::invalid(format!(
                "tenant {tenant:?} is not a valid tenant id: use 1 to 256 bytes without control characters"
            ))
        })
}

impl ApiKeys {
    pub fn new() -> ApiKeys {
        ApiKeys::default()
    }

    /// Parses `key=tenant,key=tenant` (the `MEMLOOP_API_KEYS` form). A key
    /// may itself contain `=` (base64 padding): the last `=` separates.
    pub fn parse(list: &str) -> Result<ApiKeys> {
        let mut keys = ApiKeys::new();
        keys.add_list(list)?;
        Ok(keys)
    }

    /// Adds the pairs of a `key=tenant,key=tenant` list.
    pub fn add_list(&mut self, list: &str) -> Result<()> {
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (key, tenant) = item.rsplit_once('=').ok_or_else(|| {
                Error::invalid(
                    "MEMLOOP_API_KEYS must be a comma-separated list of key=tenant pairs",
                )
            })?;
            self.add_key(key.trim(), tenant.trim())?;
        }
        Ok(())
    }

    /// Binds a key to a tenant (only its digest is kept).
    pub fn add_key(&mut self, key: &str, tenant: &str) -> Result<()> {
        if key.len() < 8 || key.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(Error::invalid(
                "an API key must be at least 8 characters without spaces (e.g. `openssl rand -hex 32`)",
            ));
        }
        self.add_digest(digest(key), tenant)
    }

    /// Binds a key given by its sha256 digest (64 hex digits) to a tenant,
    /// so a configuration file need not hold the key itself.
    pub fn add_sha256(&mut self, hex: &str, tenant: &str) -> Result<()> {
        let bad = || {
            Error::invalid(format!(
                "{hex:?} is not a sha256 digest: give 64 hex digits (printf %s KEY | sha256sum)"
            ))
        };
        if hex.len() != 64 || !hex.is_ascii() {
            return Err(bad());
        }
        let mut d = [0u8; 32];
        for (i, byte) in d.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
        }
        self.add_digest(d, tenant)
    }

    fn add_digest(&mut self, d: [u8; 32], tenant: &str) -> Result<()> {
        check_tenant(tenant)?;
        if let Some((_, other)) = self.entries.iter().find(|(e, _)| same(e, &d)) {
            if other != tenant {
                return Err(Error::invalid(format!(
                    "one API key is bound to two tenants ({other} and {tenant}): give each tenant its own key"
                )));
            }
            return Ok(());
        }
        self.entries.push((d, tenant.to_string()));
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The key's position (for its concurrency limit) and tenant. Every
    /// digest is compared, whichever matches.
    pub fn lookup(&self, key: &str) -> Option<(usize, &str)> {
        let d = digest(key);
        let mut found = None;
        for (i, (e, tenant)) in self.entries.iter().enumerate() {
            if same(e, &d) && found.is_none() {
                found = Some((i, tenant.as_str()));
            }
        }
        found
    }

    /// Distinct tenants, sorted (for the startup log).
    pub fn tenants(&self) -> Vec<&str> {
        let mut t: Vec<&str> = self.entries.iter().map(|(_, t)| t.as_str()).collect();
        t.sort_unstable();
        t.dedup();
        t
    }
}

/// How the server runs.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// `HOST:PORT`.
    pub addr: String,
    pub api_keys: ApiKeys,
    /// Largest request body accepted (413 above).
    pub max_body_bytes: usize,
    /// Requests one key may have in flight; more get 429 (0: no limit).
    pub max_in_flight_per_key: usize,
    /// Threads for blocking work (store, embedding, LLM calls).
    pub blocking_threads: usize,
    /// Seconds in-flight requests get to finish after SIGTERM / Ctrl-C.
    pub shutdown_grace_secs: u64,
    /// How long a connection may take to send a request's headers (an idle
    /// keep-alive connection is closed after it too), so a client that
    /// opens sockets and stalls cannot hold them.
    pub header_read_timeout: Duration,
    /// How long a request may take to send its whole body. The body is read
    /// before the key's in-flight permit is taken, so a stalled upload
    /// never counts against the key; past this it gets 408 and the
    /// connection is closed.
    pub body_read_timeout: Duration,
    /// Open connections one client IP may hold; more are closed at once
    /// (0: no limit). Behind a reverse proxy every client shares its IP.
    pub max_connections_per_ip: usize,
    /// Extra `Host` names (or `name:port`) the server answers to besides the
    /// loopback names and the bind address: checked on every request in
    /// keyless mode and on `/mcp` always (DNS-rebinding guard).
    pub allowed_hosts: Vec<String>,
    /// Log memory texts and queries (the loop's `memory_retrieval` and
    /// `memory_write` events). Off by default: logs carry ids, scores,
    /// sizes and counts. For debugging only.
    pub log_texts: bool,
    /// How often the indexes that changed are saved, so that the next
    /// start after a crash loads them rather than building them again
    /// (they are also saved at exit); 0: only at exit and by gc. Never
    /// needed for durability: every write is in the database first.
    pub save_indexes_secs: u64,
    /// Loop turns kept per tenant for the inspector's Turns view
    /// (`GET /v1/traces`), in memory; 0 (the default): none.
    pub trace_ring: usize,
}

/// The most turns `trace_ring` keeps per tenant.
pub const MAX_TRACE_RING: usize = 10_000;

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            addr: DEFAULT_ADDR.to_string(),
            api_keys: ApiKeys::new(),
            max_body_bytes: 1024 * 1024,
            max_in_flight_per_key: 64,
            blocking_threads: 64,
            shutdown_grace_secs: 30,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            max_connections_per_ip: 256,
            allowed_hosts: Vec::new(),
            log_texts: false,
            save_indexes_secs: 600,
            trace_ring: 0,
        }
    }
}

/// The `[server]` table of the configuration file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerSection {
    addr: Option<String>,
    /// key (or `sha256:` + hex digest) = tenant.
    #[serde(default)]
    api_keys: BTreeMap<String, String>,
    max_body_bytes: Option<usize>,
    max_in_flight_per_key: Option<usize>,
    blocking_threads: Option<usize>,
    shutdown_grace_secs: Option<u64>,
    header_read_timeout_secs: Option<u64>,
    body_read_timeout_secs: Option<u64>,
    max_connections_per_ip: Option<usize>,
    allowed_hosts: Option<Vec<String>>,
    log_texts: Option<bool>,
    save_indexes_secs: Option<u64>,
    trace_ring: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
struct FileWithServer {
    #[serde(default)]
    server: ServerSection,
}

impl ServerConfig {
    /// Defaults, then the `[server]` table of `file`, then the environment:
    /// `MEMLOOP_API_KEYS` (`key=tenant,…`, added to the file's keys) and
    /// `MEMLOOP_ADDR`, `MEMLOOP_LOG_TEXTS` (`1` / `true` to log texts).
    /// Applies the `[server]` table of a configuration file's text; `origin`
    /// names the file in errors.
    pub fn apply_file(&mut self, text: &str, origin: &Path) -> Result<()> {
        let parsed: FileWithServer = toml::from_str(text).map_err(|e| {
            Error::invalid(format!(
                "the [server] table of {} is not valid: {e}",
                origin.display()
            ))
        })?;
        self.apply(parsed.server)
    }

    pub fn load(file: Option<&Path>) -> Result<ServerConfig> {
        let mut cfg = ServerConfig::default();
        if let Some(path) = file {
            let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
                path: path.to_path_buf(),
                source: e,
            })?;
            cfg.apply_file(&text, path)?;
        }
        if let Ok(list) = std::env::var("MEMLOOP_API_KEYS") {
            cfg.api_keys.add_list(&list)?;
        }
        if let Ok(addr) = std::env::var("MEMLOOP_ADDR") {
            if !addr.trim().is_empty() {
                cfg.addr = addr.trim().to_string();
            }
        }
        if let Ok(v) = std::env::var("MEMLOOP_LOG_TEXTS") {
            cfg.log_texts = matches!(v.trim(), "1" | "true" | "yes" | "on");
        }
        if let Ok(v) = std::env::var("MEMLOOP_TRACE_RING") {
            let n = v.trim().parse().map_err(|_| {
                Error::invalid(format!(
                    "MEMLOOP_TRACE_RING must be a number of turns (0 to {MAX_TRACE_RING}), not {v:?}"
                ))
            })?;
            cfg.set_trace_ring(n)?;
        }
        Ok(cfg)
    }

    fn apply(&mut self, s: ServerSection) -> Result<()> {
        if let Some(a) = s.addr {
            self.addr = a;
        }
        for (key, tenant) in &s.api_keys {
            match key.strip_prefix("sha256:") {
                Some(hex) => self.api_keys.add_sha256(hex, tenant)?,
                None => self.api_keys.add_key(key, tenant)?,
            }
        }
        if let Some(n) = s.max_body_bytes {
            self.max_body_bytes = n;
        }
        if let Some(n) = s.max_in_flight_per_key {
            self.max_in_flight_per_key = n;
        }
        if let Some(n) = s.blocking_threads {
            self.blocking_threads = n.max(1);
        }
        if let Some(n) = s.shutdown_grace_secs {
            self.shutdown_grace_secs = n;
        }
        // A zero timeout would close every connection at once: at least 1 s.
        if let Some(n) = s.header_read_timeout_secs {
            self.header_read_timeout = Duration::from_secs(n.max(1));
        }
        if let Some(n) = s.body_read_timeout_secs {
            self.body_read_timeout = Duration::from_secs(n.max(1));
        }
        if let Some(n) = s.save_indexes_secs {
            self.save_indexes_secs = n;
        }
        if let Some(n) = s.max_connections_per_ip {
            self.max_connections_per_ip = n;
        }
        if let Some(hosts) = s.allowed_hosts {
            self.allowed_hosts = hosts
                .into_iter()
                .map(|h| h.trim().to_string())
                .filter(|h| !h.is_empty())
                .collect();
        }
        if let Some(b) = s.log_texts {
            self.log_texts = b;
        }
        if let Some(n) = s.trace_ring {
            self.set_trace_ring(n)?;
        }
        Ok(())
    }

    fn set_trace_ring(&mut self, n: usize) -> Result<()> {
        if n > MAX_TRACE_RING {
            return Err(Error::invalid(format!(
                "trace_ring keeps at most {MAX_TRACE_RING} turns per tenant (got {n})"
            )));
        }
        self.trace_ring = n;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_and_resolve() {
        let keys = ApiKeys::parse("key-aaaaaaaa=alpha, key-bbbbbbb==beta").unwrap();
        assert_eq!(keys.lookup("key-aaaaaaaa"), Some((0, "alpha")));
        // The last '=' separates: base64 padding stays in the key.
        assert_eq!(keys.lookup("key-bbbbbbb="), Some((1, "beta")));
        assert_eq!(keys.lookup("key-aaaaaaab"), None);
        assert_eq!(keys.tenants(), vec!["alpha", "beta"]);
        assert!(ApiKeys::parse("nokey").is_err());
        assert!(ApiKeys::parse("short=t").is_err());
        assert!(ApiKeys::parse("key-aaaaaaaa=").is_err());
        assert!(ApiKeys::parse("key-aaaaaaaa=a,key-aaaaaaaa=b").is_err());
    }

    #[test]
    fn digests_from_the_file() {
        let mut keys = ApiKeys::new();
        // sha256("key-aaaaaaaa")
        let hex: String = digest("key-aaaaaaaa")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        keys.add_sha256(&hex, "alpha").unwrap();
        assert_eq!(keys.lookup("key-aaaaaaaa"), Some((0, "alpha")));
        assert!(keys.add_sha256("abc", "alpha").is_err());
        assert!(keys.add_sha256(&"zz".repeat(32), "alpha").is_err());
    }

    #[test]
    fn server_table() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memloop.toml");
        std::fs::write(
            &path,
            "data_dir = \"/tmp/x\"\n[server]\naddr = \"127.0.0.1:9\"\nmax_body_bytes = 10\n[server.api_keys]\n\"key-aaaaaaaa\" = \"alpha\"\n",
        )
        .unwrap();
        let cfg = ServerConfig::load(Some(&path)).unwrap();
        assert_eq!(cfg.addr, "127.0.0.1:9");
        assert_eq!(cfg.max_body_bytes, 10);
        assert_eq!(cfg.api_keys.lookup("key-aaaaaaaa"), Some((0, "alpha")));
        assert_eq!(cfg.header_read_timeout, Duration::from_secs(10));
        assert_eq!(cfg.body_read_timeout, Duration::from_secs(30));
        std::fs::write(
            &path,
            "[server]\nheader_read_timeout_secs = 2\nbody_read_timeout_secs = 0\nmax_connections_per_ip = 8\nallowed_hosts = [\"memory.example\"]\nlog_texts = true\nsave_indexes_secs = 0\n",
        )
        .unwrap();
        assert_eq!(ServerConfig::default().save_indexes_secs, 600);
        let cfg = ServerConfig::load(Some(&path)).unwrap();
        assert_eq!(cfg.save_indexes_secs, 0);
        assert_eq!(cfg.header_read_timeout, Duration::from_secs(2));
        assert_eq!(cfg.body_read_timeout, Duration::from_secs(1));
        assert_eq!(cfg.max_connections_per_ip, 8);
        assert_eq!(cfg.allowed_hosts, vec!["memory.example".to_string()]);
        std::fs::write(&path, "[server]\nport = 1\n").unwrap();
        assert!(ServerConfig::load(Some(&path)).is_err());
    }
}

#[cfg(test)]
mod fuzz_tests {
    use super::*;

    const PIECES: &[&str] = &[
        "[server]",
        "[server.api_keys]",
        "\n",
        "=",
        "[",
        "]",
        "{",
        "}",
        ",",
        "\"",
        " ",
        "addr",
        "max_body_bytes",
        "header_read_timeout_secs",
        "allowed_hosts",
        "log_texts",
        "max_connections_per_ip",
        "\"127.0.0.1:1\"",
        "0",
        "-1",
        "18446744073709551616",
        "1e999",
        "true",
        "\"sha256:zz\"",
        "\"k\"",
        "\u{0}",
        "#",
    ];

    proptest::proptest! {
        #[test]
        fn any_server_table_is_applied_or_refused(
            parts in proptest::collection::vec(proptest::sample::select(PIECES), 0..300)
        ) {
            let mut cfg = ServerConfig::default();
            let _ = cfg.apply_file(&parts.concat(), Path::new("fuzz.toml"));
        }
    }
}
