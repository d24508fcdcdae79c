// Reads the end-to-end test's evidence (scripts/openclaw-e2e.sh):
//
//   node inspect.ts request-for MODEL_LOG SAID
//     prints the user message of the stub model's log that contains SAID:
//     exactly what OpenClaw sent the model for that turn.
//   node inspect.ts traced MEMORIES_JSON PROMPT_FILE MEMLOOP_LOG SESSION
//     exits 1 unless every stored memory whose (escaped) text reached the
//     prompt is named in memloop's logged recall trace for SESSION, and at
//     least one did.

import { readFileSync } from "node:fs";
import { escapeText } from "../src/recall.ts";

function text(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((p: { text?: string }) => p.text ?? "").join("\n");
}

function requestFor(log: string, said: string): string {
  let found = "";
  for (const line of readFileSync(log, "utf8").split("\n")) {
    if (line.trim() === "") continue;
    const { body } = JSON.parse(line) as { body: { messages?: { role: string; content: unknown }[] } };
    for (const m of body.messages ?? []) {
      if (m.role === "user" && text(m.content).includes(said)) found = text(m.content);
    }
  }
  return found;
}

function traced(memories: string, promptFile: string, log: string, session: string): boolean {
  const prompt = readFileSync(promptFile, "utf8");
  const traces = readFileSync(log, "utf8")
    .split("\n")
    .filter((l) => l.includes("memory_retrieval") && l.includes(session))
    .join("\n");
  const stored = (JSON.parse(readFileSync(memories, "utf8")) as { results?: { id: string; memory: string }[] }).results ?? [];
  // The recall block puts each memory on one line, its white space collapsed.
  const carried = stored.filter((m) => prompt.includes(escapeText(m.memory.replace(/\s+/g, " ").trim())));
  const missing = carried.filter((m) => !traces.includes(m.id));
  console.error(`memories in the prompt: ${carried.length}; named in memloop's trace: ${carried.length - missing.length}`);
  return carried.length > 0 && missing.length === 0;
}

const [cmd, ...args] = process.argv.slice(2);
if (cmd === "request-for" && args.length === 2) {
  console.log(requestFor(args[0] ?? "", args[1] ?? ""));
} else if (cmd === "traced" && args.length === 4) {
  process.exit(traced(args[0] ?? "", args[1] ?? "", args[2] ?? "", args[3] ?? "") ? 0 : 1);
} else {
  console.error("usage: node inspect.ts request-for MODEL_LOG SAID | traced MEMORIES_JSON PROMPT_FILE MEMLOOP_LOG SESSION");
  process.exit(2);
}
