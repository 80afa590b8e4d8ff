//! The LLM slice: which models a guest may ask for, how many calls and tokens it may spend, how
//! long one call may take and how large one request may be. The gate that enforces it is the
//! host's (agl-wasm's `capabilities/llm/`); the manifest's table is `[llm]`.

use crate::value::{HumanDuration, Size};
use crate::{Layer, set};
use serde::Deserialize;
use std::time::Duration;

pub const DEFAULT_LLM_TIMEOUT: Duration = Duration::from_secs(120);
pub const DEFAULT_LLM_MAX_CALLS: u32 = 100;
pub const DEFAULT_LLM_MAX_TOKENS: u64 = 1_000_000;
/// Largest LLM request (bytes of its messages and stop sequences): room for long contexts.
pub const DEFAULT_LLM_MAX_REQUEST_BYTES: u64 = 4 << 20;
/// Largest `max_tokens` one LLM request may ask for.
pub const DEFAULT_LLM_MAX_OUTPUT_TOKENS: u32 = 1_000_000;
/// Most tools one LLM request may offer, and their total bytes (names, descriptions, schemas).
pub const DEFAULT_LLM_MAX_TOOLS: u32 = 128;
pub const DEFAULT_LLM_MAX_TOOLS_BYTES: u64 = 1 << 20;
pub const ALGORITHM_LLM_MAX_CALLS: u32 = 100_000;
pub const ALGORITHM_LLM_MAX_TOKENS: u64 = 1_000_000_000;

/// How many LLM calls and tokens one attempt may spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LlmBudget {
    pub max_calls: u32,
    pub max_tokens: u64,
}

impl Default for LlmBudget {
    fn default() -> Self {
        Self {
            max_calls: DEFAULT_LLM_MAX_CALLS,
            max_tokens: DEFAULT_LLM_MAX_TOKENS,
        }
    }
}

/// How large one LLM request may be. A larger one is refused to the guest as `invalid-request`
/// (a `max_tokens` beyond what the budget has left as `budget-exceeded`) and never sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LlmRequestLimits {
    /// Bytes of the messages (content, tool call ids, roles) and stop sequences.
    pub max_request_bytes: u64,
    pub max_output_tokens: u32,
    pub max_tools: u32,
    /// Bytes of the tool definitions.
    pub max_tools_bytes: u64,
}

impl Default for LlmRequestLimits {
    fn default() -> Self {
        Self {
            max_request_bytes: DEFAULT_LLM_MAX_REQUEST_BYTES,
            max_output_tokens: DEFAULT_LLM_MAX_OUTPUT_TOKENS,
            max_tools: DEFAULT_LLM_MAX_TOOLS,
            max_tools_bytes: DEFAULT_LLM_MAX_TOOLS_BYTES,
        }
    }
}

/// A guest's access to the LLM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlmPolicy {
    /// Models the guest may ask for; empty = only the backend's default model.
    pub allowed_models: Vec<String>,
    pub budget: LlmBudget,
    /// Timeout of one LLM call (a guest blocked in a host call is not interrupted by epochs).
    pub timeout: Duration,
    /// Bounds on one LLM request, checked before it is sent.
    pub request: LlmRequestLimits,
}

impl Default for LlmPolicy {
    fn default() -> Self {
        Self {
            allowed_models: Vec::new(),
            budget: LlmBudget::default(),
            timeout: DEFAULT_LLM_TIMEOUT,
            request: LlmRequestLimits::default(),
        }
    }
}

impl LlmPolicy {
    /// An algorithm's: 100k calls and 1G tokens per run.
    pub fn algorithm() -> Self {
        Self {
            budget: LlmBudget {
                max_calls: ALGORITHM_LLM_MAX_CALLS,
                max_tokens: ALGORITHM_LLM_MAX_TOKENS,
            },
            ..Self::default()
        }
    }
}

/// The LLM access as a manifest's `[llm]` table or the flags set it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, clap::Args)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct LlmOptions {
    /// Allow a model besides the default one. Repeatable.
    #[arg(long = "agent-model", value_name = "MODEL")]
    #[serde(default)]
    pub models: Vec<String>,
    /// LLM calls allowed per attempt.
    #[arg(long = "agent-llm-calls", value_name = "N")]
    pub max_calls: Option<u32>,
    /// LLM tokens (input + output) allowed per attempt.
    #[arg(long = "agent-llm-tokens", value_name = "N")]
    pub max_tokens: Option<u64>,
    /// Timeout of one LLM call, e.g. 120s (the algorithm's calls too).
    #[arg(id = "llm_timeout", long = "llm-timeout", value_name = "DURATION")]
    pub timeout: Option<HumanDuration>,
    /// Largest LLM request (bytes of its messages), e.g. 4MiB; a larger one is refused, not sent.
    #[arg(long = "agent-llm-max-request", value_name = "SIZE")]
    pub max_request: Option<Size>,
    /// Largest `max_tokens` one LLM request may ask for.
    #[arg(long = "agent-llm-max-output-tokens", value_name = "N")]
    pub max_output_tokens: Option<u32>,
    /// Most tools one LLM request may offer.
    #[arg(long = "agent-llm-max-tools", value_name = "N")]
    pub max_tools: Option<u32>,
    /// Largest tool list of one LLM request (bytes of names, descriptions and schemas), e.g. 1MiB.
    #[arg(long = "agent-llm-max-tools-size", value_name = "SIZE")]
    pub max_tools_size: Option<Size>,
}

impl Layer for LlmOptions {
    type Policy = LlmPolicy;
    fn apply(self, llm: &mut LlmPolicy) {
        llm.allowed_models.extend(self.models);
        set(&mut llm.budget.max_calls, self.max_calls);
        set(&mut llm.budget.max_tokens, self.max_tokens);
        set(&mut llm.timeout, self.timeout.map(|t| t.0));
        set(&mut llm.request.max_request_bytes, self.max_request.map(|s| s.0));
        set(&mut llm.request.max_output_tokens, self.max_output_tokens);
        set(&mut llm.request.max_tools, self.max_tools);
        set(&mut llm.request.max_tools_bytes, self.max_tools_size.map(|s| s.0));
    }
}
