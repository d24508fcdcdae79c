//! The operations behind the tools, on the blocking memloop API: each takes
//! a tool's arguments and the caller's tenant and returns the JSON the tool
//! answers with. Run on a blocking thread (SQLite, CPU embedding).

use memloop::{
    Config, Error, Filter, Kind, Lookup, Memory, MemoryById, MemoryLoop, NewMemory, ProcedureQuery,
    ProcedureRun, RememberOptions, Result, Scope, SearchQuery,
};
use serde_json::{json, Value};

use crate::args::{
    AddArgs, ContextArgs, EntitiesArgs, ForgetArgs, GetArgs, HistoryArgs, LinksArgs,
    RecordProcedureArgs, RecordTurnArgs, RememberArgs, ScopeArgs, SearchArgs, SearchProceduresArgs,
    SessionsArgs,
};

/// A memory store and the loop over it (its gate and long-term writer serve
/// `memory_remember`, its context `memory_context`). Shared by every connection.
pub(crate) struct Engine {
    lp: MemoryLoop,
}

impl Engine {
    pub(crate) fn new(lp: MemoryLoop) -> Engine {
        Engine { lp }
    }

    /// The store in `cfg.data_dir`, the configured short-term buffer and
    /// LLM (none: extraction by rules, as `memloop remember` does). A Redis
    /// that is down does not stop the tools: only `memory_context` (and a
    /// purge) need it, and they answer a tool error naming it until it is back.
    pub(crate) fn open(cfg: &Config) -> Result<Engine> {
        Ok(Engine::new(MemoryLoop::open(cfg)?))
    }

    pub(crate) fn memory(&self) -> &Memory {
        self.lp.memory()
    }

    pub(crate) fn search(&self, tenant: &str, a: SearchArgs) -> Result<Value> {
        let scope = a.scope.in_tenant(tenant)?;
        let mut q = SearchQuery::new(scope, a.query);
        if let Some(k) = a.top_k {
            q.top_k = memloop::check_limit("top_k", k)?;
        }
        q.filter = a.filters.as_ref().map(parse_filter).transpose()?;
        q.set_weights(a.vector_weight, a.keyword_weight)?;
        q.include_superseded = a.include_superseded.unwrap_or(false);
        if let Some(s) = a.min_score {
            q.set_min_score("min_score", s)?;
        }
        q.as_of = as_of_arg(a.as_of.as_deref())?;
        q.expand = self.memory().expansion_asked(a.expand, a.hops)?;
        q.rerank = self.memory().rerank_asked(a.rerank, a.rerank_top_n)?;
        let (now, mode) = time_args(a.now.as_deref(), a.time_mode.as_deref())?;
        let time = self.memory().read_time(&mut q, now, mode)?;
        let searched = self.memory().search_traced(&q)?;
        let hits = searched.hits;
        let mut out = if a.full.unwrap_or(false) {
            json!({ "results": hits })
        } else {
            json!({ "results": hits.iter().map(compact).collect::<Vec<_>>() })
        };
        if let Some(t) = time {
            out["time"] = to_json(&t)?;
        }
        if let Some(r) = searched.rerank {
            out["rerank"] = to_json(&r)?;
        }
        Ok(out)
    }

    pub(crate) fn add(&self, tenant: &str, a: AddArgs) -> Result<Value> {
        let scope = a.scope.in_tenant(tenant)?;
        let kind = a.kind.as_deref().map(Kind::parse).transpose()?;
        let mut m = NewMemory::text(a.text).kind(kind.unwrap_or_default());
        if let Some(metadata) = a.metadata {
            m = m.metadata(metadata);
        }
        if let Some(ttl) = a.ttl {
            let at = self.memory().expiry_after(&ttl).map_err(|e| match e {
                Error::InvalidInput(m) => Error::invalid(format!("ttl: {m}")),
                other => other,
            })?;
            m.expires_at = Some(at);
        }
        m.valid_from = said_at_arg(a.timestamp.as_ref())?;
        let written = self.memory().add(&scope, m)?;
        Ok(json!({ "results": [written] }))
    }

    /// The write pipeline on one user turn, as `memloop remember` runs it:
    /// the gate, then extraction and reconciliation with stored facts.
    pub(crate) fn remember(&self, tenant: &str, a: RememberArgs) -> Result<Value> {
        let scope = a.scope.in_tenant(tenant)?;
        let options = RememberOptions {
            skip_gate: a.skip_gate.unwrap_or(false),
            at: said_at_arg(a.timestamp.as_ref())?,
            ..RememberOptions::default()
        };
        let r = self.lp.remember(&scope, &a.text, options)?;
        Ok(json!({
            "results": r.events,
            "persisted": r.gate.persist,
            "reason": r.gate.reason,
            "notes": r.notes,
        }))
    }

    /// The entities the user's current memories name, most mentioned first.
    pub(crate) fn entities(&self, tenant: &str, a: EntitiesArgs) -> Result<Value> {
        let scope = a.scope.in_tenant(tenant)?;
        let as_of = as_of_arg(a.as_of.as_deref())?;
        let mut list = self.memory().graph_entities(&scope, as_of)?;
        list.truncate(a.limit.unwrap_or(100));
        Ok(json!({ "entities": list }))
    }

    pub(crate) fn links(&self, tenant: &str, a: LinksArgs) -> Result<Value> {
        let scope = a.scope.in_tenant(tenant)?;
        let as_of = as_of_arg(a.as_of.as_deref())?;
        match self.memory().entity_links(&scope, &a.entity, as_of)? {
            Some(l) => to_json(&l),
            None => Err(Error::EntityNotFound(a.entity)),
        }
    }

    /// The user's sessions on the time axis, newest first.
    pub(crate) fn sessions(&self, tenant: &str, a: SessionsArgs) -> Result<Value> {
        let scope = a.scope.in_tenant(tenant)?;
        let sessions = self.memory().sessions(&scope)?;
        Ok(json!({ "sessions": sessions }))
    }

    // Through the facade, not the store: it checks the id first, so an
    // absurd one is invalid_input with a short echo, and a deleted,
    // superseded or expired memory is not found unless asked for, as on
    // every front end.
    pub(crate) fn get(&self, tenant: &str, a: GetArgs) -> Result<Value> {
        let lookup = Lookup::include_deleted(a.include_deleted.unwrap_or(false));
        let record = self.memory().get_with(tenant, &a.id, lookup)?;
        to_json(&MemoryById::new(&record, self.memory().clock().now()))
    }

    pub(crate) fn history(&self, tenant: &str, a: HistoryArgs) -> Result<Value> {
        let entries = self.memory().history_in(tenant, &a.id)?;
        Ok(json!({ "results": entries }))
    }

    pub(crate) fn forget(&self, tenant: &str, a: ForgetArgs) -> Result<Value> {
        let scope = a.scope.in_tenant(tenant)?;
        if let Some(id) = a.id {
            if a.purge.unwrap_or(false) {
                return Err(Error::invalid(
                    "purge erases whole scopes: pass id without purge to delete one memory, or purge without id to erase the user's memories",
                ));
            }
            return self.forget_one(&scope, &id);
        }
        // Through the loop: a purge clears the user's short-term sessions too.
        let report = self.lp.forget(&scope, a.purge.unwrap_or(false))?;
        to_json(&report)
    }

    /// Deletes memory `id` if it is current and in `scope` (a model acting
    /// for one user cannot delete another's by id); another user's id is
    /// not found, exactly like an unknown one.
    fn forget_one(&self, scope: &Scope, id: &str) -> Result<Value> {
        let m = self.memory();
        let record = m.get_with(&scope.tenant, id, Lookup::IncludeDeleted)?;
        if !scope.admits(&record.scope) {
            return Err(Error::NotFound(id.to_string()));
        }
        let deleted = m.delete_in(&scope.tenant, id)?;
        Ok(json!({ "results": [deleted] }))
    }

    /// What a turn would send to the model: the system prompt with the
    /// recalled memories, the session's recent turns and the input; nothing
    /// is written and no LLM is called.
    pub(crate) fn context(&self, tenant: &str, a: ContextArgs) -> Result<Value> {
        let scope = a.scope().in_tenant(tenant)?;
        let (request, trace) = self.lp.context(&scope, &a.input)?;
        Ok(json!({
            "system": request.system,
            "messages": request.messages,
            "max_tokens": request.max_tokens,
            "trace": trace,
        }))
    }
}

impl Engine {
    /// Records an exchange run by the caller's own model: the session's
    /// buffer, the gate per side, the long-term write, once per turn id.
    pub(crate) fn record_turn(&self, tenant: &str, a: RecordTurnArgs) -> Result<Value> {
        let scope = a.scope().in_tenant(tenant)?;
        let at = a
            .timestamp
            .as_deref()
            .map(|t| {
                memloop::time::parse_date(t.trim()).ok_or_else(|| {
                    Error::invalid(
                        "timestamp must be an RFC 3339 time (2026-11-30T09:15:00Z) or a date (2026-11-30)",
                    )
                })
            })
            .transpose()?;
        if let Some(at) = at {
            memloop::check_time("timestamp", at)?;
        }
        let raw: Vec<Value> = a.messages.iter().map(to_json).collect::<Result<_>>()?;
        let r = self
            .lp
            .record_messages(&scope, a.turn_id.as_deref(), &raw, at)?;
        Ok(r.answer())
    }
}

/// A hit as a model needs it: what it says, how well it matched, what
/// kind and when, and what replaced it if it is stale. The full record
/// (hashes, counters, every timestamp, per-signal scores) costs about five
/// times the tokens and tells a model nothing it acts on.
fn compact(hit: &memloop::SearchHit) -> Value {
    let mut v = json!({
        "id": hit.record.id,
        "memory": hit.record.text,
        "score": (hit.score * 1000.0).round() / 1000.0,
        "kind": hit.record.kind,
        "date": memloop::time::to_rfc3339(hit.record.valid_from).get(..10),
    });
    if let (Some(obj), Some(r)) = (v.as_object_mut(), &hit.superseded_by) {
        obj.insert("superseded_by".into(), json!(r));
    }
    v
}

impl ScopeArgs {
    /// The scope in the caller's tenant, every id checked.
    fn in_tenant(self, tenant: &str) -> Result<Scope> {
        let scope = Scope {
            tenant: tenant.to_string(),
            user_id: Some(self.user_id),
            agent_id: self.agent_id,
            session_id: self.session_id,
        };
        scope.validate()?;
        Ok(scope)
    }
}

/// A tool's `timestamp`: when it was said.
fn said_at_arg(v: Option<&Value>) -> Result<Option<i64>> {
    v.map(|v| memloop::time::parse_said_at("timestamp", v))
        .transpose()
}

/// A filter as Mem0 sends it (a JSON object) or in memloop's text form.
fn parse_filter(v: &Value) -> Result<Filter> {
    match v {
        Value::String(s) => Filter::parse(s),
        Value::Object(_) => Filter::from_json(v),
        _ => Err(Error::invalid(
            "filters must be an object like {\"topic\": \"food\"} or a string like 'topic = \"food\" AND rating >= 4'",
        )),
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<Value> {
    serde_json::to_value(v).map_err(|e| Error::Internal(format!("cannot encode the result: {e}")))
}

/// The reference time (`now`, default the present) and the time mode
/// (`time_mode`, default boost) of a search.
fn time_args(now: Option<&str>, mode: Option<&str>) -> Result<(i64, memloop::QueryTimeMode)> {
    let now = match now {
        Some(s) => memloop::parse_reference_time(s, "now")?,
        None => memloop::now_millis(),
    };
    let mode = memloop::QueryTimeMode::parse_field(mode, "time_mode")?;
    Ok((now, mode))
}

impl Engine {
    /// Records one run of a task in the procedural layer.
    pub(crate) fn record_procedure(&self, tenant: &str, a: RecordProcedureArgs) -> Result<Value> {
        let scope = a.scope.in_tenant(tenant)?;
        let mut run = json!({"task": a.task, "steps": a.steps, "outcome": a.outcome});
        for (k, v) in [
            ("error", a.error),
            ("at", a.at),
            ("execution_id", a.execution_id),
        ] {
            if let Some(v) = v {
                run[k] = json!(v);
            }
        }
        let w = self
            .memory()
            .record_procedure(&scope, ProcedureRun::from_json(run)?)?;
        Ok(json!({ "results": [w] }))
    }

    /// The procedures for a task, ranked by similarity × success rate × recency.
    pub(crate) fn search_procedures(&self, tenant: &str, a: SearchProceduresArgs) -> Result<Value> {
        let scope = a.scope.in_tenant(tenant)?;
        let mut q = ProcedureQuery::new(scope, a.query);
        if let Some(k) = a.top_k {
            q.top_k = memloop::check_limit("top_k", k)?;
        }
        let hits = self.memory().search_procedures(&q)?;
        let results: Vec<Value> = hits
            .iter()
            .map(|h| {
                json!({
                    "id": h.id,
                    "procedure": h.procedure,
                    "memory": h.procedure.is_none().then_some(&h.memory),
                    "score": h.score,
                    "scores": h.scores,
                    "pitfalls": h.pitfalls,
                })
            })
            .collect();
        Ok(json!({ "results": results }))
    }
}

/// An `as_of` argument as Unix ms (RFC 3339, or a date: the end of that day).
fn as_of_arg(s: Option<&str>) -> Result<Option<i64>> {
    s.map(|s| memloop::parse_reference_time(s, "as_of"))
        .transpose()
}
