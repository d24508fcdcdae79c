//! A small connection pool: at most `size` connections, made on demand,
//! each keeping its prepared statements. A connection that broke (the
//! server restarted, the network dropped) is thrown away, never reused, so
//! the next request simply connects again.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use memloop_core::{Error, Result};
use postgres::types::ToSql;
use postgres::{Client, IsolationLevel, NoTls, Row, Statement, Transaction};

use crate::error::pg_err;

pub(crate) struct PgConn {
    client: Client,
    stmts: HashMap<String, Statement>,
}

struct State {
    idle: Vec<PgConn>,
    /// Connections handed out or idle.
    open: usize,
}

pub(crate) struct Pool {
    config: postgres::Config,
    location: String,
    size: usize,
    /// How long a caller waits for a free connection.
    wait: Duration,
    state: Mutex<State>,
    freed: Condvar,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    // The state is two plain fields, consistent after any panic.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Pool {
    pub fn new(config: postgres::Config, location: String, size: usize, wait: Duration) -> Pool {
        Pool {
            config,
            location,
            size: size.max(1),
            wait,
            state: Mutex::new(State {
                idle: Vec::new(),
                open: 0,
            }),
            freed: Condvar::new(),
        }
    }

    pub fn get(&self) -> Result<Pooled<'_>> {
        let deadline = Instant::now() + self.wait;
        let mut st = lock(&self.state);
        loop {
            if let Some(conn) = st.idle.pop() {
                if conn.client.is_closed() {
                    st.open -= 1;
                    continue;
                }
                return Ok(Pooled {
                    pool: self,
                    conn: Some(conn),
                    broken: false,
                });
            }
            if st.open < self.size {
                st.open += 1;
                drop(st);
                return match self.config.connect(NoTls) {
                    Ok(client) => Ok(Pooled {
                        pool: self,
                        conn: Some(PgConn {
                            client,
                            stmts: HashMap::new(),
                        }),
                        broken: false,
                    }),
                    Err(e) => {
                        lock(&self.state).open -= 1;
                        self.freed.notify_one();
                        Err(pg_err(&self.location, e))
                    }
                };
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::Busy(format!(
                    "all {} connections to PostgreSQL at {} stayed in use for {} ms: raise `[store] pool_size` or lower the load",
                    self.size,
                    self.location,
                    self.wait.as_millis()
                )));
            }
            st = self
                .freed
                .wait_timeout(st, deadline - now)
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
    }
}

/// How a transaction reads.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum TxMode {
    /// Read committed: each statement sees what was committed before it.
    Write,
    /// Repeatable read, read only: every statement sees one snapshot.
    Snapshot,
}

/// A connection on loan; back to the pool on drop, unless it broke.
pub(crate) struct Pooled<'p> {
    pool: &'p Pool,
    conn: Option<PgConn>,
    broken: bool,
}

impl Pooled<'_> {
    /// Do not reuse this connection (an error left it in doubt).
    pub fn discard(&mut self) {
        self.broken = true;
    }

    /// Starts a transaction with its statement cache. A `Snapshot` one
    /// reads the whole transaction from one snapshot (repeatable read,
    /// read only): a search's several statements then agree with each other
    /// even while another server commits between them.
    pub fn begin(&mut self, mode: TxMode) -> Result<Tx<'_>> {
        let location = self.pool.location.clone();
        let conn = self
            .conn
            .as_mut()
            .ok_or_else(|| Error::Internal("pooled connection already returned".into()))?;
        let tx = match mode {
            TxMode::Write => conn.client.transaction(),
            TxMode::Snapshot => conn
                .client
                .build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start(),
        }
        .map_err(|e| pg_err(&location, e))?;
        Ok(Tx {
            tx,
            stmts: &mut conn.stmts,
            location,
        })
    }

    /// Runs `sql` outside any transaction (VACUUM cannot run inside one).
    pub fn batch(&mut self, sql: &str) -> Result<()> {
        let location = self.pool.location.clone();
        match self.conn.as_mut() {
            Some(c) => c
                .client
                .batch_execute(sql)
                .map_err(|e| pg_err(&location, e)),
            None => Ok(()),
        }
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        let mut st = lock(&self.pool.state);
        if self.broken || conn.client.is_closed() {
            st.open -= 1;
        } else {
            st.idle.push(conn);
        }
        drop(st);
        self.pool.freed.notify_one();
    }
}

/// A transaction whose statements are prepared once per connection.
pub(crate) struct Tx<'c> {
    tx: Transaction<'c>,
    stmts: &'c mut HashMap<String, Statement>,
    location: String,
}

impl Tx<'_> {
    fn err(&self, e: postgres::Error) -> Error {
        pg_err(&self.location, e)
    }

    fn stmt(&mut self, sql: &str) -> Result<Statement> {
        if let Some(s) = self.stmts.get(sql) {
            return Ok(s.clone());
        }
        let s = self
            .tx
            .prepare(sql)
            .map_err(|e| pg_err(&self.location, e))?;
        self.stmts.insert(sql.to_string(), s.clone());
        Ok(s)
    }

    pub fn query(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        let s = self.stmt(sql)?;
        self.tx.query(&s, params).map_err(|e| self.err(e))
    }

    pub fn query_opt(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>> {
        let s = self.stmt(sql)?;
        self.tx.query_opt(&s, params).map_err(|e| self.err(e))
    }

    pub fn query_one(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Row> {
        let s = self.stmt(sql)?;
        self.tx.query_one(&s, params).map_err(|e| self.err(e))
    }

    pub fn execute(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        let s = self.stmt(sql)?;
        self.tx.execute(&s, params).map_err(|e| self.err(e))
    }

    /// Runs statements without parameters (DDL), not cached.
    pub fn batch(&mut self, sql: &str) -> Result<()> {
        self.tx.batch_execute(sql).map_err(|e| self.err(e))
    }

    pub fn commit(self) -> Result<()> {
        let location = self.location;
        self.tx.commit().map_err(|e| pg_err(&location, e))
    }

    pub fn location(&self) -> &str {
        &self.location
    }
}
