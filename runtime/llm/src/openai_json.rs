//! The OpenAI chat-completions JSON for code that relays it rather than calls it (the LLM proxy):
//! a request body read into a [`ChatRequest`], a response body into a [`ChatResponse`], a
//! [`ChatResponse`] written as a body or as stream chunks, an error body written and its message
//! read, and the retry policy's waits.
//! Reading is as lenient as the HTTP client's and server's own ([`crate::wire`]).

use serde_json::{Value, json};

use crate::wire::{WireError, WireErrorBody, WireRequest, WireResponse};
use crate::{ChatRequest, ChatResponse, ToolCall, Usage};

pub use crate::error::error_chain;
pub use crate::retry::{backoff, parse_retry_after};
pub use crate::wire::error_message;

/// The request a chat-completions body asks for; why not, when it is not one.
pub fn chat_request(body: &Value) -> Result<ChatRequest, String> {
    let wire: WireRequest = serde_json::from_value(body.clone()).map_err(|e| format!("not a chat request: {e}"))?;
    wire.into_chat()
}

/// The answer a chat-completions response body holds (`requested_model` when it names none).
pub fn chat_response(body: &Value, requested_model: &str) -> Result<ChatResponse, String> {
    let wire: WireResponse = serde_json::from_value(body.clone()).map_err(|e| format!("not a chat completion: {e}"))?;
    wire.into_chat(requested_model)
}

/// The body a server sends for `response` (`object: "chat.completion"`, usage, token ids).
pub fn response_body(response: &ChatResponse, id: String, created: u64) -> Value {
    // Plain data: serialising it cannot fail.
    serde_json::to_value(WireResponse::from_chat(response, id, created)).unwrap_or(Value::Null)
}

/// An OpenAI-shaped error body: `{"error": {"message": ..., "type": kind}}`.
pub fn error_body(kind: &str, message: String) -> Value {
    let body = WireErrorBody {
        error: WireError {
            message,
            kind: kind.to_owned(),
        },
    };
    // Plain data: serialising it cannot fail.
    serde_json::to_value(body).unwrap_or(Value::Null)
}

/// One `chat.completion.chunk` of a stream: a single choice with `delta` and `finish_reason`.
pub fn chunk(id: &str, created: u64, model: &str, delta: Value, finish_reason: Value) -> Value {
    json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]})
}

/// The `delta` of a chunk carrying `calls` (indexed in order).
pub fn tool_calls_delta(calls: &[ToolCall]) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, c)| json!({"index": i, "id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
        .collect();
    json!({"tool_calls": calls})
}

/// The last chunk of a stream asked for `stream_options.include_usage`: no choices, the usage.
pub fn usage_chunk(id: &str, created: u64, model: &str, usage: &Usage) -> Value {
    let (input, output) = (usage.input_tokens, usage.output_tokens);
    json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": model, "choices": [],
           "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": u64::from(input) + u64::from(output)}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bodies_read_and_written() {
        let request = chat_request(&json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "n": 2}))
            .expect("a request");
        assert_eq!(request.model.as_deref(), Some("m"));
        assert!(chat_request(&json!({"messages": "x"})).is_err());
        let response = chat_response(
            &json!({"id": "c1", "choices": [{"message": {"content": "yo"}}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}),
            "m",
        )
        .expect("a completion");
        assert_eq!((response.content.as_str(), response.usage.input_tokens), ("yo", 3));
        let body = response_body(&response, "c2".into(), 7);
        assert_eq!(body["choices"][0]["message"]["content"], "yo");
        assert_eq!(body["usage"]["total_tokens"], 4);
        assert_eq!(
            error_body("server_error", "busy".into()),
            json!({"error": {"message": "busy", "type": "server_error"}})
        );
    }
}
