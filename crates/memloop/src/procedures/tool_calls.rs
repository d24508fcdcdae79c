//! Tool calls as agents report them, normalised to one [`ToolCall`]:
//! OpenAI's (`tool_calls: [{id, type: "function", function: {name,
//! arguments}}]` on an assistant message, results as `role: "tool"`
//! messages with `tool_call_id`) and Anthropic's (`tool_use` and
//! `tool_result` content blocks). The messages' plain text is kept beside,
//! so the exchange is recorded as before and its tool calls become a run.

use memloop_core::{Error, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::model::{Outcome, ProcedureRun, Step};

/// How much of a tool's arguments or result a step keeps.
const SUMMARY_CHARS: usize = 240;

/// One tool call and its result, whichever API shaped it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    /// The arguments as the model gave them (JSON text, usually).
    #[serde(default)]
    pub arguments: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// The tool reported an error (Anthropic's `is_error`; for OpenAI's
    /// tool messages, an `is_error` field or a result that starts with
    /// "error").
    #[serde(default)]
    pub is_error: bool,
}

/// Messages split into their text (role, content) and their tool calls,
/// in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolMessages {
    pub messages: Vec<(String, String)>,
    pub tool_calls: Vec<ToolCall>,
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                Value::String(s) => Some(s.as_str()),
                _ if b.get("type").and_then(Value::as_str) == Some("text") => {
                    b.get("text").and_then(Value::as_str)
                }
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn looks_like_error(result: &str) -> bool {
    let head: String = result.trim_start().chars().take(8).collect();
    let head = head.to_lowercase();
    head.starts_with("error")
        || head.starts_with("failed")
        || head.starts_with("fatal")
        || json_says_error(result)
}

/// A result that is a JSON object reporting its own failure, as agent
/// runtimes' tools answer: `{"status": "error", "error": "File not found"}`,
/// `{"isError": true}`, `{"error": {…}}`.
fn json_says_error(result: &str) -> bool {
    let Ok(Value::Object(o)) = serde_json::from_str::<Value>(result.trim()) else {
        return false;
    };
    let status = o.get("status").and_then(Value::as_str).unwrap_or("");
    matches!(
        status.to_ascii_lowercase().as_str(),
        "error" | "failed" | "failure"
    ) || ["isError", "is_error"]
        .iter()
        .any(|k| o.get(*k) == Some(&Value::Bool(true)))
        || o.get("error").is_some_and(|e| match e {
            Value::Null | Value::Bool(false) => false,
            Value::String(s) => !s.is_empty(),
            _ => true,
        })
}

fn field<'a>(v: &'a Value, i: usize, name: &str) -> Result<&'a str> {
    v.get(name).and_then(Value::as_str).ok_or_else(|| {
        Error::invalid(format!(
            "messages[{i}]: a tool call needs a string {name:?} (OpenAI: tool_calls[].function.{{name, arguments}}; Anthropic: a tool_use block with id, name, input)"
        ))
    })
}

/// Reads messages in either API's shape. A message is `{role, content}`
/// where content is a string or a list of content blocks.
pub fn from_messages(messages: &[Value]) -> Result<ToolMessages> {
    let mut out = ToolMessages::default();
    for (i, m) in messages.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str).ok_or_else(|| {
            Error::invalid(format!(
                "messages[{i}] has no role: give each message a role (user, assistant, system or tool) and content"
            ))
        })?;
        let content = m.get("content").unwrap_or(&Value::Null);
        // A message that carries tool calls is not plain text: its content
        // is often "" (OpenAI allows it), which is no message of its own.
        let mut plain = m.get("tool_calls").is_none_or(Value::is_null);
        for call in m
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let f = call.get("function").unwrap_or(call);
            let arguments = match f.get("arguments") {
                Some(Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
                None => String::new(),
            };
            out.tool_calls.push(ToolCall {
                id: call.get("id").and_then(Value::as_str).map(str::to_string),
                name: field(f, i, "name")?.to_string(),
                arguments,
                result: None,
                is_error: false,
            });
        }
        if role == "tool" {
            let id = m.get("tool_call_id").and_then(Value::as_str);
            let text = text_of(content);
            // A caller's own flag wins; without one, the text is read.
            let is_error = m
                .get("is_error")
                .and_then(Value::as_bool)
                .unwrap_or_else(|| looks_like_error(&text));
            attach(&mut out.tool_calls, id, text, is_error);
            continue;
        }
        for block in content.as_array().into_iter().flatten() {
            match block.get("type").and_then(Value::as_str) {
                Some("tool_use") => {
                    plain = false;
                    out.tool_calls.push(ToolCall {
                        id: block.get("id").and_then(Value::as_str).map(str::to_string),
                        name: field(block, i, "name")?.to_string(),
                        arguments: block.get("input").map(Value::to_string).unwrap_or_default(),
                        result: None,
                        is_error: false,
                    });
                }
                Some("tool_result") => {
                    plain = false;
                    let id = block.get("tool_use_id").and_then(Value::as_str);
                    let text = text_of(block.get("content").unwrap_or(&Value::Null));
                    let is_error = block
                        .get("is_error")
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                    attach(&mut out.tool_calls, id, text, is_error);
                }
                _ => {}
            }
        }
        let text = text_of(content);
        if !text.trim().is_empty() || plain && !content.is_null() {
            out.messages.push((role.to_string(), text));
        }
    }
    Ok(out)
}

/// Gives a result to the call it answers (by id, else the oldest call
/// still waiting for one).
fn attach(calls: &mut [ToolCall], id: Option<&str>, text: String, is_error: bool) {
    let target = match id {
        Some(id) => calls.iter_mut().find(|c| c.id.as_deref() == Some(id)),
        None => calls.iter_mut().find(|c| c.result.is_none()),
    };
    if let Some(c) = target {
        c.result = Some(text);
        c.is_error = is_error;
    }
}

fn summarise(text: &str) -> String {
    memloop_core::text::one_line(text, SUMMARY_CHARS)
}

/// `{"command": "npm run deploy"}` reads best as `npm run deploy`: an
/// object of one string is that string; anything else stays compact JSON.
fn arguments_summary(arguments: &str) -> String {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(map)) if map.len() == 1 => match map.values().next() {
            Some(Value::String(s)) => summarise(s),
            _ => summarise(arguments),
        },
        Ok(Value::Object(map)) if map.is_empty() => String::new(),
        _ => summarise(arguments),
    }
}

impl ToolCall {
    /// The call as a step of a procedure.
    pub fn step(&self) -> Step {
        let result = self.result.as_deref().map(summarise).unwrap_or_default();
        Step {
            tool: self.name.clone(),
            args: arguments_summary(&self.arguments),
            error: self
                .is_error
                .then(|| result.lines().next().unwrap_or_default().to_string()),
            result,
            ok: !self.is_error,
        }
    }
}

/// The run a turn's tool calls make: the task is what the user asked;
/// the outcome is the caller's, else success when the last call worked.
pub fn run_of(
    task: &str,
    calls: &[ToolCall],
    outcome: Option<Outcome>,
    at: Option<i64>,
    execution_id: Option<&str>,
) -> Option<ProcedureRun> {
    let last = calls.last()?;
    let steps: Vec<Step> = calls.iter().map(ToolCall::step).collect();
    let outcome = outcome.unwrap_or(if last.is_error {
        Outcome::Failure
    } else {
        Outcome::Success
    });
    Some(ProcedureRun {
        task: task.trim().chars().take(500).collect(),
        error: (outcome == Outcome::Failure)
            .then(|| steps.iter().rev().find_map(|s| s.error.clone()))
            .flatten(),
        steps,
        outcome,
        at,
        execution_id: execution_id.map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_json_result_that_reports_a_failure_is_an_error() {
        for failed in [
            r#"{"status": "error", "tool": "read", "error": "File not found: x"}"#,
            r#"{"isError": true, "content": "x"}"#,
            r#"{"error": {"code": 2}}"#,
            "Error: EACCES",
        ] {
            assert!(looks_like_error(failed), "{failed}");
        }
        for fine in [
            r#"{"status": "ok", "error": null}"#,
            r#"{"error": ""}"#,
            r#"{"is_error": false}"#,
            "the error rate fell",
            "[1, 2]",
        ] {
            assert!(!looks_like_error(fine), "{fine}");
        }
    }

    #[test]
    fn an_empty_message_carrying_tool_calls_is_no_message_of_its_own() {
        let parsed = from_messages(&[
            json!({"role": "user", "content": "read the notes"}),
            json!({"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "read", "arguments": "{}"}}]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "notes"}),
            json!({"role": "assistant", "content": ""}),
        ])
        .unwrap();
        let roles: Vec<&str> = parsed.messages.iter().map(|m| m.0.as_str()).collect();
        assert_eq!(
            roles,
            ["user", "assistant"],
            "a plain empty message is kept for the caller's check"
        );
        assert_eq!(parsed.tool_calls.len(), 1);
        assert_eq!(parsed.tool_calls[0].result.as_deref(), Some("notes"));
    }

    #[test]
    fn openai_and_anthropic_shapes_give_the_same_calls() {
        let openai = [
            json!({"role": "user", "content": "deploy the web app"}),
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{\"command\":\"npm run deploy\"}"}}]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "Error: EACCES: permission denied"}),
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "c2", "type": "function", "function": {"name": "shell", "arguments": "{\"command\":\"sudo -u deploy npm run deploy\"}"}}]}),
            json!({"role": "tool", "tool_call_id": "c2", "content": "deployed v42"}),
            json!({"role": "assistant", "content": "Deployed."}),
        ];
        let anthropic = [
            json!({"role": "user", "content": "deploy the web app"}),
            json!({"role": "assistant", "content": [
                {"type": "tool_use", "id": "c1", "name": "shell", "input": {"command": "npm run deploy"}}]}),
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "Error: EACCES: permission denied", "is_error": true}]}),
            json!({"role": "assistant", "content": [
                {"type": "text", "text": "Retrying as the deploy user."},
                {"type": "tool_use", "id": "c2", "name": "shell", "input": {"command": "sudo -u deploy npm run deploy"}}]}),
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c2", "content": [{"type": "text", "text": "deployed v42"}]}]}),
            json!({"role": "assistant", "content": "Deployed."}),
        ];
        let a = from_messages(&openai).unwrap();
        let b = from_messages(&anthropic).unwrap();
        let steps = |m: &ToolMessages| m.tool_calls.iter().map(ToolCall::step).collect::<Vec<_>>();
        assert_eq!(steps(&a), steps(&b));
        assert_eq!(a.tool_calls.len(), 2);
        assert!(a.tool_calls[0].is_error && !a.tool_calls[1].is_error);
        assert_eq!(steps(&a)[0].args, "npm run deploy");
        assert_eq!(a.messages[0], ("user".into(), "deploy the web app".into()));
        // The tool results are not user text; the assistant's text is kept.
        assert!(b.messages.iter().all(|(_, t)| !t.contains("EACCES")));
        assert!(b
            .messages
            .iter()
            .any(|(_, t)| t == "Retrying as the deploy user."));

        let run = run_of("deploy the web app", &a.tool_calls, None, None, Some("t1")).unwrap();
        assert_eq!(run.outcome, Outcome::Success);
        let p = crate::procedures::merge::first(&run, 0);
        assert_eq!(p.steps_line(), "shell sudo -u deploy npm run deploy");
        assert_eq!(
            p.pitfalls[0].replaced_by.as_deref(),
            Some("shell sudo -u deploy npm run deploy")
        );
    }

    #[test]
    fn a_tool_call_without_a_name_is_refused_naming_the_message() {
        let bad = [
            json!({"role": "assistant", "tool_calls": [{"id": "x", "function": {"arguments": "{}"}}]}),
        ];
        let err = from_messages(&bad).unwrap_err().to_string();
        assert!(err.contains("messages[0]") && err.contains("name"), "{err}");
        let no_role = [json!({"content": "hi"})];
        assert!(from_messages(&no_role)
            .unwrap_err()
            .to_string()
            .contains("role"));
    }
}
