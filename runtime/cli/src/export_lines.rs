//! The lines `agl-host export` writes, one JSON object each, from one attempt's spans: a triplet
//! per LLM call, a chat transcript per attempt, or the spans as they are. Messages take OpenAI's
//! chat shape, what fine-tuning pipelines read. Reading spans is the adapter's (`triplets`,
//! `transcript`, `final_reward`); choosing attempts and writing the lines is `export_cmd`'s.

use agl_adapter::{Message, ToolCall, Triplet, Usage};
use agl_store::{Attempt, AttemptStatus, Mode, Rollout, Span};
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

/// The attempt a line comes from: the first fields of every triplet and transcript line.
#[derive(Debug, Serialize)]
pub struct Origin<'a> {
    /// The run the store keeps (`None` for a store served over HTTP, which does not say).
    pub run_id: Option<&'a str>,
    pub rollout_id: &'a str,
    pub attempt_id: &'a str,
    /// The attempt's number: 1, then 2 for the first retry, ...
    pub attempt: u32,
    pub attempt_status: AttemptStatus,
    pub mode: Option<Mode>,
    pub resources_id: Option<&'a str>,
    /// The task, as the rollout was given it.
    pub input: &'a Value,
}

impl<'a> Origin<'a> {
    pub fn new(run_id: Option<&'a str>, rollout: &'a Rollout, attempt: &'a Attempt) -> Self {
        Self {
            run_id,
            rollout_id: &rollout.rollout_id,
            attempt_id: &attempt.attempt_id,
            attempt: attempt.sequence_id,
            attempt_status: attempt.status,
            mode: rollout.mode,
            resources_id: rollout.resources_id.as_deref(),
            input: &rollout.input,
        }
    }
}

/// A tool call as OpenAI's chat API writes it.
#[derive(Debug, Serialize)]
struct ChatToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: ChatFunction<'a>,
}

#[derive(Debug, Serialize)]
struct ChatFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

/// A chat message as OpenAI's chat API writes it.
#[derive(Debug, Serialize)]
struct ChatMessage<'a> {
    role: &'a str,
    content: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<ChatToolCall<'a>>,
}

fn chat_tool_calls(calls: &[ToolCall]) -> Vec<ChatToolCall<'_>> {
    calls
        .iter()
        .map(|call| ChatToolCall {
            id: &call.id,
            kind: "function",
            function: ChatFunction {
                name: &call.name,
                arguments: &call.arguments,
            },
        })
        .collect()
}

fn chat_messages(messages: &[Message]) -> Vec<ChatMessage<'_>> {
    messages
        .iter()
        .map(|message| ChatMessage {
            role: &message.role,
            content: &message.content,
            tool_call_id: message.tool_call_id.as_deref(),
            tool_calls: chat_tool_calls(&message.tool_calls),
        })
        .collect()
}

/// `--format triplets`: one LLM call.
#[derive(Debug, Serialize)]
struct TripletLine<'a> {
    #[serde(flatten)]
    origin: &'a Origin<'a>,
    /// The call's place among the attempt's LLM calls, from 0.
    index: usize,
    prompt: Vec<ChatMessage<'a>>,
    response: &'a str,
    tool_calls: Vec<ChatToolCall<'a>>,
    /// The attempt's final reward on its last call; `None` on the others.
    reward: Option<f64>,
    /// The attempt's final reward, on every call.
    final_reward: Option<f64>,
    model: &'a str,
    usage: Usage,
    response_id: Option<&'a str>,
    prompt_token_ids: &'a [u32],
    response_token_ids: &'a [u32],
    span_id: &'a str,
}

/// `--format messages`: one attempt's transcript.
#[derive(Debug, Serialize)]
struct TranscriptLine<'a> {
    #[serde(flatten)]
    origin: &'a Origin<'a>,
    messages: Vec<ChatMessage<'a>>,
    /// The attempt's final reward.
    reward: Option<f64>,
    /// Every reward the attempt recorded, in order (the final one among them).
    rewards: Vec<NamedReward>,
    /// How many LLM calls the transcript joins.
    llm_calls: usize,
}

/// One reward an attempt recorded: `primary` unless the agent named it.
#[derive(Debug, Serialize)]
struct NamedReward {
    name: String,
    value: f64,
}

fn push_line(out: &mut String, line: &impl Serialize) -> serde_json::Result<()> {
    out.push_str(&serde_json::to_string(line)?);
    out.push('\n');
    Ok(())
}

/// Appends one line per LLM call of the attempt to `out`; returns how many.
pub fn triplets(origin: &Origin<'_>, spans: &[Arc<Span>], out: &mut String) -> serde_json::Result<usize> {
    let calls: Vec<Triplet> = agl_adapter::triplets(spans);
    let final_reward = agl_adapter::final_reward(spans);
    for (index, call) in calls.iter().enumerate() {
        let line = TripletLine {
            origin,
            index,
            prompt: chat_messages(&call.prompt),
            response: &call.response,
            tool_calls: chat_tool_calls(&call.tool_calls),
            reward: call.reward,
            final_reward,
            model: &call.model,
            usage: call.usage,
            response_id: call.response_id.as_deref(),
            prompt_token_ids: &call.prompt_token_ids,
            response_token_ids: &call.response_token_ids,
            span_id: &call.span_id,
        };
        push_line(out, &line)?;
    }
    Ok(calls.len())
}

/// Appends the attempt's transcript line to `out`, unless it made no LLM call; returns how many
/// lines (0 or 1).
pub fn transcript(origin: &Origin<'_>, spans: &[Arc<Span>], out: &mut String) -> serde_json::Result<usize> {
    let calls = agl_adapter::triplets(spans);
    if calls.is_empty() {
        return Ok(0);
    }
    let messages = agl_adapter::transcript(&calls);
    let line = TranscriptLine {
        origin,
        messages: chat_messages(&messages),
        reward: agl_adapter::final_reward(spans),
        rewards: agl_adapter::rewards(spans)
            .into_iter()
            .map(|(name, value)| NamedReward { name, value })
            .collect(),
        llm_calls: calls.len(),
    };
    push_line(out, &line)?;
    Ok(1)
}

/// Appends one line per span to `out`, as the store's wire JSON; returns how many.
pub fn spans(spans: &[Arc<Span>], out: &mut String) -> serde_json::Result<usize> {
    for span in spans {
        push_line(out, span)?;
    }
    Ok(spans.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_take_openai_chat_shape() {
        let call = ToolCall {
            id: "call-1".into(),
            name: "add".into(),
            arguments: r#"{"a":1,"b":2}"#.into(),
        };
        let asked = Message {
            tool_calls: vec![call],
            ..Message::new("assistant", "")
        };
        let answered = Message {
            tool_call_id: Some("call-1".into()),
            ..Message::new("tool", "3")
        };
        let shaped = serde_json::to_value(chat_messages(&[Message::new("user", "1 + 2?"), asked, answered]))
            .expect("serialises");
        assert_eq!(
            shaped,
            json!([
                {"role": "user", "content": "1 + 2?"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "call-1", "type": "function", "function": {"name": "add", "arguments": "{\"a\":1,\"b\":2}"}}
                ]},
                {"role": "tool", "content": "3", "tool_call_id": "call-1"}
            ])
        );
    }
}
