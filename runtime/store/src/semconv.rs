//! The span contract, in one place (as Agent-lightning keeps `agentlightning/semconv.py`): every
//! span name, attribute key and resource attribute that agl-host writes or reads. The host's
//! tracer, the triplet adapter and the OTLP ingest all use these constants.
//!
//! Agent-lightning 0.3.0's names are used wherever it has one (`agentlightning.*`); the
//! OpenTelemetry GenAI attributes (`gen_ai.*`) are spelled as OpenLLMetry / AgentOps write them,
//! which is what `TracerTraceToTriplet` reads; the rest is agl-host's own (`agl.*`).

// ---- Agent-lightning: span names (`AGL_*`) ---------------------------------------------------

/// The root span of one attempt.
pub const ROLLOUT_SPAN: &str = "agentlightning.rollout";
/// Annotation spans: rewards, tags, metadata (`AGL_ANNOTATION`). agl-host records rewards as these.
pub const ANNOTATION_SPAN: &str = "agentlightning.annotation";
/// Messages and logs (`AGL_MESSAGE`): `ctx.message` and `ctx.log` both write one.
pub const MESSAGE_SPAN: &str = "agentlightning.message";
/// Customised objects (`AGL_OBJECT`).
pub const OBJECT_SPAN: &str = "agentlightning.object";
/// Operation spans: a wrapped function or block (`AGL_OPERATION`).
pub const OPERATION_SPAN: &str = "agentlightning.operation";
/// The operation name (`agentlightning.operation.name`) of a reward operation (`AGL_REWARD`); LLM
/// calls made inside one (an LLM judge) are not the agent's own calls.
pub const REWARD_OPERATION: &str = "agentlightning.reward";
/// The LLM call span of agl-host and of OpenLLMetry's OpenAI instrumentation. A span whose name
/// contains it is an LLM call, as `TracerTraceToTriplet`'s default `llm_call_match` regex
/// `openai\.chat\.completion` (a search, so `openai.chat.completions.create` matches too).
pub const LLM_SPAN: &str = "openai.chat.completion";

// ---- agl-host: span names of its own ---------------------------------------------------------

/// What the agent wrote to stdout / stderr (captured, bounded).
pub const STDOUT_SPAN: &str = "agl.stdout";
pub const STDERR_SPAN: &str = "agl.stderr";
/// A `resources.get` host call.
pub const RESOURCE_GET_SPAN: &str = "agl.resources.get";
/// A `resources.format-prompt` host call.
pub const FORMAT_PROMPT_SPAN: &str = "agl.resources.format_prompt";
/// The marker span that ends a trace whose attempt went past its span budget.
pub const SPANS_DROPPED_SPAN: &str = "agl.spans.dropped";

// ---- Agent-lightning: resource / span attributes (`LightningResourceAttributes`) -------------

/// The rollout a span belongs to.
pub const ROLLOUT_ID: &str = "agentlightning.rollout_id";
/// The attempt a span belongs to.
pub const ATTEMPT_ID: &str = "agentlightning.attempt_id";
/// The span's sequence id within its attempt.
pub const SPAN_SEQUENCE_ID: &str = "agentlightning.span_sequence_id";

// ---- Agent-lightning: span attributes (`LightningSpanAttributes`) ----------------------------

/// The text of a message span.
pub const MESSAGE_BODY: &str = "agentlightning.message.body";
/// An object span's value, serialised as JSON.
pub const OBJECT_JSON: &str = "agentlightning.object.json";
/// The attribute naming an operation span's operation.
pub const OPERATION_NAME: &str = "agentlightning.operation.name";
/// Prefix of the reward dimensions: `agentlightning.reward.{i}.name` / `.value` (0.3.0). The first
/// dimension is the primary one in Agent-lightning (`emit_reward` puts `primary_key` first).
pub const REWARD_PREFIX: &str = "agentlightning.reward";
/// Field of a reward dimension: its name.
pub const REWARD_NAME_FIELD: &str = "name";
/// Field of a reward dimension: its value.
pub const REWARD_VALUE_FIELD: &str = "value";
/// `agentlightning.reward.0.name`, the one dimension agl-host writes.
pub const REWARD_0_NAME: &str = "agentlightning.reward.0.name";
/// `agentlightning.reward.0.value`.
pub const REWARD_0_VALUE: &str = "agentlightning.reward.0.value";
/// The name `emit_reward(float)` gives a plain reward, and agl-host gives `reward.emit` and a
/// returned reward.
pub const PRIMARY_REWARD: &str = "primary";
/// The agent's textual feedback beside its reward (`reward.feedback`, agl:agent 0.3.0): a list of
/// texts, in the order given, on the attempt's final reward span (or on an annotation span of
/// their own when the attempt ends without a reward).
pub const REWARD_FEEDBACK: &str = "agl.reward.feedback";
/// Bytes of feedback the host dropped past its bound (on the span holding the feedback; absent
/// when none was dropped).
pub const REWARD_FEEDBACK_DROPPED_BYTES: &str = "agl.reward.feedback.dropped_bytes";
/// Agent-lightning 0.2's reward: a `reward` attribute on an annotation span.
pub const LEGACY_REWARD: &str = "reward";
/// AgentOps' `@reward` operations: the output, a JSON object `{"type": "reward", "value": x}` (or
/// its JSON text), under the first of these keys present.
pub const AGENTOPS_OUTPUTS: [&str; 2] = ["agentops.task.output", "agentops.entity.output"];
/// The `type` of an AgentOps reward output.
pub const AGENTOPS_REWARD_TYPE: &str = "reward";

// ---- OpenTelemetry GenAI (OpenLLMetry / AgentOps flavour) ------------------------------------

/// `chat` for a chat completion.
pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
/// The model asked for.
pub const GEN_AI_REQUEST_MODEL: &str = "gen_ai.request.model";
pub const GEN_AI_REQUEST_TEMPERATURE: &str = "gen_ai.request.temperature";
pub const GEN_AI_REQUEST_MAX_TOKENS: &str = "gen_ai.request.max_tokens";
/// The request's stop sequences (a string array).
pub const GEN_AI_REQUEST_STOP_SEQUENCES: &str = "gen_ai.request.stop_sequences";
/// The tools the request offered, as a JSON array of `{name, description, parameters}`.
pub const GEN_AI_REQUEST_TOOLS: &str = "gen_ai.request.tools";
/// The model that answered.
pub const GEN_AI_RESPONSE_MODEL: &str = "gen_ai.response.model";
/// The provider's response id; Agent-lightning deduplicates LLM spans by it.
pub const GEN_AI_RESPONSE_ID: &str = "gen_ai.response.id";
/// A string array: why the model stopped.
pub const GEN_AI_RESPONSE_FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
/// Prefix of the prompt messages: `gen_ai.prompt.{i}.{role,content,tool_call_id}` and, for an
/// assistant message, `gen_ai.prompt.{i}.tool_calls.{j}.{id,name,arguments}`.
pub const GEN_AI_PROMPT: &str = "gen_ai.prompt";
/// Prefix of the choices: `gen_ai.completion.{i}.{role,content}` and
/// `gen_ai.completion.{i}.tool_calls.{j}.{id,name,arguments}`.
pub const GEN_AI_COMPLETION: &str = "gen_ai.completion";
/// Input tokens (current GenAI semantic conventions; agl-host).
pub const GEN_AI_USAGE_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
/// Output tokens (current GenAI semantic conventions; agl-host).
pub const GEN_AI_USAGE_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
/// Input tokens as OpenLLMetry / AgentOps write them.
pub const GEN_AI_USAGE_PROMPT_TOKENS: &str = "gen_ai.usage.prompt_tokens";
/// Output tokens as OpenLLMetry / AgentOps write them.
pub const GEN_AI_USAGE_COMPLETION_TOKENS: &str = "gen_ai.usage.completion_tokens";
/// OpenTelemetry's error type of a failed span (agl-host: the `llm-error` case).
pub const ERROR_TYPE: &str = "error.type";

// ---- Token ids and logprobs (what `TracerTraceToTriplet.span_to_triplet` reads) -------------

/// The prompt's token ids (an integer array), when the backend (vLLM) returns them.
pub const PROMPT_TOKEN_IDS: &str = "prompt_token_ids";
/// The completion's token ids (an integer array), when the backend returns them.
pub const RESPONSE_TOKEN_IDS: &str = "response_token_ids";
/// The completion's logprobs (`choices[0].logprobs.content`) as JSON text.
pub const LOGPROBS_CONTENT: &str = "logprobs.content";

/// Message field: the role.
pub const ROLE: &str = "role";
/// Message field: the text.
pub const CONTENT: &str = "content";
/// Message field: the tool call a `tool` message answers.
pub const TOOL_CALL_ID: &str = "tool_call_id";
/// Message field: prefix of the tool calls an assistant message makes.
pub const TOOL_CALLS: &str = "tool_calls";
/// Message field: the legacy single `function_call.{name,arguments}` (OpenLLMetry).
pub const FUNCTION_CALL: &str = "function_call";
/// Tool call field: its id.
pub const ID: &str = "id";
/// Tool call field: the tool's name.
pub const NAME: &str = "name";
/// Tool call field: the arguments (JSON text).
pub const ARGUMENTS: &str = "arguments";

/// The role of the model's answer.
pub const ASSISTANT: &str = "assistant";
/// The role given to a prompt message that names none.
pub const DEFAULT_ROLE: &str = "user";

// ---- AgentOps tool spans (children of the LLM span; `TraceToMessages.get_tool_calls`) --------

/// The tool's name.
pub const TOOL_NAME: &str = "tool.name";
/// The arguments (JSON text).
pub const TOOL_PARAMETERS: &str = "tool.parameters";
/// The tool call's id.
pub const TOOL_CALL_ID_ATTR: &str = "tool.call.id";

// ---- agl-host: attributes of its own ---------------------------------------------------------

/// A log span's level (`trace` .. `error`); a message span without it is a `ctx.message`.
pub const LOG_LEVEL: &str = "agl.log.level";
/// The agent component's name (root span).
pub const AGENT: &str = "agl.agent";
/// Root span: the attempt's sequence id, seed and clocks.
pub const ATTEMPT_SEQUENCE_ID: &str = "agl.attempt.sequence_id";
pub const RANDOM_SEED: &str = "agl.random_seed";
pub const CLOCK: &str = "agl.clock";
pub const CLOCK_START: &str = "agl.clock.start";
/// Root span: why the attempt failed, and the detail (a backtrace, the trap).
pub const FAILURE: &str = "agl.failure";
pub const FAILURE_DETAIL: &str = "agl.failure.detail";
/// Root span: the LLM calls and tokens the attempt spent.
pub const LLM_CALLS: &str = "agl.llm.calls";
pub const LLM_TOKENS: &str = "agl.llm.tokens";
/// Root span: bytes of linear memory the agent's instance was given (its memories at their largest).
pub const MEMORY_BYTES: &str = "agl.memory.bytes";
/// LLM span: the calls and tokens spent so far, this call included.
pub const LLM_CALLS_USED: &str = "agl.llm.calls_used";
pub const LLM_TOKENS_USED: &str = "agl.llm.tokens_used";
/// LLM span: prompt messages not recorded (the span keeps the first and the last ones,
/// numbered without a gap), and the prompt index where the left-out ones began.
pub const LLM_PROMPT_MESSAGES_DROPPED: &str = "agl.llm.prompt_messages_dropped";
pub const LLM_PROMPT_MESSAGES_DROPPED_AT: &str = "agl.llm.prompt_messages_dropped_at";
/// LLM span: how many prompt messages the request had.
pub const LLM_PROMPT_MESSAGES: &str = "agl.llm.prompt_messages";
/// LLM span: tool calls of the completion not recorded.
pub const LLM_TOOL_CALLS_DROPPED: &str = "agl.llm.tool_calls_dropped";
/// Tool calls of the prompt's assistant messages not recorded (past the span's bound).
pub const LLM_PROMPT_TOOL_CALLS_DROPPED: &str = "agl.llm.prompt_tool_calls_dropped";
/// LLM span: bytes of logprobs JSON not recorded (longer than the attribute cap; clipped JSON
/// would not parse).
pub const LLM_LOGPROBS_DROPPED_BYTES: &str = "agl.llm.logprobs_dropped_bytes";
/// The algorithm whose own rollout this is (its input and root span): an algorithm's LLM calls
/// are spans of a rollout it starts for them (never queued).
pub const ALGORITHM: &str = "agl.algorithm";
/// Rollout metadata: what kind of rollout this is; [`ALGORITHM_ROLLOUT`] for an algorithm's own.
/// Reports counting tasks skip those.
pub const ROLLOUT_KIND: &str = "agl.kind";
pub const ALGORITHM_ROLLOUT: &str = "algorithm";
/// Rollout metadata of a fork (`agl-host fork`): its lineage, an object with
/// `parent_rollout_id`, `parent_attempt_id`, `at_llm_call`, `branch` and `branches`. Exports
/// leave forks out unless asked.
pub const FORK: &str = "agl.fork";
/// An LLM span the LLM proxy wrote for an attempt (not a host call of its instance): the
/// upstream that answered (its API root or backend name; never a key).
pub const LLM_PROXY_UPSTREAM: &str = "agl.llm.proxy.upstream";
/// Captured stdout / stderr: the text kept and the bytes left out.
pub const OUTPUT_TEXT: &str = "agl.output.text";
pub const OUTPUT_DROPPED_BYTES: &str = "agl.output.dropped_bytes";
/// Resource spans: the resource's name, whether it was found, the resources version.
pub const RESOURCE_NAME: &str = "agl.resource.name";
pub const RESOURCE_FOUND: &str = "agl.resource.found";
pub const RESOURCES_ID: &str = "agl.resources_id";
/// The span-budget marker: what was dropped, and the budget.
pub const SPANS_DROPPED_COUNT: &str = "agl.spans.dropped.count";
pub const SPANS_DROPPED_BYTES: &str = "agl.spans.dropped.bytes";
/// JSON object: span name → spans of that name dropped.
pub const SPANS_DROPPED_BY_NAME: &str = "agl.spans.dropped.by_name";
/// The bound reached first: `count` or `bytes`.
pub const SPANS_BUDGET_BOUND: &str = "agl.spans.budget.bound";
pub const SPANS_BUDGET_MAX_COUNT: &str = "agl.spans.budget.max_count";
pub const SPANS_BUDGET_MAX_BYTES: &str = "agl.spans.budget.max_bytes";
/// A span of something the sandbox refused the guest (an HTTP request not granted or past its
/// budget, an LLM model not allowed, a budget spent, a request past its bounds): what was refused,
/// short and stable (`HTTP to http://127.0.0.1:9`, `LLM model gpt-4o`; no secrets, no prompts),
/// and the flag or manifest key that would allow it (`--agent-http http://127.0.0.1:9`). Reports
/// count refusals by the pair.
pub const SANDBOX_REFUSED: &str = "agl.sandbox.refused";
pub const SANDBOX_GRANT: &str = "agl.sandbox.grant";

// ---- Names agl-host wrote before these conventions (still read) ------------------------------

/// Until 0.1: messages were `agl.message` spans with an `agl.message` attribute, objects
/// `agl.object` spans with an `agl.object` attribute, logs `agl.log` spans with `agl.log.message`.
pub mod legacy {
    pub const MESSAGE: &str = "agl.message";
    pub const OBJECT: &str = "agl.object";
    pub const LOG_SPAN: &str = "agl.log";
    pub const LOG_MESSAGE: &str = "agl.log.message";
}

// ---- Indexed keys ----------------------------------------------------------------------------

/// `gen_ai.prompt.{index}.{field}`.
pub fn prompt_key(index: usize, field: &str) -> String {
    format!("{GEN_AI_PROMPT}.{index}.{field}")
}

/// `gen_ai.completion.{index}.{field}`.
pub fn completion_key(index: usize, field: &str) -> String {
    format!("{GEN_AI_COMPLETION}.{index}.{field}")
}

/// `gen_ai.prompt.{index}.tool_calls.{call}.{field}`: a tool call of an assistant prompt message.
pub fn prompt_tool_call_key(index: usize, call: usize, field: &str) -> String {
    format!("{GEN_AI_PROMPT}.{index}.{TOOL_CALLS}.{call}.{field}")
}

/// `gen_ai.completion.{choice}.tool_calls.{call}.{field}`.
pub fn completion_tool_call_key(choice: usize, call: usize, field: &str) -> String {
    format!("{GEN_AI_COMPLETION}.{choice}.{TOOL_CALLS}.{call}.{field}")
}

/// `agentlightning.reward.{index}.{field}`.
pub fn reward_key(index: usize, field: &str) -> String {
    format!("{REWARD_PREFIX}.{index}.{field}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexed_keys_follow_the_flattened_genai_and_reward_shapes() {
        assert_eq!(prompt_key(2, CONTENT), "gen_ai.prompt.2.content");
        assert_eq!(prompt_key(0, TOOL_CALL_ID), "gen_ai.prompt.0.tool_call_id");
        assert_eq!(completion_key(0, CONTENT), "gen_ai.completion.0.content");
        assert_eq!(
            completion_tool_call_key(0, 1, ARGUMENTS),
            "gen_ai.completion.0.tool_calls.1.arguments"
        );
        assert_eq!(reward_key(0, REWARD_NAME_FIELD), REWARD_0_NAME);
        assert_eq!(reward_key(0, REWARD_VALUE_FIELD), REWARD_0_VALUE);
    }

    #[test]
    fn agent_lightning_names_are_its_own() {
        for name in [
            ROLLOUT_SPAN,
            ANNOTATION_SPAN,
            MESSAGE_SPAN,
            OBJECT_SPAN,
            OPERATION_SPAN,
            MESSAGE_BODY,
            OBJECT_JSON,
            OPERATION_NAME,
            ROLLOUT_ID,
            ATTEMPT_ID,
            SPAN_SEQUENCE_ID,
        ] {
            assert!(name.starts_with("agentlightning."), "{name}");
        }
    }
}
