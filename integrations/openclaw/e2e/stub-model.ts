// A deterministic stand-in for a model, speaking the OpenAI-compatible Chat
// Completions API on loopback (streamed as OpenAI's SSE chunks, as OpenClaw
// asks). It answers every request with what memory it was given: the number
// of recalled memories in the <relevant-memories> block of the last user
// message, and their texts. Each request body is appended to a JSONL log so
// the end-to-end test can read exactly what OpenClaw sent.
//
// A user message holding TOOL_TASK is a task done with a tool: the stub
// calls OpenClaw's `read` tool on a file that is not there, then (seeing
// the failure) on one that is, then answers: a run with a pitfall, for
// memloop to learn as a procedure.
//
//   node stub-model.ts PORT LOG_FILE

import { appendFileSync } from "node:fs";
import { createServer, type ServerResponse } from "node:http";

const [portArg, logFile] = process.argv.slice(2);
const port = Number(portArg);
if (!Number.isInteger(port) || logFile === undefined) {
  console.error("usage: node stub-model.ts PORT LOG_FILE");
  process.exit(2);
}

interface Message {
  role: string;
  content: unknown;
}

interface ToolDecl {
  type?: string;
  function?: { name?: string; parameters?: { properties?: Record<string, unknown>; required?: string[] } };
}

export const TOOL_TASK = "(tool task)";
/** The files the tool task reads: the first is never there, the second is (the test writes it). */
export const MISSING_FILE = "release-notes-draft.txt";
export const PRESENT_FILE = "release-notes.txt";

/** The tool call to make next in a tool task, or undefined when the task is done (or none was asked). */
export function toolStep(messages: readonly Message[], tools: readonly ToolDecl[]): { name: string; args: Record<string, string> } | { text: string } | undefined {
  const userAt = messages.findLastIndex((m) => m.role === "user" && !text(m.content).startsWith("<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT") && text(m.content).includes(TOOL_TASK));
  if (userAt < 0) return undefined;
  const results = messages.slice(userAt + 1).filter((m) => m.role === "tool").length;
  if (results >= 2) return { text: "STUB tool task done: read the release notes." };
  const read = tools.find((t) => t.function?.name === "read");
  if (!read?.function) return { text: `STUB no read tool among: ${tools.map((t) => t.function?.name).join(",")}` };
  const params = read.function.parameters ?? {};
  const pathParam = ["path", "file_path", "filePath"].find((p) => p in (params.properties ?? {})) ?? params.required?.[0] ?? "path";
  return { name: "read", args: { [pathParam]: results === 0 ? MISSING_FILE : PRESENT_FILE } };
}

function text(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((p: { type?: string; text?: string }) => (p.type === "text" ? (p.text ?? "") : "")).join("\n");
}

/** The reply: what memory the request carried, so the test can see it in the answer too. */
export function reply(messages: readonly Message[]): string {
  // OpenClaw sends its own internal context as a separate user message after the user's.
  const lastUser = [...messages].reverse().find((m) => m.role === "user" && !text(m.content).startsWith("<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT"));
  const said = text(lastUser?.content);
  const block = /<relevant-memories>([\s\S]*?)<\/relevant-memories>/.exec(said)?.[1] ?? "";
  const memories = block
    .split("\n")
    .map((l) => /^\d+\. \[[^\]]*\] (.*)$/.exec(l.trim())?.[1])
    .filter((m): m is string => m !== undefined);
  const question = said
    .replace(/<relevant-memories>[\s\S]*?<\/relevant-memories>/, "")
    .replace(/\n\nRuntime: [\s\S]*$/, "")
    .replace(/^\s*\[[^\]]*\]/, "")
    .trim();
  return `STUB memories_seen=${memories.length}${memories.length > 0 ? ` recalled: ${memories.join(" | ")}` : ""} (asked: ${question.slice(0, 80)})`;
}

function sseToolCall(res: ServerResponse, model: string, name: string, args: string, n: number): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const base = { id: "chatcmpl-stub", object: "chat.completion.chunk", created: 0, model };
  const chunk = (o: object) => `data: ${JSON.stringify({ ...base, ...o })}\n\n`;
  const call = { index: 0, id: `call_stub_${n}`, type: "function", function: { name, arguments: "" } };
  res.write(chunk({ choices: [{ index: 0, delta: { role: "assistant", content: null, tool_calls: [call] }, finish_reason: null }] }));
  res.write(chunk({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: args } }] }, finish_reason: null }] }));
  res.write(chunk({ choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }], usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 } }));
  res.end("data: [DONE]\n\n");
}

let calls = 0;

function sse(res: ServerResponse, model: string, content: string): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const base = { id: "chatcmpl-stub", object: "chat.completion.chunk", created: 0, model };
  const chunk = (o: object) => `data: ${JSON.stringify({ ...base, ...o })}\n\n`;
  res.write(chunk({ choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] }));
  res.write(chunk({ choices: [{ index: 0, delta: { content }, finish_reason: null }] }));
  res.write(chunk({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }], usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 } }));
  res.end("data: [DONE]\n\n");
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    if (req.method === "GET" && req.url?.endsWith("/models")) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ object: "list", data: [{ id: "stub-model", object: "model" }] }));
      return;
    }
    if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: `no route ${String(req.method)} ${String(req.url)}` } }));
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString()) as { model?: string; stream?: boolean; messages?: Message[]; tools?: ToolDecl[] };
    const step = toolStep(body.messages ?? [], body.tools ?? []);
    if (step !== undefined && "name" in step && body.stream) {
      const args = JSON.stringify(step.args);
      appendFileSync(logFile, `${JSON.stringify({ at: new Date().toISOString(), tool_call: { name: step.name, args }, body })}\n`);
      sseToolCall(res, body.model ?? "stub-model", step.name, args, ++calls);
      return;
    }
    const content = step !== undefined && "text" in step ? step.text : reply(body.messages ?? []);
    appendFileSync(logFile, `${JSON.stringify({ at: new Date().toISOString(), reply: content, body })}\n`);
    const model = body.model ?? "stub-model";
    if (body.stream) {
      sse(res, model, content);
      return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({
      id: "chatcmpl-stub", object: "chat.completion", created: 0, model,
      choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
      usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
    }));
  });
});

server.listen(port, "127.0.0.1", () => {
  console.error(`stub model on http://127.0.0.1:${port}/v1, logging to ${logFile}`);
});
for (const sig of ["SIGTERM", "SIGINT"] as const) process.on(sig, () => server.close(() => process.exit(0)));
