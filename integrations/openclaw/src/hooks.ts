// The four hooks. Each one fails open: memloop down, slow or refusing costs
// the turn its memory, never the turn itself. A hook's HTTP call gives up
// after `timeoutMs`, the error is logged as a warning, and the hook returns
// nothing, so OpenClaw goes on as if the plugin were not there.

import type { PluginConfig } from "./config.ts";
import { MemloopError, type MemloopClient } from "./client.ts";
import { CaptureLedger, type Exchange } from "./capture.ts";
import { recallScope, sessionIdFor, writeScope, type Who } from "./identity.ts";
import { formatRecall, stripRecall } from "./recall.ts";
import type {
  AgentEndEvent,
  AgentHookContext,
  BeforeCompactionEvent,
  BeforePromptBuildEvent,
  BeforePromptBuildResult,
  BeforeResetEvent,
  PluginLogger,
  SessionEndEvent,
  SessionHookContext,
} from "./types.ts";

/** Queries longer than this are cut: the start of a message says what it is about. */
const MAX_QUERY_CHARS = 4000;

function who(ctx: AgentHookContext): Who {
  return {
    channel: ctx.channel ?? ctx.messageProvider,
    senderId: ctx.senderId,
    agentId: ctx.agentId,
    sessionId: ctx.sessionId,
    sessionKey: ctx.sessionKey,
  };
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export class MemoryHooks {
  readonly ledger = new CaptureLedger();
  private readonly cfg: PluginConfig;
  private readonly client: MemloopClient;
  private readonly log: PluginLogger;

  constructor(cfg: PluginConfig, client: MemloopClient, log: PluginLogger) {
    this.cfg = cfg;
    this.client = client;
    this.log = log;
  }

  /** Auto-recall: the memories memloop would put in its own context, as `prependContext`. */
  async beforePromptBuild(event: BeforePromptBuildEvent, ctx: AgentHookContext): Promise<BeforePromptBuildResult | undefined> {
    if (!this.cfg.autoRecall) return undefined;
    const query = stripRecall(event.currentUserMessage ?? event.prompt).slice(0, MAX_QUERY_CHARS).trim();
    if (query === "") return undefined;
    const w = who(ctx);
    const scope = recallScope(this.cfg, w);
    try {
      const res = await this.client.context({ ...scope, run_id: scope.run_id ?? "openclaw" }, query, this.cfg.timeoutMs);
      const block = formatRecall(res.trace.retrieved, this.cfg.recallLimit, this.cfg.tokenBudget);
      this.log.debug?.(`memory-memloop: recalled ${block?.ids.length ?? 0} of ${res.trace.retrieved.length} memories for ${scope.user_id} (turn ${res.trace.turn_id})`);
      return block ? { prependContext: block.text } : undefined;
    } catch (e) {
      this.log.warn(`memory-memloop: recall skipped, the turn goes on without memory: ${message(e)}`);
      return undefined;
    }
  }

  /** Auto-capture: the exchanges new since this session's last record, each recorded once. */
  async agentEnd(event: AgentEndEvent, ctx: AgentHookContext): Promise<void> {
    if (!this.cfg.autoCapture || !event.success || ctx.trigger === "heartbeat") return;
    const w = who(ctx);
    const session = sessionIdFor(w);
    if (session === undefined) {
      this.log.debug?.("memory-memloop: capture skipped: the turn has no session id");
      return;
    }
    const { dropped } = this.ledger.take({ ...writeScope(this.cfg, w), run_id: session }, event.messages);
    if (dropped > 0) this.log.warn(`memory-memloop: ${dropped} unrecorded exchange(s) of session ${session} dropped: memloop has been unreachable too long`);
    await this.send(session);
  }

  /** Before compaction: take what the compacted messages hold, then record everything pending. */
  async beforeCompaction(event: BeforeCompactionEvent, ctx: AgentHookContext): Promise<void> {
    await this.flushWith(event.messages, ctx);
  }

  /** On /new and /reset: as before compaction, and the session's state is dropped. */
  async beforeReset(event: BeforeResetEvent, ctx: AgentHookContext): Promise<void> {
    await this.flushWith(event.messages, ctx);
    const session = sessionIdFor(who(ctx));
    if (session !== undefined) this.ledger.close(session);
  }

  /** When the session ends: record what is pending, then forget the session. */
  async sessionEnd(event: SessionEndEvent, ctx: SessionHookContext): Promise<void> {
    const session = sessionIdFor({ sessionId: event.sessionId || ctx.sessionId, sessionKey: event.sessionKey ?? ctx.sessionKey });
    if (session === undefined) return;
    await this.send(session);
    const left = this.ledger.close(session);
    if (left.length > 0) this.log.warn(`memory-memloop: session ${session} ended with ${left.length} exchange(s) memloop did not record`);
  }

  private async flushWith(messages: unknown[] | undefined, ctx: AgentHookContext): Promise<void> {
    if (!this.cfg.autoCapture) return;
    const w = who(ctx);
    const session = sessionIdFor(w);
    if (session === undefined) return;
    if (messages && messages.length > 0) this.ledger.take({ ...writeScope(this.cfg, w), run_id: session }, messages);
    await this.send(session);
  }

  /**
   * Records the session's pending exchanges in order; the first failure
   * leaves the rest for later, except an exchange memloop refuses as
   * malformed or too large (400, 413, 422), which no retry can fix: it is
   * dropped (and logged) so it does not hold back the ones after it.
   */
  private async send(session: string): Promise<void> {
    for (const ex of this.ledger.pending(session)) {
      try {
        await this.record(ex);
        this.ledger.done(session, ex.turnId);
      } catch (e) {
        if (e instanceof MemloopError && e.status !== undefined && [400, 413, 422].includes(e.status)) {
          this.log.warn(`memory-memloop: an exchange memloop refused was dropped (a retry would be refused too): ${message(e)}`);
          this.ledger.done(session, ex.turnId);
          continue;
        }
        this.log.warn(`memory-memloop: recording skipped (kept for the next turn or flush): ${message(e)}`);
        return;
      }
    }
  }

  private async record(ex: Exchange): Promise<void> {
    const res = await this.client.recordTurn(ex.scope, ex.turnId, ex.messages, ex.at, this.cfg.timeoutMs);
    const written = res.writes.filter((w) => w.event !== "NOOP").length;
    this.log.debug?.(`memory-memloop: turn ${res.turn_id} recorded${res.replayed ? " (replayed)" : ""}: ${res.gate.persist ? `${written} write(s)` : `not kept: ${res.gate.reason}`}`);
  }
}
