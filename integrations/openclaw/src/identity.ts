// Who a turn's memories belong to. The user comes from the channel sender
// when OpenClaw knows one (so two people writing to the same agent get two
// memories), else the configured default; the agent from OpenClaw's agent id;
// the session (memloop's run_id) from OpenClaw's session id.

import { createHash } from "node:crypto";
import type { PluginConfig } from "./config.ts";
import type { Scope } from "./client.ts";

/** memloop takes ids up to 256 bytes; a longer sender id is shortened to a stable digest. */
function fitId(id: string): string {
  if (Buffer.byteLength(id) <= 200) return id;
  return `${id.slice(0, 64)}#${createHash("sha256").update(id).digest("hex").slice(0, 32)}`;
}

export interface Who {
  channel?: string | undefined;
  senderId?: string | undefined;
  agentId?: string | undefined;
  sessionId?: string | undefined;
  sessionKey?: string | undefined;
}

export function userIdFor(cfg: PluginConfig, who: Who): string {
  const sender = who.senderId?.trim();
  if (cfg.userIdMode === "sender" && sender) {
    return fitId(`${who.channel?.trim() || "channel"}:${sender}`);
  }
  return cfg.defaultUserId;
}

/** The session id memloop keys its short-term buffer by; undefined when OpenClaw gave none. */
export function sessionIdFor(who: Who): string | undefined {
  const s = who.sessionId?.trim() || who.sessionKey?.trim();
  return s ? fitId(s) : undefined;
}

/** The scope memories are written under: always with the agent, so each memory says which agent wrote it. */
export function writeScope(cfg: PluginConfig, who: Who): Scope {
  const agent = who.agentId?.trim();
  return { user_id: userIdFor(cfg, who), agent_id: agent ? fitId(agent) : undefined, run_id: sessionIdFor(who) };
}

/** The scope memories are recalled from: the user's, narrowed to the agent only in "agent" scope. */
export function recallScope(cfg: PluginConfig, who: Who): Scope {
  const w = writeScope(cfg, who);
  return { user_id: w.user_id, agent_id: cfg.agentScope === "agent" ? w.agent_id : undefined, run_id: w.run_id };
}
