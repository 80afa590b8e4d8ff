//! What one attempt (or one algorithm run) may spend on LLM calls, whichever way it calls: the
//! `llm` import's gate (agl-wasm's `capabilities::llm`) and the LLM proxy's per-attempt capability
//! (`agl-proxy`) admit every request through the same [`LlmAllowance`] — the models the policy
//! allows, the calls and tokens left, the bounds on one request — and charge it the tokens each
//! answer used, so an agent that reaches the proxy gets exactly what its own `llm` import allows.

use agl_llm::{ChatRequest, RequestLimits, RequestRejected, Usage};
use agl_policy::{LlmBudget, LlmPolicy, LlmRequestLimits};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;
use thiserror::Error;

/// Why a request was not let through (nothing reached the endpoint, nothing was counted).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LlmRefusal {
    #[error("model '{0}' is not allowed")]
    ModelNotAllowed(String),
    #[error("LLM budget exceeded ({0})")]
    BudgetExceeded(String),
    #[error("{0}")]
    InvalidRequest(String),
}

/// What a refused request asked for, short and stable (no prompt, no counts that change from one
/// call to the next), and the flag that would allow it: a refused call span's
/// `agl.sandbox.refused` and `agl.sandbox.grant`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub what: String,
    pub grant: String,
}

impl Refused {
    fn new(what: String, grant: impl Into<String>) -> Self {
        Self {
            what,
            grant: grant.into(),
        }
    }
}

/// A model name as a refusal names it: at most 200 bytes (the guest chose it).
fn clip(model: &str) -> &str {
    const MAX: usize = 200;
    if model.len() <= MAX {
        return model;
    }
    let mut end = MAX;
    while !model.is_char_boundary(end) {
        end -= 1;
    }
    &model[..end]
}

/// The LLM policy of one attempt and what it has spent; shared (`Arc`) between the ways the
/// attempt calls.
#[derive(Debug)]
pub struct LlmAllowance {
    policy: LlmPolicy,
    allowed_models: Vec<String>,
    budget: LlmBudget,
    limits: RequestLimits,
    timeout: Duration,
    calls: AtomicU32,
    tokens: AtomicU64,
}

/// The policy's request limits in `agl_llm`'s terms.
fn request_limits(limits: &LlmRequestLimits) -> RequestLimits {
    RequestLimits {
        max_request_bytes: limits.max_request_bytes,
        max_output_tokens: limits.max_output_tokens,
        max_tools: limits.max_tools,
        max_tools_bytes: limits.max_tools_bytes,
    }
}

impl LlmAllowance {
    /// Nothing spent yet.
    pub fn new(policy: &LlmPolicy) -> Self {
        Self {
            policy: policy.clone(),
            allowed_models: policy.allowed_models.clone(),
            budget: policy.budget,
            limits: request_limits(&policy.request),
            timeout: policy.timeout,
            calls: AtomicU32::new(0),
            tokens: AtomicU64::new(0),
        }
    }

    /// The policy it applies.
    pub fn policy(&self) -> &LlmPolicy {
        &self.policy
    }

    /// Calls admitted so far.
    pub fn calls(&self) -> u32 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Tokens (input + output) the answers used so far.
    pub fn tokens(&self) -> u64 {
        self.tokens.load(Ordering::Relaxed)
    }

    /// How long one call may take.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The largest request body (JSON, every field) worth reading for a call under this policy:
    /// the messages' and the tools' bounds, plus room for the other fields.
    pub fn max_body_bytes(&self) -> u64 {
        const OTHER_FIELDS: u64 = 64 * 1024;
        self.limits
            .max_request_bytes
            .saturating_add(self.limits.max_tools_bytes)
            .saturating_mul(2)
            .saturating_add(OTHER_FIELDS)
    }

    /// Whether `model` may be asked for: the default one (`default_model`, the backend's or
    /// what the operator's resources name), or one the policy allows.
    pub fn allows_model(&self, model: &str, default_model: &str) -> bool {
        model == default_model || self.allowed_models.iter().any(|m| m == model)
    }

    /// Admits one request and counts it as a call: its model (`request.model`, else
    /// `default_model`), the calls and tokens left, its size. Nothing is counted when refused.
    pub fn admit(&self, request: &ChatRequest, default_model: &str) -> Result<(), LlmRefusal> {
        self.admit_explained(request, default_model)
            .map_err(|(refusal, _)| refusal)
    }

    /// [`Self::admit`], and with a refusal what was refused and the flag that would allow it
    /// (none for a request no flag makes valid: one without messages).
    pub fn admit_explained(
        &self,
        request: &ChatRequest,
        default_model: &str,
    ) -> Result<(), (LlmRefusal, Option<Refused>)> {
        let model = request.model.as_deref().unwrap_or(default_model);
        if !self.allows_model(model, default_model) {
            let shown = clip(model);
            let refused = Refused::new(format!("LLM model {shown}"), format!("--agent-model {shown}"));
            return Err((LlmRefusal::ModelNotAllowed(model.to_owned()), Some(refused)));
        }
        let tokens = self.tokens();
        let max_tokens = self.budget.max_tokens;
        let tokens_spent = || {
            Refused::new(
                format!("LLM tokens past {max_tokens} per attempt"),
                "--agent-llm-tokens",
            )
        };
        if tokens >= max_tokens {
            let why = format!("tokens: {tokens} of {max_tokens} used");
            return Err((LlmRefusal::BudgetExceeded(why), Some(tokens_spent())));
        }
        if let Err(rejected) = agl_llm::validate_request(request, &self.limits, max_tokens - tokens) {
            let refused = match &rejected {
                RequestRejected::NoMessages => None,
                RequestRejected::MaxTokensOverBudget { .. } => Some(tokens_spent()),
                RequestRejected::TooLarge { limit, .. } => Some(Refused::new(
                    format!("LLM request over {limit} bytes"),
                    "--agent-llm-max-request",
                )),
                RequestRejected::MaxTokensTooLarge { limit, .. } => Some(Refused::new(
                    format!("LLM max_tokens over {limit}"),
                    "--agent-llm-max-output-tokens",
                )),
                RequestRejected::TooManyTools { limit, .. } => Some(Refused::new(
                    format!("LLM request with over {limit} tools"),
                    "--agent-llm-max-tools",
                )),
                RequestRejected::ToolsTooLarge { limit, .. } => Some(Refused::new(
                    format!("LLM tools over {limit} bytes"),
                    "--agent-llm-max-tools-size",
                )),
            };
            let refusal = if rejected.is_budget() {
                LlmRefusal::BudgetExceeded(rejected.to_string())
            } else {
                LlmRefusal::InvalidRequest(rejected.to_string())
            };
            return Err((refusal, refused));
        }
        // The call is counted only if one is left: two ways of calling at once cannot both take
        // the last one.
        let max_calls = self.budget.max_calls;
        self.calls
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                (used < max_calls).then_some(used + 1)
            })
            .map(|_| ())
            .map_err(|used| {
                let refused = Refused::new(format!("LLM calls past {max_calls} per attempt"), "--agent-llm-calls");
                (
                    LlmRefusal::BudgetExceeded(format!("calls: {used} of {max_calls} used")),
                    Some(refused),
                )
            })
    }

    /// Charges the tokens an answer used.
    pub fn charge(&self, usage: &Usage) {
        let used = u64::from(usage.input_tokens) + u64::from(usage.output_tokens);
        let _ = self
            .tokens
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| Some(t.saturating_add(used)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agl_llm::{Message, Role};

    fn request(model: Option<&str>) -> ChatRequest {
        ChatRequest {
            messages: vec![Message {
                role: Role::User,
                content: "hi".into(),
                tool_call_id: None,
                tool_calls: Vec::new(),
            }],
            model: model.map(str::to_owned),
            temperature: None,
            max_tokens: None,
            stop: Vec::new(),
            tools: Vec::new(),
        }
    }

    fn policy(calls: u32, tokens: u64, models: &[&str]) -> LlmPolicy {
        LlmPolicy {
            allowed_models: models.iter().map(|m| (*m).to_owned()).collect(),
            budget: LlmBudget {
                max_calls: calls,
                max_tokens: tokens,
            },
            ..LlmPolicy::default()
        }
    }

    #[test]
    fn the_default_model_and_allowed_ones_pass_others_do_not() {
        let allowance = LlmAllowance::new(&policy(10, 1000, &["extra"]));
        assert_eq!(allowance.admit(&request(None), "m"), Ok(()));
        assert_eq!(allowance.admit(&request(Some("m")), "m"), Ok(()));
        assert_eq!(allowance.admit(&request(Some("extra")), "m"), Ok(()));
        assert_eq!(
            allowance.admit(&request(Some("gpt-5-pro")), "m"),
            Err(LlmRefusal::ModelNotAllowed("gpt-5-pro".into()))
        );
        assert_eq!(allowance.calls(), 3, "a refused request is not counted");
    }

    #[test]
    fn calls_and_tokens_are_one_budget_for_every_caller() {
        let allowance = std::sync::Arc::new(LlmAllowance::new(&policy(2, 100, &[])));
        let other = allowance.clone();
        assert_eq!(allowance.admit(&request(None), "m"), Ok(()));
        assert_eq!(other.admit(&request(None), "m"), Ok(()));
        assert!(matches!(
            allowance.admit(&request(None), "m"),
            Err(LlmRefusal::BudgetExceeded(_))
        ));
        let tokens = LlmAllowance::new(&policy(10, 100, &[]));
        tokens.charge(&Usage {
            input_tokens: 60,
            output_tokens: 40,
        });
        assert!(matches!(
            tokens.admit(&request(None), "m"),
            Err(LlmRefusal::BudgetExceeded(_))
        ));
        assert_eq!(tokens.tokens(), 100);
    }

    #[test]
    fn an_oversized_request_is_invalid_and_not_counted() {
        let mut p = policy(10, 1_000_000, &[]);
        p.request.max_request_bytes = 8;
        let allowance = LlmAllowance::new(&p);
        let mut big = request(None);
        big.messages[0].content = "x".repeat(100);
        assert!(matches!(allowance.admit(&big, "m"), Err(LlmRefusal::InvalidRequest(_))));
        assert_eq!(allowance.calls(), 0);
    }

    #[test]
    fn a_refusal_names_what_was_refused_and_the_flag_that_grants_it() {
        let refused = |allowance: &LlmAllowance, request: &ChatRequest| {
            let (_, refused) = allowance.admit_explained(request, "m").expect_err("refused");
            refused.map(|r| (r.what, r.grant))
        };
        let mut p = policy(1, 1000, &[]);
        p.request.max_output_tokens = 50;
        let allowance = LlmAllowance::new(&p);
        assert_eq!(
            refused(&allowance, &request(Some("gpt-4o"))),
            Some(("LLM model gpt-4o".into(), "--agent-model gpt-4o".into()))
        );
        let mut long = request(None);
        long.max_tokens = Some(60);
        assert_eq!(
            refused(&allowance, &long),
            Some(("LLM max_tokens over 50".into(), "--agent-llm-max-output-tokens".into()))
        );
        let mut empty = request(None);
        empty.messages.clear();
        assert_eq!(refused(&allowance, &empty), None, "no flag makes it valid");
        assert_eq!(allowance.admit(&request(None), "m"), Ok(()));
        assert_eq!(
            refused(&allowance, &request(None)),
            Some(("LLM calls past 1 per attempt".into(), "--agent-llm-calls".into()))
        );
        let huge = "x".repeat(1000);
        let (what, _) = refused(&allowance, &request(Some(&huge))).expect("named");
        assert!(
            what.len() < 300,
            "a guest's model name is clipped: {} bytes",
            what.len()
        );
    }
}
