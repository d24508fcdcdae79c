//! The embedded store behind the `LongTermStore` seam (its four traits). Each method runs the
//! store's own operation and names the data directory in any error it
//! raised without it (a SQLite error deep in a statement knows no paths),
//! so nothing leaves the store unlocated.

use memloop_core::time::Clock;
use memloop_core::{
    EmbedderInfo, Event, HistoryEntry, MemoryRecord, NewMemory, Result, Scope, SearchHit,
};
use memloop_longterm::dump::{DumpLine, RestoreBatch, RestoreReport};
use memloop_longterm::graph::{EntityLinks, GraphEntity, LinkLimits, Linked};
use memloop_longterm::{
    EmbedFn, Entity, ExpireReport, ForgetReport, GraphStore, LinksFn, ListQuery, MemoryStore,
    MemoryUpdate, Outbox, OutboxEntry, SearchQuery, SessionInfo, Stats, Upkeep,
};
use serde_json::Value;

use crate::EmbeddedStore;

impl EmbeddedStore {
    fn located<T>(&self, r: Result<T>) -> Result<T> {
        r.map_err(|e| e.in_dir(&self.dir))
    }

    /// Catches the written record's partition up, if it is loaded.
    fn keep_record_current(&self, record: &MemoryRecord) {
        if let Ok(partition) = record.scope.partition() {
            self.keep_current(&partition, 1);
        }
    }
}

impl MemoryStore for EmbeddedStore {
    fn location(&self) -> String {
        self.dir.display().to_string()
    }

    fn embedder(&self) -> &EmbedderInfo {
        &self.embedder
    }

    fn clock(&self) -> Clock {
        self.options.clock.clone()
    }

    fn insert(
        &self,
        scope: &Scope,
        items: Vec<(NewMemory, Vec<f32>)>,
    ) -> Result<Vec<(MemoryRecord, Event)>> {
        let rows = items.len();
        let out = self.located(EmbeddedStore::insert(self, scope, items))?;
        if let Ok(partition) = scope.partition() {
            self.keep_current(&partition, rows);
        }
        Ok(out)
    }

    fn update(
        &self,
        tenant: &str,
        id: &str,
        change: MemoryUpdate,
    ) -> Result<(MemoryRecord, String)> {
        let out = self.located(EmbeddedStore::update(self, tenant, id, change))?;
        self.keep_record_current(&out.0);
        Ok(out)
    }

    fn delete(&self, tenant: &str, id: &str, reason: Option<&str>) -> Result<MemoryRecord> {
        let out = self.located(EmbeddedStore::delete(self, tenant, id, reason))?;
        self.keep_record_current(&out);
        Ok(out)
    }

    fn supersede(
        &self,
        scope: &Scope,
        old_id: &str,
        new: (NewMemory, Vec<f32>),
        reason: &str,
    ) -> Result<(MemoryRecord, MemoryRecord)> {
        let out = self.located(EmbeddedStore::supersede(self, scope, old_id, new, reason))?;
        self.keep_record_current(&out.1);
        Ok(out)
    }

    fn touch(&self, tenant: &str, ids: &[&str]) -> Result<()> {
        self.located(EmbeddedStore::touch(self, tenant, ids))
    }

    fn record_access(&self, tenant: &str, ids: &[&str]) -> Result<()> {
        self.located(self.access.record(tenant, ids))
    }

    fn forget(&self, scope: &Scope, purge: bool) -> Result<ForgetReport> {
        self.located(EmbeddedStore::forget(self, scope, purge))
    }

    fn get(&self, tenant: &str, id: &str) -> Result<MemoryRecord> {
        self.located(EmbeddedStore::get(self, tenant, id))
    }

    fn list(&self, query: &ListQuery) -> Result<Vec<MemoryRecord>> {
        self.located(EmbeddedStore::list(self, query))
    }

    fn count(&self, query: &ListQuery) -> Result<usize> {
        self.located(EmbeddedStore::count(self, query))
    }

    fn entities(&self, tenant: &str) -> Result<Vec<Entity>> {
        self.located(EmbeddedStore::entities(self, tenant))
    }

    fn sessions(&self, scope: &Scope) -> Result<Vec<SessionInfo>> {
        self.located(EmbeddedStore::sessions(self, scope))
    }

    fn history(&self, tenant: &str, id: &str) -> Result<Vec<HistoryEntry>> {
        self.located(EmbeddedStore::history(self, tenant, id))
    }

    fn search(&self, query: &SearchQuery, vector: &[f32]) -> Result<Vec<SearchHit>> {
        self.located(EmbeddedStore::search(self, query, vector))
    }

    fn stats(&self) -> Result<Stats> {
        self.located(EmbeddedStore::stats(self))
    }
}

impl Outbox for EmbeddedStore {
    fn outbox_push(&self, scope: &Scope, payload: &Value, error: &str) -> Result<i64> {
        self.located(EmbeddedStore::outbox_push(self, scope, payload, error))
    }

    fn outbox_due(&self, limit: usize, all: bool) -> Result<Vec<OutboxEntry>> {
        self.located(EmbeddedStore::outbox_due(self, limit, all))
    }

    fn outbox_done(&self, id: i64) -> Result<()> {
        self.located(EmbeddedStore::outbox_done(self, id))
    }

    fn outbox_failed(&self, id: i64, error: &str) -> Result<()> {
        self.located(EmbeddedStore::outbox_failed(self, id, error))
    }

    fn outbox_len(&self) -> Result<usize> {
        self.located(EmbeddedStore::outbox_len(self))
    }
}

impl GraphStore for EmbeddedStore {
    fn graph_entities(&self, scope: &Scope, as_of: Option<i64>) -> Result<Vec<GraphEntity>> {
        self.located(EmbeddedStore::graph_entities(self, scope, as_of))
    }

    fn entity_links(
        &self,
        scope: &Scope,
        name: &str,
        as_of: Option<i64>,
    ) -> Result<Option<EntityLinks>> {
        self.located(EmbeddedStore::entity_links(self, scope, name, as_of))
    }

    fn linked(&self, scope: &Scope, seed_ids: &[&str], limits: &LinkLimits) -> Result<Vec<Linked>> {
        self.located(EmbeddedStore::linked(self, scope, seed_ids, limits))
    }
}

impl Upkeep for EmbeddedStore {
    fn expire(&self) -> Result<ExpireReport> {
        self.located(EmbeddedStore::expire(self))
    }

    fn reindex(&self, embed: &EmbedFn<'_>, progress: &dyn Fn(usize, usize)) -> Result<usize> {
        self.located(EmbeddedStore::reindex(self, embed, progress))
    }

    fn relink(&self, links: &LinksFn<'_>, progress: &dyn Fn(usize, usize)) -> Result<usize> {
        self.located(EmbeddedStore::relink(self, links, progress))
    }

    fn flush(&self) -> Result<()> {
        self.located(EmbeddedStore::flush(self))
    }

    fn compact(&self) -> Result<usize> {
        self.located(EmbeddedStore::compact_log(self))
    }

    fn dump(
        &self,
        user: Option<&str>,
        vectors: bool,
        out: &mut dyn FnMut(DumpLine) -> Result<()>,
    ) -> Result<()> {
        self.located(EmbeddedStore::dump(self, user, vectors, out))
    }

    fn restore(&self, batch: &RestoreBatch) -> Result<RestoreReport> {
        self.located(EmbeddedStore::restore(self, batch))
    }
}
