// The memloop inspector: a page of plain JavaScript over the REST API.
// It holds no data of its own: every view is one or a few API calls made
// with the key the user entered (kept in this tab's session storage only).

const KEY = "memloop-api-key";
const main = document.getElementById("main");
const statusLine = document.getElementById("status");
const KINDS = ["fact", "episode", "procedure"];
const SIGNALS = [
  ["vector", "meaning"], ["bm25", "keywords"], ["time", "time"], ["graph", "links"],
  ["speaker_boost", "speaker boost"], ["decay", "decay"], ["fused", "fused"],
];

const esc = (v) => String(v ?? "").replace(/[&<>"']/g,
  (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
const day = (t) => (t ? String(t).slice(0, 10) : "");
const when = (t) => (t ? String(t).replace("T", " ").slice(0, 19) : "");
const num = (v, d = 3) => (typeof v === "number" ? v.toFixed(d) : "–");
const kindBadge = (k) => `<span class="kind kind-${esc(k)}">${esc(k)}</span>`;
const q = (params) => new URLSearchParams(Object.entries(params)
  .filter(([, v]) => v !== undefined && v !== null && v !== "")).toString();

function say(message, isError = false) {
  statusLine.textContent = message;
  statusLine.className = isError ? "error" : "";
}

/** One API call with the key; an error answer becomes an exception
 *  carrying the server's own message. */
async function api(path, options = {}) {
  const headers = { Accept: "application/json" };
  const key = sessionStorage.getItem(KEY);
  if (key) headers.Authorization = `Bearer ${key}`;
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, {
    method: options.method || "GET", headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await res.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch { body = null; }
  if (!res.ok) {
    const message = body?.error?.message || body?.detail || `${res.status} ${res.statusText}`;
    const e = new Error(res.status === 401 ? `The server refused the key: ${message}` : message);
    e.status = res.status;
    throw e;
  }
  return body;
}

// ---- views -----------------------------------------------------------

async function viewUsers() {
  const { results } = await api("/v1/users");
  if (!results.length) return `<h2>Users</h2><p>No memories in this tenant yet.</p>`;
  const rows = results.map((u) => `<tr>
      <td><a href="#/user/${encodeURIComponent(u.id)}/memories">${esc(u.id)}</a></td>
      <td>${esc(u.type)}</td>
      ${KINDS.map((k) => `<td>${u.counts[k] ?? 0}</td>`).join("")}
      <td>${u.sessions}</td><td>${esc(when(u.last_activity))}</td></tr>`).join("");
  return `<h2>Users</h2>
    <table aria-label="Users of this tenant"><thead><tr><th scope="col">User</th><th scope="col">Type</th>
      <th scope="col">Facts</th><th scope="col">Episodes</th><th scope="col">Procedures</th>
      <th scope="col">Sessions</th><th scope="col">Last activity</th></tr></thead><tbody>${rows}</tbody></table>`;
}

function userTabs(user, tab) {
  const tabs = [["memories", "Memories"], ["sessions", "Sessions"], ["graph", "Graph"], ["chart", "Over time"]];
  return `<h2>${esc(user)}</h2><nav aria-label="User views">${tabs.map(([t, label]) =>
    `<a href="#/user/${encodeURIComponent(user)}/${t}"${t === tab ? ' aria-current="page"' : ""}>${label}</a>`).join("")}</nav>`;
}

async function viewMemories(user, params) {
  const list = await api(`/v1/memories?${q({
    user_id: user, limit: 500, kind: params.get("kind"), filter: params.get("filter"),
    include_superseded: params.get("all") === "1" ? "true" : undefined,
  })}`);
  const rows = list.results.map((m) => {
    const stale = m.valid_until ? " stale" : "";
    return `<tr>
      <td class="${stale}"><a href="#/memory/${encodeURIComponent(m.id)}">${esc(m.memory)}</a></td>
      <td>${kindBadge(m.kind)}</td>
      <td>${esc(day(m.valid_from))} → ${m.valid_until ? esc(day(m.valid_until)) : "now"}</td>
      <td>${m.expires_at ? esc(day(m.expires_at)) : "–"}</td>
      <td>${num(m.importance, 2)}</td>
      <td>${esc(m.provenance?.session_id || "")}<br><span class="muted">${esc((m.provenance?.turn_ids || []).join(", "))}</span></td>
    </tr>`;
  }).join("");
  return `<form class="inline" id="memory-filter" aria-label="Filter memories">
      <label>Kind <select name="kind"><option value="">any</option>${KINDS.map((k) =>
        `<option${params.get("kind") === k ? " selected" : ""}>${k}</option>`).join("")}</select></label>
      <label>Filter (memloop's filter language)
        <input name="filter" size="40" value="${esc(params.get("filter") || "")}" placeholder='topic = "food" AND rating >= 4'></label>
      <label><span>Superseded and deleted too</span><input type="checkbox" name="all"${params.get("all") === "1" ? " checked" : ""}></label>
      <button type="submit">Show</button></form>
    <table aria-label="Memories"><thead><tr><th scope="col">Memory</th><th scope="col">Kind</th>
      <th scope="col">Valid</th><th scope="col">Expires</th><th scope="col">Importance</th>
      <th scope="col">Session and turns</th></tr></thead><tbody>${rows || `<tr><td colspan="6">None.</td></tr>`}</tbody></table>`;
}

async function viewSessions(user) {
  const { sessions } = await api(`/v1/sessions?${q({ user_id: user })}`);
  return `<table aria-label="Sessions"><thead><tr><th scope="col">#</th><th scope="col">Session</th>
    <th scope="col">Started</th><th scope="col">Ended</th><th scope="col">Memories</th></tr></thead><tbody>
    ${sessions.map((s) => `<tr><td>${s.ordinal}</td><td>${esc(s.id)}</td><td>${esc(when(s.started_at))}</td>
      <td>${esc(when(s.ended_at))}</td><td>${s.memories}</td></tr>`).join("") || `<tr><td colspan="5">None.</td></tr>`}
    </tbody></table>`;
}

async function viewGraph(user) {
  const { results } = await api(`/v1/entities?${q({ user_id: user })}`);
  const entities = results.slice(0, 14);
  if (!entities.length) return `<p>No entities named in this user's memories.</p>`;
  const links = await Promise.all(entities.map((e) =>
    api(`/v1/entities/${encodeURIComponent(e.name)}/links?${q({ user_id: user })}`).catch(() => null)));
  const W = 640, H = 420, R = 160, cx = W / 2, cy = H / 2;
  const at = new Map(entities.map((e, i) => {
    const a = (2 * Math.PI * i) / entities.length - Math.PI / 2;
    return [e.name, [cx + R * Math.cos(a), cy + R * Math.sin(a)]];
  }));
  // Each relation once (both ends list it), and only those that hold now.
  const edges = new Map();
  links.forEach((l) => (l?.relations || []).forEach((r) => {
    if (at.has(r.subject) && at.has(r.object) && !r.valid_until) edges.set(`${r.subject}|${r.relation}|${r.object}`, r);
  }));
  const svgEdges = [...edges.values()].map((r) => {
    const [x1, y1] = at.get(r.subject), [x2, y2] = at.get(r.object);
    return `<line x1="${x1}" y1="${y1}" x2="${x2}" y2="${y2}" stroke="#8c959f"/>
      <text x="${(x1 + x2) / 2}" y="${(y1 + y2) / 2 - 4}" text-anchor="middle">${esc(r.relation)}</text>`;
  }).join("");
  const nodes = entities.map((e, i) => {
    const [x, y] = at.get(e.name);
    return `<g class="node" tabindex="0" role="button" data-i="${i}" aria-label="${esc(e.name)}: ${e.memories} memories">
      <circle cx="${x}" cy="${y}" r="${8 + Math.min(14, 2 * e.memories)}" fill="#0b5cad" opacity=".85"/>
      <text x="${x}" y="${y + 26}" text-anchor="middle">${esc(e.name)}</text></g>`;
  }).join("");
  setTimeout(() => {
    const show = (i) => {
      const l = links[i];
      document.getElementById("entity-memories").innerHTML = l
        ? `<h3>${esc(l.entity.name)}</h3><ul>${l.memories.map((m) =>
            `<li><a href="#/memory/${encodeURIComponent(m.id)}">${esc(m.memory)}</a></li>`).join("")}</ul>`
        : "";
    };
    document.querySelectorAll("svg .node").forEach((n) => {
      n.addEventListener("click", () => show(Number(n.dataset.i)));
      n.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") show(Number(n.dataset.i)); });
    });
  });
  return `<svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img"
      aria-label="Entities this user's memories name, and the relations that hold between them">${svgEdges}${nodes}</svg>
    <div id="entity-memories" aria-live="polite"><p class="muted">Choose an entity to see its memories.</p></div>`;
}

async function viewChart(user) {
  const { results } = await api(`/v1/memories?${q({ user_id: user, limit: 1000, include_superseded: "true" })}`);
  const byDay = new Map();
  for (const m of results) {
    const d = day(m.valid_from);
    const row = byDay.get(d) || { fact: 0, episode: 0, procedure: 0 };
    row[m.kind] = (row[m.kind] || 0) + 1;
    byDay.set(d, row);
  }
  const days = [...byDay.keys()].sort();
  if (!days.length) return `<p>No memories.</p>`;
  const max = Math.max(...days.map((d) => KINDS.reduce((s, k) => s + byDay.get(d)[k], 0)));
  const W = Math.max(320, days.length * 28 + 40), H = 220, bw = 20;
  const colors = { fact: "#0b5cad", episode: "#8250df", procedure: "#1a7f37" };
  const bars = days.map((d, i) => {
    let y = H - 30;
    return KINDS.map((k) => {
      const h = ((H - 50) * byDay.get(d)[k]) / max;
      y -= h;
      return h ? `<rect x="${30 + i * 28}" y="${y}" width="${bw}" height="${h}" fill="${colors[k]}"><title>${d}: ${byDay.get(d)[k]} ${k}</title></rect>` : "";
    }).join("") + `<text x="${30 + i * 28 + bw / 2}" y="${H - 12}" text-anchor="middle">${d.slice(5)}</text>`;
  }).join("");
  return `<h3>Memories over time, by kind (when each became true)</h3>
    <p class="legend">${KINDS.map((k) => `<span>${kindBadge(k)}</span>`).join("")}</p>
    <svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img"
      aria-label="Memories per day by kind over ${days.length} days, at most ${max} a day">${bars}</svg>`;
}

async function viewMemory(id) {
  const [m, history] = await Promise.all([
    api(`/v1/memories/${encodeURIComponent(id)}?include_deleted=true`),
    api(`/v1/memories/${encodeURIComponent(id)}/history`),
  ]);
  const events = history.results.map((h) => `<li class="ev-${esc(h.event)}">
      <strong>${esc(h.event)}</strong> <span class="muted">${esc(when(h.at))} · ${esc(h.actor)}</span><br>
      ${h.old_memory ? `<span class="stale">${esc(h.old_memory)}</span> → ` : ""}${esc(h.new_memory ?? "(deleted)")}
      ${h.reason ? `<br><span class="muted">${esc(h.reason)}</span>` : ""}</li>`).join("");
  const replaced = m.superseded_by
    ? `<li class="ev-SUPERSEDED"><strong>superseded by</strong> <a href="#/memory/${encodeURIComponent(m.superseded_by)}">${esc(m.superseded_by)}</a>
        <span class="muted">valid until ${esc(when(m.valid_until))}</span></li>` : "";
  return `<h2>Memory</h2>
    <p>${kindBadge(m.kind)} <span class="${m.status === "current" ? "" : "stale"}">${esc(m.memory)}</span>
      <span class="muted">(${esc(m.status)})</span></p>
    <table aria-label="This memory"><tbody>
      <tr><th scope="row">id</th><td>${esc(m.id)}</td></tr>
      <tr><th scope="row">user</th><td><a href="#/user/${encodeURIComponent(m.user_id || "")}/memories">${esc(m.user_id || "")}</a> ${esc(m.agent_id || "")}</td></tr>
      <tr><th scope="row">valid</th><td>${esc(when(m.valid_from))} → ${m.valid_until ? esc(when(m.valid_until)) : "now"}</td></tr>
      <tr><th scope="row">expires</th><td>${m.expires_at ? esc(when(m.expires_at)) : "never"}</td></tr>
      <tr><th scope="row">importance</th><td>${num(m.importance, 2)} · read ${m.access_count} times</td></tr>
      <tr><th scope="row">provenance</th><td>session ${esc(m.provenance?.session_id || "–")}, turns ${esc((m.provenance?.turn_ids || []).join(", ") || "–")}, by ${esc(m.provenance?.source)}</td></tr>
      <tr><th scope="row">metadata</th><td><code>${esc(JSON.stringify(m.metadata))}</code></td></tr>
    </tbody></table>
    <h3>History</h3><ol class="timeline" aria-label="History of this memory">${events}${replaced}</ol>
    ${m.status === "current" ? `<button class="danger" id="delete-memory">Delete this memory…</button>` : ""}
    <dialog id="confirm-delete" aria-labelledby="confirm-title"><p id="confirm-title">Delete “${esc(m.memory)}”? Its history is kept.</p>
      <form method="dialog"><button value="cancel">Cancel</button> <button class="danger" value="delete">Delete</button></form></dialog>`;
}

function wireMemory(id) {
  const button = document.getElementById("delete-memory");
  const dialog = document.getElementById("confirm-delete");
  if (!button || !dialog) return;
  button.addEventListener("click", () => dialog.showModal());
  dialog.addEventListener("close", async () => {
    if (dialog.returnValue !== "delete") return;
    try {
      await api(`/v1/memories/${encodeURIComponent(id)}`, { method: "DELETE" });
      say("Deleted.");
      route();
    } catch (e) { say(e.message, true); }
  });
}

function scoreBars(hit) {
  const rows = [["score", "final score", hit.score], ...SIGNALS.map(([k, label]) => [k, label, hit.scores?.[k]])];
  return `<div class="bars" role="table" aria-label="Scores of this hit">${rows.map(([k, label, v]) => {
    const value = typeof v === "number" ? v : 0;
    const width = Math.max(0, Math.min(1, Math.abs(value))) * 100;
    return `<span role="cell">${esc(label)}</span>
      <span role="cell"><svg class="bar-track" width="100%" height="12" aria-hidden="true"><rect class="bar${value ? "" : " zero"}"
        data-signal="${k}" width="${width}%" height="12" rx="2"/></svg></span>
      <span role="cell">${typeof v === "number" ? v.toFixed(3) : "–"}</span>`;
  }).join("")}</div>`;
}

async function viewSearch(params) {
  const form = `<h2>Search playground</h2>
    <form class="inline" id="search-form" aria-label="Search">
      <label>User <input name="user_id" required value="${esc(params.get("user_id") || "")}"></label>
      <label>Query <input name="query" required size="36" value="${esc(params.get("query") || "")}"></label>
      <label>Top k <input name="top_k" type="number" min="1" max="1000" value="${esc(params.get("top_k") || "10")}"></label>
      <fieldset><legend>Kinds</legend>${KINDS.map((k) => `<label><input type="checkbox" name="kinds" value="${k}"${
        params.getAll("kinds").includes(k) ? " checked" : ""}> ${k}</label>`).join("")}</fieldset>
      <label>As of <input name="as_of" placeholder="2026-11-30" value="${esc(params.get("as_of") || "")}"></label>
      <label>Now <input name="now" placeholder="2026-12-01" value="${esc(params.get("now") || "")}"></label>
      <label>Time words <select name="time_mode">${["boost", "filter", "off"].map((m) =>
        `<option${params.get("time_mode") === m ? " selected" : ""}>${m}</option>`).join("")}</select></label>
      <label>Meaning weight <input name="vector_weight" type="number" min="0" max="10" step="0.1" placeholder="0.5" value="${esc(params.get("vector_weight") || "")}"></label>
      <label>Keyword weight <input name="keyword_weight" type="number" min="0" max="10" step="0.1" placeholder="1" value="${esc(params.get("keyword_weight") || "")}"></label>
      <label><span>Follow entity links</span><input type="checkbox" name="expand" value="1"${params.get("expand") ? " checked" : ""}></label>
      <label><span>Superseded too</span><input type="checkbox" name="include_superseded" value="1"${params.get("include_superseded") ? " checked" : ""}></label>
      <button type="submit">Search</button></form>`;
  if (!params.get("user_id") || !params.get("query")) return form;
  const body = {
    query: params.get("query"), user_id: params.get("user_id"), top_k: Number(params.get("top_k") || 10),
    kinds: params.getAll("kinds"), time_mode: params.get("time_mode") || undefined,
    as_of: params.get("as_of") || undefined, now: params.get("now") || undefined,
    expand: params.get("expand") ? true : undefined,
    include_superseded: params.get("include_superseded") ? true : undefined,
    vector_weight: params.get("vector_weight") ? Number(params.get("vector_weight")) : undefined,
    keyword_weight: params.get("keyword_weight") ? Number(params.get("keyword_weight")) : undefined,
  };
  const answer = await api("/v1/memories/search", { method: "POST", body });
  const hits = answer.results.map((h, i) => `<section class="hit" aria-label="Hit ${i + 1}">
      <p>${i + 1}. ${kindBadge(h.kind)} <a href="#/memory/${encodeURIComponent(h.id)}">${esc(h.memory)}</a>
        <span class="muted">${esc(day(h.valid_from))}</span></p>${scoreBars(h)}</section>`).join("");
  const time = answer.time ? `<p class="muted">Time read from the query: “${esc(answer.time.phrase)}”,
    ${esc(day(answer.time.start))} to ${esc(day(answer.time.end))} (${esc(answer.time.mode)}).</p>` : "";
  return `${form}${time}<div id="hits" data-query="${esc(location.hash)}">${hits || "<p>No hits.</p>"}</div>`;
}

async function viewTurns() {
  const answer = await api("/v1/traces?limit=50");
  if (!answer.enabled) {
    return `<h2>Turns</h2><p>Turn traces are not kept on this server. Set <code>trace_ring = 100</code> under
      <code>[server]</code> (or <code>MEMLOOP_TRACE_RING=100</code>) to keep the last turns of each tenant.</p>`;
  }
  const parts = ["system", "memories", "summary", "turns", "input"];
  const colors = ["#57606a", "#0b5cad", "#8250df", "#bf8700", "#1a7f37"];
  const turns = answer.results.map((t, i) => {
    const tr = t.trace, tok = tr.tokens || {};
    const total = parts.reduce((s, p) => s + (tok[p] || 0), 0) || 1;
    let x = 0;
    const share = parts.map((p, j) => {
      const w = (100 * (tok[p] || 0)) / total;
      const r = `<rect x="${x}%" y="0" width="${w}%" height="14" fill="${colors[j]}"><title>${p}: ${tok[p] || 0} tokens</title></rect>`;
      x += w;
      return r;
    }).join("");
    return `<section class="hit" aria-label="Turn ${i + 1}">
      <p><strong>${esc(t.route)}</strong> ${esc(when(t.at))} · ${esc(tr.user_id || "")} / ${esc(tr.session_id)}:
        “${esc(tr.query)}”</p>
      <p>Gate: <strong>${tr.gate?.persist ? "kept" : "not kept"}</strong> <span class="muted">(${esc(tr.gate?.reason)})</span></p>
      ${tok.total_input ? `<p>Tokens: ${tok.total_input} in (${parts.map((p) => `${p} ${tok[p] || 0}`).join(", ")}), reply ${tok.reply ?? 0}</p>
      <svg width="100%" height="14" role="img" aria-label="Token share by part">${share}</svg>`
        : `<p class="muted">No prompt assembled: an exchange your agent ran with its own model, recorded.</p>`}
      <table aria-label="Retrieved"><thead><tr><th scope="col">Retrieved</th><th scope="col">Score</th><th scope="col">In the prompt</th></tr></thead><tbody>
      ${(tr.retrieved || []).map((r) => `<tr><td><a href="#/memory/${encodeURIComponent(r.id)}">${esc(r.memory)}</a></td>
        <td>${num(r.score)}</td><td>${r.included ? "yes" : "no (budget)"}</td></tr>`).join("") || `<tr><td colspan="3">Nothing.</td></tr>`}
      </tbody></table>
      <ul aria-label="Written">${(tr.writes || []).map((w) => `<li>${esc(w.event)} ${kindBadge(w.kind)} ${esc(w.memory)}
        <span class="muted">${esc(w.reason)}</span></li>`).join("")}</ul></section>`;
  }).join("");
  return `<h2>Turns</h2><p class="legend">${parts.map((p, j) =>
    `<span><svg width="10" height="10" aria-hidden="true"><rect width="10" height="10" fill="${colors[j]}"/></svg> ${p}</span>`).join("")}</p>
    ${turns || "<p>No turns yet.</p>"}`;
}

// ---- routing ---------------------------------------------------------

function currentNav(hash) {
  document.querySelectorAll("header nav a").forEach((a) => {
    const here = hash.startsWith(a.getAttribute("href")) || (a.getAttribute("href") === "#/users" && hash.startsWith("#/user"));
    if (here) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  });
}

async function route() {
  const hash = location.hash || "#/users";
  const [path, query = ""] = hash.slice(1).split("?");
  const params = new URLSearchParams(query);
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  currentNav(hash);
  main.setAttribute("aria-busy", "true");
  try {
    let html;
    if (parts[0] === "user" && parts[1]) {
      const tab = parts[2] || "memories";
      const view = { memories: () => viewMemories(parts[1], params), sessions: () => viewSessions(parts[1]),
        graph: () => viewGraph(parts[1]), chart: () => viewChart(parts[1]) }[tab] || (() => viewMemories(parts[1], params));
      html = userTabs(parts[1], tab) + await view();
    } else if (parts[0] === "memory" && parts[1]) {
      html = await viewMemory(parts[1]);
    } else if (parts[0] === "search") {
      html = await viewSearch(params);
    } else if (parts[0] === "turns") {
      html = await viewTurns();
    } else {
      html = await viewUsers();
    }
    main.innerHTML = html;
    if (parts[0] === "memory") wireMemory(parts[1]);
    wireForms(parts);
    if (!statusLine.classList.contains("error")) say("");
  } catch (e) {
    main.innerHTML = `<p class="error" role="alert">${esc(e.message)}</p>`;
    say(e.message, true);
  } finally {
    main.removeAttribute("aria-busy");
  }
}

function wireForms(parts) {
  const toHash = (base, form) => {
    const data = new FormData(form);
    const params = new URLSearchParams();
    for (const [k, v] of data.entries()) if (v !== "") params.append(k, k === "all" ? "1" : v);
    location.hash = `${base}?${params}`;
  };
  document.getElementById("search-form")?.addEventListener("submit", (ev) => {
    ev.preventDefault();
    toHash("#/search", ev.target);
  });
  document.getElementById("memory-filter")?.addEventListener("submit", (ev) => {
    ev.preventDefault();
    toHash(`#/user/${encodeURIComponent(parts[1])}/memories`, ev.target);
  });
}

document.getElementById("key-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const input = document.getElementById("api-key");
  if (input.value) sessionStorage.setItem(KEY, input.value.trim());
  input.value = "";
  say("");
  route();
});
document.getElementById("forget-key").addEventListener("click", () => {
  sessionStorage.removeItem(KEY);
  say("Key forgotten.");
  route();
});
window.addEventListener("hashchange", route);
route();
