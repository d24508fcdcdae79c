//! The PostgreSQL store behind the `LongTermStore` seam.

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

use crate::PgStore;

impl MemoryStore for PgStore {
    fn location(&self) -> String {
        self.location.clone()
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
        PgStore::insert(self, scope, items)
    }

    fn update(
        &self,
        tenant: &str,
        id: &str,
        change: MemoryUpdate,
    ) -> Result<(MemoryRecord, String)> {
        PgStore::update(self, tenant, id, change)
    }

    fn delete(&self, tenant: &str, id: &str, reason: Option<&str>) -> Result<MemoryRecord> {
        PgStore::delete(self, tenant, id, reason)
    }

    fn supersede(
        &self,
        scope: &Scope,
        old_id: &str,
        new: (NewMemory, Vec<f32>),
        reason: &str,
    ) -> Result<(MemoryRecord, MemoryRecord)> {
        PgStore::supersede(self, scope, old_id, new, reason)
    }

    fn touch(&self, tenant: &str, ids: &[&str]) -> Result<()> {
        PgStore::touch(self, tenant, ids)
    }

    fn record_access(&self, tenant: &str, ids: &[&str]) -> Result<()> {
        self.access.record(tenant, ids, self.now())
    }

    fn forget(&self, scope: &Scope, purge: bool) -> Result<ForgetReport> {
        PgStore::forget(self, scope, purge)
    }

    fn get(&self, tenant: &str, id: &str) -> Result<MemoryRecord> {
        PgStore::get(self, tenant, id)
    }

    fn list(&self, query: &ListQuery) -> Result<Vec<MemoryRecord>> {
        PgStore::list(self, query)
    }

    fn count(&self, query: &ListQuery) -> Result<usize> {
        PgStore::count(self, query)
    }

    fn entities(&self, tenant: &str) -> Result<Vec<Entity>> {
        PgStore::entities(self, tenant)
    }

    fn sessions(&self, scope: &Scope) -> Result<Vec<SessionInfo>> {
        PgStore::sessions(self, scope)
    }

    fn history(&self, tenant: &str, id: &str) -> Result<Vec<HistoryEntry>> {
        PgStore::history(self, tenant, id)
    }

    fn search(&self, query: &SearchQuery, vector: &[f32]) -> Result<Vec<SearchHit>> {
        PgStore::search(self, query, vector)
    }

    fn stats(&self) -> Result<Stats> {
        PgStore::stats(self)
    }
}

impl Outbox for PgStore {
    fn outbox_push(&self, scope: &Scope, payload: &Value, error: &str) -> Result<i64> {
        PgStore::outbox_push(self, scope, payload, error)
    }

    fn outbox_due(&self, limit: usize, all: bool) -> Result<Vec<OutboxEntry>> {
        PgStore::outbox_due(self, limit, all)
    }

    fn outbox_done(&self, id: i64) -> Result<()> {
        PgStore::outbox_done(self, id)
    }

    fn outbox_failed(&self, id: i64, error: &str) -> Result<()> {
        PgStore::outbox_failed(self, id, error)
    }

    fn outbox_len(&self) -> Result<usize> {
        PgStore::outbox_len(self)
    }
}

impl GraphStore for PgStore {
    fn graph_entities(&self, scope: &Scope, as_of: Option<i64>) -> Result<Vec<GraphEntity>> {
        PgStore::graph_entities(self, scope, as_of)
    }

    fn entity_links(
        &self,
        scope: &Scope,
        name: &str,
        as_of: Option<i64>,
    ) -> Result<Option<EntityLinks>> {
        PgStore::entity_links(self, scope, name, as_of)
    }

    fn linked(&self, scope: &Scope, seed_ids: &[&str], limits: &LinkLimits) -> Result<Vec<Linked>> {
        PgStore::linked(self, scope, seed_ids, limits)
    }
}

impl Upkeep for PgStore {
    fn expire(&self) -> Result<ExpireReport> {
        PgStore::expire(self)
    }

    fn reindex(&self, embed: &EmbedFn<'_>, progress: &dyn Fn(usize, usize)) -> Result<usize> {
        PgStore::reindex(self, embed, progress)
    }

    fn relink(&self, links: &LinksFn<'_>, progress: &dyn Fn(usize, usize)) -> Result<usize> {
        PgStore::relink(self, links, progress)
    }

    /// Writes the retrieval counts waiting in memory; there is no index
    /// to save (the database holds every one).
    fn flush(&self) -> Result<()> {
        self.access.flush()
    }

    fn compact(&self) -> Result<usize> {
        PgStore::compact(self)
    }

    fn dump(
        &self,
        user: Option<&str>,
        vectors: bool,
        out: &mut dyn FnMut(DumpLine) -> Result<()>,
    ) -> Result<()> {
        PgStore::dump(self, user, vectors, out)
    }

    fn restore(&self, batch: &RestoreBatch) -> Result<RestoreReport> {
        PgStore::restore(self, batch)
    }
}
