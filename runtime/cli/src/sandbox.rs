//! The agent's sandbox from the `--agent-*` flags, layered on its manifest.

use crate::args::AgentSandboxArgs;
use crate::inputs::InputError;
use agl_wasm::PolicyOverrides;
use agl_wasm::policy::{parse_dir_grant, parse_duration, parse_env_grant, parse_size};

pub fn overrides(args: &AgentSandboxArgs) -> Result<PolicyOverrides, InputError> {
    let bad = |flag: &str, e: agl_wasm::PolicyError| InputError(format!("--{flag}: {e}"));
    Ok(PolicyOverrides {
        memory_bytes: args
            .agent_memory
            .as_deref()
            .map(parse_size)
            .transpose()
            .map_err(|e| bad("agent-memory", e))?,
        deadline: args
            .agent_timeout
            .as_deref()
            .map(parse_duration)
            .transpose()
            .map_err(|e| bad("agent-timeout", e))?,
        fuel: args.agent_fuel,
        dirs: args
            .agent_dir
            .iter()
            .map(|d| parse_dir_grant(d))
            .collect::<Result<_, _>>()
            .map_err(|e| bad("agent-dir", e))?,
        env: args
            .agent_env
            .iter()
            .map(|e| parse_env_grant(e, |name| std::env::var(name).ok()))
            .collect::<Result<_, _>>()
            .map_err(|e| bad("agent-env", e))?,
        allowed_models: args.agent_model.clone(),
        llm_max_calls: args.agent_llm_calls,
        llm_max_tokens: args.agent_llm_tokens,
        llm_timeout: args
            .llm_timeout
            .as_deref()
            .map(parse_duration)
            .transpose()
            .map_err(|e| bad("llm-timeout", e))?,
        llm_max_request_bytes: args
            .agent_llm_max_request
            .as_deref()
            .map(parse_size)
            .transpose()
            .map_err(|e| bad("agent-llm-max-request", e))?,
        llm_max_output_tokens: args.agent_llm_max_output_tokens,
        llm_max_tools: args.agent_llm_max_tools,
        llm_max_tools_bytes: args
            .agent_llm_max_tools_size
            .as_deref()
            .map(parse_size)
            .transpose()
            .map_err(|e| bad("agent-llm-max-tools-size", e))?,
        real_clock: args.agent_real_clock,
        max_spans: args.agent_max_spans,
        max_span_bytes: args
            .agent_max_span_bytes
            .as_deref()
            .map(parse_size)
            .transpose()
            .map_err(|e| bad("agent-max-span-bytes", e))?,
        max_attribute_bytes: args
            .agent_max_attribute_bytes
            .as_deref()
            .map(parse_size)
            .transpose()
            .map_err(|e| bad("agent-max-attribute-bytes", e))?,
    })
}
