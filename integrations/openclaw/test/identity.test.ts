import assert from "node:assert/strict";
import { test } from "node:test";
import { DEFAULTS } from "../src/config.ts";
import { recallScope, sessionIdFor, userIdFor, writeScope } from "../src/identity.ts";

test("the user is the channel sender when there is one, else the default", () => {
  assert.equal(userIdFor(DEFAULTS, { channel: "telegram", senderId: "42" }), "telegram:42");
  assert.equal(userIdFor(DEFAULTS, { senderId: "42" }), "channel:42");
  assert.equal(userIdFor(DEFAULTS, { channel: "telegram" }), "openclaw");
  assert.equal(userIdFor({ ...DEFAULTS, userIdMode: "fixed", defaultUserId: "me" }, { channel: "telegram", senderId: "42" }), "me");
});

test("a very long sender id is shortened to a stable id memloop accepts", () => {
  const id = userIdFor(DEFAULTS, { channel: "x", senderId: "s".repeat(1000) });
  assert.ok(Buffer.byteLength(id) <= 256);
  assert.equal(id, userIdFor(DEFAULTS, { channel: "x", senderId: "s".repeat(1000) }));
  assert.notEqual(id, userIdFor(DEFAULTS, { channel: "x", senderId: `${"s".repeat(999)}t` }));
});

test("writes name the agent; recall shares across agents unless scoped to the agent", () => {
  const who = { agentId: "main", sessionId: "abc", sessionKey: "agent:main:x" };
  assert.deepEqual(writeScope(DEFAULTS, who), { user_id: "openclaw", agent_id: "main", run_id: "abc" });
  assert.equal(recallScope(DEFAULTS, who).agent_id, undefined);
  assert.equal(recallScope({ ...DEFAULTS, agentScope: "agent" }, who).agent_id, "main");
  assert.equal(sessionIdFor({ sessionKey: "k" }), "k");
  assert.equal(sessionIdFor({}), undefined);
});
