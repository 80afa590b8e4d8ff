//! `agl:agent/llm`: chat completions through the host. The gate checks the model against the
//! policy and the attempt's budget (calls, tokens) first, bounds the call with its own timeout
//! (epochs cannot interrupt a guest waiting in a host call), and records an LLM span with the
//! OpenTelemetry GenAI attributes plus prompt and completion content for triplet adapters.

use crate::bindings::llm::{self as wit, Host};
use crate::policy::{LlmBudget, SandboxPolicy};
use crate::spans::names;
use crate::state::{HostState, clip};
use agl_llm::{ChatRequest, ChatResponse, LlmBackend, LlmError, Message, Role, Tool};
use opentelemetry::trace::{SpanKind, Status};
use opentelemetry::{Array, KeyValue, StringValue, Value};
use std::sync::Arc;
use std::time::Duration;

/// The LLM access of one attempt: backend, allowed models, budget and what was spent.
pub struct LlmGate {
    backend: Arc<dyn LlmBackend>,
    allowed_models: Arc<[String]>,
    budget: LlmBudget,
    timeout: Duration,
    pub(crate) calls: u32,
    pub(crate) tokens: u64,
}

impl LlmGate {
    pub fn new(backend: Arc<dyn LlmBackend>, policy: &SandboxPolicy) -> Self {
        Self {
            backend,
            allowed_models: policy.allowed_models.iter().cloned().collect(),
            budget: policy.llm_budget,
            timeout: policy.llm_timeout,
            calls: 0,
            tokens: 0,
        }
    }

    /// Admits, sends and accounts one chat request: model check, budget, the call under its own
    /// timeout, token usage. Spans are the caller's business.
    pub(crate) async fn call(&mut self, request: &wit::ChatRequest) -> Result<ChatResponse, wit::LlmError> {
        let model = self.admit(request.model.as_deref())?;
        let backend_request = to_backend_request(request, model)?;
        self.calls += 1;
        let call = self.backend.chat(&backend_request);
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

    /// The model this request will use, if the policy lets the agent use it.
    fn admit(&self, requested: Option<&str>) -> Result<String, wit::LlmError> {
        let default = self.backend.default_model();
        let model = requested.unwrap_or(default);
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
        Ok(model.to_owned())
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

fn role_name(role: wit::Role) -> &'static str {
    match role {
        wit::Role::System => "system",
        wit::Role::User => "user",
        wit::Role::Assistant => "assistant",
        wit::Role::Tool => "tool",
    }
}

fn to_backend_request(request: &wit::ChatRequest, model: String) -> Result<ChatRequest, wit::LlmError> {
    if request.messages.is_empty() {
        return Err(wit::LlmError::InvalidRequest(
            "a chat request needs at least one message".into(),
        ));
    }
    let tools = request
        .tools
        .iter()
        .map(|t| {
            serde_json::from_str(&t.parameters_json)
                .map(|parameters| Tool {
                    name: t.name.clone(),
                    description: t.description.clone(),
                    parameters,
                })
                .map_err(|e| wit::LlmError::InvalidRequest(format!("tool '{}': parameters are not JSON: {e}", t.name)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ChatRequest {
        messages: request
            .messages
            .iter()
            .map(|m| Message {
                role: role(m.role),
                content: m.content.clone(),
                tool_call_id: m.tool_call_id.clone(),
            })
            .collect(),
        model: Some(model),
        temperature: request.temperature,
        max_tokens: request.max_tokens,
        stop: request.stop.clone(),
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

/// GenAI request attributes, with the prompt messages as `gen_ai.prompt.{i}.role/content`.
fn request_attributes(request: &wit::ChatRequest, model: &str, cap: usize) -> Vec<KeyValue> {
    let mut attributes = vec![
        KeyValue::new("gen_ai.operation.name", "chat"),
        KeyValue::new("gen_ai.request.model", model.to_owned()),
    ];
    if let Some(t) = request.temperature {
        attributes.push(KeyValue::new("gen_ai.request.temperature", f64::from(t)));
    }
    if let Some(m) = request.max_tokens {
        attributes.push(KeyValue::new("gen_ai.request.max_tokens", i64::from(m)));
    }
    for (i, message) in request.messages.iter().enumerate() {
        attributes.push(KeyValue::new(
            format!("gen_ai.prompt.{i}.role"),
            role_name(message.role),
        ));
        attributes.push(KeyValue::new(
            format!("gen_ai.prompt.{i}.content"),
            clip(&message.content, cap),
        ));
    }
    attributes
}

fn response_attributes(response: &ChatResponse, cap: usize) -> Vec<KeyValue> {
    let mut attributes = vec![
        KeyValue::new("gen_ai.response.model", response.model.clone()),
        KeyValue::new(
            "gen_ai.response.finish_reasons",
            Value::Array(Array::String(vec![StringValue::from(response.finish_reason.clone())])),
        ),
        KeyValue::new("gen_ai.usage.input_tokens", i64::from(response.usage.input_tokens)),
        KeyValue::new("gen_ai.usage.output_tokens", i64::from(response.usage.output_tokens)),
        KeyValue::new("gen_ai.completion.0.role", "assistant"),
        KeyValue::new("gen_ai.completion.0.content", clip(&response.content, cap)),
    ];
    for (j, call) in response.tool_calls.iter().enumerate() {
        attributes.push(KeyValue::new(
            format!("gen_ai.completion.0.tool_calls.{j}.id"),
            call.id.clone(),
        ));
        attributes.push(KeyValue::new(
            format!("gen_ai.completion.0.tool_calls.{j}.name"),
            call.name.clone(),
        ));
        attributes.push(KeyValue::new(
            format!("gen_ai.completion.0.tool_calls.{j}.arguments"),
            clip(&call.arguments, cap),
        ));
    }
    attributes
}

impl Host for HostState {
    async fn chat(&mut self, request: wit::ChatRequest) -> wasmtime::Result<Result<wit::ChatResponse, wit::LlmError>> {
        let cap = self.trace.budget().max_attribute_bytes;
        let model = request.model.as_deref().unwrap_or(self.llm.backend.default_model());
        let mut span = Some(
            self.trace
                .start(names::LLM, SpanKind::Client, request_attributes(&request, model, cap)),
        );
        let outcome = self.llm.call(&request).await;
        let budget = [
            KeyValue::new("agl.llm.calls_used", i64::from(self.llm.calls)),
            KeyValue::new(
                "agl.llm.tokens_used",
                i64::try_from(self.llm.tokens).unwrap_or(i64::MAX),
            ),
        ];
        match outcome {
            Ok(response) => {
                if let Some(mut span) = span.take() {
                    span.set_attributes(response_attributes(&response, cap).into_iter().chain(budget));
                    span.end_with(Status::Ok);
                }
                Ok(Ok(to_guest_response(response)))
            }
            Err(error) => {
                if let Some(mut span) = span.take() {
                    let (kind, description) = error_kind(&error);
                    span.set_attributes([KeyValue::new("error.type", kind)].into_iter().chain(budget));
                    span.end_with(Status::error(description));
                }
                Ok(Err(error))
            }
        }
    }
}
