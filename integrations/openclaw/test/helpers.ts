// A loopback HTTP server standing in for memloop (each test scripts its
// answers and reads back the requests it got), and a recording stand-in for
// OpenClaw's plugin API that keeps what the plugin registers.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { register } from "../src/index.ts";
import type { AnyAgentTool, OpenClawPluginApi, OpenClawPluginToolContext } from "../src/types.ts";

export interface Seen {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  body: unknown;
}

export type Reply = { status?: number; json?: unknown; hang?: boolean };
export type Route = (req: Seen) => Reply;

export class StubMemloop {
  readonly seen: Seen[] = [];
  routes = new Map<string, Route>();
  private server: Server | undefined;
  private readonly hanging: ServerResponse[] = [];
  url = "";

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const raw = Buffer.concat(chunks).toString();
        const seen: Seen = { method: req.method ?? "", path: req.url ?? "", headers: req.headers, body: raw === "" ? undefined : JSON.parse(raw) };
        this.seen.push(seen);
        const route = this.routes.get(`${seen.method} ${seen.path}`) ?? this.routes.get(`${seen.method} *`);
        const reply = route ? route(seen) : { status: 404, json: { error: { code: "no_route", message: "no such route" } } };
        if (reply.hang) {
          this.hanging.push(res);
          return;
        }
        res.writeHead(reply.status ?? 200, { "content-type": "application/json" });
        res.end(JSON.stringify(reply.json ?? {}));
      });
    });
    const server = this.server;
    await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return this;
  }

  on(key: string, route: Route): this {
    this.routes.set(key, route);
    return this;
  }

  async stop(): Promise<void> {
    for (const r of this.hanging) r.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((ok) => this.server?.close(() => { ok(); }));
  }
}

export interface Registered {
  hooks: Map<string, { handler: (event: unknown, ctx: unknown) => unknown; opts: unknown }>;
  toolFactory: ((ctx: OpenClawPluginToolContext) => AnyAgentTool[]) | undefined;
  toolNames: string[];
  capability: { promptBuilder?: (p: { availableTools: Set<string> }) => string[] } | undefined;
  logs: { level: string; message: string }[];
}

/** Calls the plugin's register with a stand-in API; returns what it registered. */
export function load(pluginConfig: Record<string, unknown>): Registered {
  const out: Registered = { hooks: new Map(), toolFactory: undefined, toolNames: [], capability: undefined, logs: [] };
  const log = (level: string) => (message: string) => {
    out.logs.push({ level, message });
  };
  const api = {
    pluginConfig,
    logger: { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") },
    registerTool(factory: (ctx: OpenClawPluginToolContext) => AnyAgentTool[], opts: { names: string[] }) {
      out.toolFactory = factory;
      out.toolNames = opts.names;
    },
    registerMemoryCapability(c: Registered["capability"]) {
      out.capability = c;
    },
    on(name: string, handler: (event: unknown, ctx: unknown) => unknown, opts: unknown) {
      out.hooks.set(name, { handler, opts });
    },
  } as unknown as OpenClawPluginApi;
  register(api);
  return out;
}

export async function hook(r: Registered, name: string, event: unknown, ctx: unknown): Promise<unknown> {
  const h = r.hooks.get(name);
  if (!h) throw new Error(`hook ${name} not registered`);
  return await h.handler(event, ctx);
}

export function tool(r: Registered, ctx: OpenClawPluginToolContext, name: string): AnyAgentTool {
  const t = r.toolFactory?.(ctx).find((x) => x.name === name);
  if (!t) throw new Error(`tool ${name} not registered`);
  return t;
}

export function textOfResult(res: { content: { type: string; text?: string }[] }): string {
  return res.content.map((c) => c.text ?? "").join("");
}
