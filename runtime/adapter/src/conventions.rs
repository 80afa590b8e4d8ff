//! The span names and attribute keys the adapter understands, in one place: Agent-lightning
//! 0.3.0's own conventions (`agentlightning/semconv.py`, `agentlightning/emitter/reward.py`) and
//! the OpenTelemetry GenAI attributes as OpenLLMetry / AgentOps write them, which agl-host's LLM
//! spans use too. Indexed keys (`gen_ai.prompt.{i}.role`) are built with the functions below.

// ---- Agent-lightning: span names -------------------------------------------------------------

/// Annotation spans: rewards, tags, metadata (`AGL_ANNOTATION`). agl-host records rewards as these.
pub const ANNOTATION_SPAN: &str = "agentlightning.annotation";
/// Operation spans: a wrapped function or block (`AGL_OPERATION`).
pub const OPERATION_SPAN: &str = "agentlightning.operation";
/// The operation name (`agentlightning.operation.name`) of a reward operation (`AGL_REWARD`); LLM
/// calls made inside one (an LLM judge) are not the agent's own calls.
pub const REWARD_OPERATION: &str = "agentlightning.reward";
/// The attribute naming an operation span's operation.
pub const OPERATION_NAME: &str = "agentlightning.operation.name";
/// The LLM call span of agl-host and of OpenLLMetry's OpenAI instrumentation. A span whose name
/// contains it is an LLM call, as `TracerTraceToTriplet`'s default `llm_call_match` regex
/// `openai\.chat\.completion` (a search, so `openai.chat.completions.create` matches too).
pub const LLM_SPAN: &str = "openai.chat.completion";

// ---- Agent-lightning: attributes -------------------------------------------------------------

/// Resource/span attribute: the rollout a span belongs to.
pub const ROLLOUT_ID: &str = "agentlightning.rollout_id";
/// Resource/span attribute: the attempt a span belongs to.
pub const ATTEMPT_ID: &str = "agentlightning.attempt_id";
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
/// The model that answered.
pub const GEN_AI_RESPONSE_MODEL: &str = "gen_ai.response.model";
/// The provider's response id; Agent-lightning deduplicates LLM spans by it.
pub const GEN_AI_RESPONSE_ID: &str = "gen_ai.response.id";
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

// ---- Indexed keys ----------------------------------------------------------------------------

/// `gen_ai.prompt.{index}.{field}`.
pub fn prompt_key(index: usize, field: &str) -> String {
    format!("{GEN_AI_PROMPT}.{index}.{field}")
}

/// `gen_ai.completion.{index}.{field}`.
pub fn completion_key(index: usize, field: &str) -> String {
    format!("{GEN_AI_COMPLETION}.{index}.{field}")
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
    fn keys_are_what_the_host_writes() {
        assert_eq!(prompt_key(2, CONTENT), "gen_ai.prompt.2.content");
        assert_eq!(completion_key(0, CONTENT), "gen_ai.completion.0.content");
        assert_eq!(
            completion_tool_call_key(0, 1, ARGUMENTS),
            "gen_ai.completion.0.tool_calls.1.arguments"
        );
        assert_eq!(reward_key(0, REWARD_NAME_FIELD), REWARD_0_NAME);
        assert_eq!(reward_key(0, REWARD_VALUE_FIELD), REWARD_0_VALUE);
    }
}
