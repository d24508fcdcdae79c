import assert from "node:assert/strict";
import { after, before, beforeEach, test } from "node:test";
import { load, StubMemloop, textOfResult, tool } from "./helpers.ts";

const stub = new StubMemloop();
before(async () => {
  await stub.start();
});
after(async () => {
  await stub.stop();
});
beforeEach(() => {
  stub.seen.length = 0;
  stub.routes.clear();
});

const ctx = { agentId: "main", sessionId: "s1", messageChannel: "slack", requesterSenderId: "U1" };
const hit = (id: string, memory: string, score: number, user = "slack:U1") => ({ id, memory, score, kind: "fact", user_id: user, valid_from: "2026-05-01T10:00:00Z" });
const run = async (name: string, params: unknown, c: object = ctx) => {
  const r = load({ baseUrl: stub.url });
  return tool(r, c, name).execute("call-1", params);
};

test("memory_search sends the sender's scope and lists hits with ids, escaped", async () => {
  stub.on("POST /v1/memories/search", () => ({ json: { results: [hit("m1", "I <3 tea", 0.91)] } }));
  const res = await run("memory_search", { query: "drinks", maxResults: 3 });
  assert.deepEqual(stub.seen[0]?.body, { user_id: "slack:U1", run_id: "s1", query: "drinks", top_k: 3 });
  assert.match(textOfResult(res), /1\. m1 \[fact, 2026-05-01, score 0\.91\] I &lt;3 tea/);
});

test("a tool reports memloop's failure as text instead of throwing", async () => {
  stub.on("POST /v1/memories/search", () => ({ status: 401, json: { error: { code: "unauthorized", message: "unknown key" } } }));
  const res = await run("memory_search", { query: "x" });
  assert.match(textOfResult(res), /^memory_search failed: memloop refused POST \/v1\/memories\/search: 401 unknown key \(set apiKey/);
  assert.match(textOfResult(await run("memory_search", {})), /needs a non-empty query/);
});

test("memory_get reads the caller's own memory, and another user's reads as unknown", async () => {
  stub.on("GET /v1/memories/m1", () => ({ json: hit("m1", "I live in Porto", 1) }));
  stub.on("GET /v1/memories/m2", () => ({ json: hit("m2", "someone else's", 1, "slack:U2") }));
  assert.match(textOfResult(await run("memory_get", { path: "m1" })), /^m1 \[fact, since 2026-05-01\]: I live in Porto$/);
  assert.equal(textOfResult(await run("memory_get", { path: "m2" })), "No memory with id m2.");
});

test("memory_store goes through the write pipeline, and stores as given when the gate keeps nothing", async () => {
  let calls = 0;
  stub.on("POST /v1/memories", () => {
    calls++;
    return { json: calls === 1 ? { results: [], notes: ["not kept"] } : { results: [{ id: "m9", memory: "ok", event: "ADD" }] } };
  });
  const res = await run("memory_store", { text: "Call me Sam", category: "preference" });
  assert.equal((stub.seen[0]?.body as { infer: boolean }).infer, true);
  assert.deepEqual(stub.seen[1]?.body, {
    user_id: "slack:U1", agent_id: "main", run_id: "s1",
    messages: [{ role: "user", content: "Call me Sam" }], infer: false,
    metadata: { source: "openclaw-tool", category: "preference" },
  });
  assert.match(textOfResult(res), /Stored\.\nADD m9: ok/);
});

test("memory_forget by query deletes only a single close match, else lists candidates", async () => {
  stub.on("POST /v1/memories/search", () => ({ json: { results: [hit("m1", "I live in Lisbon", 0.95), hit("m2", "Lisbon trip", 0.5)] } }));
  stub.on("DELETE /v1/memories/m1", () => ({ json: { results: [{ id: "m1", memory: "I live in Lisbon", event: "DELETE" }] } }));
  assert.equal(textOfResult(await run("memory_forget", { query: "where I live" })), "Forgotten: m1 (I live in Lisbon)");
  stub.on("POST /v1/memories/search", () => ({ json: { results: [hit("m1", "a", 0.95), hit("m2", "b", 0.93)] } }));
  assert.match(textOfResult(await run("memory_forget", { query: "x" })), /^Nothing forgotten: pick one id/);
  assert.equal(stub.seen.filter((s) => s.method === "DELETE").length, 1);
});

test("memory_forget by id refuses another user's memory", async () => {
  stub.on("GET /v1/memories/m2", () => ({ json: hit("m2", "x", 1, "slack:U2") }));
  assert.equal(textOfResult(await run("memory_forget", { memoryId: "m2" })), "No memory with id m2.");
  assert.equal(stub.seen.filter((s) => s.method === "DELETE").length, 0);
});

test("without a sender, tools use the configured default user", async () => {
  stub.on("POST /v1/memories/search", () => ({ json: { results: [] } }));
  const res = await run("memory_search", { query: "x" }, { agentId: "main" });
  assert.equal((stub.seen[0]?.body as { user_id: string }).user_id, "openclaw");
  assert.equal(textOfResult(res), 'No memories match "x".');
});
