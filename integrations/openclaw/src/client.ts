// memloop's REST API as this plugin uses it (docs/server.md). One request per
// call, no retries: a hook that waits on retries stalls the user's turn, and
// recording is idempotent on the turn id, so a later flush can resend.

export interface Memory {
  id: string;
  memory: string;
  kind?: string;
  user_id?: string | null;
  agent_id?: string | null;
  run_id?: string | null;
  created_at?: string;
  updated_at?: string;
  valid_from?: string;
  valid_until?: string | null;
  metadata?: Record<string, unknown>;
}

export interface Hit extends Memory {
  score: number;
  superseded_by?: { id: string; memory: string } | null;
}

/** One memory in a loop trace: what the search returned and whether it fit. */
export interface RetrievedMemory {
  id: string;
  kind: string;
  memory: string;
  score: number;
  included: boolean;
  superseded_by?: { id: string; memory: string } | null;
}

export interface TurnTrace {
  turn_id: string;
  retrieved: RetrievedMemory[];
  [key: string]: unknown;
}

export interface ContextResponse {
  system: string;
  messages: unknown[];
  trace: TurnTrace;
}

export interface WriteEvent {
  id: string;
  memory: string;
  event: "ADD" | "UPDATE" | "DELETE" | "NOOP";
  kind?: string;
  role?: string;
  reason?: string;
  previous_memory?: string;
}

export interface RecordResponse {
  turn_id: string;
  replayed: boolean;
  gate: { persist: boolean; reason: string };
  writes: WriteEvent[];
  trace: Record<string, unknown>;
}

/** A tool call as memloop reads it (OpenAI's wire shape). */
export interface ToolCallWire {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/**
 * A message of a recorded exchange in OpenAI's shape, which memloop reads:
 * an assistant message may carry the tool calls it made, and each call's
 * result is a `tool` message naming it, so the run becomes a procedure.
 */
export interface ChatMessage {
  role: "user" | "assistant" | "tool";
  content: string;
  tool_calls?: ToolCallWire[];
  tool_call_id?: string;
  is_error?: boolean;
}

export interface Scope {
  user_id: string;
  agent_id?: string | undefined;
  run_id?: string | undefined;
}

/** What went wrong talking to memloop, in words a model or an operator can act on. */
export class MemloopError extends Error {
  override name = "MemloopError";
  readonly status: number | undefined;
  readonly code: string | undefined;

  constructor(message: string, status: number | undefined, code: string | undefined) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface ClientOptions {
  baseUrl: string;
  apiKey: string | undefined;
  fetch?: FetchLike;
}

export class MemloopClient {
  readonly baseUrl: string;
  private readonly apiKey: string | undefined;
  private readonly fetchImpl: FetchLike;

  constructor(opts: ClientOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, "");
    this.apiKey = opts.apiKey;
    this.fetchImpl = opts.fetch ?? ((input, init) => fetch(input, init));
  }

  async request<T>(method: string, path: string, body: unknown, timeoutMs: number): Promise<T> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (this.apiKey !== undefined) headers.authorization = `Bearer ${this.apiKey}`;
    const url = `${this.baseUrl}${path}`;
    let res: Response;
    try {
      res = await this.fetchImpl(url, {
        method,
        headers,
        body: body === undefined ? null : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (e) {
      const err = e as Error;
      if (err.name === "TimeoutError" || err.name === "AbortError") {
        throw new MemloopError(`memloop at ${this.baseUrl} did not answer ${method} ${path} within ${timeoutMs} ms`, undefined, "timeout");
      }
      const cause = (err.cause as { code?: string } | undefined)?.code ?? err.message;
      throw new MemloopError(`memloop at ${this.baseUrl} is unreachable (${cause}): is \`memloop serve\` running there?`, undefined, "unreachable");
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = text === "" ? {} : JSON.parse(text);
    } catch {
      throw new MemloopError(`memloop answered ${method} ${path} with ${res.status} and a body that is not JSON`, res.status, "bad_response");
    }
    if (!res.ok) {
      const e = (json as { error?: { code?: string; message?: string } }).error;
      const hint = res.status === 401 ? " (set apiKey in the plugin config or MEMLOOP_API_KEY to a key memloop accepts)" : "";
      throw new MemloopError(`memloop refused ${method} ${path}: ${res.status} ${e?.message ?? text.slice(0, 200)}${hint}`, res.status, e?.code);
    }
    return json as T;
  }

  context(scope: Scope, input: string, timeoutMs: number): Promise<ContextResponse> {
    return this.request("POST", "/v1/context", { ...scope, input }, timeoutMs);
  }

  recordTurn(
    scope: Scope & { run_id: string },
    turnId: string,
    messages: ChatMessage[],
    at: string | undefined,
    timeoutMs: number,
  ): Promise<RecordResponse> {
    const body: Record<string, unknown> = { ...scope, turn_id: turnId, messages };
    if (at !== undefined) body.timestamp = at;
    return this.request("POST", "/v1/turn/record", body, timeoutMs);
  }

  search(scope: Scope, query: string, topK: number, minScore: number | undefined, timeoutMs: number): Promise<{ results: Hit[] }> {
    const body: Record<string, unknown> = { ...scope, query, top_k: topK };
    if (minScore !== undefined) body.min_score = minScore;
    return this.request("POST", "/v1/memories/search", body, timeoutMs);
  }

  get(id: string, timeoutMs: number): Promise<Memory> {
    return this.request("GET", `/v1/memories/${encodeURIComponent(id)}`, undefined, timeoutMs);
  }

  add(scope: Scope, text: string, infer: boolean, metadata: Record<string, unknown> | undefined, timeoutMs: number): Promise<{ results: WriteEvent[]; notes?: string[] }> {
    const body: Record<string, unknown> = { ...scope, messages: [{ role: "user", content: text }], infer };
    if (!infer && metadata !== undefined) body.metadata = metadata;
    return this.request("POST", "/v1/memories", body, timeoutMs);
  }

  delete(id: string, timeoutMs: number): Promise<{ results: WriteEvent[] }> {
    return this.request("DELETE", `/v1/memories/${encodeURIComponent(id)}`, undefined, timeoutMs);
  }
}
