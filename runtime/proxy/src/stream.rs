//! Streamed answers (`"stream": true`): the upstream's server-sent events cut into whole events
//! ([`EventSplitter`]) and passed on one by one as they arrive ([`ChannelBody`]), while an
//! [`Assembler`] puts the completion back together from their deltas (text, tool calls, finish
//! reason, usage, vLLM's token ids and logprobs) for the call's one span. A backend that does
//! not stream (the scripted one) is answered as events made from its whole answer ([`events_of`]).

use agl_llm::openai_json;
use agl_llm::{ChatResponse, TokenDetail, ToolCall, Usage};
use bytes::Bytes;
use http_body::{Body, Frame};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// The event that ends an OpenAI stream.
pub(crate) const DONE: &str = "[DONE]";

/// A response body fed from a channel: each message is one frame, sent as soon as it comes.
pub(crate) struct ChannelBody(pub mpsc::Receiver<Bytes>);

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|bytes| Ok(Frame::data(bytes))))
    }
}

/// Cuts a byte stream into server-sent events (each ended by a blank line).
#[derive(Default)]
pub(crate) struct EventSplitter {
    pending: Vec<u8>,
}

impl EventSplitter {
    /// Adds `chunk`; returns the events it completed, each with its blank line.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Vec<u8>> {
        self.pending.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some((end, len)) = event_end(&self.pending) {
            let rest = self.pending.split_off(end + len);
            events.push(std::mem::replace(&mut self.pending, rest));
        }
        events
    }

    /// What is left when the stream ends (an event without its blank line), if anything.
    pub fn rest(&mut self) -> Option<Vec<u8>> {
        let rest = std::mem::take(&mut self.pending);
        (!rest.iter().all(u8::is_ascii_whitespace)).then_some(rest)
    }
}

/// Where the first blank line is (`\n\n` or `\r\n\r\n`), and its length.
fn event_end(bytes: &[u8]) -> Option<(usize, usize)> {
    let lf = bytes.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2));
    let crlf = bytes.windows(4).position(|w| w == b"\r\n\r\n").map(|i| (i, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 < b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

/// The `data:` of an event, its lines joined (`None` for an event without data: a comment).
pub(crate) fn event_data(event: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(event);
    let lines: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| data.strip_prefix(' ').unwrap_or(data))
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// A tool call being assembled from its deltas.
#[derive(Default)]
struct PartialCall {
    id: Option<String>,
    name: String,
    arguments: String,
}

/// The completion put back together from a stream's chunks (the first choice's).
#[derive(Default)]
pub(crate) struct Assembler {
    id: Option<String>,
    model: Option<String>,
    content: String,
    calls: BTreeMap<u64, PartialCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    prompt_token_ids: Option<Vec<u32>>,
    response_token_ids: Vec<u32>,
    logprobs: Vec<Value>,
}

fn ids(value: Option<&Value>) -> Option<Vec<u32>> {
    value?
        .as_array()?
        .iter()
        .map(|id| id.as_u64().and_then(|id| u32::try_from(id).ok()))
        .collect()
}

fn count(value: Option<&Value>) -> u32 {
    value
        .and_then(Value::as_u64)
        .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
}

impl Assembler {
    /// Reads one chunk (an event's data). Returns `true` when it is a usage-only chunk (no
    /// choices), which the proxy drops when it asked for usage on the client's behalf.
    pub fn feed(&mut self, data: &str) -> bool {
        let Ok(chunk) = serde_json::from_str::<Value>(data) else {
            return false;
        };
        if let Some(id) = chunk.get("id").and_then(Value::as_str).filter(|id| !id.is_empty()) {
            self.id.get_or_insert_with(|| id.to_owned());
        }
        if let Some(model) = chunk.get("model").and_then(Value::as_str).filter(|m| !m.is_empty()) {
            self.model.get_or_insert_with(|| model.to_owned());
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(Usage {
                input_tokens: count(usage.get("prompt_tokens")),
                output_tokens: count(usage.get("completion_tokens")),
            });
        }
        if let Some(prompt) = ids(chunk.get("prompt_token_ids")) {
            self.prompt_token_ids.get_or_insert(prompt);
        }
        let choices = chunk.get("choices").and_then(Value::as_array);
        let Some(choice) = choices.and_then(|c| {
            c.iter()
                .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
        }) else {
            return choices.is_some_and(Vec::is_empty) && chunk.get("usage").is_some_and(Value::is_object);
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_owned());
        }
        if let Some(prompt) = ids(choice.get("prompt_token_ids")) {
            self.prompt_token_ids.get_or_insert(prompt);
        }
        if let Some(tokens) = ids(choice.get("token_ids")) {
            self.response_token_ids.extend(tokens);
        }
        if let Some(content) = choice
            .get("logprobs")
            .and_then(|l| l.get("content"))
            .and_then(Value::as_array)
        {
            self.logprobs.extend(content.iter().cloned());
        }
        let Some(delta) = choice.get("delta") else { return false };
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            self.content.push_str(text);
        }
        for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
            let partial = self.calls.entry(index).or_default();
            if let Some(id) = call.get("id").and_then(Value::as_str) {
                partial.id = Some(id.to_owned());
            }
            if let Some(function) = call.get("function") {
                if let Some(name) = function.get("name").and_then(Value::as_str) {
                    partial.name.push_str(name);
                }
                if let Some(arguments) = function.get("arguments").and_then(Value::as_str) {
                    partial.arguments.push_str(arguments);
                }
            }
        }
        false
    }

    /// The completion the chunks made (`model` when they named none).
    pub fn finish(self, model: &str) -> ChatResponse {
        let tool_calls: Vec<ToolCall> = self
            .calls
            .into_iter()
            .map(|(index, call)| ToolCall {
                id: call.id.unwrap_or_else(|| format!("call_{index}")),
                name: call.name,
                arguments: call.arguments,
            })
            .collect();
        let finish_reason = self
            .finish_reason
            .unwrap_or_else(|| if tool_calls.is_empty() { "stop" } else { "tool_calls" }.to_owned());
        ChatResponse {
            content: self.content,
            tool_calls,
            finish_reason,
            usage: self.usage.unwrap_or_default(),
            model: self.model.unwrap_or_else(|| model.to_owned()),
            id: self.id,
            tokens: TokenDetail {
                prompt_token_ids: self.prompt_token_ids,
                response_token_ids: (!self.response_token_ids.is_empty()).then_some(self.response_token_ids),
                logprobs: (!self.logprobs.is_empty()).then_some(Value::Array(self.logprobs)),
            },
        }
    }
}

/// One event carrying `data`.
pub(crate) fn event(data: &Value) -> Bytes {
    Bytes::from(format!("data: {data}\n\n"))
}

/// The events a streaming server would have sent for `response`: the role and text, the tool
/// calls, the finish reason, the usage when `include_usage`, then `[DONE]`.
pub(crate) fn events_of(response: &ChatResponse, id: &str, created: u64, include_usage: bool) -> Vec<Bytes> {
    let chunk = |delta: Value, finish: Value| openai_json::chunk(id, created, &response.model, delta, finish);
    let mut events = vec![event(&chunk(
        json!({"role": "assistant", "content": response.content}),
        Value::Null,
    ))];
    if !response.tool_calls.is_empty() {
        events.push(event(&chunk(
            openai_json::tool_calls_delta(&response.tool_calls),
            Value::Null,
        )));
    }
    events.push(event(&chunk(json!({}), json!(response.finish_reason))));
    if include_usage {
        events.push(event(&openai_json::usage_chunk(
            id,
            created,
            &response.model,
            &response.usage,
        )));
    }
    events.push(Bytes::from(format!("data: {DONE}\n\n")));
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_cut_at_blank_lines_whatever_the_chunking() {
        let stream = b"data: {\"a\":1}\n\ndata: {\"b\":2}\r\n\r\n: comment\n\ndata: [DONE]\n\n";
        for size in [1, 3, 7, stream.len()] {
            let mut splitter = EventSplitter::default();
            let events: Vec<Vec<u8>> = stream.chunks(size).flat_map(|c| splitter.push(c)).collect();
            let data: Vec<Option<String>> = events.iter().map(|e| event_data(e)).collect();
            assert_eq!(
                data,
                vec![
                    Some("{\"a\":1}".into()),
                    Some("{\"b\":2}".into()),
                    None,
                    Some(DONE.into())
                ],
                "chunks of {size}"
            );
            assert!(splitter.rest().is_none());
        }
    }

    #[test]
    fn the_completion_is_assembled_from_deltas() {
        let mut assembler = Assembler::default();
        let chunks = [
            json!({"id": "c-1", "model": "m", "prompt_token_ids": [1, 2], "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hel"}, "token_ids": [5]}]}),
            json!({"id": "c-1", "choices": [{"index": 0, "delta": {"content": "lo", "tool_calls": [{"index": 0, "id": "t1", "function": {"name": "add", "arguments": "{\"a\""}}]}, "token_ids": [6]}]}),
            json!({"id": "c-1", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ":1}"}}]}, "finish_reason": "tool_calls", "logprobs": {"content": [{"token": "lo", "logprob": -0.5}]}}]}),
        ];
        for chunk in &chunks {
            assert!(!assembler.feed(&chunk.to_string()));
        }
        assert!(
            assembler.feed(&json!({"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 2}}).to_string())
        );
        let response = assembler.finish("asked");
        assert_eq!(response.content, "Hello");
        assert_eq!(response.model, "m");
        assert_eq!(response.id.as_deref(), Some("c-1"));
        assert_eq!(response.finish_reason, "tool_calls");
        assert_eq!((response.usage.input_tokens, response.usage.output_tokens), (4, 2));
        assert_eq!(
            response.tool_calls,
            vec![ToolCall {
                id: "t1".into(),
                name: "add".into(),
                arguments: "{\"a\":1}".into()
            }]
        );
        assert_eq!(response.tokens.prompt_token_ids, Some(vec![1, 2]));
        assert_eq!(response.tokens.response_token_ids, Some(vec![5, 6]));
        assert_eq!(
            response.tokens.logprobs,
            Some(json!([{"token": "lo", "logprob": -0.5}]))
        );
    }

    #[test]
    fn a_whole_answer_streams_back_to_itself() {
        let response = ChatResponse {
            content: "hi".into(),
            tool_calls: vec![ToolCall {
                id: "c".into(),
                name: "f".into(),
                arguments: "{}".into(),
            }],
            finish_reason: "tool_calls".into(),
            usage: Usage {
                input_tokens: 3,
                output_tokens: 1,
            },
            model: "m".into(),
            id: Some("x".into()),
            tokens: TokenDetail::default(),
        };
        let mut assembler = Assembler::default();
        let mut done = false;
        for event in events_of(&response, "x", 0, true) {
            match event_data(&event).as_deref() {
                Some(DONE) => done = true,
                Some(data) => {
                    assembler.feed(data);
                }
                None => {}
            }
        }
        assert!(done);
        assert_eq!(assembler.finish("m"), response);
    }
}
