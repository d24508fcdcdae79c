//! Each operation the Python package calls: its JSON arguments read into a
//! struct (an unknown field is an error naming it), the library called, the
//! answer written as JSON. The shapes are memloop's own, as REST answers;
//! the Python half renames what Mem0's interface names differently.

use memloop::short_term::Role;
use memloop::{
    AddMessages, Error, Filter, Kind, ListQuery, Lookup, MemoryById, MemoryLoop, MemoryUpdate,
    ProcedureQuery, ProcedureRun, Result, Scope, SearchQuery,
};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// Runs `op` with `args` (a JSON object) in `tenant`.
pub fn call(lp: &MemoryLoop, tenant: &str, op: &str, args: &str) -> Result<String> {
    let answer = match op {
        "add" => add(lp, tenant, parse(op, args)?),
        "search" => search(lp, tenant, parse(op, args)?),
        "list" => list(lp, tenant, parse(op, args)?),
        "get" => get(lp, tenant, parse(op, args)?),
        "update" => update(lp, tenant, parse(op, args)?),
        "delete" => {
            let a: ById = parse(op, args)?;
            to_json(&lp.memory().delete_in(tenant, &a.id)?)
        }
        "history" => {
            let a: ById = parse(op, args)?;
            to_json(&lp.memory().history_in(tenant, &a.id)?)
        }
        "delete_all" => delete_all(lp, tenant, parse(op, args)?),
        "reset" => reset(lp, tenant),
        "turn" => turn(lp, tenant, parse(op, args)?),
        "context" => context(lp, tenant, parse(op, args)?),
        "record" => record(lp, tenant, parse(op, args)?),
        "sessions" => {
            let a: ScopeOnly = parse(op, args)?;
            to_json(&lp.memory().sessions(&a.scope.in_tenant(tenant)?)?)
        }
        "entities" => entities(lp, tenant, parse(op, args)?),
        "links" => links(lp, tenant, parse(op, args)?),
        "record_procedure" => record_procedure(lp, tenant, parse(op, args)?),
        "search_procedures" => search_procedures(lp, tenant, parse(op, args)?),
        "stats" => to_json(&lp.memory().stats()?),
        "embed" => {
            let a: EmbedArgs = parse(op, args)?;
            let texts: Vec<&str> = a.texts.iter().map(String::as_str).collect();
            let vectors: Vec<Vec<f32>> = lp
                .memory()
                .embed_all(&texts)?
                .into_iter()
                .map(|e| e.vector)
                .collect();
            to_json(&vectors)
        }
        _ => Err(Error::invalid(format!(
            "no operation named {}",
            memloop::shown_value(op)
        ))),
    }?;
    serde_json::to_string(&answer)
        .map_err(|e| Error::Internal(format!("cannot encode the answer: {e}")))
}

fn parse<T: DeserializeOwned>(op: &str, args: &str) -> Result<T> {
    serde_json::from_str(args).map_err(|e| Error::invalid(format!("{op}: {e}")))
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<Value> {
    serde_json::to_value(v).map_err(|e| Error::Internal(format!("cannot encode the answer: {e}")))
}

/// Whose memories: Mem0's ids (run = memloop's session).
#[derive(Debug, Default, Deserialize)]
struct Ids {
    #[serde(default)]
    user_id: Option<String>,
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    run_id: Option<String>,
}

impl Ids {
    fn in_tenant(self, tenant: &str) -> Result<Scope> {
        let scope = Scope {
            tenant: tenant.to_string(),
            user_id: self.user_id,
            agent_id: self.agent_id,
            session_id: self.run_id,
        };
        scope.validate()?;
        Ok(scope)
    }

    /// Mem0 2.x puts the ids in `filters`: those given there by equality
    /// (at the top or in a top-level AND) become the scope, the rest of the
    /// filter stays a condition.
    fn lifted_from(filters: &mut Option<Value>) -> Result<Ids> {
        let mut ids = Ids::default();
        memloop::filter::lift_scope(
            filters,
            [&mut ids.user_id, &mut ids.agent_id, &mut ids.run_id],
        );
        if ids.user_id.is_none() && ids.agent_id.is_none() {
            return Err(Error::invalid(
                "filters must contain at least one of: user_id, agent_id (run_id narrows to a session). Example: filters={'user_id': 'u1'}",
            ));
        }
        Ok(ids)
    }
}

/// A filter in Mem0's JSON form or memloop's text form; empty is none.
fn filter(v: Option<Value>) -> Result<Option<Filter>> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(o)) if o.is_empty() => Ok(None),
        Some(v @ Value::Object(_)) => Filter::from_json(&v).map(Some),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Filter::parse(&s).map(Some),
        Some(_) => Err(Error::invalid(
            "filters must be a dict like {\"user_id\": \"u1\", \"topic\": \"food\"} or a string like 'topic = \"food\"'",
        )),
    }
}

fn time_arg(v: Option<&str>, what: &str) -> Result<Option<i64>> {
    v.map(|s| memloop::parse_reference_time(s, what))
        .transpose()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EmbedArgs {
    texts: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ById {
    id: String,
}

#[derive(Deserialize)]
struct ScopeOnly {
    #[serde(flatten)]
    scope: Ids,
}

#[derive(Deserialize)]
struct Said {
    role: String,
    content: String,
}

#[derive(Deserialize)]
struct AddArgs {
    #[serde(flatten)]
    scope: Ids,
    messages: Vec<Said>,
    #[serde(default)]
    from_list: bool,
    #[serde(default = "yes")]
    infer: bool,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    #[serde(default)]
    kind: Option<Kind>,
    #[serde(default)]
    importance: Option<f32>,
    /// Unix ms.
    #[serde(default)]
    expires_at: Option<i64>,
    /// When it was said: RFC 3339, a date, or Unix seconds.
    #[serde(default)]
    timestamp: Option<Value>,
}

fn yes() -> bool {
    true
}

fn add(lp: &MemoryLoop, tenant: &str, a: AddArgs) -> Result<Value> {
    let scope = a.scope.in_tenant(tenant)?;
    let messages = a
        .messages
        .into_iter()
        .map(|m| Ok((Role::parse(&m.role)?, m.content)))
        .collect::<Result<Vec<_>>>()?;
    if let Some(t) = a.expires_at {
        memloop::check_time("expires_at", t)?;
    }
    let at = a
        .timestamp
        .as_ref()
        .map(|v| memloop::time::parse_said_at("timestamp", v))
        .transpose()?;
    let added = lp.add_messages(
        &scope,
        AddMessages {
            messages,
            from_list: a.from_list,
            infer: a.infer,
            kind: a.kind.unwrap_or_default(),
            metadata: a.metadata.unwrap_or_default(),
            importance: a.importance,
            expires_at: a.expires_at,
            at,
        },
    )?;
    Ok(added.answer())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    query: String,
    #[serde(default)]
    filters: Option<Value>,
    #[serde(default)]
    top_k: Option<usize>,
    #[serde(default)]
    min_score: Option<f32>,
    #[serde(default)]
    kinds: Vec<Kind>,
    #[serde(default)]
    as_of: Option<String>,
    #[serde(default)]
    now: Option<String>,
    #[serde(default)]
    time_mode: Option<String>,
    #[serde(default)]
    expand: Option<bool>,
    #[serde(default)]
    hops: Option<usize>,
    #[serde(default)]
    rerank: Option<bool>,
    #[serde(default)]
    vector_weight: Option<f32>,
    #[serde(default)]
    keyword_weight: Option<f32>,
    #[serde(default)]
    include_superseded: bool,
}

fn search(lp: &MemoryLoop, tenant: &str, mut a: SearchArgs) -> Result<Value> {
    let scope = Ids::lifted_from(&mut a.filters)?.in_tenant(tenant)?;
    let memory = lp.memory();
    let mut q = SearchQuery::new(scope, a.query);
    q.top_k = memloop::check_limit("top_k", a.top_k.unwrap_or(20))?;
    q.filter = filter(a.filters)?;
    q.kinds = a.kinds;
    q.set_weights(a.vector_weight, a.keyword_weight)?;
    q.include_superseded = a.include_superseded;
    if let Some(s) = a.min_score {
        q.set_min_score("threshold", s)?;
    }
    q.as_of = time_arg(a.as_of.as_deref(), "as_of")?;
    q.expand = memory.expansion_asked(a.expand, a.hops)?;
    q.rerank = memory.rerank_asked(a.rerank, None)?;
    let now = time_arg(a.now.as_deref(), "now")?.unwrap_or_else(memloop::now_millis);
    let mode = memloop::QueryTimeMode::parse_field(a.time_mode.as_deref(), "time_mode")?;
    let time = memory.read_time(&mut q, now, mode)?;
    let searched = memory.search_traced(&q)?;
    let mut out = json!({ "results": searched.hits });
    if let Some(t) = time {
        out["time"] = to_json(&t)?;
    }
    if let Some(r) = searched.rerank {
        out["rerank"] = to_json(&r)?;
    }
    Ok(out)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    #[serde(default)]
    filters: Option<Value>,
    #[serde(default)]
    top_k: Option<usize>,
    #[serde(default)]
    kinds: Vec<Kind>,
    #[serde(default)]
    include_superseded: bool,
    #[serde(default)]
    offset: usize,
}

fn list(lp: &MemoryLoop, tenant: &str, mut a: ListArgs) -> Result<Value> {
    let scope = Ids::lifted_from(&mut a.filters)?.in_tenant(tenant)?;
    let q = ListQuery {
        scope,
        filter: filter(a.filters)?,
        kinds: a.kinds,
        include_superseded: a.include_superseded,
        as_of: None,
        limit: memloop::check_limit("top_k", a.top_k.unwrap_or(20))?,
        offset: a.offset.min(1_000_000_000),
    };
    Ok(json!({ "results": lp.memory().list(&q)? }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GetArgs {
    id: String,
    #[serde(default)]
    include_deleted: bool,
}

fn get(lp: &MemoryLoop, tenant: &str, a: GetArgs) -> Result<Value> {
    let memory = lp.memory();
    let record = memory.get_with(tenant, &a.id, Lookup::include_deleted(a.include_deleted))?;
    to_json(&MemoryById::new(&record, memory.clock().now()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateArgs {
    id: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    /// Mem0 merges the given keys into the stored metadata; false replaces it.
    #[serde(default = "yes")]
    merge_metadata: bool,
    /// Unix ms.
    #[serde(default)]
    expires_at: Option<i64>,
    /// Remove the expiry.
    #[serde(default)]
    clear_expiry: bool,
}

fn update(lp: &MemoryLoop, tenant: &str, a: UpdateArgs) -> Result<Value> {
    if a.text.is_none() && a.metadata.is_none() && a.expires_at.is_none() && !a.clear_expiry {
        return Err(Error::invalid(
            "At least one of text, metadata, or expiration_date must be provided.",
        ));
    }
    if let Some(t) = &a.text {
        memloop::text::validate_text(t)?;
    }
    if let Some(t) = a.expires_at {
        memloop::check_time("expires_at", t)?;
    }
    let memory = lp.memory();
    // The id first: nothing is embedded for an id the tenant does not have.
    let record = memory.get_with(tenant, &a.id, Lookup::IncludeDeleted)?;
    let metadata = a.metadata.map(|given| {
        let mut merged = match (a.merge_metadata, record.metadata) {
            (true, Value::Object(stored)) => stored,
            _ => Map::new(),
        };
        merged.extend(given);
        Value::Object(merged)
    });
    let text = match a.text {
        Some(t) => {
            let v = memory.embedder().embed(&t)?;
            Some((t, v))
        }
        None => None,
    };
    let expires_at = match (a.expires_at, a.clear_expiry) {
        (Some(t), _) => Some(Some(t)),
        (None, true) => Some(None),
        (None, false) => None,
    };
    let change = MemoryUpdate {
        text,
        metadata,
        expires_at,
        ..Default::default()
    };
    to_json(&memory.update_in(tenant, &a.id, change)?)
}

#[derive(Deserialize)]
struct DeleteAllArgs {
    #[serde(flatten)]
    scope: Ids,
    #[serde(default)]
    purge: bool,
}

fn delete_all(lp: &MemoryLoop, tenant: &str, a: DeleteAllArgs) -> Result<Value> {
    let scope = a.scope.in_tenant(tenant)?;
    to_json(&lp.forget(&scope, a.purge)?)
}

/// Mem0's `reset()`: every memory of the tenant, with its history and the
/// users' short-term sessions, erased.
fn reset(lp: &MemoryLoop, tenant: &str) -> Result<Value> {
    let mut erased = 0;
    for e in lp.memory().entities(tenant)? {
        let scope = if e.kind == "agent" {
            Scope::agent(e.name)
        } else {
            Scope::user(e.name)
        }
        .with_tenant(tenant);
        erased += lp.forget(&scope, true)?.memories_deleted;
    }
    Ok(json!({ "memories_deleted": erased }))
}

#[derive(Deserialize)]
struct LoopArgs {
    #[serde(flatten)]
    scope: Ids,
    input: String,
}

impl LoopArgs {
    fn scope(self, tenant: &str) -> Result<(Scope, String)> {
        if self.scope.run_id.is_none() {
            return Err(Error::invalid(
                "the loop works per session: give session_id",
            ));
        }
        Ok((self.scope.in_tenant(tenant)?, self.input))
    }
}

fn turn(lp: &MemoryLoop, tenant: &str, a: LoopArgs) -> Result<Value> {
    if !lp.has_llm() {
        return Err(Error::invalid(
            "no LLM is configured, so turn() cannot get a reply: give config={\"llm\": {\"provider\": \"anthropic\", \"model\": \"…\"}} (or set MEMLOOP_LLM_PROVIDER and MEMLOOP_LLM_MODEL); context() assembles the same prompt for an LLM of your own, and record_turn() stores what it said",
        ));
    }
    let (scope, input) = a.scope(tenant)?;
    let outcome = lp.turn(&scope, &input)?;
    let request = outcome.request.as_ref();
    Ok(json!({
        "reply": outcome.reply,
        "system": request.map(|r| &r.system),
        "messages": request.map(|r| &r.messages),
        "trace": outcome.trace,
    }))
}

fn context(lp: &MemoryLoop, tenant: &str, a: LoopArgs) -> Result<Value> {
    let (scope, input) = a.scope(tenant)?;
    let (request, trace) = lp.context(&scope, &input)?;
    Ok(json!({
        "reply": Value::Null,
        "system": request.system,
        "messages": request.messages,
        "trace": trace,
    }))
}

#[derive(Deserialize)]
struct RecordArgs {
    #[serde(flatten)]
    scope: Ids,
    messages: Vec<Value>,
    #[serde(default)]
    turn_id: Option<String>,
    #[serde(default)]
    timestamp: Option<Value>,
}

fn record(lp: &MemoryLoop, tenant: &str, a: RecordArgs) -> Result<Value> {
    if a.scope.run_id.is_none() {
        return Err(Error::invalid(
            "an exchange belongs to a session: give session_id",
        ));
    }
    let at = a
        .timestamp
        .as_ref()
        .map(|v| memloop::time::parse_said_at("timestamp", v))
        .transpose()?;
    let scope = a.scope.in_tenant(tenant)?;
    let recorded = lp.record_messages(&scope, a.turn_id.as_deref(), &a.messages, at)?;
    Ok(recorded.answer())
}

#[derive(Deserialize)]
struct GraphArgs {
    #[serde(flatten)]
    scope: Ids,
    #[serde(default)]
    entity: Option<String>,
    #[serde(default)]
    as_of: Option<String>,
}

fn entities(lp: &MemoryLoop, tenant: &str, a: GraphArgs) -> Result<Value> {
    let as_of = time_arg(a.as_of.as_deref(), "as_of")?;
    let scope = a.scope.in_tenant(tenant)?;
    to_json(&lp.memory().graph_entities(&scope, as_of)?)
}

fn links(lp: &MemoryLoop, tenant: &str, a: GraphArgs) -> Result<Value> {
    let as_of = time_arg(a.as_of.as_deref(), "as_of")?;
    let Some(entity) = a.entity else {
        return Err(Error::invalid("links: give the entity's name"));
    };
    let scope = a.scope.in_tenant(tenant)?;
    match lp.memory().entity_links(&scope, &entity, as_of)? {
        Some(l) => to_json(&l),
        None => Err(Error::EntityNotFound(entity)),
    }
}

#[derive(Deserialize)]
struct ProcedureArgs {
    #[serde(flatten)]
    scope: Ids,
    run: Value,
}

fn record_procedure(lp: &MemoryLoop, tenant: &str, a: ProcedureArgs) -> Result<Value> {
    let scope = a.scope.in_tenant(tenant)?;
    let written = lp
        .memory()
        .record_procedure(&scope, ProcedureRun::from_json(a.run)?)?;
    to_json(&written)
}

#[derive(Deserialize)]
struct ProcedureSearchArgs {
    #[serde(flatten)]
    scope: Ids,
    query: String,
    #[serde(default)]
    top_k: Option<usize>,
}

fn search_procedures(lp: &MemoryLoop, tenant: &str, a: ProcedureSearchArgs) -> Result<Value> {
    let mut q = ProcedureQuery::new(a.scope.in_tenant(tenant)?, a.query);
    if let Some(k) = a.top_k {
        q.top_k = memloop::check_limit("top_k", k)?;
    }
    to_json(&lp.memory().search_procedures(&q)?)
}
