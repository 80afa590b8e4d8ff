//! One LLM call span read into a triplet (reward left unset), from the GenAI attributes agl-host,
//! OpenLLMetry and AgentOps write (what `TracerTraceToTriplet.span_to_triplet` and
//! `TraceToMessages.adapt` read in Agent-lightning 0.3.0).
//!
//! Lenient by design; what is missing or of the wrong type is defaulted, never a panic:
//! - prompt messages come from `gen_ai.prompt.{i}.*` in ascending index order, gaps skipped; an
//!   index with none of role, content, tool call id or tool calls is dropped; a missing (or
//!   non-text) role reads as `user`, missing content as empty; non-string content is kept as its
//!   JSON text, a numeric id as its digits;
//! - the answer is the completion choice with the lowest index: its content (empty when absent)
//!   and its `tool_calls.{j}.{id,name,arguments}` (or the legacy `function_call.{name,arguments}`);
//!   when the span has none, AgentOps tool spans beneath it (`tool.name`, `tool.parameters`,
//!   `tool.call.id`) stand in, as `TraceToMessages.get_tool_calls` does; a tool call without a
//!   name is dropped;
//! - the model is `gen_ai.response.model`, else `gen_ai.request.model`, else empty;
//! - usage is `gen_ai.usage.input_tokens`/`output_tokens`, else `prompt_tokens`/`completion_tokens`.
//! - the response id is `gen_ai.response.id`; token ids are `prompt_token_ids` /
//!   `response_token_ids` (integer arrays, as vLLM returns them), else empty.

use crate::attrs::{self, Fields, count, ident, indexed, string, text};
use crate::conventions as c;
use crate::model::{Message, ToolCall, Triplet, Usage};
use agl_store::Span;

/// Whether a span is an LLM call: its name contains `openai.chat.completion`, or it carries
/// `gen_ai.prompt.*` / `gen_ai.completion.*` attributes (any GenAI instrumentation).
pub fn looks_like_llm_call(span: &Span) -> bool {
    span.name.contains(c::LLM_SPAN)
        || attrs::has_family(span.attributes.keys(), c::GEN_AI_PROMPT)
        || attrs::has_family(span.attributes.keys(), c::GEN_AI_COMPLETION)
}

/// The span's `gen_ai.response.id`, if it is text.
pub(crate) fn response_id(span: &Span) -> Option<&str> {
    string(span.attributes.get(c::GEN_AI_RESPONSE_ID))
}

fn family<'a>(span: &'a Span, prefix: &str) -> std::collections::BTreeMap<u64, Fields<'a>> {
    indexed(span.attributes.iter().map(|(k, v)| (k.as_str(), v)), prefix)
}

/// `tool_calls.{j}.{id,name,arguments}` of one message, or its legacy `function_call`.
fn tool_calls(fields: &Fields<'_>) -> Vec<ToolCall> {
    let calls: Vec<ToolCall> = indexed(fields.iter().map(|(k, v)| (*k, *v)), c::TOOL_CALLS)
        .values()
        .filter_map(|call| {
            Some(ToolCall {
                name: text(call.get(c::NAME).copied())?,
                id: ident(call.get(c::ID).copied()).unwrap_or_default(),
                arguments: text(call.get(c::ARGUMENTS).copied()).unwrap_or_default(),
            })
        })
        .collect();
    if !calls.is_empty() {
        return calls;
    }
    let legacy_name = format!("{}.{}", c::FUNCTION_CALL, c::NAME);
    let legacy_arguments = format!("{}.{}", c::FUNCTION_CALL, c::ARGUMENTS);
    text(fields.get(legacy_name.as_str()).copied())
        .map(|name| ToolCall {
            id: String::new(),
            name,
            arguments: text(fields.get(legacy_arguments.as_str()).copied()).unwrap_or_default(),
        })
        .into_iter()
        .collect()
}

fn prompt(span: &Span) -> Vec<Message> {
    family(span, c::GEN_AI_PROMPT)
        .values()
        .filter_map(|fields| {
            let role = string(fields.get(c::ROLE).copied());
            let content = text(fields.get(c::CONTENT).copied());
            let tool_call_id = ident(fields.get(c::TOOL_CALL_ID).copied());
            let calls = tool_calls(fields);
            if role.is_none() && content.is_none() && tool_call_id.is_none() && calls.is_empty() {
                return None;
            }
            Some(Message {
                role: role.unwrap_or(c::DEFAULT_ROLE).to_owned(),
                content: content.unwrap_or_default(),
                tool_call_id,
                tool_calls: calls,
            })
        })
        .collect()
}

/// An AgentOps tool span's call, if it is one.
fn tool_span_call(span: &Span) -> Option<ToolCall> {
    Some(ToolCall {
        name: text(span.attributes.get(c::TOOL_NAME))?,
        id: ident(span.attributes.get(c::TOOL_CALL_ID_ATTR)).unwrap_or_default(),
        arguments: text(span.attributes.get(c::TOOL_PARAMETERS)).unwrap_or_default(),
    })
}

/// An integer-array attribute as token ids; absent, or anything but non-negative 32-bit
/// integers, reads as none (as `_attributes_get_ids_multiple`).
fn token_ids(span: &Span, key: &str) -> Vec<u32> {
    let Some(ids) = span.attributes.get(key).and_then(|v| v.as_array()) else {
        return Vec::new();
    };
    ids.iter()
        .map(|id| id.as_u64().and_then(|id| u32::try_from(id).ok()))
        .collect::<Option<Vec<u32>>>()
        .unwrap_or_default()
}

/// The tokens an LLM call span reports (as [`Triplet::usage`] reads them), without reading its
/// messages; `None` when the span is not an LLM call. For counting calls as spans arrive.
pub fn llm_call_usage(span: &Span) -> Option<Usage> {
    looks_like_llm_call(span).then(|| usage(span))
}

fn usage(span: &Span) -> Usage {
    let read = |primary: &str, legacy: &str| {
        count(span.attributes.get(primary)).or_else(|| count(span.attributes.get(legacy)))
    };
    Usage {
        input_tokens: read(c::GEN_AI_USAGE_INPUT_TOKENS, c::GEN_AI_USAGE_PROMPT_TOKENS),
        output_tokens: read(c::GEN_AI_USAGE_OUTPUT_TOKENS, c::GEN_AI_USAGE_COMPLETION_TOKENS),
    }
}

/// The triplet of one LLM call span; `children` are the spans directly beneath it (in order), where
/// AgentOps records tool calls.
pub(crate) fn read_call(span: &Span, children: &[&Span]) -> Triplet {
    let completions = family(span, c::GEN_AI_COMPLETION);
    let choice = completions.values().next();
    let response = choice
        .and_then(|fields| text(fields.get(c::CONTENT).copied()))
        .unwrap_or_default();
    let mut calls = choice.map(tool_calls).unwrap_or_default();
    if calls.is_empty() {
        calls = children.iter().filter_map(|s| tool_span_call(s)).collect();
    }
    let model = string(span.attributes.get(c::GEN_AI_RESPONSE_MODEL))
        .or_else(|| string(span.attributes.get(c::GEN_AI_REQUEST_MODEL)))
        .unwrap_or_default()
        .to_owned();
    Triplet {
        prompt: prompt(span),
        response,
        tool_calls: calls,
        model,
        reward: None,
        usage: usage(span),
        response_id: response_id(span).map(str::to_owned),
        prompt_token_ids: token_ids(span, c::PROMPT_TOKEN_IDS),
        response_token_ids: token_ids(span, c::RESPONSE_TOKEN_IDS),
        span_id: span.span_id.clone(),
        sequence_id: span.sequence_id,
    }
}
