//! The actions about host calls: LLM budget (a flood of chats), one chat, an oversized chat, a burst of cheap logs for
//! the per-call overhead, an operation span that fails, and what the guest sees of clocks and
//! randomness (logged as one object so a test can compare attempts).

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use agl_sdk::prelude::*;
use agl_sdk::serde_json::json;

/// Up to `calls` chats; stops at the first error, which is logged. Returns the number that worked.
pub fn llm_flood(ctx: &Ctx, calls: u32) -> f64 {
    let request = ChatRequest::user("ping");
    let mut answered: u32 = 0;
    for _ in 0..calls {
        match ctx.llm().chat(request.clone()) {
            Ok(_) => answered += 1,
            Err(err) => {
                ctx.warn(&format!("llm_flood: call {} failed: {}", answered + 1, err.message()));
                break;
            }
        }
    }
    f64::from(answered)
}

/// One chat (with `model` if given); its error fails the attempt.
pub fn llm_once(ctx: &Ctx, prompt: Option<&str>, model: Option<&str>) -> Result<Option<f64>> {
    let mut request = ChatRequest::user(prompt.unwrap_or("Say hello."));
    if let Some(model) = model {
        request = request.with_model(model);
    }
    let reply = ctx.llm().chat(request)?;
    ctx.info(&format!("llm_once: {} said {:?}", reply.model, reply.content));
    Ok(Some(1.0))
}

/// One chat with a conversation of `messages` messages: `system 0`, then `user i` / `assistant i`
/// in turns, the last one a user's. Its error fails the attempt.
pub fn llm_conversation(ctx: &Ctx, messages: usize) -> Result<Option<f64>> {
    let mut request = ChatRequest::new().with_system("system 0");
    for i in 1..messages {
        let user_turn = (messages - i) % 2 == 1;
        request = if user_turn {
            request.with_user(format!("user {i}"))
        } else {
            request.with_assistant(format!("assistant {i}"))
        };
    }
    let reply = ctx.llm().chat(request)?;
    ctx.info(&format!("llm_conversation: {:?}", reply.content));
    Ok(Some(1.0))
}

/// One chat that replays a tool call and its answer (see `Task::LlmToolConversation`); logs the
/// model's answer.
pub fn llm_tool_conversation(ctx: &Ctx) -> Result<Option<f64>> {
    let call = ToolCall {
        id: "call-1".to_owned(),
        name: "add".to_owned(),
        arguments_json: r#"{"a": 2, "b": 3}"#.to_owned(),
    };
    let schema = r#"{"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}"#;
    let request = ChatRequest::user("What is 2 + 3?")
        .with_tool(Tool::new("add", "Adds two numbers", schema))
        .with_message(Message::assistant_tool_calls("", vec![call]))
        .with_tool_result("call-1", "5");
    let reply = ctx.llm().chat(request)?;
    ctx.info(&format!("llm_tool_conversation: {:?}", reply.content));
    Ok(Some(1.0))
}

/// One chat built to be too large: a user message of `message_bytes` bytes, `max_tokens`, and
/// `tools` small tools. Logs `"llm_oversized: sent"` or `"llm_oversized: refused: <error>"` (warn);
/// 1.0 if the host sent it, 0.0 if it refused it.
pub fn llm_oversized(ctx: &Ctx, message_bytes: usize, max_tokens: Option<u32>, tools: usize) -> f64 {
    let text = if message_bytes == 0 {
        "ping".to_owned()
    } else {
        "x".repeat(message_bytes)
    };
    let mut request = ChatRequest::user(text);
    if let Some(max_tokens) = max_tokens {
        request = request.with_max_tokens(max_tokens);
    }
    for i in 0..tools {
        request = request.with_tool(Tool::new(format!("tool_{i}"), "does nothing", r#"{"type":"object"}"#));
    }
    match ctx.llm().chat(request) {
        Ok(_) => {
            ctx.info("llm_oversized: sent");
            1.0
        }
        Err(err) => {
            ctx.warn(&format!("llm_oversized: refused: {}", err.message()));
            0.0
        }
    }
}

/// `n` debug logs of a short string. Returns 1.0.
pub fn debug_logs(ctx: &Ctx, n: u32) -> f64 {
    for _ in 0..n {
        ctx.debug("probe");
    }
    1.0
}

/// An operation span around a chat and a log, closed with an error; the attempt itself succeeds
/// (1.0), so a test sees a failed span inside a successful attempt.
pub fn failing_operation(ctx: &Ctx) -> Result<Option<f64>> {
    let outcome = ctx.operation("probe-operation", || {
        let said = match ctx.llm().ask("ping from an operation") {
            Ok(reply) => format!("the model said {reply:?}"),
            Err(err) => format!("the LLM failed: {err}"),
        };
        ctx.info(&format!("operation: {said}"));
        Err::<(), _>(Error::new("operation failed on purpose"))
    });
    if let Err(err) = outcome {
        ctx.info(&format!("operation: ended with error: {err}"));
    }
    Ok(Some(1.0))
}

/// Logs `{"system_time": {"secs", "nanos"}, "instant_diff_nanos", "random": [4 u64]}`.
pub fn clock_and_random(ctx: &Ctx) -> Result<Option<f64>> {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|err| Error::new(format!("clock_and_random: wall clock before 1970: {err}")))?;
    let first = Instant::now();
    let second = Instant::now();
    let diff = second.saturating_duration_since(first).as_nanos();
    let mut random = [0u64; 4];
    for slot in &mut random {
        *slot = getrandom::u64().map_err(|err| Error::new(format!("clock_and_random: no randomness: {err}")))?;
    }
    ctx.object(&json!({
        "system_time": {"secs": since_epoch.as_secs(), "nanos": since_epoch.subsec_nanos()},
        "instant_diff_nanos": u64::try_from(diff).unwrap_or(u64::MAX),
        "random": random,
    }))?;
    Ok(Some(1.0))
}
