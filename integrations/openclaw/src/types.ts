// OpenClaw's own types for the surface this plugin uses. The SDK exports the
// API, tool and logger types by name; the hook event and context types it
// does not, so they are read off `api.on` for each hook name: if OpenClaw
// changes a hook's shape, this file stops compiling.
import type {
  AnyAgentTool,
  OpenClawPluginApi,
  OpenClawPluginToolContext,
  PluginLogger,
} from "openclaw/plugin-sdk/plugin-entry";

export type { AnyAgentTool, OpenClawPluginApi, OpenClawPluginToolContext, PluginLogger };

// eslint-disable-next-line @typescript-eslint/no-unused-vars -- only its type is read
declare const on: OpenClawPluginApi["on"];
type Handler<K extends "before_prompt_build" | "agent_end" | "before_compaction" | "before_reset" | "session_end"> =
  Parameters<typeof on<K>>[1];

export type BeforePromptBuildEvent = Parameters<Handler<"before_prompt_build">>[0];
export type BeforePromptBuildResult = NonNullable<Awaited<ReturnType<Handler<"before_prompt_build">>>>;
export type AgentHookContext = Parameters<Handler<"before_prompt_build">>[1];
export type AgentEndEvent = Parameters<Handler<"agent_end">>[0];
export type BeforeCompactionEvent = Parameters<Handler<"before_compaction">>[0];
export type BeforeResetEvent = Parameters<Handler<"before_reset">>[0];
export type SessionEndEvent = Parameters<Handler<"session_end">>[0];
export type SessionHookContext = Parameters<Handler<"session_end">>[1];
export type MemoryCapability = Parameters<OpenClawPluginApi["registerMemoryCapability"]>[0];
export type ToolResult = Awaited<ReturnType<AnyAgentTool["execute"]>>;
