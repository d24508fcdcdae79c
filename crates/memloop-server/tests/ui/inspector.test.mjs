// The inspector in a real headless Chromium against a real `memloop serve`
// on loopback, with memories written through the API under two keys
// (two tenants). Screenshots of each view go to target/ui-screenshots/.
// Run by scripts/test-ui.sh.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, openSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createServer } from "node:net";
import { chromium } from "playwright-core";

const REPO = resolve(import.meta.dirname, "../../../..");
const BIN = process.env.MEMLOOP_BIN || join(process.env.CARGO_TARGET_DIR || join(REPO, "target"), "debug", "memloop");
const SHOTS = join(REPO, "target", "ui-screenshots");
const KEY_A = "key-acme-1234", KEY_B = "key-globex-5678";

let server, base, browser, dataDir;
const ids = {};

const freePort = () => new Promise((ok, fail) => {
  const s = createServer().listen(0, "127.0.0.1", () => { const { port } = s.address(); s.close(() => ok(port)); });
  s.on("error", fail);
});

async function call(method, path, key, body) {
  const res = await fetch(base + path, {
    method,
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  assert.ok(res.ok, `${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  dataDir = mkdtempSync(join(tmpdir(), "memloop-ui-"));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  server = spawn(BIN, ["--data-dir", dataDir, "serve", "--addr", `127.0.0.1:${port}`], {
    env: { ...process.env, MEMLOOP_API_KEYS: `${KEY_A}=acme,${KEY_B}=globex`, MEMLOOP_TRACE_RING: "50" },
    stdio: ["ignore", "ignore", openSync(join(SHOTS, "serve.log"), "w")],
  });
  for (let i = 0; ; i++) {
    try { if ((await fetch(`${base}/healthz`)).ok) break; } catch { /* not up yet */ }
    assert.ok(i < 600, "memloop serve did not start");
    await new Promise((r) => setTimeout(r, 100));
  }
  // Tenant acme: Alice moves from Paris to Berlin, a fact with metadata,
  // an exchange recorded, a context assembled.
  const paris = await call("POST", "/v1/memories", KEY_A,
    { messages: "I live in Paris.", user_id: "alice", run_id: "s1", timestamp: "2026-11-01" });
  ids.paris = paris.results.find((r) => r.kind === "fact").id;
  const berlin = await call("POST", "/v1/memories", KEY_A,
    { messages: "I moved to Berlin.", user_id: "alice", run_id: "s2", timestamp: "2026-11-20" });
  ids.berlin = berlin.results.find((r) => r.kind === "fact" && r.memory.includes("Berlin")).id;
  const tea = await call("POST", "/v1/memories", KEY_A,
    { messages: "Alice drinks green tea every morning", user_id: "alice", infer: false, metadata: { topic: "food" } });
  ids.tea = tea.results[0].id;
  await call("POST", "/v1/turn/record", KEY_A, {
    user_id: "alice", run_id: "s3", timestamp: "2026-11-25",
    messages: [{ role: "user", content: "My sister Ana works at Acme in Munich." },
               { role: "assistant", content: "Good to know!" }],
  });
  await call("POST", "/v1/context", KEY_A, { input: "Where do I live now?", user_id: "alice", run_id: "s3" });
  // Tenant globex: one secret of its own.
  const secret = await call("POST", "/v1/memories", KEY_B,
    { messages: "The vault code is mango-42", user_id: "bob", infer: false });
  ids.secret = secret.results[0].id;
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
});

after(async () => {
  await browser?.close();
  server?.kill("SIGTERM");
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** A page whose tab already holds `key`, recording console errors. */
async function pageWith(key) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  if (key) await context.addInitScript((k) => sessionStorage.setItem("memloop-api-key", k), key);
  const page = await context.newPage();
  page.errors = [];
  page.on("console", (m) => { if (m.type() === "error") page.errors.push(m.text()); });
  page.on("pageerror", (e) => page.errors.push(String(e)));
  return page;
}

async function show(page, hash) {
  await page.goto(`${base}/ui/${hash}`);
  await page.waitForSelector("main:not([aria-busy])");
}

test("the page and its files load without a key and without console errors", async () => {
  for (const [path, type] of [["/ui/", "text/html"], ["/ui/app.js", "text/javascript"], ["/ui/app.css", "text/css"]]) {
    const res = await fetch(base + path);
    assert.equal(res.status, 200, path);
    assert.ok(res.headers.get("content-type").startsWith(type), path);
    assert.match(res.headers.get("content-security-policy"), /default-src 'none'/);
  }
  const page = await pageWith(KEY_A);
  await show(page, "#/users");
  await page.waitForSelector("table[aria-label='Users of this tenant']");
  assert.deepEqual(page.errors, []);
  await page.screenshot({ path: join(SHOTS, "users.png"), fullPage: true });
  await page.context().close();
});

test("lists the tenant's users with counts, and a user's memories", async () => {
  const page = await pageWith(KEY_A);
  await show(page, "#/users");
  const row = page.locator("table[aria-label='Users of this tenant'] tbody tr", { hasText: "alice" });
  await row.waitFor();
  const cells = await row.locator("td").allInnerTexts();
  assert.equal(cells[0], "alice");
  assert.ok(Number(cells[2]) >= 2, `facts: ${cells}`);      // Berlin, Ana, tea...
  assert.ok(Number(cells[3]) >= 2, `episodes: ${cells}`);
  assert.ok(Number(cells[5]) >= 2, `sessions: ${cells}`);
  await row.getByRole("link", { name: "alice" }).click();
  await page.waitForSelector("table[aria-label='Memories']");
  const text = await page.locator("main").innerText();
  assert.match(text, /Berlin/);
  assert.match(text, /green tea/);
  // The filter language narrows the list.
  await page.getByLabel("Filter (memloop's filter language)").fill('topic = "food"');
  await page.getByRole("button", { name: "Show" }).click();
  await page.waitForFunction(() => document.querySelectorAll("table[aria-label='Memories'] tbody tr").length === 1);
  assert.match(await page.locator("table[aria-label='Memories'] tbody").innerText(), /green tea/);
  await page.screenshot({ path: join(SHOTS, "memories.png"), fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("shows the supersession timeline after Paris → Berlin", async () => {
  const page = await pageWith(KEY_A);
  await show(page, `#/memory/${ids.paris}`);
  const timeline = page.locator("ol[aria-label='History of this memory']");
  await timeline.waitFor();
  const text = await timeline.innerText();
  assert.match(text, /ADD/);
  assert.match(text, /superseded by/);
  assert.match(await page.locator("main").innerText(), /Paris[\s\S]*\(superseded\)/);
  await timeline.getByRole("link", { name: ids.berlin }).click();
  await page.waitForFunction(() => document.querySelector("main").innerText.includes("(current)"));
  assert.match(await page.locator("main").innerText(), /Berlin/);
  await show(page, `#/memory/${ids.paris}`);
  await page.screenshot({ path: join(SHOTS, "timeline.png"), fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("runs a search and draws each hit's scores", async () => {
  const page = await pageWith(KEY_A);
  await show(page, "#/search");
  await page.getByLabel("User").fill("alice");
  await page.getByLabel("Query").fill("which city does she live in?");
  await page.getByRole("button", { name: "Search" }).click();
  await page.waitForSelector("#hits .hit");
  const first = page.locator("#hits .hit").first();
  assert.match(await first.innerText(), /Berlin/);
  const width = await first.locator("rect[data-signal='vector']").getAttribute("width");
  assert.ok(parseFloat(width) > 0, `vector bar ${width}`);
  assert.match(await first.locator(".bars").innerText(), /final score\s+0\.\d{3}/);
  const fused = await first.locator("rect[data-signal='fused']").getAttribute("width");
  // Keywords alone: the weights reach the search.
  await page.getByLabel("Meaning weight").fill("0");
  await page.getByRole("button", { name: "Search" }).click();
  await page.waitForSelector("#hits[data-query*='vector_weight=0'] .hit");
  const fusedNow = await page.locator("#hits .hit").first().locator("rect[data-signal='fused']").getAttribute("width");
  assert.notEqual(fusedNow, fused, "a different fusion, a different fused score");
  await page.screenshot({ path: join(SHOTS, "search.png"), fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("shows the recent turns with their gate, writes and token shares", async () => {
  const page = await pageWith(KEY_A);
  await show(page, "#/turns");
  const turns = page.locator("section.hit");
  await turns.first().waitFor();
  assert.equal(await turns.count(), 2);
  const [context, record] = await turns.allInnerTexts();
  assert.match(context, /context[\s\S]*Where do I live now\?/);
  assert.match(context, /Berlin/);
  assert.match(record, /record[\s\S]*Gate: kept/);
  assert.match(record, /ADD/);
  await page.screenshot({ path: join(SHOTS, "turns.png"), fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("draws the graph, and an entity's memories on a click", async () => {
  const page = await pageWith(KEY_A);
  await show(page, "#/user/alice/graph");
  const node = page.locator("svg .node", { hasText: "Ana" });
  await node.waitFor();
  await node.click();
  await page.waitForSelector("#entity-memories li");
  assert.match(await page.locator("#entity-memories").innerText(), /Acme/);
  await page.screenshot({ path: join(SHOTS, "graph.png"), fullPage: true });
  await show(page, "#/user/alice/chart");
  assert.ok((await page.locator("svg rect").count()) >= 2);
  await page.screenshot({ path: join(SHOTS, "chart.png"), fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("deletes a memory only after confirming", async () => {
  const page = await pageWith(KEY_A);
  await show(page, `#/memory/${ids.tea}`);
  await page.getByRole("button", { name: "Delete this memory…" }).click();
  await page.getByRole("button", { name: "Cancel" }).click();
  assert.equal((await call("GET", `/v1/memories/${ids.tea}?include_deleted=true`, KEY_A)).status, "current");
  await page.getByRole("button", { name: "Delete this memory…" }).click();
  await page.getByRole("button", { name: "Delete", exact: true }).click();
  await page.waitForFunction(() => document.querySelector("main").innerText.includes("(deleted)"));
  assert.equal((await call("GET", `/v1/memories/${ids.tea}?include_deleted=true`, KEY_A)).status, "deleted");
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("refuses a missing or wrong key, and shows nothing", async () => {
  const page = await pageWith(null);
  await show(page, "#/users");
  assert.match(await page.locator("main").innerText(), /refused the key: no API key/);
  await page.getByLabel("API key").fill("not-a-key");
  await page.getByRole("button", { name: "Use key" }).click();
  await page.waitForFunction(() => document.querySelector("main").innerText.includes("invalid API key"));
  assert.doesNotMatch(await page.locator("body").innerText(), /alice|Berlin/);
  await page.screenshot({ path: join(SHOTS, "wrong-key.png"), fullPage: true });
  // The key lives in this tab's session storage only.
  await page.getByLabel("API key").fill(KEY_A);
  await page.getByRole("button", { name: "Use key" }).click();
  await page.waitForSelector("table[aria-label='Users of this tenant']");
  assert.equal(await page.evaluate(() => localStorage.length), 0);
  await page.context().close();
});

test("never shows one tenant's data under another's key", async () => {
  const page = await pageWith(KEY_B);
  await show(page, "#/users");
  await page.waitForSelector("table[aria-label='Users of this tenant']");
  const users = await page.locator("main").innerText();
  assert.match(users, /bob/);
  assert.doesNotMatch(users, /alice/);
  await show(page, `#/memory/${ids.paris}`);
  assert.match(await page.locator("main").innerText(), /no memory with id/);
  await show(page, "#/search?user_id=alice&query=Berlin");
  assert.match(await page.locator("main").innerText(), /No hits/);
  await show(page, "#/turns");
  assert.match(await page.locator("main").innerText(), /No turns yet/);
  await show(page, "#/user/alice/memories");
  assert.doesNotMatch(await page.locator("table[aria-label='Memories']").innerText(), /Berlin|Paris|tea/);
  const a = await pageWith(KEY_A);
  await show(a, `#/memory/${ids.secret}`);
  assert.match(await a.locator("main").innerText(), /no memory with id/);
  await a.context().close();
  await page.context().close();
});
