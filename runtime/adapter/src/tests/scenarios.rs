//! The public API on hand-built attempts: agl-host's span shapes (LLM calls, `emit`, returned and
//! named rewards, refused calls, logs) and foreign GenAI spans (OpenLLMetry / AgentOps), including
//! malformed attributes.

use super::support::SpanBuilder;
use crate::conventions::{self as c, completion_key, completion_tool_call_key, prompt_key, reward_key};
use crate::{Message, Span, ToolCall, Triplet, final_reward, messages, rewards, triplets};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// An LLM span as agl-host records it: `prompt` as (role, content), the answer, the model.
fn host_llm(seq: u64, prompt: &[(&str, &str)], answer: &str, model: &str) -> SpanBuilder {
    let mut attrs = Map::new();
    attrs.insert(c::GEN_AI_OPERATION_NAME.into(), json!("chat"));
    attrs.insert(c::GEN_AI_REQUEST_MODEL.into(), json!(model));
    for (i, (role, content)) in prompt.iter().enumerate() {
        attrs.insert(prompt_key(i, c::ROLE), json!(role));
        attrs.insert(prompt_key(i, c::CONTENT), json!(content));
    }
    attrs.insert(c::GEN_AI_RESPONSE_MODEL.into(), json!(model));
    attrs.insert("gen_ai.response.finish_reasons".into(), json!(["stop"]));
    attrs.insert(c::GEN_AI_USAGE_INPUT_TOKENS.into(), json!(12));
    attrs.insert(c::GEN_AI_USAGE_OUTPUT_TOKENS.into(), json!(3));
    attrs.insert(completion_key(0, c::ROLE), json!("assistant"));
    attrs.insert(completion_key(0, c::CONTENT), json!(answer));
    SpanBuilder::new(c::LLM_SPAN, seq)
        .parent("root")
        .attrs(Value::Object(attrs))
}

/// A reward span as agl-host records it (`emit`, `emit-named`, a returned reward).
fn host_reward(seq: u64, name: &str, value: f64) -> Span {
    SpanBuilder::new(c::ANNOTATION_SPAN, seq)
        .parent("root")
        .attrs(json!({ c::REWARD_0_NAME: name, c::REWARD_0_VALUE: value }))
        .build()
}

fn root(seq: u64) -> Span {
    SpanBuilder::new("agentlightning.rollout", seq)
        .id("root")
        .start(Some(0.0))
        .build()
}

fn msg(role: &str, content: &str) -> Message {
    Message::new(role, content)
}

#[test]
fn one_llm_call_and_a_reward() {
    let spans = vec![
        host_llm(1, &[("system", "Be brief."), ("user", "2+2?")], "4", "scripted").build(),
        host_reward(2, "primary", 1.0),
        root(3),
    ];
    let got = triplets(&spans);
    assert_eq!(got.len(), 1);
    let t = &got[0];
    assert_eq!(t.prompt, vec![msg("system", "Be brief."), msg("user", "2+2?")]);
    assert_eq!(t.response, "4");
    assert!(t.tool_calls.is_empty());
    assert_eq!(t.model, "scripted");
    assert_eq!(t.reward, Some(1.0));
    assert_eq!(t.usage.input_tokens, Some(12));
    assert_eq!(t.usage.output_tokens, Some(3));
    assert_eq!((t.span_id.as_str(), t.sequence_id), ("s1", 1));
    assert_eq!(final_reward(&spans), Some(1.0));
    assert_eq!(rewards(&spans), vec![("primary".to_owned(), 1.0)]);
    assert_eq!(
        messages(&spans),
        vec![vec![
            msg("system", "Be brief."),
            msg("user", "2+2?"),
            msg("assistant", "4")
        ]]
    );
}

#[test]
fn a_long_conversation_keeps_its_completion_and_token_ids() {
    let prompt: Vec<(String, String)> = (0..100)
        .map(|i| {
            (
                if i % 2 == 0 { "user" } else { "assistant" }.to_owned(),
                format!("turn {i}"),
            )
        })
        .collect();
    let borrowed: Vec<(&str, &str)> = prompt.iter().map(|(r, t)| (r.as_str(), t.as_str())).collect();
    let span = host_llm(1, &borrowed, "the answer", "m")
        .attrs(json!({
            c::GEN_AI_RESPONSE_ID: "chatcmpl-42",
            c::PROMPT_TOKEN_IDS: [1, 2, 3],
            c::RESPONSE_TOKEN_IDS: [7, 8],
        }))
        .build();
    assert!(
        span.attributes.len() > 200,
        "far more than the OpenTelemetry default of 128"
    );
    let got = triplets(&[span, host_reward(2, "primary", 1.0), root(3)]);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].response, "the answer");
    assert_eq!(got[0].prompt.len(), 100);
    assert_eq!(got[0].prompt[99], msg("assistant", "turn 99"));
    assert_eq!(got[0].reward, Some(1.0));
    assert_eq!(got[0].response_id.as_deref(), Some("chatcmpl-42"));
    assert_eq!(
        (got[0].prompt_token_ids.as_slice(), got[0].response_token_ids.as_slice()),
        (&[1, 2, 3][..], &[7, 8][..])
    );
    // Ids that are not non-negative 32-bit integers read as none.
    let odd = host_llm(1, &[("user", "q")], "a", "m")
        .attrs(json!({ c::PROMPT_TOKEN_IDS: [1, -2], c::RESPONSE_TOKEN_IDS: "7 8" }))
        .build();
    let got = triplets(&[odd]);
    assert!(got[0].prompt_token_ids.is_empty() && got[0].response_token_ids.is_empty());
}

#[test]
fn several_calls_credit_the_reward_to_the_last_only() {
    let spans = vec![
        host_llm(1, &[("user", "a")], "A", "m").build(),
        host_llm(2, &[("user", "b")], "B", "m").build(),
        host_llm(3, &[("user", "c")], "C", "m").build(),
        host_reward(4, "primary", 0.5),
    ];
    let got = triplets(&spans);
    let summary: Vec<(&str, Option<f64>)> = got.iter().map(|t| (t.response.as_str(), t.reward)).collect();
    assert_eq!(summary, vec![("A", None), ("B", None), ("C", Some(0.5))]);
}

#[test]
fn tool_calls_in_the_answer_and_in_the_prompt() {
    let first = host_llm(1, &[("user", "Weather in Oslo?")], "", "m")
        .attrs(json!({
            completion_tool_call_key(0, 0, c::ID): "call_1",
            completion_tool_call_key(0, 0, c::NAME): "weather",
            completion_tool_call_key(0, 0, c::ARGUMENTS): "{\"city\":\"Oslo\"}",
            completion_tool_call_key(0, 1, c::ID): "call_2",
            completion_tool_call_key(0, 1, c::NAME): "clock",
            // No arguments recorded: empty text.
        }))
        .build();
    // The follow-up call: the assistant's tool calls and the tool's answer come back in the prompt.
    let second = host_llm(2, &[("user", "Weather in Oslo?")], "Sunny, 12:00.", "m")
        .attrs(json!({
            prompt_key(1, c::ROLE): "assistant",
            prompt_key(1, c::CONTENT): "",
            "gen_ai.prompt.1.tool_calls.0.id": "call_1",
            "gen_ai.prompt.1.tool_calls.0.name": "weather",
            "gen_ai.prompt.1.tool_calls.0.arguments": "{\"city\":\"Oslo\"}",
            prompt_key(2, c::ROLE): "tool",
            prompt_key(2, c::CONTENT): "sunny",
            prompt_key(2, c::TOOL_CALL_ID): "call_1",
        }))
        .build();
    let spans = [first, second, host_reward(3, "primary", 1.0)];
    let got = triplets(&spans);
    let weather = ToolCall {
        id: "call_1".into(),
        name: "weather".into(),
        arguments: "{\"city\":\"Oslo\"}".into(),
    };
    let clock = ToolCall {
        id: "call_2".into(),
        name: "clock".into(),
        arguments: String::new(),
    };
    assert_eq!(got[0].tool_calls, vec![weather.clone(), clock]);
    assert_eq!(got[0].response, "");
    assert_eq!(got[0].reward, None);
    let prompt = &got[1].prompt;
    assert_eq!(prompt.len(), 3);
    assert_eq!(prompt[1].role, "assistant");
    assert_eq!(prompt[1].tool_calls, vec![weather.clone()]);
    assert_eq!(prompt[2].tool_call_id.as_deref(), Some("call_1"));
    assert_eq!(got[1].reward, Some(1.0));

    let conversations = messages(&spans);
    let answer = conversations[0].last().expect("an answer");
    assert_eq!(answer.role, "assistant");
    assert_eq!(answer.tool_calls.len(), 2);
    assert_eq!(conversations[1].len(), 4);
}

#[test]
fn no_reward() {
    let spans = [host_llm(1, &[("user", "hi")], "hello", "m").build(), root(2)];
    assert_eq!(triplets(&spans)[0].reward, None);
    assert_eq!(final_reward(&spans), None);
    assert!(rewards(&spans).is_empty());
    assert!(triplets::<Span>(&[]).is_empty());
}

#[test]
fn an_error_reward_span_is_ignored() {
    // agl-host records a non-finite reward as an error span holding only the name.
    let non_finite = SpanBuilder::new(c::ANNOTATION_SPAN, 3)
        .attrs(json!({ c::REWARD_0_NAME: "primary" }))
        .error("non-finite reward NaN ignored")
        .build();
    // An error span that does hold a value is ignored too.
    let failed = SpanBuilder::new(c::ANNOTATION_SPAN, 4)
        .attrs(json!({ c::REWARD_0_NAME: "primary", c::REWARD_0_VALUE: 9.0 }))
        .error("broken")
        .build();
    let spans = [
        host_llm(1, &[("user", "q")], "a", "m").build(),
        host_reward(2, "primary", 0.25),
        non_finite,
        failed,
    ];
    assert_eq!(final_reward(&spans), Some(0.25));
    assert_eq!(rewards(&spans), vec![("primary".to_owned(), 0.25)]);
    assert_eq!(triplets(&spans)[0].reward, Some(0.25));
}

#[test]
fn a_returned_reward_comes_last_and_wins_over_emit() {
    // `reward.emit(0.2)` during the rollout, `emit-named("accuracy", 0.9)`, then the rollout
    // returns `some(0.7)`, which the host records as one more primary span after the others.
    let spans = [
        host_llm(1, &[("user", "q")], "a", "m").build(),
        host_reward(2, "primary", 0.2),
        host_reward(3, "accuracy", 0.9),
        host_reward(4, "primary", 0.7),
    ];
    assert_eq!(final_reward(&spans), Some(0.7));
    assert_eq!(triplets(&spans)[0].reward, Some(0.7));
    assert_eq!(
        rewards(&spans),
        vec![
            ("primary".to_owned(), 0.2),
            ("accuracy".to_owned(), 0.9),
            ("primary".to_owned(), 0.7)
        ]
    );

    // Only `emit`: the last emitted value is final.
    let emitted = [host_reward(1, "primary", 0.1), host_reward(2, "primary", 0.4)];
    assert_eq!(final_reward(&emitted), Some(0.4));

    // Only a named reward: no primary, so no final reward (as the host decides).
    let named_only = [
        host_llm(1, &[("user", "q")], "a", "m").build(),
        host_reward(2, "accuracy", 0.9),
    ];
    assert_eq!(final_reward(&named_only), None);
    assert_eq!(triplets(&named_only)[0].reward, None);
    assert_eq!(rewards(&named_only), vec![("accuracy".to_owned(), 0.9)]);
}

#[test]
fn prompt_indices_out_of_order_with_gaps_and_junk() {
    // Inserted out of order, indices 0, 2, 5 and 10 (a gap-riddled list), plus entries that
    // carry no message.
    let span = SpanBuilder::new(c::LLM_SPAN, 1)
        .attrs(json!({
            "gen_ai.prompt.10.content": "last",
            "gen_ai.prompt.10.role": "user",
            "gen_ai.prompt.2.role": "user",
            "gen_ai.prompt.0.content": "sys",
            "gen_ai.prompt.0.role": "system",
            "gen_ai.prompt.5.content": {"type": "text", "text": "structured"},
            "gen_ai.prompt.7.extra": "no role, no content",
            "gen_ai.prompt.prompt_filter_results": "[]",
            "gen_ai.prompt.x.role": "user",
            "gen_ai.prompt.3": "no field",
            "gen_ai.completion.0.content": "ok",
        }))
        .build();
    let got = triplets(&[span]);
    let prompt: Vec<(&str, &str)> = got[0]
        .prompt
        .iter()
        .map(|m| (m.role.as_str(), m.content.as_str()))
        .collect();
    assert_eq!(
        prompt,
        vec![
            ("system", "sys"),
            ("user", ""),
            ("user", "{\"type\":\"text\",\"text\":\"structured\"}"),
            ("user", "last"),
        ]
    );
}

#[test]
fn malformed_attributes_never_panic() {
    let odd = SpanBuilder::new(c::LLM_SPAN, 1)
        .attrs(json!({
            "gen_ai.prompt.0.role": 5,
            "gen_ai.prompt.0.content": null,
            "gen_ai.prompt.0.tool_call_id": 17,
            "gen_ai.prompt.1.role": "user",
            "gen_ai.prompt.1.content": ["a", "b"],
            "gen_ai.completion.3.content": 42,
            "gen_ai.completion.7.content": "not the first choice",
            "gen_ai.completion.3.tool_calls.0.id": "c",
            "gen_ai.completion.3.tool_calls.1.name": "kept",
            "gen_ai.completion.3.tool_calls.1.arguments": {"x": 1},
            "gen_ai.response.model": 3,
            "gen_ai.request.model": "asked",
            "gen_ai.usage.input_tokens": "many",
            "gen_ai.usage.prompt_tokens": 8,
            "gen_ai.usage.output_tokens": -1,
            "gen_ai.response.id": 99,
        }))
        .build();
    // A call span with no GenAI attributes at all, and no start time.
    let bare = SpanBuilder::new("openai.chat.completions.create", 2)
        .start(None)
        .build();
    let got = triplets(&[odd, bare]);
    assert_eq!(got.len(), 2);
    // No start time sorts first.
    assert_eq!(
        got[0],
        Triplet {
            span_id: "s2".into(),
            sequence_id: 2,
            ..Triplet::default()
        }
    );
    let t = &got[1];
    // Index 0: a role of the wrong type reads as `user`; the id is written as text.
    assert_eq!(t.prompt[0].role, "user");
    assert_eq!(t.prompt[0].content, "");
    assert_eq!(t.prompt[0].tool_call_id.as_deref(), Some("17"));
    assert_eq!(t.prompt[1].content, "[\"a\",\"b\"]");
    // The lowest completion index is the answer; a call without a name is dropped.
    assert_eq!(t.response, "42");
    assert_eq!(
        t.tool_calls,
        vec![ToolCall {
            id: String::new(),
            name: "kept".into(),
            arguments: "{\"x\":1}".into()
        }]
    );
    assert_eq!(t.model, "asked");
    assert_eq!(t.usage.input_tokens, Some(8));
    assert_eq!(t.usage.output_tokens, None);
}

#[test]
fn foreign_genai_spans_from_openllmetry_and_agentops() {
    // The shapes of Agent-lightning's own agents (tests/adapter/test_messages_adapter.py in 0.3.0):
    // an AgentOps session, tool calls as child spans, OpenLLMetry's usage keys, an AgentOps
    // reward, and an LLM judge inside a reward operation.
    let session = SpanBuilder::new("agent.session", 0)
        .id("session")
        .start(Some(0.0))
        .build();
    let first = SpanBuilder::new("openai.chat.completion", 1)
        .id("llm-1")
        .parent("session")
        .attrs(json!({
            "gen_ai.request.type": "chat",
            "gen_ai.system": "OpenAI",
            "gen_ai.request.model": "gpt-5-mini",
            "gen_ai.prompt.0.role": "system",
            "gen_ai.prompt.0.content": "You are a scheduling assistant.",
            "gen_ai.prompt.1.role": "user",
            "gen_ai.prompt.1.content": "Find a room.",
            "gen_ai.request.functions.0.name": "get_rooms",
            "gen_ai.response.id": "chatcmpl-1",
            "gen_ai.response.model": "gpt-5-mini-2025-08-07",
            "gen_ai.usage.total_tokens": 391,
            "gen_ai.usage.prompt_tokens": 332,
            "gen_ai.usage.completion_tokens": 59,
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.finish_reason": "tool_calls",
        }))
        .build();
    let tool = SpanBuilder::new("tool_call.get_rooms", 2)
        .parent("llm-1")
        .attrs(json!({
            "tool.name": "get_rooms",
            "tool.parameters": "{\"date\": \"2025-10-13\"}",
            "tool.call.id": "call_sZ",
            "tool.call.type": "function",
        }))
        .build();
    // The same request seen again by a second instrumentation (same response id), and a nested
    // duplicate without one.
    let same_response = SpanBuilder::new("openai.chat.completion", 3)
        .parent("session")
        .attrs(json!({"gen_ai.response.id": "chatcmpl-1", "gen_ai.completion.0.content": "dup"}))
        .build();
    let nested = SpanBuilder::new("litellm.completion", 4)
        .parent("llm-1")
        .attrs(json!({"gen_ai.prompt.0.content": "dup", "gen_ai.completion.0.content": "dup"}))
        .build();
    // Another instrumentation's span name, recognised by its attributes.
    let second = SpanBuilder::new("anthropic.chat", 5)
        .id("llm-2")
        .parent("session")
        .attrs(json!({
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "Find a room.",
            "gen_ai.prompt.1.role": "tool",
            "gen_ai.prompt.1.content": "{\"rooms\": []}",
            "gen_ai.prompt.1.tool_call_id": "call_sZ",
            "gen_ai.response.id": "msg-2",
            "gen_ai.response.model": "claude",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": "final_choice: No Room",
        }))
        .build();
    // The reward function: an AgentOps operation whose output is the reward, with a judge call.
    let reward_op = SpanBuilder::new("grade.task", 6)
        .id("reward-op")
        .parent("session")
        .attrs(json!({"agentops.task.output": "{\"type\": \"reward\", \"value\": 0.8}"}))
        .build();
    let judge = SpanBuilder::new("openai.chat.completion", 7)
        .parent("reward-op")
        .attrs(json!({
            "gen_ai.prompt.0.content": "Grade it.",
            "gen_ai.response.id": "judge",
            "gen_ai.completion.0.content": "{\"score\": 1}",
        }))
        .build();
    let spans = [session, first, tool, same_response, nested, second, reward_op, judge];

    let got = triplets(&spans);
    let ids: Vec<&str> = got.iter().map(|t| t.span_id.as_str()).collect();
    assert_eq!(ids, vec!["llm-1", "llm-2"]);
    assert_eq!(got[0].model, "gpt-5-mini-2025-08-07");
    assert_eq!(got[0].usage.input_tokens, Some(332));
    assert_eq!(got[0].usage.output_tokens, Some(59));
    assert_eq!(
        got[0].tool_calls,
        vec![ToolCall {
            id: "call_sZ".into(),
            name: "get_rooms".into(),
            arguments: "{\"date\": \"2025-10-13\"}".into()
        }]
    );
    assert_eq!(got[0].reward, None);
    assert_eq!(got[1].prompt[1].tool_call_id.as_deref(), Some("call_sZ"));
    assert_eq!(got[1].response, "final_choice: No Room");
    assert_eq!(got[1].reward, Some(0.8));
    assert_eq!(final_reward(&spans), Some(0.8));
    assert_eq!(rewards(&spans), vec![("primary".to_owned(), 0.8)]);

    // Agent-lightning's multi-dimensional `emit_reward({...}, primary_key=...)`.
    let multi = SpanBuilder::new(c::ANNOTATION_SPAN, 9)
        .attrs(json!({
            reward_key(0, c::REWARD_NAME_FIELD): "task_completion",
            reward_key(0, c::REWARD_VALUE_FIELD): 1.0,
            reward_key(1, c::REWARD_NAME_FIELD): "efficiency",
            reward_key(1, c::REWARD_VALUE_FIELD): 0.5,
        }))
        .build();
    assert_eq!(final_reward(std::slice::from_ref(&multi)), Some(1.0));
    assert_eq!(
        rewards(&[multi]),
        vec![("task_completion".to_owned(), 1.0), ("efficiency".to_owned(), 0.5)]
    );
}

#[test]
fn non_llm_spans_are_ignored() {
    let log = SpanBuilder::new("agl.log", 2)
        .attrs(json!({"agl.log.message": "thinking", "gen_ai.request.model": "not a call"}))
        .build();
    let resources = SpanBuilder::new("agl.resources.get", 3).build();
    // A refused LLM call: agl-host records the prompt, an error status and no answer.
    let refused = host_llm(4, &[("user", "q")], "", "forbidden")
        .error("model 'forbidden' is not allowed")
        .build();
    let spans = [root(1), log, resources, refused, host_reward(5, "primary", 1.0)];
    assert!(triplets(&spans).is_empty());
    assert!(messages(&spans).is_empty());
    assert_eq!(final_reward(&spans), Some(1.0));
}

#[test]
fn calls_are_ordered_by_start_time_then_sequence_id() {
    let spans = [
        host_llm(5, &[("user", "third")], "3", "m").start(Some(30.0)).build(),
        host_llm(9, &[("user", "second")], "2", "m").start(Some(10.0)).build(),
        host_llm(2, &[("user", "first")], "1", "m").start(Some(10.0)).build(),
        host_reward(10, "primary", 1.0),
    ];
    let got = triplets(&spans);
    let order: Vec<&str> = got.iter().map(|t| t.response.as_str()).collect();
    assert_eq!(order, vec!["1", "2", "3"]);
    assert_eq!(got[2].reward, Some(1.0));
}

#[test]
fn arcs_of_spans_work_and_triplets_round_trip_through_json() {
    let spans: Vec<Arc<Span>> = vec![
        Arc::new(host_llm(1, &[("user", "q")], "a", "m").build()),
        Arc::new(host_reward(2, "primary", 1.0)),
    ];
    let got = triplets(&spans);
    assert_eq!(final_reward(&spans), Some(1.0));
    let text = serde_json::to_string(&got).expect("serialises");
    let back: Vec<Triplet> = serde_json::from_str(&text).expect("deserialises");
    assert_eq!(back, got);
    let value: Value = serde_json::from_str(&text).expect("JSON");
    assert!(
        value[0]["prompt"][0].get("tool_call_id").is_none(),
        "absent fields are omitted"
    );
}

#[test]
fn llm_call_usage_reads_the_tokens_of_one_call_span_and_nothing_else() {
    let call = host_llm(1, &[("user", "2+2?")], "4", "scripted").build();
    let usage = crate::llm_call_usage(&call).expect("an LLM call");
    assert_eq!((usage.input_tokens, usage.output_tokens), (Some(12), Some(3)));
    // OpenLLMetry's keys, a number as text, and a call recognised by its attributes alone.
    let foreign = SpanBuilder::new("chat gpt-4o", 2)
        .attrs(json!({
            "gen_ai.prompt.0.content": "hi",
            "gen_ai.usage.prompt_tokens": 8,
            "gen_ai.usage.completion_tokens": "5",
        }))
        .build();
    let usage = crate::llm_call_usage(&foreign).expect("an LLM call");
    assert_eq!((usage.input_tokens, usage.output_tokens), (Some(8), Some(5)));
    let untold = SpanBuilder::new(c::LLM_SPAN, 3).build();
    let usage = crate::llm_call_usage(&untold).expect("an LLM call");
    assert_eq!((usage.input_tokens, usage.output_tokens), (None, None));
    assert!(crate::llm_call_usage(&host_reward(4, "primary", 1.0)).is_none());
    assert!(crate::llm_call_usage(&root(5)).is_none());
}
