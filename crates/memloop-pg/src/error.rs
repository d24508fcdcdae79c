//! How a PostgreSQL error reaches callers, and the URL as messages show it.

use memloop_core::{Error, StoreError};
use postgres::error::SqlState;

/// The URL without its password (and without a `password=` parameter), as
/// every message and `memloop stats` names the store.
pub fn redact_url(url: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let base = match base.split_once("://") {
        Some((scheme, rest)) => {
            // The authority ends at the first '/' after the scheme.
            let (authority, path) = match rest.find('/') {
                Some(i) => rest.split_at(i),
                None => (rest, ""),
            };
            let authority = match authority.rsplit_once('@') {
                Some((user, host)) => {
                    let user = user.split(':').next().unwrap_or_default();
                    format!("{user}@{host}")
                }
                None => authority.to_string(),
            };
            format!("{scheme}://{authority}{path}")
        }
        // key=value form: drop the password pair.
        None => base
            .split_whitespace()
            .filter(|kv| !kv.starts_with("password="))
            .collect::<Vec<_>>()
            .join(" "),
    };
    match query {
        Some(q) => {
            let kept: Vec<&str> = q
                .split('&')
                .filter(|kv| !kv.starts_with("password="))
                .collect();
            if kept.is_empty() {
                base
            } else {
                format!("{base}?{}", kept.join("&"))
            }
        }
        None => base,
    }
}

/// True for the failures a new connection may cure: the server went away,
/// restarted, refuses connections for now, or the socket broke.
pub fn is_connection_error(e: &postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    match e.code() {
        Some(code) => {
            code.code().starts_with("08")
                || *code == SqlState::ADMIN_SHUTDOWN
                || *code == SqlState::CRASH_SHUTDOWN
                || *code == SqlState::CANNOT_CONNECT_NOW
        }
        // No SQLSTATE: an I/O error, a timeout, a refused connect.
        None => true,
    }
}

/// Maps a PostgreSQL error, naming the store at `location`. A lost or
/// refused connection is `Remote` (transient: 503 on the server, exit 5 on
/// the CLI); a deadlock, a serialization failure or a full server is `Busy`
/// (retry); anything else a storage error with the engine's own as source.
pub fn pg_err(location: &str, e: postgres::Error) -> Error {
    // The driver's own words for a server error are just "db error".
    let said = match e.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => e.to_string(),
    };
    if is_connection_error(&e) {
        return Error::Remote(format!(
            "PostgreSQL at {location} is unreachable ({said}): check that it runs (scripts/pg.sh start for a local one) and that `[store] url` / --store / MEMLOOP_STORE names it; memloop reconnects by itself once it answers"
        ));
    }
    if let Some(code) = e.code() {
        if *code == SqlState::T_R_DEADLOCK_DETECTED
            || *code == SqlState::T_R_SERIALIZATION_FAILURE
            || *code == SqlState::LOCK_NOT_AVAILABLE
            || *code == SqlState::TOO_MANY_CONNECTIONS
        {
            return Error::Busy(format!("PostgreSQL at {location}: {said}"));
        }
    }
    let context = e.as_db_error().map(|_| said.clone());
    let mut err = StoreError::from_source(e).at(location);
    if let Some(c) = context {
        err = err.with_context(c);
    }
    Error::Storage(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_shown() {
        assert_eq!(
            redact_url("postgres://bob:s3cret@db.example:5432/mem?sslmode=disable&password=x"),
            "postgres://bob@db.example:5432/mem?sslmode=disable"
        );
        assert_eq!(
            redact_url("postgresql://bob@127.0.0.1/mem"),
            "postgresql://bob@127.0.0.1/mem"
        );
        assert_eq!(
            redact_url("host=db user=bob password=s3cret dbname=mem"),
            "host=db user=bob dbname=mem"
        );
        // An '@' in the password does not leak its tail.
        assert_eq!(
            redact_url("postgres://bob:p@ss@db/mem"),
            "postgres://bob@db/mem"
        );
    }
}
