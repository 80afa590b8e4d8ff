//! The attributes of an LLM span (agents' and algorithms' calls alike): everything Agent-
//! lightning's `TracerTraceToTriplet` reads — the GenAI request and response keys, the prompt
//! and completion messages, the response id, token ids and logprobs — plus the request's tools
//! and stop sequences. What does not fit is left out and said so: a long conversation keeps its
//! first and last messages (numbered without a gap) and records how many were dropped, where.

use crate::names;
use agl_llm::{ChatRequest, ChatResponse};
use agl_store::clip;
use opentelemetry::{Array, KeyValue, StringValue, Value};

/// Prompt messages recorded per LLM span: the first `PROMPT_HEAD_MESSAGES` (the system prompt and
/// the task) and the last `PROMPT_TAIL_MESSAGES` (what the model answered to). With at most three
/// attributes each, clipped to the attribute cap (64 KiB by default), one span's prompt stays
/// within 8 MiB, a quarter of the default per-attempt span budget.
pub const PROMPT_HEAD_MESSAGES: usize = 16;
pub const PROMPT_TAIL_MESSAGES: usize = 112;
/// Tool calls of a completion recorded (three attributes each).
pub const COMPLETION_TOOL_CALLS: usize = 64;
/// Tool calls of the prompt's assistant messages recorded, all messages together (three
/// attributes each); the rest are counted in `agl.llm.prompt_tool_calls_dropped`.
pub const PROMPT_TOOL_CALLS: usize = 64;
/// Attributes one span may carry. Sized for the largest LLM span: three per recorded prompt
/// message and per recorded tool call (prompt and completion), and fewer than 32 others. The OpenTelemetry SDK's default
/// (128) silently dropped the completion from about 62 messages on.
pub const MAX_ATTRIBUTES_PER_SPAN: u32 = 1024;

/// The prompt messages a span records: indices into `messages`, and where the gap begins.
fn recorded(count: usize) -> (impl Iterator<Item = usize>, usize) {
    let kept = PROMPT_HEAD_MESSAGES + PROMPT_TAIL_MESSAGES;
    if count <= kept {
        return ((0..count).chain(0..0), 0);
    }
    (
        (0..PROMPT_HEAD_MESSAGES).chain(count - PROMPT_TAIL_MESSAGES..count),
        count - kept,
    )
}

fn i64_of(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn ids(token_ids: &[u32]) -> Value {
    Value::Array(Array::I64(token_ids.iter().map(|&id| i64::from(id)).collect()))
}

/// The request side, recorded when the call starts: model, options, tools, stop sequences and
/// the (bounded) prompt; strings clipped to `cap` bytes.
pub fn request_attributes(request: &ChatRequest, model: &str, cap: usize) -> Vec<KeyValue> {
    let mut attributes = vec![
        KeyValue::new(names::GEN_AI_OPERATION_NAME, "chat"),
        KeyValue::new(names::GEN_AI_REQUEST_MODEL, model.to_owned()),
    ];
    if let Some(t) = request.temperature {
        attributes.push(KeyValue::new(names::GEN_AI_REQUEST_TEMPERATURE, f64::from(t)));
    }
    if let Some(m) = request.max_tokens {
        attributes.push(KeyValue::new(names::GEN_AI_REQUEST_MAX_TOKENS, i64::from(m)));
    }
    if !request.stop.is_empty() {
        let stop = request.stop.iter().map(|s| StringValue::from(clip(s, cap))).collect();
        attributes.push(KeyValue::new(
            names::GEN_AI_REQUEST_STOP_SEQUENCES,
            Value::Array(Array::String(stop)),
        ));
    }
    if !request.tools.is_empty() {
        // `Tool` is plain data: serialising it cannot fail.
        let tools = serde_json::to_string(&request.tools).unwrap_or_default();
        attributes.push(KeyValue::new(names::GEN_AI_REQUEST_TOOLS, clip(&tools, cap)));
    }
    let (indices, dropped) = recorded(request.messages.len());
    attributes.push(KeyValue::new(
        names::LLM_PROMPT_MESSAGES,
        i64_of(request.messages.len()),
    ));
    if dropped > 0 {
        attributes.push(KeyValue::new(names::LLM_PROMPT_MESSAGES_DROPPED, i64_of(dropped)));
        attributes.push(KeyValue::new(
            names::LLM_PROMPT_MESSAGES_DROPPED_AT,
            i64_of(PROMPT_HEAD_MESSAGES),
        ));
    }
    let mut prompt_calls_left = PROMPT_TOOL_CALLS;
    let mut prompt_calls_dropped = 0usize;
    for (i, message) in indices.map(|index| &request.messages[index]).enumerate() {
        attributes.push(KeyValue::new(names::prompt_key(i, names::ROLE), message.role.as_str()));
        attributes.push(KeyValue::new(
            names::prompt_key(i, names::CONTENT),
            clip(&message.content, cap),
        ));
        if let Some(id) = &message.tool_call_id {
            attributes.push(KeyValue::new(names::prompt_key(i, names::TOOL_CALL_ID), clip(id, cap)));
        }
        let kept = message.tool_calls.len().min(prompt_calls_left);
        prompt_calls_left -= kept;
        prompt_calls_dropped += message.tool_calls.len() - kept;
        for (j, call) in message.tool_calls.iter().take(kept).enumerate() {
            for (field, value) in [
                (names::ID, &call.id),
                (names::NAME, &call.name),
                (names::ARGUMENTS, &call.arguments),
            ] {
                attributes.push(KeyValue::new(
                    names::prompt_tool_call_key(i, j, field),
                    clip(value, cap),
                ));
            }
        }
    }
    if prompt_calls_dropped > 0 {
        attributes.push(KeyValue::new(
            names::LLM_PROMPT_TOOL_CALLS_DROPPED,
            i64_of(prompt_calls_dropped),
        ));
    }
    attributes
}

/// The response side, recorded when the answer arrives: model, id, finish reason, usage, the
/// completion with its (bounded) tool calls, and token ids and logprobs when the backend sent them.
pub fn response_attributes(response: &ChatResponse, cap: usize) -> Vec<KeyValue> {
    let mut attributes = vec![
        KeyValue::new(names::GEN_AI_RESPONSE_MODEL, response.model.clone()),
        KeyValue::new(
            names::GEN_AI_RESPONSE_FINISH_REASONS,
            Value::Array(Array::String(vec![StringValue::from(response.finish_reason.clone())])),
        ),
        KeyValue::new(names::GEN_AI_USAGE_INPUT_TOKENS, i64::from(response.usage.input_tokens)),
        KeyValue::new(
            names::GEN_AI_USAGE_OUTPUT_TOKENS,
            i64::from(response.usage.output_tokens),
        ),
        KeyValue::new(names::completion_key(0, names::ROLE), names::ASSISTANT),
        KeyValue::new(names::completion_key(0, names::CONTENT), clip(&response.content, cap)),
    ];
    if let Some(id) = &response.id {
        attributes.push(KeyValue::new(names::GEN_AI_RESPONSE_ID, clip(id, cap)));
    }
    for (j, call) in response.tool_calls.iter().take(COMPLETION_TOOL_CALLS).enumerate() {
        attributes.push(KeyValue::new(
            names::completion_tool_call_key(0, j, names::ID),
            clip(&call.id, cap),
        ));
        attributes.push(KeyValue::new(
            names::completion_tool_call_key(0, j, names::NAME),
            clip(&call.name, cap),
        ));
        attributes.push(KeyValue::new(
            names::completion_tool_call_key(0, j, names::ARGUMENTS),
            clip(&call.arguments, cap),
        ));
    }
    let dropped_calls = response.tool_calls.len().saturating_sub(COMPLETION_TOOL_CALLS);
    if dropped_calls > 0 {
        attributes.push(KeyValue::new(names::LLM_TOOL_CALLS_DROPPED, i64_of(dropped_calls)));
    }
    if let Some(prompt) = &response.tokens.prompt_token_ids {
        attributes.push(KeyValue::new(names::PROMPT_TOKEN_IDS, ids(prompt)));
    }
    if let Some(completion) = &response.tokens.response_token_ids {
        attributes.push(KeyValue::new(names::RESPONSE_TOKEN_IDS, ids(completion)));
    }
    if let Some(logprobs) = &response.tokens.logprobs {
        // Agent-lightning parses this as JSON: a clipped text would not parse, so too long is left out.
        let text = logprobs.to_string();
        if text.len() <= cap {
            attributes.push(KeyValue::new(names::LOGPROBS_CONTENT, text));
        } else {
            attributes.push(KeyValue::new(names::LLM_LOGPROBS_DROPPED_BYTES, i64_of(text.len())));
        }
    }
    attributes
}

#[cfg(test)]
mod tests {
    use super::*;
    use agl_llm::{Message, TokenDetail, Tool, ToolCall, Usage};
    use std::collections::HashMap;

    fn map(attributes: Vec<KeyValue>) -> HashMap<String, Value> {
        attributes
            .into_iter()
            .map(|kv| (kv.key.to_string(), kv.value))
            .collect()
    }

    fn text(attributes: &HashMap<String, Value>, key: &str) -> String {
        attributes.get(key).map(|v| v.as_str().into_owned()).unwrap_or_default()
    }

    #[test]
    fn a_long_conversation_keeps_its_first_and_last_messages_and_says_what_it_dropped() {
        let messages: Vec<Message> = (0..300).map(|i| Message::user(format!("m{i}"))).collect();
        let attributes = request_attributes(&ChatRequest::new(messages), "m", 1024);
        assert!(attributes.len() + 30 < MAX_ATTRIBUTES_PER_SPAN as usize);
        let attributes = map(attributes);
        assert_eq!(attributes[names::LLM_PROMPT_MESSAGES], Value::I64(300));
        assert_eq!(attributes[names::LLM_PROMPT_MESSAGES_DROPPED], Value::I64(300 - 128));
        assert_eq!(attributes[names::LLM_PROMPT_MESSAGES_DROPPED_AT], Value::I64(16));
        assert_eq!(text(&attributes, "gen_ai.prompt.15.content"), "m15");
        assert_eq!(
            text(&attributes, "gen_ai.prompt.16.content"),
            "m188",
            "numbered without a gap"
        );
        assert_eq!(text(&attributes, "gen_ai.prompt.127.content"), "m299");
        assert!(!attributes.contains_key("gen_ai.prompt.128.content"));
    }

    #[test]
    fn a_short_conversation_is_recorded_whole_with_tools_stop_and_tool_call_ids() {
        let mut request = ChatRequest::new(vec![
            Message::system("s"),
            Message::user("u"),
            Message::tool("call-1", "42"),
        ]);
        request.stop = vec!["END".into()];
        request.tools = vec![Tool {
            name: "calc".into(),
            description: "adds".into(),
            parameters: serde_json::json!({"type": "object"}),
        }];
        let attributes = map(request_attributes(&request, "m", 1024));
        assert!(!attributes.contains_key(names::LLM_PROMPT_MESSAGES_DROPPED));
        assert_eq!(text(&attributes, "gen_ai.prompt.2.role"), "tool");
        assert_eq!(text(&attributes, "gen_ai.prompt.2.tool_call_id"), "call-1");
        assert!(!attributes.contains_key("gen_ai.prompt.1.tool_call_id"));
        assert_eq!(
            attributes[names::GEN_AI_REQUEST_STOP_SEQUENCES],
            Value::Array(Array::String(vec!["END".into()]))
        );
        let tools: serde_json::Value = serde_json::from_str(&text(&attributes, names::GEN_AI_REQUEST_TOOLS)).unwrap();
        assert_eq!(tools[0]["name"], "calc");
    }

    #[test]
    fn the_response_carries_its_id_token_ids_and_logprobs_and_bounds_tool_calls() {
        let call = |i: usize| ToolCall {
            id: format!("c{i}"),
            name: "f".into(),
            arguments: "{}".into(),
        };
        let response = ChatResponse {
            content: "hi".into(),
            tool_calls: (0..70).map(call).collect(),
            finish_reason: "tool_calls".into(),
            usage: Usage::default(),
            model: "m".into(),
            id: Some("chatcmpl-9".into()),
            tokens: TokenDetail {
                prompt_token_ids: Some(vec![1, 2]),
                response_token_ids: Some(vec![3]),
                logprobs: Some(serde_json::json!([{"token": "hi", "logprob": -0.1}])),
            },
        };
        let attributes = map(response_attributes(&response, 1024));
        assert_eq!(text(&attributes, names::GEN_AI_RESPONSE_ID), "chatcmpl-9");
        assert_eq!(
            attributes[names::PROMPT_TOKEN_IDS],
            Value::Array(Array::I64(vec![1, 2]))
        );
        assert_eq!(attributes[names::RESPONSE_TOKEN_IDS], Value::Array(Array::I64(vec![3])));
        let logprobs: serde_json::Value = serde_json::from_str(&text(&attributes, names::LOGPROBS_CONTENT)).unwrap();
        assert_eq!(logprobs[0]["token"], "hi");
        assert_eq!(attributes[names::LLM_TOOL_CALLS_DROPPED], Value::I64(6));
        assert!(attributes.contains_key("gen_ai.completion.0.tool_calls.63.id"));
        assert!(!attributes.contains_key("gen_ai.completion.0.tool_calls.64.id"));
        // Logprobs longer than the cap are left out (clipped JSON would not parse), and counted.
        let attributes = map(response_attributes(&response, 16));
        assert!(!attributes.contains_key(names::LOGPROBS_CONTENT));
        assert!(attributes.contains_key(names::LLM_LOGPROBS_DROPPED_BYTES));
    }
}
