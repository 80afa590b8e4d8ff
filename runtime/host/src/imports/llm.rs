//! `agl:agent/llm`: chat completions through the host. The gate converts the guest's request,
//! checks the model against the policy, the attempt's budget (calls, tokens) and the request's
//! size (`agl_llm::validate_request`: bytes, `max_tokens`, tools) before anything is sent, bounds
//! the call with its own timeout (epochs cannot interrupt a guest waiting in a host call), and
//! accounts the tokens. The agent's calls become LLM spans (`spans::llm`); an algorithm's go
//! through the same gate (`algorithm::host_imports`).

use crate::bindings::llm::{self as wit, Host};
use crate::policy::{LlmBudget, LlmPolicy, LlmRequestLimits, SandboxPolicy};
use crate::sandbox::{Capability, InstanceContext, SandboxError, World};
use crate::spans::{AttemptTrace, LiveSpan, llm as llm_span, names};
use crate::state::HostState;
use agl_llm::{ChatRequest, ChatResponse, LlmBackend, LlmError, Message, RequestLimits, Role, Tool};
use opentelemetry::KeyValue;
use opentelemetry::trace::{SpanKind, Status};
use std::sync::Arc;
use std::time::Duration;

/// The LLM access of one attempt (or one algorithm run): backend, allowed models, budget, request
/// limits and what was spent.
pub struct LlmGate {
    backend: Arc<dyn LlmBackend>,
    allowed_models: Arc<[String]>,
    budget: LlmBudget,
    limits: RequestLimits,
    timeout: Duration,
    pub(crate) calls: u32,
    pub(crate) tokens: u64,
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

impl LlmGate {
    pub fn new(backend: Arc<dyn LlmBackend>, policy: &LlmPolicy) -> Self {
        Self {
            backend,
            allowed_models: policy.allowed_models.iter().cloned().collect(),
            budget: policy.budget,
            limits: request_limits(&policy.request),
            timeout: policy.timeout,
            calls: 0,
            tokens: 0,
        }
    }

    /// The model `request` will use: its own, else the backend's default.
    pub(crate) fn model_of(&self, request: &wit::ChatRequest) -> String {
        request
            .model
            .clone()
            .unwrap_or_else(|| self.backend.default_model().to_owned())
    }

    /// Admits, sends and accounts one converted request: model, budget and size checks, the call
    /// under its own timeout, token usage. Nothing reaches the backend unless every check passes.
    pub(crate) async fn call(&mut self, request: &ChatRequest) -> Result<ChatResponse, wit::LlmError> {
        self.admit(request)?;
        self.calls += 1;
        let call = self.backend.chat(request);
        match tokio::time::timeout(self.timeout, call).await {
            Err(_) => Err(wit::LlmError::Timeout),
            Ok(Err(e)) => Err(to_guest_error(e)),
            Ok(Ok(response)) => {
                let usage = u64::from(response.usage.input_tokens) + u64::from(response.usage.output_tokens);
                self.tokens = self.tokens.saturating_add(usage);
                Ok(response)
            }
        }
    }

    /// Whether the policy lets this request go out: its model, the budget left, its size.
    fn admit(&self, request: &ChatRequest) -> Result<(), wit::LlmError> {
        let default = self.backend.default_model();
        let model = request.model.as_deref().unwrap_or(default);
        let allowed = model == default || self.allowed_models.iter().any(|m| m == model);
        if !allowed {
            return Err(wit::LlmError::ModelNotAllowed(model.to_owned()));
        }
        if self.calls >= self.budget.max_calls {
            return Err(wit::LlmError::BudgetExceeded(format!(
                "calls: {} of {} used",
                self.calls, self.budget.max_calls
            )));
        }
        if self.tokens >= self.budget.max_tokens {
            return Err(wit::LlmError::BudgetExceeded(format!(
                "tokens: {} of {} used",
                self.tokens, self.budget.max_tokens
            )));
        }
        let remaining = self.budget.max_tokens - self.tokens;
        agl_llm::validate_request(request, &self.limits, remaining).map_err(|rejected| {
            if rejected.is_budget() {
                wit::LlmError::BudgetExceeded(rejected.to_string())
            } else {
                wit::LlmError::InvalidRequest(rejected.to_string())
            }
        })
    }
}

fn role(role: wit::Role) -> Role {
    match role {
        wit::Role::System => Role::System,
        wit::Role::User => Role::User,
        wit::Role::Assistant => Role::Assistant,
        wit::Role::Tool => Role::Tool,
    }
}

/// The guest's request in the backend's terms, with `model` filled in (strings moved, not copied).
pub(crate) fn to_backend_request(request: wit::ChatRequest, model: String) -> Result<ChatRequest, wit::LlmError> {
    let tools = request
        .tools
        .into_iter()
        .map(|t| {
            serde_json::from_str(&t.parameters_json)
                .map(|parameters| Tool {
                    name: t.name.clone(),
                    description: t.description,
                    parameters,
                })
                .map_err(|e| wit::LlmError::InvalidRequest(format!("tool '{}': parameters are not JSON: {e}", t.name)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ChatRequest {
        messages: request
            .messages
            .into_iter()
            .map(|m| Message {
                role: role(m.role),
                content: m.content,
                tool_call_id: m.tool_call_id,
                tool_calls: m
                    .tool_calls
                    .into_iter()
                    .map(|c| agl_llm::ToolCall {
                        id: c.id,
                        name: c.name,
                        arguments: c.arguments_json,
                    })
                    .collect(),
            })
            .collect(),
        model: Some(model),
        temperature: request.temperature,
        max_tokens: request.max_tokens,
        stop: request.stop,
        tools,
    })
}

pub(crate) fn to_guest_response(response: ChatResponse) -> wit::ChatResponse {
    wit::ChatResponse {
        content: response.content,
        tool_calls: response
            .tool_calls
            .into_iter()
            .map(|c| wit::ToolCall {
                id: c.id,
                name: c.name,
                arguments_json: c.arguments,
            })
            .collect(),
        finish_reason: response.finish_reason,
        usage: wit::Usage {
            input_tokens: response.usage.input_tokens,
            output_tokens: response.usage.output_tokens,
        },
        model: response.model,
    }
}

fn to_guest_error(error: LlmError) -> wit::LlmError {
    match error {
        LlmError::InvalidRequest(m) => wit::LlmError::InvalidRequest(m),
        LlmError::Backend(m) => wit::LlmError::Backend(m),
        LlmError::Timeout => wit::LlmError::Timeout,
    }
}

pub(crate) fn error_kind(error: &wit::LlmError) -> (&'static str, String) {
    match error {
        wit::LlmError::ModelNotAllowed(m) => ("model-not-allowed", format!("model '{m}' is not allowed")),
        wit::LlmError::BudgetExceeded(m) => ("budget-exceeded", format!("LLM budget exceeded ({m})")),
        wit::LlmError::Timeout => ("timeout", "LLM call timed out".to_owned()),
        wit::LlmError::InvalidRequest(m) => ("invalid-request", m.clone()),
        wit::LlmError::Backend(m) => ("backend", m.clone()),
    }
}

/// One chat as both worlds make it: the guest's request converted, recorded as the start of an
/// LLM span in `trace` (if any; attribute values clipped to `cap`), sent through `gate`, and the
/// span ended with the answer or the error. Returns what the guest gets.
pub(crate) async fn traced_chat(
    gate: &mut LlmGate,
    request: wit::ChatRequest,
    trace: Option<&AttemptTrace>,
    cap: usize,
) -> Result<wit::ChatResponse, wit::LlmError> {
    let model = gate.model_of(&request);
    let converted = to_backend_request(request, model.clone());
    let attributes = match &converted {
        Ok(request) => llm_span::request_attributes(request, &model, cap),
        Err(_) => vec![
            KeyValue::new(names::GEN_AI_OPERATION_NAME, "chat"),
            KeyValue::new(names::GEN_AI_REQUEST_MODEL, model),
        ],
    };
    let mut span: Option<LiveSpan> = trace.map(|trace| trace.start(names::LLM, SpanKind::Client, attributes));
    let outcome = match converted {
        Ok(request) => gate.call(&request).await,
        Err(error) => Err(error),
    };
    let spent = [
        KeyValue::new(names::LLM_CALLS_USED, i64::from(gate.calls)),
        KeyValue::new(names::LLM_TOKENS_USED, i64::try_from(gate.tokens).unwrap_or(i64::MAX)),
    ];
    match outcome {
        Ok(response) => {
            if let Some(mut span) = span.take() {
                span.set_attributes(llm_span::response_attributes(&response, cap).into_iter().chain(spent));
                span.end_with(Status::Ok);
            }
            Ok(to_guest_response(response))
        }
        Err(error) => {
            let (kind, description) = error_kind(&error);
            if let Some(mut span) = span.take() {
                span.set_attributes([KeyValue::new(names::ERROR_TYPE, kind)].into_iter().chain(spent));
                span.end_with(Status::error(description));
            }
            Err(error)
        }
    }
}

/// The LLM capability: the gate of one instance, from the policy's `llm` slice. Its imports are
/// the `agl:agent/llm` interface of each world's bindings.
impl Capability for LlmGate {
    fn prepare(policy: &SandboxPolicy, instance: &InstanceContext) -> Result<Self, SandboxError> {
        Ok(Self::new(Arc::clone(&instance.llm), &policy.llm))
    }
}

impl Host for HostState {
    async fn chat(&mut self, request: wit::ChatRequest) -> wasmtime::Result<Result<wit::ChatResponse, wit::LlmError>> {
        let trace = self.world.trace().await;
        let cap = trace.map_or(0, |trace| trace.budget().max_attribute_bytes);
        Ok(traced_chat(&mut self.sandbox.llm, request, trace, cap).await)
    }
}
