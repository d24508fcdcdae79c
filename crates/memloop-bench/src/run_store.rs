//! Where a benchmark or evaluation run keeps its memories: the configured
//! long-term store. The embedded store lives in the run's temporary folder
//! and goes with it. On PostgreSQL (`--store URL`) the run writes into a
//! tenant of its own, so a shared database never mixes one run's memories
//! with another's (or anyone's), and each scope is purged when the run is
//! done with it.

use memloop::{Memory, Scope, StoreOptions};

pub(crate) struct RunStore {
    options: StoreOptions,
    tenant: String,
    /// On a database other processes may share (PostgreSQL).
    shared: bool,
    /// Leave what the run wrote on the shared database (to profile it).
    keep: bool,
}

impl RunStore {
    /// A run named `name` ("eval", "bench") on the configured store.
    pub fn new(configured: &StoreOptions, name: &str) -> RunStore {
        let shared = configured
            .url
            .as_deref()
            .is_some_and(|u| !u.trim().is_empty());
        let tenant = if shared {
            format!("{name}-{}-{}", std::process::id(), memloop::now_millis())
        } else {
            name.to_string()
        };
        RunStore {
            options: configured.clone(),
            tenant,
            shared,
            keep: false,
        }
    }

    /// Leaves what the run writes on a shared database instead of purging
    /// it, and says which tenant holds it.
    pub fn keeping(mut self) -> RunStore {
        if self.shared {
            eprintln!("keeping the run's memories in tenant {}", self.tenant);
        }
        self.keep = true;
        self
    }

    /// The store options the run opens its stores with.
    pub fn options(&self) -> StoreOptions {
        self.options.clone()
    }

    /// `user`'s scope in the run's tenant.
    pub fn scope(&self, user: &str) -> Scope {
        Scope::user(user).with_tenant(self.tenant.clone())
    }

    /// "postgres" or "embedded": printed beside the figures.
    pub fn backend(&self) -> &'static str {
        if self.shared {
            "postgres"
        } else {
            "embedded"
        }
    }

    /// Removes what the run wrote in `scope` from a shared database (an
    /// embedded store goes with the run's folder).
    pub fn clean(&self, memory: &Memory, scope: &Scope) -> memloop::Result<()> {
        if self.shared && !self.keep {
            memory.forget(scope, true)?;
        }
        Ok(())
    }
}
