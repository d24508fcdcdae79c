import assert from "node:assert/strict";
import { test } from "node:test";
import { CaptureLedger, MAX_PENDING, MAX_TOOL_CHARS, cutTool, exchanges, textOf, toChat, toolCallsOf, turnIdFor } from "../src/capture.ts";

const scope = { user_id: "u", agent_id: "main", run_id: "s1" };
const user = (t: string) => ({ role: "user", content: t });
const asst = (t: string) => ({ role: "assistant", content: [{ type: "text", text: t }] });
const toolCall = { role: "assistant", content: [{ type: "toolCall", id: "c1", name: "exec", arguments: {} }] };
const toolResult = { role: "toolResult", toolCallId: "c1", toolName: "exec", content: [{ type: "text", text: "results" }] };

test("text comes from strings and text parts; system messages carry none", () => {
  assert.equal(textOf([{ type: "text", text: "a" }, { type: "image" }, { type: "text", text: "b" }]), "a\nb");
  assert.equal(toChat({ role: "system", content: "x" }), undefined);
  assert.deepEqual(toChat(asst(" hi ")), { role: "assistant", content: "hi" });
});

test("tool calls and their results are kept in memloop's shape, so a task done with tools becomes a procedure", () => {
  assert.deepEqual(toChat(toolCall), {
    role: "assistant",
    content: "",
    tool_calls: [{ id: "c1", type: "function", function: { name: "exec", arguments: "{}" } }],
  });
  assert.deepEqual(toChat(toolResult), { role: "tool", content: "results", tool_call_id: "c1" });
  const failed = { role: "toolResult", toolCallId: "c2", toolName: "exec", content: [{ type: "text", text: "EACCES" }], isError: true };
  assert.deepEqual(toChat(failed), { role: "tool", content: "EACCES", tool_call_id: "c2", is_error: true });
  assert.equal(toChat({ role: "toolResult", content: "no call named" }), undefined);
  const both = { role: "assistant", content: [{ type: "text", text: "Running it." }, { type: "toolCall", id: "c3", name: "exec", arguments: { command: "ls" } }] };
  assert.deepEqual(toChat(both)?.tool_calls?.[0]?.function, { name: "exec", arguments: '{"command":"ls"}' });
  assert.equal(toChat(both)?.content, "Running it.");
  assert.deepEqual(toolCallsOf([{ type: "toolCall", name: "" }, { type: "text", text: "x" }]), []);
  // The plugin's own memory tools are no part of a task; long outputs are cut.
  const own = { role: "assistant", content: [{ type: "toolCall", id: "c9", name: "memory_search", arguments: { query: "x" } }] };
  assert.equal(toChat(own), undefined, "memory_search is the plugin's own");
  assert.equal(toChat({ role: "toolResult", toolCallId: "c1", toolName: "memory_forget", content: "forgot: I live in Lisbon" }), undefined);
  const big = { role: "toolResult", toolCallId: "c4", toolName: "read", content: [{ type: "text", text: "x".repeat(MAX_TOOL_CHARS - 1) + "😀".repeat(10) }] };
  const cutText = toChat(big)?.content ?? "";
  assert.ok(cutText.length <= MAX_TOOL_CHARS + 1 && cutText.endsWith("…"), `${cutText.length}`);
  assert.doesNotThrow(() => JSON.parse(JSON.stringify(cutText)));
  assert.equal(cutTool("short"), "short");
  const a = turnIdFor("s1", [{ role: "tool", content: "out", tool_call_id: "c1" }]);
  const b = turnIdFor("s1", [{ role: "tool", content: "out", tool_call_id: "c1", is_error: true }]);
  assert.notEqual(a, b, "a failure and a success of the same call are different turns");
});

test("the recall block is stripped from a user message before it is recorded", () => {
  const m = user("<relevant-memories>\nnote\n1. [fact] I live in Lisbon\n</relevant-memories>\n\nWhere do I live?");
  assert.deepEqual(toChat(m), { role: "user", content: "Where do I live?" });
  assert.equal(toChat(user("<relevant-memories>only memories</relevant-memories>")), undefined);
  assert.equal(toChat(asst("echoing <relevant-memories> back")), undefined);
});

test("messages group into exchanges at each user message; turn ids depend on session and content", () => {
  const ex = exchanges(scope, [
    { role: "assistant", content: "before any user" },
    { role: "user", content: "a" },
    { role: "assistant", content: "b" },
    { role: "user", content: "c" },
  ]);
  assert.deepEqual(ex.map((e) => e.messages.map((m) => m.content)), [["a", "b"], ["c"]]);
  assert.equal(ex[0]?.turnId, turnIdFor("s1", [{ role: "user", content: "a" }, { role: "assistant", content: "b" }]));
  assert.notEqual(turnIdFor("s1", [{ role: "user", content: "a" }]), turnIdFor("s2", [{ role: "user", content: "a" }]));
  assert.match(ex[0].turnId, /^openclaw-[0-9a-f]{32}$/);
});

test("the ledger takes each message once, from the last user message of a session it has not seen", () => {
  const l = new CaptureLedger();
  const history = [user("old"), asst("old reply"), user("I live in Lisbon"), toolCall, toolResult, asst("Noted")];
  const first = l.take(scope, history).queued;
  assert.deepEqual(first.map((e) => e.messages.map((m) => m.role)), [["user", "assistant", "tool", "assistant"]]);
  assert.deepEqual(first[0]?.messages[1]?.tool_calls?.[0]?.function.name, "exec");
  for (const e of first) l.done("s1", e.turnId);
  const next = [...history, user("I like tea"), asst("Tea it is")];
  assert.deepEqual(l.take(scope, next).queued.map((e) => e.messages[0]?.content), ["I like tea"]);
  l.done("s1", l.pending("s1")[0]?.turnId ?? "");
  assert.deepEqual(l.take(scope, next).queued, [], "the same messages again are nothing new");
});

test("after compaction shortens the list, the ledger finds its place by the last message it took", () => {
  const l = new CaptureLedger();
  const full = [user("a"), asst("b"), user("c"), asst("d")];
  for (const e of l.take(scope, full).queued) l.done("s1", e.turnId);
  const compacted = [{ role: "user", content: "summary of a-b" }, user("c"), asst("d"), user("e"), asst("f")];
  assert.deepEqual(l.take(scope, compacted).queued.map((e) => e.messages.map((m) => m.content)), [["e", "f"]]);
});

test("unrecorded exchanges wait, without duplicates, up to a bound", () => {
  const l = new CaptureLedger();
  l.take(scope, [user("a"), asst("b")]);
  l.take(scope, [user("a"), asst("b")]);
  assert.equal(l.pending("s1").length, 1);
  let all: unknown[] = [];
  let dropped = 0;
  for (let i = 0; i < MAX_PENDING + 5; i++) {
    all = [...all, user(`fact ${i}`), asst("ok")];
    dropped += l.take(scope, all).dropped;
  }
  assert.equal(l.pending("s1").length, MAX_PENDING);
  assert.equal(dropped, 6);
  assert.equal(l.close("s1").length, MAX_PENDING);
  assert.equal(l.pending("s1").length, 0);
});
