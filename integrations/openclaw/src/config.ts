// The plugin's settings: defaults, and a check with messages that say which
// key is wrong and what it takes. OpenClaw validates the same keys against
// the manifest's configSchema before loading; this check keeps the plugin
// safe when it is loaded some other way (tests, a host that skips schemas).

export type UserIdMode = "sender" | "fixed";
export type AgentScope = "shared" | "agent";

export interface PluginConfig {
  /** Where `memloop serve` answers. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer`; absent for a keyless loopback server. */
  apiKey: string | undefined;
  /** The memloop user when the turn has no channel sender (or mode is fixed). */
  defaultUserId: string;
  /** "sender": `<channel>:<senderId>` when the turn has a sender; "fixed": always defaultUserId. */
  userIdMode: UserIdMode;
  /** "shared": recall the user's memories from every agent; "agent": only this agent's. */
  agentScope: AgentScope;
  /** At most this many memories go into a prompt. */
  recallLimit: number;
  /** At most about this many tokens of recalled memories go into a prompt. */
  tokenBudget: number;
  /** Each hook's HTTP call gives up after this long, and the turn goes on without memory. */
  timeoutMs: number;
  /** Each tool's HTTP call gives up after this long. */
  toolTimeoutMs: number;
  autoRecall: boolean;
  autoCapture: boolean;
}

export const DEFAULTS: PluginConfig = {
  baseUrl: "http://127.0.0.1:8420",
  apiKey: undefined,
  defaultUserId: "openclaw",
  userIdMode: "sender",
  agentScope: "shared",
  recallLimit: 5,
  tokenBudget: 600,
  timeoutMs: 2000,
  toolTimeoutMs: 10000,
  autoRecall: true,
  autoCapture: true,
};

export class ConfigError extends Error {
  override name = "ConfigError";
}

type Raw = Record<string, unknown>;

const KEYS = new Set(Object.keys(DEFAULTS));

function int(raw: Raw, key: keyof PluginConfig, min: number, max: number): number {
  const v = raw[key];
  if (v === undefined) return DEFAULTS[key] as number;
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) {
    throw new ConfigError(`plugins.entries.memory-memloop.config.${key} must be a whole number from ${min} to ${max}; got ${JSON.stringify(v)}`);
  }
  return v;
}

function str(raw: Raw, key: keyof PluginConfig, fallback: string | undefined): string | undefined {
  const v = raw[key];
  if (v === undefined) return fallback;
  if (typeof v !== "string" || v.trim() === "") {
    throw new ConfigError(`plugins.entries.memory-memloop.config.${key} must be a non-empty string; got ${JSON.stringify(v)}`);
  }
  return v.trim();
}

function bool(raw: Raw, key: keyof PluginConfig): boolean {
  const v = raw[key];
  if (v === undefined) return DEFAULTS[key] as boolean;
  if (typeof v !== "boolean") {
    throw new ConfigError(`plugins.entries.memory-memloop.config.${key} must be true or false; got ${JSON.stringify(v)}`);
  }
  return v;
}

function oneOf<T extends string>(raw: Raw, key: keyof PluginConfig, allowed: readonly T[]): T {
  const v = raw[key];
  if (v === undefined) return DEFAULTS[key] as T;
  if (typeof v !== "string" || !(allowed as readonly string[]).includes(v)) {
    throw new ConfigError(`plugins.entries.memory-memloop.config.${key} must be one of ${allowed.map((a) => `"${a}"`).join(", ")}; got ${JSON.stringify(v)}`);
  }
  return v as T;
}

/** Reads `plugins.entries.<id>.config`; the API key may also come from MEMLOOP_API_KEY. */
export function resolveConfig(raw: unknown, env: Record<string, string | undefined> = process.env): PluginConfig {
  const r: Raw = raw === undefined || raw === null ? {} : (raw as Raw);
  if (typeof r !== "object" || Array.isArray(r)) {
    throw new ConfigError("plugins.entries.memory-memloop.config must be an object");
  }
  const unknown = Object.keys(r).filter((k) => !KEYS.has(k));
  if (unknown.length > 0) {
    throw new ConfigError(`plugins.entries.memory-memloop.config has unknown key(s) ${unknown.join(", ")}; known keys: ${[...KEYS].join(", ")}`);
  }
  const baseUrl = str(r, "baseUrl", DEFAULTS.baseUrl) ?? DEFAULTS.baseUrl;
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new ConfigError(`plugins.entries.memory-memloop.config.baseUrl is not a URL: ${JSON.stringify(baseUrl)} (for example "http://127.0.0.1:8420")`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigError(`plugins.entries.memory-memloop.config.baseUrl must be http:// or https://; got ${JSON.stringify(baseUrl)}`);
  }
  const envKey = env.MEMLOOP_API_KEY?.trim();
  return {
    baseUrl: url.href.replace(/\/+$/, ""),
    apiKey: str(r, "apiKey", envKey === "" ? undefined : envKey),
    defaultUserId: str(r, "defaultUserId", DEFAULTS.defaultUserId) ?? DEFAULTS.defaultUserId,
    userIdMode: oneOf(r, "userIdMode", ["sender", "fixed"] as const),
    agentScope: oneOf(r, "agentScope", ["shared", "agent"] as const),
    recallLimit: int(r, "recallLimit", 1, 20),
    tokenBudget: int(r, "tokenBudget", 50, 8000),
    timeoutMs: int(r, "timeoutMs", 100, 3000),
    toolTimeoutMs: int(r, "toolTimeoutMs", 100, 60000),
    autoRecall: bool(r, "autoRecall"),
    autoCapture: bool(r, "autoCapture"),
  };
}
