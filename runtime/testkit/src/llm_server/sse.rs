//! The test server's streamed answers (`"stream": true`): the completion as OpenAI's
//! `chat.completion.chunk` events — the role, the text a word at a time, the tool calls, the
//! finish reason, the usage when `stream_options.include_usage`, then `data: [DONE]` — sent
//! [`Faults::stream_gap`](super::Faults) apart, vLLM's token ids included when the backend gave them.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use http_body::Frame;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use agl_llm::{ChatResponse, openai_json};

/// The events of `response`, each `data: {...}\n\n`.
pub(super) fn events(response: &ChatResponse, id: &str, created: u64, include_usage: bool) -> Vec<String> {
    let chunk = |delta: Value, finish: Value, extra: Option<(&str, Value)>| {
        let mut chunk = openai_json::chunk(id, created, &response.model, delta, finish);
        if let (Some((key, value)), Some(choice)) = (extra, chunk["choices"][0].as_object_mut()) {
            choice.insert(key.to_owned(), value);
        }
        chunk
    };
    let mut chunks = Vec::new();
    let mut first = chunk(json!({"role": "assistant", "content": ""}), Value::Null, None);
    if let Some(ids) = &response.tokens.prompt_token_ids {
        first["prompt_token_ids"] = json!(ids);
    }
    chunks.push(first);
    let words: Vec<&str> = response.content.split_inclusive(' ').collect();
    for (i, word) in words.iter().enumerate() {
        // vLLM sends each chunk's token ids; here they all ride on the first piece of text.
        let ids = (i == 0)
            .then(|| {
                response
                    .tokens
                    .response_token_ids
                    .as_ref()
                    .map(|ids| ("token_ids", json!(ids)))
            })
            .flatten();
        chunks.push(chunk(json!({"content": word}), Value::Null, ids));
    }
    if !response.tool_calls.is_empty() {
        chunks.push(chunk(
            openai_json::tool_calls_delta(&response.tool_calls),
            Value::Null,
            None,
        ));
    }
    chunks.push(chunk(json!({}), json!(response.finish_reason), None));
    if include_usage {
        chunks.push(openai_json::usage_chunk(id, created, &response.model, &response.usage));
    }
    let mut events: Vec<String> = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    events.push("data: [DONE]\n\n".to_owned());
    events
}

/// A body sending `events` `gap` apart, from a task.
pub(super) fn body(events: Vec<String>, gap: Duration) -> Body {
    let (tx, rx) = mpsc::channel(1);
    tokio::spawn(async move {
        for (i, event) in events.into_iter().enumerate() {
            if i > 0 && !gap.is_zero() {
                tokio::time::sleep(gap).await;
            }
            if tx.send(Bytes::from(event)).await.is_err() {
                return;
            }
        }
    });
    Body::new(Channel(rx))
}

/// A response body fed from a channel.
struct Channel(mpsc::Receiver<Bytes>);

impl http_body::Body for Channel {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|event| event.map(|bytes| Ok(Frame::data(bytes))))
    }
}
