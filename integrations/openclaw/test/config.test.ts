import assert from "node:assert/strict";
import { test } from "node:test";
import { readFileSync } from "node:fs";
import { ConfigError, DEFAULTS, resolveConfig } from "../src/config.ts";

test("an empty config gets the defaults", () => {
  assert.deepEqual(resolveConfig(undefined, {}), DEFAULTS);
});

test("the API key comes from the config, else from MEMLOOP_API_KEY", () => {
  assert.equal(resolveConfig({}, { MEMLOOP_API_KEY: "k-env-123456" }).apiKey, "k-env-123456");
  assert.equal(resolveConfig({ apiKey: "k-cfg-123456" }, { MEMLOOP_API_KEY: "k-env-123456" }).apiKey, "k-cfg-123456");
});

test("a trailing slash on the URL is dropped", () => {
  assert.equal(resolveConfig({ baseUrl: "http://127.0.0.1:9000/" }, {}).baseUrl, "http://127.0.0.1:9000");
});

test("bad values are refused with the key and what it takes", () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ baseUrl: "not a url" }, /baseUrl is not a URL/],
    [{ baseUrl: "ftp://x" }, /baseUrl must be http/],
    [{ recallLimit: 0 }, /recallLimit must be a whole number from 1 to 20; got 0/],
    [{ timeoutMs: 30000 }, /timeoutMs must be a whole number from 100 to 3000/],
    [{ userIdMode: "email" }, /userIdMode must be one of "sender", "fixed"/],
    [{ autoRecall: "yes" }, /autoRecall must be true or false/],
    [{ defaultUserId: " " }, /defaultUserId must be a non-empty string/],
    [{ recall: 3 }, /unknown key\(s\) recall; known keys: baseUrl/],
  ];
  for (const [raw, msg] of cases) {
    assert.throws(() => resolveConfig(raw, {}), (e: unknown) => e instanceof ConfigError && msg.test(e.message), JSON.stringify(raw));
  }
});

test("the manifest's configSchema lists exactly the keys the plugin reads", () => {
  const manifest = JSON.parse(readFileSync(new URL("../openclaw.plugin.json", import.meta.url), "utf8")) as {
    id: string;
    kind: string;
    contracts: { tools: string[] };
    configSchema: { additionalProperties: boolean; properties: Record<string, unknown> };
  };
  assert.equal(manifest.kind, "memory");
  assert.equal(manifest.id, "memory-memloop");
  assert.equal(manifest.configSchema.additionalProperties, false);
  assert.deepEqual(Object.keys(manifest.configSchema.properties).sort(), Object.keys(DEFAULTS).sort());
  assert.deepEqual(manifest.contracts.tools, ["memory_search", "memory_get", "memory_store", "memory_forget"]);
});
