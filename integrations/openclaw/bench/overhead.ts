// The plugin's cost per agent turn, measured from the hook side: the time
// OpenClaw waits in before_prompt_build (recall) and agent_end (record), each
// a real HTTP call to a real `memloop serve` on loopback whose user holds
// MEMORIES memories. Beside it, in the same run: the time memloop itself
// reports for the recall (the trace's timings), so what is left is the
// plugin's and HTTP's share; and one GET /healthz round trip, the floor of any
// loopback HTTP exchange from Node.
//
//   MEMLOOP_BIN=…/memloop MEMLOOP_MODEL_DIR=…/all-MiniLM-L6-v2 node bench/overhead.ts [MEMORIES] [TURNS]
//
// Starts memloop itself (a free port; the data in MEMLOOP_BENCH_DATA, kept and
// reused when set, else a temp dir) and stops it by PID.

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { register } from "../src/index.ts";
import type { OpenClawPluginApi } from "../src/types.ts";

const MEMORIES = Number(process.argv[2] ?? 10000);
const TURNS = Number(process.argv[3] ?? 200);
const WARMUP = 10;
const USER = "bench-user";
const bin = process.env.MEMLOOP_BIN;
if (bin === undefined) {
  console.error("set MEMLOOP_BIN to the memloop binary (and MEMLOOP_MODEL_DIR to the model folder)");
  process.exit(2);
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((ok) => s.listen(0, "127.0.0.1", ok));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((ok) => s.close(() => { ok(); }));
  return port;
}

const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const keep = process.env.MEMLOOP_BENCH_DATA;
const data = keep ?? mkdtempSync(join(tmpdir(), "memloop-bench-"));
const server = spawn(bin, ["serve", "--addr", `127.0.0.1:${port}`], { env: { ...process.env, MEMLOOP_DATA_DIR: data }, stdio: ["ignore", "ignore", "inherit"] });

async function ready(): Promise<void> {
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(`${base}/readyz`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((ok) => setTimeout(ok, 200));
  }
  throw new Error("memloop did not become ready in 120 s");
}

const who = ["my sister", "my brother", "my manager", "my friend Ana", "my neighbour", "my dentist", "my cousin", "my coach"];
const likes = ["green tea", "jazz", "hiking", "chess", "sushi", "old films", "cycling", "gardening", "board games", "opera"];
const cities = ["Lisbon", "Porto", "Madrid", "Paris", "Berlin", "Rome", "Oslo", "Vienna", "Prague", "Dublin", "Boston", "Kyoto"];
const fact = (i: number) => `${who[i % who.length] ?? ""} likes ${likes[(i >> 3) % likes.length] ?? ""} and visited ${cities[(i * 7) % cities.length] ?? ""} in year ${2000 + (i % 25)} (note ${i})`;

async function seeded(): Promise<number> {
  const res = await fetch(`${base}/v1/entities`);
  const body = (await res.json()) as { results?: { id: string; total_memories: number }[] };
  return body.results?.find((e) => e.id === USER)?.total_memories ?? 0;
}

async function seed(): Promise<void> {
  const batch = 500;
  for (let start = await seeded(); start < MEMORIES; start += batch) {
    const messages = Array.from({ length: Math.min(batch, MEMORIES - start) }, (_, k) => ({ role: "user", content: fact(start + k) }));
    const res = await fetch(`${base}/v1/memories`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ user_id: USER, messages, infer: false }) });
    if (!res.ok) throw new Error(`seeding failed: ${res.status} ${await res.text()}`);
  }
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}
const fmt = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(1)} ms, p95 ${pct(xs, 95).toFixed(1)} ms, max ${Math.max(...xs).toFixed(1)} ms`;

try {
  await ready();
  const seedStart = performance.now();
  await seed();
  console.log(`${MEMORIES} memories for ${USER} ready in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`);

  type Handler = (event: unknown, ctx: unknown) => Promise<unknown>;
  const hooks = new Map<string, Handler>();
  const warnings: string[] = [];
  // memloop's own time for each recall, read off the responses the plugin gets.
  const serverMs: number[] = [];
  const embedMs: number[] = [];
  let recorded = 0;
  const recordServerMs: number[] = [];
  const realFetch = globalThis.fetch;
  globalThis.fetch = async (input, init) => {
    const res = await realFetch(input, init);
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    if (url.endsWith("/v1/turn/record") && res.ok) {
      recorded++;
      const t = ((await res.clone().json()) as { trace?: { timings?: { total_us?: number } } }).trace?.timings;
      recordServerMs.push((t?.total_us ?? NaN) / 1000);
    }
    if (url.endsWith("/v1/context") && res.ok) {
      const t = ((await res.clone().json()) as { trace?: { timings?: { total_us?: number; embed_query_us?: number } } }).trace?.timings;
      serverMs.push((t?.total_us ?? NaN) / 1000);
      embedMs.push((t?.embed_query_us ?? NaN) / 1000);
    }
    return res;
  };
  const api = {
    pluginConfig: { baseUrl: base, defaultUserId: USER, timeoutMs: 3000 },
    logger: { info: () => undefined, debug: () => undefined, warn: (m: string) => warnings.push(m), error: (m: string) => warnings.push(m) },
    registerTool: () => undefined,
    registerMemoryCapability: () => undefined,
    on: (name: string, h: Handler) => hooks.set(name, h),
  } as unknown as OpenClawPluginApi;
  register(api);
  const recall = hooks.get("before_prompt_build");
  const record = hooks.get("agent_end");
  if (!recall || !record) throw new Error("the plugin registered no recall or record hook");

  const recallMs: number[] = [];
  const recordMs: number[] = [];
  const turnMs: number[] = [];
  const floorMs: number[] = [];
  let recalled = 0;
  // As in OpenClaw, agent_end gets the session's whole history, one exchange longer each turn.
  const history = new Map<string, unknown[]>();
  for (let t = 0; t < WARMUP + TURNS; t++) {
    const ctx = { agentId: "main", sessionId: `bench-${Math.floor(t / 5)}`, trigger: "user" };
    const q = `What does ${who[t % who.length] ?? ""} like, and where did they go? (${t})`;
    let s = performance.now();
    await fetch(`${base}/healthz`).then((r) => r.text());
    const floor = performance.now() - s;
    s = performance.now();
    const out = (await recall({ prompt: q, messages: [] }, ctx)) as { prependContext?: string } | undefined;
    const a = performance.now() - s;
    const messages = [
      ...(history.get(ctx.sessionId) ?? []),
      { role: "user", content: `${q} By the way, I started learning ${likes[t % likes.length] ?? ""} lesson ${t}.` },
      { role: "assistant", content: [{ type: "text", text: `Noted, lesson ${t}.` }] },
    ];
    history.set(ctx.sessionId, messages);
    s = performance.now();
    await record({ success: true, messages }, ctx);
    const b = performance.now() - s;
    if (t >= WARMUP) {
      floorMs.push(floor);
      recallMs.push(a);
      recordMs.push(b);
      turnMs.push(a + b);
      if (out?.prependContext) recalled++;
    }
  }
  console.log(`${TURNS} turns (after ${WARMUP} warm-up), memloop on loopback, ${MEMORIES} memories for the user`);
  console.log(`  before_prompt_build (recall): ${fmt(recallMs)}; recall block in ${recalled}/${TURNS} prompts`);
  console.log(`  agent_end (record):           ${fmt(recordMs)}`);
  console.log(`  both hooks per turn:          ${fmt(turnMs)}`);
  const server = serverMs.slice(WARMUP);
  const embed = embedMs.slice(WARMUP);
  console.log(`  memloop's own recall time:    ${fmt(server)} (of which embedding the query: p50 ${pct(embed, 50).toFixed(1)} ms)`);
  console.log(`  recall p50 minus memloop p50: ${(pct(recallMs, 50) - pct(server, 50)).toFixed(1)} ms (the plugin and HTTP)`);
  console.log(`  memloop's own record time:    ${fmt(recordServerMs.slice(WARMUP))}`);
  console.log(`  baseline GET /healthz:        ${fmt(floorMs)}`);
  console.log(`  per-turn p50 / baseline p50:  ${(pct(turnMs, 50) / pct(floorMs, 50)).toFixed(1)}x`);
  console.log(`  records sent: ${recorded} of ${WARMUP + TURNS} turns`);
  if (warnings.length > 0) console.log(`  ${warnings.length} hook warning(s), first: ${warnings[0] ?? ""}`);
} finally {
  server.kill("SIGTERM");
  await new Promise((ok) => server.once("exit", ok));
  if (keep === undefined) rmSync(data, { recursive: true, force: true });
}
