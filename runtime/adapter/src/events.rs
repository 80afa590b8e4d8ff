//! An attempt's spans read as Agent-lightning 1.0's events (its gateway's `Event`): every LLM call
//! span is a `model_request` event (request, response with token ids and logprobs, status,
//! retries, the serving model's version), every span carrying a primary reward a `reward` event,
//! and an event posted through the gateway (kept as an [`EVENT_SPAN`], or an annotation span when
//! it is a reward) is given back as it was posted. Also 1.0's `format=triplet` view of events
//! ([`triplet_format`]) and the span that keeps a posted event ([`event_span`]).
//!
//! Lenient, as the rest of this crate: a span with malformed attributes gives an event with what
//! could be read, never a panic.

use crate::attrs::{count, number, string};
use crate::conventions as c;
use crate::llm::read_call;
use crate::reward::span_rewards;
use agl_store::{JsonMap, Span, StatusCode, TraceStatus, hex_id, json_number};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::borrow::Borrow;
use std::hash::{BuildHasher, Hasher};

/// The span name of an event posted through the gateway (other than a reward).
pub const EVENT_SPAN: &str = "agl.event";
/// A posted event's `event_type`.
pub const EVENT_TYPE: &str = "agl.event.type";
/// A posted event's `data`, as JSON text.
pub const EVENT_DATA: &str = "agl.event.data";
/// `model_request`: one LLM call.
pub const MODEL_REQUEST: &str = "model_request";
/// `reward`: a scalar reward.
pub const REWARD: &str = "reward";

/// What the LLM proxy adds to its call spans (`agl-proxy`'s `record.rs`): the upstream, the
/// retries, the HTTP status the client got.
const PROXY_UPSTREAM: &str = agl_store::semconv::LLM_PROXY_UPSTREAM;
const PROXY_RETRIES: &str = "agl.llm.proxy.retries";
const HTTP_STATUS: &str = "http.response.status_code";

/// One event, as Agent-lightning 1.0's `Event` (`agentlightning/schemas.py`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub event_type: String,
    pub rollout_id: String,
    pub attempt_id: String,
    /// Seconds since the epoch: the span's start (else its end, else 0).
    pub timestamp: f64,
    pub data: JsonMap,
}

/// The model server the attempt's calls went to, as the gateway registered it (1.0's `Model`):
/// reported in `model_request` events as `server` and `model_version`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServingModel {
    pub model: Option<String>,
    pub endpoint: Option<String>,
    pub version: Option<i64>,
}

/// The attempt's events, spans in sequence-id order: LLM calls, rewards and posted events; other
/// spans give none.
pub fn events<S: Borrow<Span>>(spans: &[S], serving: &ServingModel) -> Vec<Event> {
    let mut ordered: Vec<&Span> = spans.iter().map(Borrow::borrow).collect();
    ordered.sort_by_key(|s| s.sequence_id);
    ordered.into_iter().filter_map(|span| event(span, serving)).collect()
}

/// The event one span is, if any.
pub fn event(span: &Span, serving: &ServingModel) -> Option<Event> {
    let (event_type, data) = if let Some(kind) = string(span.attributes.get(EVENT_TYPE)) {
        (kind.to_owned(), posted_data(span))
    } else if crate::is_llm_call(span) {
        (MODEL_REQUEST.to_owned(), model_request(span, serving))
    } else {
        let value = span_rewards(span)?.primary_value()?;
        let mut data = JsonMap::new();
        data.insert("value".into(), json_number(value));
        data.insert("source".into(), Value::from("agent"));
        (REWARD.to_owned(), data)
    };
    Some(Event {
        event_type,
        rollout_id: span.rollout_id.clone(),
        attempt_id: span.attempt_id.clone(),
        timestamp: span.start_time.or(span.end_time).unwrap_or(0.0),
        data,
    })
}

/// A posted event's data: its JSON text, or `{}` when that is not a JSON object.
fn posted_data(span: &Span) -> JsonMap {
    match span.attributes.get(EVENT_DATA) {
        Some(Value::String(text)) => serde_json::from_str(text).unwrap_or_default(),
        Some(Value::Object(map)) => map.clone(),
        _ => JsonMap::new(),
    }
}

/// 1.0's `ModelRequestData` of one LLM call span, with `server`; the response in the shape its
/// gateway relays from vLLM (`prompt_token_ids` at the top, `token_ids` and `logprobs` per choice).
pub fn model_request(span: &Span, serving: &ServingModel) -> JsonMap {
    let call = read_call(span, &[]);
    let attributes = &span.attributes;
    let messages: Vec<Value> = call
        .prompt
        .iter()
        .map(|m| {
            let mut message = json!({"role": m.role, "content": m.content});
            if let Some(id) = &m.tool_call_id {
                message["tool_call_id"] = Value::from(id.as_str());
            }
            if !m.tool_calls.is_empty() {
                message["tool_calls"] = tool_calls(&m.tool_calls);
            }
            message
        })
        .collect();
    let asked = string(attributes.get(c::GEN_AI_REQUEST_MODEL)).unwrap_or_default();
    let mut request = json!({"model": asked, "messages": messages});
    for (key, field) in [
        (c::GEN_AI_REQUEST_TEMPERATURE, "temperature"),
        (c::GEN_AI_REQUEST_MAX_TOKENS, "max_tokens"),
    ] {
        if let Some(value) = attributes.get(key).filter(|v| v.is_number()) {
            request[field] = value.clone();
        }
    }
    let failed = span.status.status_code == StatusCode::Error;
    let finish_reason = attributes
        .get(c::GEN_AI_RESPONSE_FINISH_REASONS)
        .and_then(Value::as_array)
        .and_then(|reasons| reasons.first())
        .and_then(Value::as_str)
        .map(str::to_owned);
    let usage = usage(&call.usage);
    let mut response = JsonMap::new();
    let answered = !call.response.is_empty() || !call.tool_calls.is_empty() || !call.response_token_ids.is_empty();
    if answered || !failed {
        let mut message = json!({"role": c::ASSISTANT, "content": call.response});
        if !call.tool_calls.is_empty() {
            message["tool_calls"] = tool_calls(&call.tool_calls);
        }
        let mut choice = json!({
            "index": 0,
            "message": message,
            "finish_reason": finish_reason,
            "token_ids": call.response_token_ids,
        });
        if let Some(content) = logprobs_content(span) {
            choice["logprobs"] = json!({"content": content});
        }
        if let Some(id) = &call.response_id {
            response.insert("id".into(), Value::from(id.as_str()));
        }
        response.insert("object".into(), Value::from("chat.completion"));
        response.insert("model".into(), Value::from(call.model.as_str()));
        response.insert("prompt_token_ids".into(), json!(call.prompt_token_ids));
        response.insert("choices".into(), Value::Array(vec![choice]));
        if let Some(usage) = &usage {
            response.insert("usage".into(), usage.clone());
        }
    }
    if failed {
        let why = string(attributes.get(c::ERROR_TYPE))
            .or(span.status.description.as_deref())
            .unwrap_or("the call failed");
        response.insert("error".into(), json!({"message": why}));
    }
    let http_status = count(attributes.get(HTTP_STATUS)).or(if failed { None } else { Some(200) });
    let latency_ms = match (span.start_time, span.end_time) {
        (Some(start), Some(end)) if end >= start => json_number((end - start) * 1000.0),
        _ => Value::Null,
    };
    let model = serving.model.clone().unwrap_or_else(|| call.model.clone());
    let endpoint = string(attributes.get(PROXY_UPSTREAM))
        .map(str::to_owned)
        .or_else(|| serving.endpoint.clone());
    let mut data = JsonMap::new();
    data.insert("model".into(), Value::from(model.as_str()));
    data.insert("model_version".into(), json!(serving.version));
    data.insert("request".into(), request);
    data.insert("response".into(), Value::Object(response));
    data.insert(
        "server".into(),
        json!({"model": model, "endpoint": endpoint, "version": serving.version}),
    );
    data.insert("latency_ms".into(), latency_ms);
    data.insert("http_status".into(), json!(http_status));
    data.insert("status".into(), Value::from(if failed { "error" } else { "ok" }));
    data.insert(
        "retry_count".into(),
        Value::from(count(attributes.get(PROXY_RETRIES)).unwrap_or(0)),
    );
    data.insert("usage".into(), usage.unwrap_or(Value::Null));
    data.insert("finish_reason".into(), json!(finish_reason));
    data
}

fn tool_calls(calls: &[crate::ToolCall]) -> Value {
    calls
        .iter()
        .map(|call| {
            json!({
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            })
        })
        .collect()
}

/// OpenAI's `usage`, when the span reports any tokens.
fn usage(usage: &crate::Usage) -> Option<Value> {
    if usage.input_tokens.is_none() && usage.output_tokens.is_none() {
        return None;
    }
    let total = usage.input_tokens.unwrap_or(0) + usage.output_tokens.unwrap_or(0);
    Some(json!({
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": total,
    }))
}

/// `choices[0].logprobs.content` as recorded (JSON text of an array), if it parses.
fn logprobs_content(span: &Span) -> Option<Value> {
    let parsed = match span.attributes.get(c::LOGPROBS_CONTENT)? {
        Value::String(text) => serde_json::from_str::<Value>(text).ok()?,
        other => other.clone(),
    };
    parsed.is_array().then_some(parsed)
}

/// The span that keeps an event posted through the gateway: an annotation span carrying the
/// reward as our reward spans do when it is a `reward` with a numeric `value` (so our adapter's
/// final reward sees it), else an [`EVENT_SPAN`]; both keep the event's type and data.
pub fn event_span(
    rollout_id: &str,
    attempt_id: &str,
    sequence_id: u64,
    event_type: &str,
    data: &JsonMap,
    now: f64,
) -> Span {
    let reward = (event_type == REWARD)
        .then(|| data.get("value"))
        .flatten()
        .filter(|v| !v.is_boolean())
        .and_then(|v| number(Some(v)));
    let name = if reward.is_some() {
        c::ANNOTATION_SPAN
    } else {
        EVENT_SPAN
    };
    let seed = std::collections::hash_map::RandomState::new();
    let mut hasher = seed.build_hasher();
    hasher.write(rollout_id.as_bytes());
    hasher.write(attempt_id.as_bytes());
    hasher.write_u64(sequence_id);
    let high = hasher.finish();
    hasher.write_u64(now.to_bits());
    let low = hasher.finish();
    let mut trace = [0u8; 16];
    trace[..8].copy_from_slice(&high.to_be_bytes());
    trace[8..].copy_from_slice(&low.to_be_bytes());
    let mut span = Span::new(
        rollout_id,
        attempt_id,
        sequence_id,
        hex_id(&trace, 0),
        hex_id(&low.to_be_bytes(), 0),
        name,
    );
    span.context = Some(agl_store::SpanContext::new(span.trace_id.clone(), span.span_id.clone()));
    span.status = TraceStatus {
        status_code: StatusCode::Ok,
        ..TraceStatus::default()
    };
    span.attributes.insert(EVENT_TYPE.into(), Value::from(event_type));
    span.attributes
        .insert(EVENT_DATA.into(), Value::from(Value::Object(data.clone()).to_string()));
    if let Some(value) = reward {
        span.attributes
            .insert(c::REWARD_0_NAME.into(), Value::from(c::PRIMARY_REWARD));
        span.attributes.insert(c::REWARD_0_VALUE.into(), json_number(value));
    }
    span.start_time = Some(now);
    span.end_time = Some(now);
    span
}

/// 1.0's `format=triplet`: `model_request` data trimmed to the token ids, logprobs, server and
/// status (and `routed_experts`, as 1.0.2); `reward` data to its value (and `source`, `reason`);
/// other events unchanged; then only the last `model_request` of each `prompt_token_ids` kept
/// (1.0.2: those without prompt token ids are all kept).
pub fn triplet_format(events: Vec<Event>) -> Vec<Event> {
    let trimmed: Vec<Event> = events
        .into_iter()
        .map(|mut event| {
            if event.event_type == MODEL_REQUEST {
                event.data = trim_model_request(&event.data);
            } else if event.event_type == REWARD {
                event.data = trim_reward(&event.data);
            }
            event
        })
        .collect();
    // 1.0.2's key: a non-empty list of integers; a request without one is kept, not deduplicated.
    let key = |event: &Event| match event.data.get("prompt_token_ids") {
        Some(Value::Array(ids)) if !ids.is_empty() && ids.iter().all(|id| id.is_i64() || id.is_u64()) => {
            Some(ids.clone())
        }
        _ => None,
    };
    let mut last = std::collections::HashMap::new();
    for (index, event) in trimmed.iter().enumerate() {
        if event.event_type == MODEL_REQUEST
            && let Some(key) = key(event)
        {
            last.insert(key, index);
        }
    }
    trimmed
        .into_iter()
        .enumerate()
        .filter(|(index, event)| {
            event.event_type != MODEL_REQUEST || key(event).is_none_or(|key| last.get(&key) == Some(index))
        })
        .map(|(_, event)| event)
        .collect()
}

/// 1.0.2's `include_routed_experts=false`: `model_request` data without `routed_experts` (vLLM's
/// MoE routing, which only a posted event can carry here).
pub fn without_routed_experts(mut events: Vec<Event>) -> Vec<Event> {
    for event in &mut events {
        if event.event_type == MODEL_REQUEST {
            event.data.remove("routed_experts");
        }
    }
    events
}

/// An array field, or `[]`.
fn array(value: Option<&Value>) -> Value {
    match value {
        Some(Value::Array(items)) => Value::Array(items.clone()),
        _ => Value::Array(Vec::new()),
    }
}

/// 1.0's `_trim_model_request`, for the dict response shape and the legacy list of stream chunks.
fn trim_model_request(data: &JsonMap) -> JsonMap {
    let mut prompt_token_ids = Value::Array(Vec::new());
    let mut response_token_ids = Value::Array(Vec::new());
    let mut log_probs = Value::Null;
    let response = data.get("response");
    match response {
        Some(Value::Object(response)) => {
            prompt_token_ids = array(response.get("prompt_token_ids"));
            if let Some(choice) = response
                .get("choices")
                .and_then(Value::as_array)
                .and_then(|c| c.first())
            {
                if prompt_token_ids.as_array().is_some_and(Vec::is_empty) {
                    prompt_token_ids = array(choice.get("prompt_token_ids"));
                }
                response_token_ids = array(choice.get("token_ids"));
                log_probs = choice_log_probs(choice).map_or(Value::Null, |lp| json!(lp));
            }
        }
        Some(Value::Array(chunks)) => {
            let mut ids = Vec::new();
            for chunk in chunks {
                if prompt_token_ids.as_array().is_some_and(Vec::is_empty)
                    && let Some(Value::Array(p)) = chunk.get("prompt_token_ids")
                    && !p.is_empty()
                {
                    prompt_token_ids = Value::Array(p.clone());
                }
                let first = chunk.get("choices").and_then(Value::as_array).and_then(|c| c.first());
                if let Some(Value::Array(t)) = first.and_then(|c| c.get("token_ids")) {
                    ids.extend(t.iter().cloned());
                }
            }
            response_token_ids = Value::Array(ids);
        }
        _ => {}
    }
    let server = data.get("server");
    let mut out = JsonMap::new();
    out.insert("prompt_token_ids".into(), prompt_token_ids);
    out.insert("response_token_ids".into(), response_token_ids);
    out.insert("response_log_probs".into(), log_probs);
    out.insert(
        "server".into(),
        json!({
            "model": server.and_then(|s| s.get("model")).cloned().unwrap_or(Value::Null),
            "version": server.and_then(|s| s.get("version")).cloned().unwrap_or(Value::Null),
        }),
    );
    for key in ["http_status", "status"] {
        if let Some(value) = data.get(key) {
            out.insert(key.into(), value.clone());
        }
    }
    if let Some(error) = response.and_then(Value::as_object).and_then(|r| r.get("error")) {
        out.insert("error".into(), error.clone());
    }
    if let Some(routes) = data.get("routed_experts").filter(|v| !v.is_null()) {
        out.insert("routed_experts".into(), routes.clone());
    }
    out
}

/// 1.0's `_extract_choice_log_probs`: the chosen tokens' logprobs (chat `logprobs.content[].logprob`
/// or completions `logprobs.token_logprobs`); `None` when missing or any is not a finite number.
fn choice_log_probs(choice: &Value) -> Option<Vec<f64>> {
    let logprobs = choice.get("logprobs")?.as_object()?;
    let raw: Vec<&Value> = if let Some(Value::Array(content)) = logprobs.get("content") {
        content
            .iter()
            .map(|item| item.as_object().and_then(|o| o.get("logprob")))
            .collect::<Option<Vec<_>>>()?
    } else if let Some(Value::Array(values)) = logprobs.get("token_logprobs") {
        values.iter().collect()
    } else {
        return None;
    };
    raw.into_iter().map(|v| v.as_f64().filter(|f| f.is_finite())).collect()
}

/// 1.0's `_trim_reward`.
fn trim_reward(data: &JsonMap) -> JsonMap {
    let mut out = JsonMap::new();
    out.insert("value".into(), data.get("value").cloned().unwrap_or(Value::Null));
    for key in ["source", "reason"] {
        if let Some(value) = data.get(key) {
            out.insert(key.into(), value.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llm_span(seq: u64, prompt_ids: &[u32]) -> Span {
        let mut span = Span::new("ro-1", "at-1", seq, "t", format!("s{seq}"), c::LLM_SPAN);
        span.attributes.insert(c::prompt_key(0, c::ROLE), json!("user"));
        span.attributes.insert(c::prompt_key(0, c::CONTENT), json!("2+2?"));
        span.attributes.insert(c::completion_key(0, c::CONTENT), json!("4"));
        span.attributes.insert(c::GEN_AI_RESPONSE_MODEL.into(), json!("m"));
        span.attributes.insert(c::PROMPT_TOKEN_IDS.into(), json!(prompt_ids));
        span.attributes.insert(c::RESPONSE_TOKEN_IDS.into(), json!([7, 8]));
        span.attributes.insert(
            c::LOGPROBS_CONTENT.into(),
            json!(r#"[{"token":"4","logprob":-0.5},{"token":"","logprob":-0.25}]"#),
        );
        span.attributes.insert(PROXY_RETRIES.into(), json!(2));
        span.start_time = Some(10.0);
        span.end_time = Some(10.5);
        span
    }

    #[test]
    fn an_llm_span_is_a_model_request_with_token_ids_logprobs_and_retries() {
        let serving = ServingModel {
            model: Some("m".into()),
            endpoint: Some("http://vllm/v1".into()),
            version: Some(3),
        };
        let events = events(&[llm_span(1, &[1, 2])], &serving);
        assert_eq!(events.len(), 1);
        let data = &events[0].data;
        assert_eq!(events[0].event_type, MODEL_REQUEST);
        assert_eq!(data["model_version"], json!(3));
        assert_eq!(data["retry_count"], json!(2));
        assert_eq!(data["status"], json!("ok"));
        assert_eq!(data["request"]["messages"][0]["content"], json!("2+2?"));
        assert_eq!(data["response"]["prompt_token_ids"], json!([1, 2]));
        assert_eq!(data["response"]["choices"][0]["token_ids"], json!([7, 8]));
        assert_eq!(data["latency_ms"], json!(500.0));
        let trimmed = triplet_format(events);
        assert_eq!(trimmed[0].data["response_log_probs"], json!([-0.5, -0.25]));
        assert_eq!(trimmed[0].data["server"], json!({"model": "m", "version": 3}));
    }

    #[test]
    fn triplet_format_keeps_the_last_call_of_each_prompt_and_trims_rewards() {
        let reward = event_span(
            "ro-1",
            "at-1",
            4,
            REWARD,
            json!({"value": 1, "note": "x"}).as_object().unwrap(),
            1.0,
        );
        let spans = [llm_span(1, &[1]), llm_span(2, &[1]), llm_span(3, &[2]), reward];
        let events = triplet_format(events(&spans, &ServingModel::default()));
        let kinds: Vec<&str> = events.iter().map(|e| e.event_type.as_str()).collect();
        assert_eq!(kinds, [MODEL_REQUEST, MODEL_REQUEST, REWARD]);
        assert_eq!(events[2].data, *json!({"value": 1}).as_object().unwrap());
        assert_eq!(crate::final_reward(&spans), Some(1.0));
    }

    #[test]
    fn calls_without_prompt_token_ids_are_all_kept_as_1_0_2_does() {
        let spans = [llm_span(1, &[]), llm_span(2, &[])];
        let events = triplet_format(events(&spans, &ServingModel::default()));
        assert_eq!(events.len(), 2);
    }

    #[test]
    fn a_posted_event_comes_back_as_posted() {
        let data = json!({"k": [1, "two"]});
        let span = event_span("ro-1", "at-1", 1, "custom", data.as_object().unwrap(), 5.0);
        let event = event(&span, &ServingModel::default()).unwrap();
        assert_eq!(event.event_type, "custom");
        assert_eq!(Value::Object(event.data), data);
        assert_eq!(event.timestamp, 5.0);
    }
}
