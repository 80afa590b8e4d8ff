//! Training-data export: the lines `agl-host export` writes, one JSON object each, from one
//! attempt's spans: a triplet per LLM call, a chat transcript per attempt, token-exact training
//! rows ([`tokens`]), or the spans as they are. Messages and the tools
//! the calls were offered take OpenAI's chat shape, what fine-tuning pipelines read. Reading
//! spans is the rest of the adapter's (`triplets`, `transcript`, `final_reward`) but for the
//! offered tools, read here from the call's span (`offered_tools`); choosing attempts and writing
//! the lines is the binary's (`agl-host export`).

pub mod select;

use crate::{Message, ToolCall, Triplet, Usage};
use agl_store::semconv::GEN_AI_REQUEST_TOOLS;
use agl_store::{Attempt, AttemptStatus, Mode, Rollout, Span};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// OpenLLMetry's record of the offered tools: `llm.request.functions.{i}.{name,description,
/// parameters}` (the parameters as JSON text).
const LLM_REQUEST_FUNCTIONS: &str = "llm.request.functions";

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
    /// A fork rollout's lineage (its `agl.fork` metadata as stored: `parent_rollout_id`,
    /// `parent_attempt_id`, `at_llm_call`, `branch`, `branches`; see [`Rollout::fork_lineage`]);
    /// absent for a rollout that is not a fork.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fork: Option<&'a Map<String, Value>>,
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
            fork: rollout.fork_lineage(),
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

/// What one call of the attempt's lines say, besides the lines: how many were written, and how
/// many LLM calls recorded tools that could not be read (their lines go without), and how many
/// lacked token ids (`tokens`: their rows have none).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    pub lines: usize,
    pub unreadable_tools: usize,
    pub missing_token_ids: usize,
}

/// The tools an LLM call was offered, as its span recorded them, in OpenAI's shape:
/// `{"type": "function", "function": {"name", "description", "parameters"}}`, each function's
/// fields as recorded (parameters as a JSON value, parsed where recorded as JSON text). Empty when
/// the span records none; `None` when it records some that cannot be read (JSON clipped at the
/// attribute cap, or not a list of functions).
///
/// Read from `gen_ai.request.tools` (agl-host's: a JSON array of `{name, description,
/// parameters}`; OpenAI-shaped entries are taken as they are), else OpenLLMetry's
/// `llm.request.functions.{i}.*`.
fn offered_tools(span: &Span) -> Option<Vec<Value>> {
    let listed = match span.attributes.get(GEN_AI_REQUEST_TOOLS) {
        None | Some(Value::Null) => return functions_family(span),
        Some(Value::String(text)) => serde_json::from_str::<Value>(text).ok()?,
        Some(other) => other.clone(),
    };
    let Value::Array(entries) = listed else {
        return None;
    };
    entries.into_iter().map(openai_tool).collect()
}

/// One recorded tool in OpenAI's shape; `None` when it is not a function with a name.
fn openai_tool(entry: Value) -> Option<Value> {
    let Value::Object(mut entry) = entry else {
        return None;
    };
    let function = match entry.remove("function") {
        // Already OpenAI's shape.
        Some(Value::Object(function)) if entry.get("type").is_none_or(|kind| kind == "function") => function,
        Some(_) => return None,
        None => entry,
    };
    function_tool(function)
}

/// `function` (its fields as recorded) as an OpenAI tool; its parameters parsed when recorded as
/// JSON text. `None` without a name, or with parameters that are not JSON.
fn function_tool(mut function: Map<String, Value>) -> Option<Value> {
    if !function.get("name").is_some_and(Value::is_string) {
        return None;
    }
    if let Some(Value::String(text)) = function.get("parameters") {
        let parsed = serde_json::from_str::<Value>(text).ok()?;
        function.insert("parameters".to_owned(), parsed);
    }
    let mut tool = Map::new();
    tool.insert("type".to_owned(), Value::from("function"));
    tool.insert("function".to_owned(), Value::Object(function));
    Some(Value::Object(tool))
}

/// OpenLLMetry's `llm.request.functions.{i}.{field}`, by index; empty when there are none.
fn functions_family(span: &Span) -> Option<Vec<Value>> {
    let mut functions: BTreeMap<u64, Map<String, Value>> = BTreeMap::new();
    for (key, value) in &span.attributes {
        let Some((index, field)) = key
            .strip_prefix(LLM_REQUEST_FUNCTIONS)
            .and_then(|rest| rest.strip_prefix('.'))
            .and_then(|rest| rest.split_once('.'))
        else {
            continue;
        };
        let Ok(index) = index.parse::<u64>() else {
            continue;
        };
        functions
            .entry(index)
            .or_default()
            .insert(field.to_owned(), value.clone());
    }
    functions.into_values().map(function_tool).collect()
}

/// The tools offered to the call whose span is `span_id`, added to `tools` unless already there
/// (in the order first offered); false when its span records tools that cannot be read.
fn add_offered(spans: &[Arc<Span>], span_id: &str, tools: &mut Vec<Value>) -> bool {
    let Some(span) = spans.iter().find(|span| span.span_id == span_id) else {
        return true;
    };
    let Some(offered) = offered_tools(span) else {
        return false;
    };
    for tool in offered {
        if !tools.contains(&tool) {
            tools.push(tool);
        }
    }
    true
}

/// `--format triplets`: one LLM call.
#[derive(Debug, Serialize)]
struct TripletLine<'a> {
    #[serde(flatten)]
    origin: &'a Origin<'a>,
    /// The call's place among the attempt's LLM calls, from 0.
    index: usize,
    prompt: Vec<ChatMessage<'a>>,
    /// The tools the call was offered (OpenAI's shape); absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Value>,
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
    /// The tools the attempt's LLM calls were offered (OpenAI's shape), each once, in the order
    /// first offered; absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Value>,
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

/// Appends one line per LLM call of the attempt to `out`.
pub fn triplets(origin: &Origin<'_>, spans: &[Arc<Span>], out: &mut String) -> serde_json::Result<Written> {
    let calls: Vec<Triplet> = crate::triplets(spans);
    let final_reward = crate::final_reward(spans);
    let mut written = Written::default();
    for (index, call) in calls.iter().enumerate() {
        let mut tools = Vec::new();
        if !add_offered(spans, &call.span_id, &mut tools) {
            written.unreadable_tools += 1;
        }
        let line = TripletLine {
            origin,
            index,
            prompt: chat_messages(&call.prompt),
            tools,
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
        written.lines += 1;
    }
    Ok(written)
}

/// Appends the attempt's transcript line to `out`, unless it made no LLM call (0 lines or 1).
pub fn transcript(origin: &Origin<'_>, spans: &[Arc<Span>], out: &mut String) -> serde_json::Result<Written> {
    let calls = crate::triplets(spans);
    let mut written = Written::default();
    if calls.is_empty() {
        return Ok(written);
    }
    let messages = crate::transcript(&calls);
    let mut tools = Vec::new();
    for call in &calls {
        if !add_offered(spans, &call.span_id, &mut tools) {
            written.unreadable_tools += 1;
        }
    }
    let line = TranscriptLine {
        origin,
        messages: chat_messages(&messages),
        tools,
        reward: crate::final_reward(spans),
        rewards: crate::rewards(spans)
            .into_iter()
            .map(|(name, value)| NamedReward { name, value })
            .collect(),
        llm_calls: calls.len(),
    };
    push_line(out, &line)?;
    written.lines = 1;
    Ok(written)
}

/// Appends one line per span to `out`, as the store's wire JSON.
pub fn spans(spans: &[Arc<Span>], out: &mut String) -> serde_json::Result<Written> {
    for span in spans {
        push_line(out, span)?;
    }
    Ok(Written {
        lines: spans.len(),
        ..Written::default()
    })
}

/// `--format tokens`: one training row of token ids (see [`crate::tokens`]).
#[derive(Debug, Serialize)]
struct TokensLine<'a> {
    #[serde(flatten)]
    origin: &'a Origin<'a>,
    /// The row's place among the attempt's rows, from 0.
    index: usize,
    /// The LLM calls merged into the row (their `index` in `triplets`), and their spans.
    calls: &'a [usize],
    span_ids: &'a [String],
    prompt_token_ids: &'a [u32],
    response_token_ids: &'a [u32],
    loss_mask: &'a [u8],
    logprobs: Option<&'a [f64]>,
    /// The attempt's final reward, on every row.
    reward: Option<f64>,
    rewards: &'a [NamedReward],
    model: &'a str,
    missing_token_ids: bool,
}

/// Appends one line per token row of the attempt to `out` (none when it made no LLM call).
pub fn tokens(origin: &Origin<'_>, spans: &[Arc<Span>], out: &mut String) -> serde_json::Result<Written> {
    let rows = crate::token_rows(spans);
    let mut written = Written::default();
    if rows.is_empty() {
        return Ok(written);
    }
    let reward = crate::final_reward(spans);
    let rewards: Vec<NamedReward> = crate::rewards(spans)
        .into_iter()
        .map(|(name, value)| NamedReward { name, value })
        .collect();
    for (index, row) in rows.iter().enumerate() {
        let line = TokensLine {
            origin,
            index,
            calls: &row.calls,
            span_ids: &row.span_ids,
            prompt_token_ids: &row.prompt_token_ids,
            response_token_ids: &row.response_token_ids,
            loss_mask: &row.loss_mask,
            logprobs: row.logprobs.as_deref(),
            reward,
            rewards: &rewards,
            model: &row.model,
            missing_token_ids: row.missing_token_ids,
        };
        push_line(out, &line)?;
        written.lines += 1;
        written.missing_token_ids += usize::from(row.missing_token_ids);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agl_store::semconv::{PROMPT_TOKEN_IDS, RESPONSE_TOKEN_IDS};
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

    /// An LLM span of one call: `prompt` answered with `answer`, offered `tools` (the attributes
    /// the tools are recorded in), started at `start`.
    fn llm_span(id: &str, start: f64, prompt: &str, answer: &str, tools: Value) -> Arc<Span> {
        let mut attributes = json!({
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": prompt,
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": answer,
            "gen_ai.response.id": format!("response-{id}"),
        });
        if let (Some(all), Value::Object(extra)) = (attributes.as_object_mut(), tools) {
            all.extend(extra);
        }
        let span = json!({
            "rollout_id": "ro-1", "attempt_id": "at-1", "sequence_id": start as u64,
            "trace_id": "0".repeat(32), "span_id": id, "name": "openai.chat.completion",
            "start_time": start, "end_time": start + 0.5, "attributes": attributes,
        });
        Arc::new(serde_json::from_value(span).expect("a span"))
    }

    fn origin(input: &Value) -> Origin<'_> {
        Origin {
            run_id: Some("run-1"),
            rollout_id: "ro-1",
            attempt_id: "at-1",
            attempt: 1,
            attempt_status: AttemptStatus::Succeeded,
            mode: None,
            resources_id: Some("rs-1"),
            input,
            fork: None,
        }
    }

    fn parsed(out: &str) -> Vec<Value> {
        out.lines()
            .map(|line| serde_json::from_str(line).expect("JSON"))
            .collect()
    }

    /// What agl-host records: `Vec<agl_llm::Tool>` as JSON text.
    fn recorded(tools: &Value) -> Value {
        json!({ GEN_AI_REQUEST_TOOLS: tools.to_string() })
    }

    fn lookup() -> Value {
        json!({"name": "lookup", "description": "Looks a word up.",
               "parameters": {"type": "object", "properties": {"word": {"type": "string"}}}})
    }

    fn as_openai(function: &Value) -> Value {
        json!({"type": "function", "function": function})
    }

    #[test]
    fn recorded_tools_come_back_in_openai_shape_with_object_parameters() {
        let add = json!({"name": "add", "description": "", "parameters": {"type": "object"}});
        let span = llm_span("a", 1.0, "q", "a", recorded(&json!([lookup(), add])));
        let tools = offered_tools(&span).expect("readable");
        assert_eq!(tools, [as_openai(&lookup()), as_openai(&add)]);
        assert!(tools[0]["function"]["parameters"].is_object());
    }

    #[test]
    fn openai_shaped_and_openllmetry_tools_are_read_too() {
        // Already OpenAI's shape, parameters as JSON text (parsed), extra fields kept.
        let text_parameters = json!([{"type": "function", "function": {
            "name": "lookup", "description": "Looks a word up.", "strict": true,
            "parameters": lookup()["parameters"].to_string()}}]);
        let span = llm_span("a", 1.0, "q", "a", json!({ GEN_AI_REQUEST_TOOLS: text_parameters }));
        let mut expected = lookup();
        expected["strict"] = json!(true);
        assert_eq!(offered_tools(&span), Some(vec![as_openai(&expected)]));

        let family = json!({
            "llm.request.functions.1.name": "add",
            "llm.request.functions.0.name": "lookup",
            "llm.request.functions.0.description": "Looks a word up.",
            "llm.request.functions.0.parameters": lookup()["parameters"].to_string(),
        });
        let span = llm_span("b", 1.0, "q", "a", family);
        assert_eq!(
            offered_tools(&span),
            Some(vec![as_openai(&lookup()), as_openai(&json!({"name": "add"}))]),
            "in index order"
        );
    }

    #[test]
    fn no_tools_read_empty_and_tools_that_cannot_be_read_read_none() {
        assert_eq!(
            offered_tools(&llm_span("a", 1.0, "q", "a", json!({}))),
            Some(Vec::new())
        );
        let clipped = format!("{}… [120 more bytes]", &json!([lookup()]).to_string()[..40]);
        for unreadable in [
            json!(clipped),
            json!({"name": "lookup"}),
            json!([{"description": "no name"}]),
            json!([{"type": "code_interpreter", "function": {"name": "x"}}]),
            json!([{"name": "lookup", "parameters": "{not json"}]),
        ] {
            let span = llm_span("a", 1.0, "q", "a", json!({ GEN_AI_REQUEST_TOOLS: unreadable }));
            assert_eq!(offered_tools(&span), None, "{unreadable}");
        }
    }

    #[test]
    fn triplets_carry_their_calls_tools_and_transcripts_every_tool_once() {
        let add = json!({"name": "add", "description": "Adds.", "parameters": {"type": "object"}});
        let spans = [
            llm_span("a", 1.0, "first", "1", recorded(&json!([lookup()]))),
            llm_span("b", 2.0, "second", "2", json!({})),
            llm_span("c", 3.0, "third", "3", recorded(&json!([add, lookup()]))),
        ];
        let input = json!({"q": 1});
        let mut out = String::new();
        let written = triplets(&origin(&input), &spans, &mut out).expect("written");
        assert_eq!(
            written,
            Written {
                lines: 3,
                ..Written::default()
            }
        );
        let lines = parsed(&out);
        assert_eq!(lines[0]["tools"], json!([as_openai(&lookup())]));
        assert!(lines[1].get("tools").is_none(), "no tools, no field: {}", lines[1]);
        assert_eq!(lines[2]["tools"], json!([as_openai(&add), as_openai(&lookup())]));

        out.clear();
        let written = transcript(&origin(&input), &spans, &mut out).expect("written");
        assert_eq!(
            written,
            Written {
                lines: 1,
                ..Written::default()
            }
        );
        let line = &parsed(&out)[0];
        assert_eq!(line["tools"], json!([as_openai(&lookup()), as_openai(&add)]), "{line}");
        assert_eq!(line["resources_id"], "rs-1");

        out.clear();
        let untooled = [llm_span("a", 1.0, "q", "a", json!({}))];
        transcript(&origin(&input), &untooled, &mut out).expect("written");
        assert!(parsed(&out)[0].get("tools").is_none(), "{out}");
    }

    #[test]
    fn token_rows_carry_the_attempts_rewards_on_every_row_and_count_calls_without_ids() {
        let with_ids = |id: &str, start: f64, prompt: Value, response: Value| {
            let ids = json!({ PROMPT_TOKEN_IDS: prompt, RESPONSE_TOKEN_IDS: response });
            llm_span(id, start, "q", "a", ids)
        };
        let reward: Arc<Span> = Arc::new(
            serde_json::from_value(json!({
                "rollout_id": "ro-1", "attempt_id": "at-1", "sequence_id": 9, "trace_id": "0".repeat(32),
                "span_id": "r", "name": "agentlightning.annotation", "start_time": 9.0,
                "attributes": {"agentlightning.reward.0.name": "primary", "agentlightning.reward.0.value": 0.5,
                               "agentlightning.reward.1.name": "speed", "agentlightning.reward.1.value": 0.25},
            }))
            .expect("a span"),
        );
        let spans = [
            with_ids("a", 1.0, json!([1, 2]), json!([3])),
            with_ids("b", 2.0, json!([7]), json!([8])),
            llm_span("c", 3.0, "q", "a", json!({})),
            reward,
        ];
        let input = json!({"q": 1});
        let mut out = String::new();
        let written = tokens(&origin(&input), &spans, &mut out).expect("written");
        assert_eq!(
            written,
            Written {
                lines: 3,
                missing_token_ids: 1,
                ..Written::default()
            }
        );
        let lines = parsed(&out);
        for (index, line) in lines.iter().enumerate() {
            assert_eq!(line["index"], index, "{line}");
            assert_eq!(line["reward"], 0.5, "{line}");
            assert_eq!(
                line["rewards"],
                json!([{"name": "primary", "value": 0.5}, {"name": "speed", "value": 0.25}])
            );
            assert_eq!(
                (&line["rollout_id"], &line["resources_id"]),
                (&json!("ro-1"), &json!("rs-1"))
            );
        }
        assert_eq!(lines[0]["loss_mask"], json!([0, 0, 1]));
        assert_eq!(lines[1]["prompt_token_ids"], json!([7]));
        assert_eq!(lines[2]["missing_token_ids"], true);
        assert_eq!(lines[2]["span_ids"], json!(["c"]));

        out.clear();
        let none = tokens(&origin(&input), &[], &mut out).expect("written");
        assert_eq!((none, out.as_str()), (Written::default(), ""));
    }

    #[test]
    fn a_call_whose_tools_cannot_be_read_is_counted_and_goes_without() {
        let spans = [
            llm_span(
                "a",
                1.0,
                "q",
                "a",
                json!({ GEN_AI_REQUEST_TOOLS: "[{\"name\": \"lo… [9 more bytes]" }),
            ),
            llm_span("b", 2.0, "q2", "b", recorded(&json!([lookup()]))),
        ];
        let input = json!({});
        let mut out = String::new();
        let written = triplets(&origin(&input), &spans, &mut out).expect("written");
        assert_eq!(
            written,
            Written {
                lines: 2,
                unreadable_tools: 1,
                ..Written::default()
            }
        );
        let lines = parsed(&out);
        assert!(lines[0].get("tools").is_none());
        assert_eq!(lines[1]["tools"], json!([as_openai(&lookup())]));
    }
    #[test]
    fn a_forks_lines_carry_its_lineage_and_other_lines_no_fork_field() {
        let lineage = json!({"parent_rollout_id": "ro-0", "parent_attempt_id": "at-0", "at_llm_call": 1,
                             "branch": 1, "branches": 2});
        let fork: Rollout = serde_json::from_value(json!({
            "rollout_id": "ro-1", "input": {"q": 1}, "start_time": 1.0, "resources_id": "rs-1",
            "metadata": {"agl.fork": lineage, "note": "kept out of the lines"},
        }))
        .expect("a rollout");
        let plain = Rollout {
            metadata: None,
            ..fork.clone()
        };
        let attempt: Attempt = serde_json::from_value(json!({
            "rollout_id": "ro-1", "attempt_id": "at-1", "sequence_id": 1, "start_time": 1.0,
            "status": "succeeded",
        }))
        .expect("an attempt");
        let with_ids = json!({ PROMPT_TOKEN_IDS: [1, 2], RESPONSE_TOKEN_IDS: [3] });
        let spans = [llm_span("a", 1.0, "q", "a", with_ids)];
        type Write = fn(&Origin<'_>, &[Arc<Span>], &mut String) -> serde_json::Result<Written>;
        for (format, write) in [
            ("triplets", triplets as Write),
            ("messages", transcript),
            ("tokens", tokens),
        ] {
            let mut out = String::new();
            write(&Origin::new(Some("run-1"), &fork, &attempt), &spans, &mut out).expect("written");
            let line = &parsed(&out)[0];
            assert_eq!(line["fork"], lineage, "{format}: {line}");
            assert_eq!(line["rollout_id"], "ro-1", "{format}: {line}");
            assert!(
                line.get("note").is_none() && line.get("metadata").is_none(),
                "{format}: {line}"
            );

            out.clear();
            write(&Origin::new(Some("run-1"), &plain, &attempt), &spans, &mut out).expect("written");
            let line = &parsed(&out)[0];
            assert!(line.get("fork").is_none(), "{format}: not a fork, no field: {line}");
        }
    }
}
