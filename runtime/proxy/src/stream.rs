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

/// The longest event passed on (an upstream's chunk with a long prompt's token ids fits): a
/// stream whose event grows past it is broken off rather than held in memory.
pub(crate) const MAX_EVENT_BYTES: usize = 4 << 20;

/// Cuts a byte stream into server-sent events (each ended by a blank line).
#[derive(Default)]
pub(crate) struct EventSplitter {
    pending: Vec<u8>,
    /// How far `pending` is known to hold no blank line (less 3 bytes: one may straddle).
    scanned: usize,
}

/// An event grew past [`MAX_EVENT_BYTES`] without its blank line.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct EventTooLong;

impl EventSplitter {
    /// Adds `chunk`; returns the events it completed, each with its blank line.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<Vec<u8>>, EventTooLong> {
        self.pending.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some((end, len)) = event_end(&self.pending[self.scanned..]) {
            let rest = self.pending.split_off(self.scanned + end + len);
            events.push(std::mem::replace(&mut self.pending, rest));
            self.scanned = 0;
        }
        if self.pending.len() > MAX_EVENT_BYTES {
            return Err(EventTooLong);
        }
        self.scanned = self.pending.len().saturating_sub(3);
        Ok(events)
    }

    /// What is left when the stream ends (an event without its blank line), if anything.
    pub fn rest(&mut self) -> Option<Vec<u8>> {
        self.scanned = 0;
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

/// Tool calls of one answer kept for its span.
const MAX_TOOL_CALLS: usize = 128;
/// Token ids (prompt or response) kept for the span.
const MAX_TOKEN_IDS: usize = 1 << 20;
/// Bytes of the chunks whose logprobs are kept for the span.
const MAX_LOGPROB_BYTES: usize = 16 << 20;

/// `text` appended to `to`, which is not let grow past `cap` bytes (cut at a char boundary).
fn push_capped(to: &mut String, text: &str, cap: usize) {
    let room = cap.saturating_sub(to.len());
    if room >= text.len() {
        to.push_str(text);
    } else {
        let mut cut = room;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        to.push_str(&text[..cut]);
    }
}

/// The completion put back together from a stream's chunks (the first choice's), keeping what
/// its span keeps and no more: each text (the answer, a tool call's name and arguments) up to
/// the span's attribute cap, so a stream's memory stays bounded whatever its length.
#[derive(Default)]
pub(crate) struct Assembler {
    /// Bytes kept of each text; 0 counts as unbounded (tests).
    text_cap: usize,
    logprob_bytes: usize,
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
    /// Keeps up to `text_cap` bytes of each text.
    pub fn new(text_cap: usize) -> Self {
        Self {
            text_cap,
            ..Self::default()
        }
    }

    fn cap(&self) -> usize {
        if self.text_cap == 0 { usize::MAX } else { self.text_cap }
    }

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
        if let Some(mut prompt) = ids(chunk.get("prompt_token_ids")) {
            prompt.truncate(MAX_TOKEN_IDS);
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
        if let Some(mut prompt) = ids(choice.get("prompt_token_ids")) {
            prompt.truncate(MAX_TOKEN_IDS);
            self.prompt_token_ids.get_or_insert(prompt);
        }
        if let Some(tokens) = ids(choice.get("token_ids")) {
            let room = MAX_TOKEN_IDS.saturating_sub(self.response_token_ids.len());
            self.response_token_ids.extend(tokens.into_iter().take(room));
        }
        if let Some(content) = choice
            .get("logprobs")
            .and_then(|l| l.get("content"))
            .and_then(Value::as_array)
            && self.logprob_bytes.saturating_add(data.len()) <= MAX_LOGPROB_BYTES
        {
            self.logprob_bytes += data.len();
            self.logprobs.extend(content.iter().cloned());
        }
        let Some(delta) = choice.get("delta") else { return false };
        let cap = self.cap();
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            push_capped(&mut self.content, text, cap);
        }
        for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
            if !self.calls.contains_key(&index) && self.calls.len() >= MAX_TOOL_CALLS {
                continue;
            }
            let partial = self.calls.entry(index).or_default();
            if let Some(id) = call.get("id").and_then(Value::as_str) {
                let mut kept = String::new();
                push_capped(&mut kept, id, cap);
                partial.id = Some(kept);
            }
            if let Some(function) = call.get("function") {
                if let Some(name) = function.get("name").and_then(Value::as_str) {
                    push_capped(&mut partial.name, name, cap);
                }
                if let Some(arguments) = function.get("arguments").and_then(Value::as_str) {
                    push_capped(&mut partial.arguments, arguments, cap);
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
            let events: Vec<Vec<u8>> = stream
                .chunks(size)
                .flat_map(|c| splitter.push(c).expect("short events"))
                .collect();
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
    fn an_event_without_end_is_refused_past_its_bound() {
        let mut splitter = EventSplitter::default();
        let chunk = vec![b'x'; 64 * 1024];
        let mut pushed = 0;
        let refused = loop {
            match splitter.push(&chunk) {
                Ok(events) => assert!(events.is_empty()),
                Err(refused) => break refused,
            }
            pushed += chunk.len();
            assert!(pushed <= MAX_EVENT_BYTES, "still held past the bound");
        };
        assert_eq!(refused, EventTooLong);
    }

    #[test]
    fn a_long_stream_keeps_only_what_its_span_keeps() {
        let mut assembler = Assembler::new(1000);
        let delta = json!({"choices": [{"index": 0, "delta": {"content": "é".repeat(300),
            "tool_calls": [{"index": 0, "function": {"name": "f", "arguments": "a".repeat(700)}}]}}]})
        .to_string();
        for _ in 0..10_000 {
            assembler.feed(&delta);
        }
        let extra = json!({"choices": [{"index": 0, "delta": {"tool_calls":
            (1..500).map(|i| json!({"index": i, "function": {"name": "g", "arguments": "{}"}})).collect::<Vec<_>>()}}]});
        assembler.feed(&extra.to_string());
        let response = assembler.finish("m");
        assert!(
            response.content.len() <= 1000 && response.content.len() >= 998,
            "{}",
            response.content.len()
        );
        assert_eq!(response.tool_calls[0].arguments.len(), 1000);
        assert_eq!(response.tool_calls.len(), MAX_TOOL_CALLS);
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
