// Which messages of a session are new since the last record, grouped into
// exchanges (a user message and the replies after it), each with a turn id
// derived from its content so a resend writes nothing twice (memloop answers
// a repeated turn id with `replayed`). Exchanges that could not be recorded
// wait in the session's queue for the next agent_end or a flush.

import { createHash } from "node:crypto";
import type { ChatMessage, Scope, ToolCallWire } from "./client.ts";
import { RECALL_TAG, stripRecall } from "./recall.ts";
import { TOOL_NAMES } from "./tools.ts";

/**
 * The plugin's own memory tools are not part of a task: recording them
 * would write recalled (or just forgotten) memories back as procedure steps.
 */
const OWN_TOOLS: ReadonlySet<string> = new Set(TOOL_NAMES);

/**
 * A tool call's arguments and a result are cut to this many characters:
 * memloop keeps a short summary of each step, and a whole file read must
 * not push a record past the server's body limit.
 */
export const MAX_TOOL_CHARS = 2000;

/** `s` cut to MAX_TOOL_CHARS, never inside a surrogate pair (the JSON must stay valid UTF-8). */
export function cutTool(s: string): string {
  if (s.length <= MAX_TOOL_CHARS) return s;
  let end = MAX_TOOL_CHARS;
  const last = s.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${s.slice(0, end)}…`;
}

export interface Exchange {
  turnId: string;
  scope: Scope & { run_id: string };
  messages: ChatMessage[];
  /** When the user said it (RFC 3339), from OpenClaw's message timestamp; memloop uses now when absent. */
  at?: string | undefined;
}

/** A chat message with OpenClaw's timestamp (Unix milliseconds) when it carried one. */
export type TimedMessage = ChatMessage & { at?: string | undefined };

/** The text of a pi-ai message: a string, or the text parts of a content array. */
export function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((p: unknown) => {
      const part = p as { type?: unknown; text?: unknown } | null;
      return part?.type === "text" && typeof part.text === "string" ? part.text : "";
    })
    .filter((t) => t !== "")
    .join("\n");
}

/** The tool calls of an assistant message's `toolCall` parts, in memloop's (OpenAI's) shape. */
export function toolCallsOf(content: unknown): ToolCallWire[] {
  if (!Array.isArray(content)) return [];
  const calls: ToolCallWire[] = [];
  for (const p of content) {
    const part = p as { type?: unknown; id?: unknown; name?: unknown; arguments?: unknown } | null;
    if (part?.type !== "toolCall" || typeof part.name !== "string" || part.name === "" || OWN_TOOLS.has(part.name)) continue;
    const args = cutTool(typeof part.arguments === "string" ? part.arguments : JSON.stringify(part.arguments ?? {}));
    calls.push({ id: typeof part.id === "string" ? part.id : "", type: "function", function: { name: part.name, arguments: args } });
  }
  return calls;
}

/** A tool's result (pi-ai's `toolResult` message) as memloop's `tool` message; undefined when it names no call or answers one of the plugin's own tools. */
function toolResultOf(m: { toolCallId?: unknown; toolName?: unknown; content?: unknown; isError?: unknown }): TimedMessage | undefined {
  if (typeof m.toolCallId !== "string" || m.toolCallId === "") return undefined;
  if (typeof m.toolName === "string" && OWN_TOOLS.has(m.toolName)) return undefined;
  const out: TimedMessage = { role: "tool", content: cutTool(textOf(m.content).trim()), tool_call_id: m.toolCallId };
  // Only a failure is flagged: without the flag memloop reads the result's
  // text (a tool that reports `{"status": "error"}` without isError).
  if (m.isError === true) out.is_error = true;
  return out;
}

/**
 * A message to record: a user or assistant message with text in it (recall
 * blocks removed), an assistant message's tool calls, or a tool's result;
 * else undefined (system messages, recalled text echoed back, empty ones).
 */
export function toChat(message: unknown): TimedMessage | undefined {
  const m = message as { role?: unknown; content?: unknown; timestamp?: unknown; toolCallId?: unknown; toolName?: unknown; isError?: unknown } | null;
  if (m?.role === "toolResult") return toolResultOf(m);
  if (m?.role !== "user" && m?.role !== "assistant") return undefined;
  let text = textOf(m.content);
  if (m.role === "user") text = stripRecall(text);
  text = text.trim();
  // Whatever still carries our tag is recalled text echoed back, not something said.
  if (text.includes(`<${RECALL_TAG}`)) return undefined;
  const calls = m.role === "assistant" ? toolCallsOf(m.content) : [];
  if (text === "" && calls.length === 0) return undefined;
  const ms = m.timestamp;
  const at = typeof ms === "number" && Number.isFinite(ms) && ms > 0 && ms < 253402300800000 ? new Date(ms).toISOString() : undefined;
  const out: TimedMessage = { role: m.role, content: text };
  if (calls.length > 0) out.tool_calls = calls;
  if (at !== undefined) out.at = at;
  return out;
}

function key(message: unknown): string {
  const m = message as { role?: unknown; content?: unknown } | null;
  return `${String(m?.role)}\u0000${textOf(m?.content)}`;
}

export function turnIdFor(sessionId: string, messages: readonly ChatMessage[]): string {
  const h = createHash("sha256").update(sessionId);
  for (const m of messages) {
    h.update(`\u0000${m.role}\u0000${m.content}`);
    // Tool calls and results count, so a run's retry is a turn of its own.
    if (m.tool_calls) h.update(`\u0000${JSON.stringify(m.tool_calls)}`);
    if (m.tool_call_id !== undefined) h.update(`\u0000${m.tool_call_id}\u0000${String(m.is_error)}`);
  }
  return `openclaw-${h.digest("hex").slice(0, 32)}`;
}

/** Splits messages into exchanges, each starting at a user message; replies before the first user message are dropped. */
export function exchanges(scope: Scope & { run_id: string }, messages: readonly TimedMessage[]): Exchange[] {
  const out: Exchange[] = [];
  let current: ChatMessage[] | undefined;
  for (const { at, ...message } of messages) {
    if (message.role === "user") {
      current = [message];
      out.push({ turnId: "", scope, messages: current, at });
    } else if (current) {
      current.push(message);
    }
  }
  for (const e of out) e.turnId = turnIdFor(scope.run_id, e.messages);
  return out;
}

interface SessionState {
  /** How many of the session's messages have been taken. */
  taken: number;
  /** The last message taken, to find the place again after compaction shortens the list. */
  lastKey: string;
  pending: Exchange[];
}

/** At most this many exchanges wait per session; past it the oldest is dropped (and logged). */
export const MAX_PENDING = 50;

export class CaptureLedger {
  private readonly sessions = new Map<string, SessionState>();

  /**
   * The messages of `all` not taken before, as exchanges queued for recording.
   * A session this process has not seen yet starts at its last user message:
   * earlier turns were recorded by the process that ran them.
   */
  take(scope: Scope & { run_id: string }, all: readonly unknown[]): { queued: Exchange[]; dropped: number } {
    const state = this.sessions.get(scope.run_id);
    let start: number;
    if (state && state.taken <= all.length && state.taken > 0 && key(all[state.taken - 1]) === state.lastKey) {
      start = state.taken;
    } else if (state && state.taken > 0) {
      let i = all.length - 1;
      while (i >= 0 && key(all[i]) !== state.lastKey) i--;
      start = i >= 0 ? i + 1 : lastUserIndex(all);
    } else {
      start = lastUserIndex(all);
    }
    const chat = all.slice(start).map(toChat).filter((m): m is TimedMessage => m !== undefined);
    const found = exchanges(scope, chat);
    const s: SessionState = state ?? { taken: 0, lastKey: "", pending: [] };
    s.taken = all.length;
    s.lastKey = all.length > 0 ? key(all[all.length - 1]) : "";
    const known = new Set(s.pending.map((e) => e.turnId));
    for (const e of found) if (!known.has(e.turnId)) s.pending.push(e);
    const dropped = Math.max(0, s.pending.length - MAX_PENDING);
    if (dropped > 0) s.pending.splice(0, dropped);
    this.sessions.set(scope.run_id, s);
    return { queued: [...s.pending], dropped };
  }

  pending(sessionId: string): Exchange[] {
    return [...(this.sessions.get(sessionId)?.pending ?? [])];
  }

  done(sessionId: string, turnId: string): void {
    const s = this.sessions.get(sessionId);
    if (s) s.pending = s.pending.filter((e) => e.turnId !== turnId);
  }

  /** Forgets the session (after its last flush); whatever was still pending is returned. */
  close(sessionId: string): Exchange[] {
    const left = this.pending(sessionId);
    this.sessions.delete(sessionId);
    return left;
  }
}

function lastUserIndex(all: readonly unknown[]): number {
  for (let i = all.length - 1; i >= 0; i--) {
    if ((all[i] as { role?: unknown } | null)?.role === "user") return i;
  }
  return all.length;
}
