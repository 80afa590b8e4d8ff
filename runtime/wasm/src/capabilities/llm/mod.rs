//! The LLM capability, `agl:agent/llm`: chat completions through the host. The gate converts the guest's request,
//! checks the model against the policy, the attempt's budget (calls, tokens) and the request's
//! size (`agl_llm::validate_request`: bytes, `max_tokens`, tools) before anything is sent, bounds
//! the call with its own timeout (epochs cannot interrupt a guest waiting in a host call), and
//! accounts the tokens. The agent's calls become LLM spans (`agl_trace::llm`); an algorithm's go
//! through the same gate (`algorithm::host_imports`). Policy slice: `llm`.

use super::tape::{Cue, Diverged, LLM_CHAT, TapeHandle};
use super::{Capability, InstanceContext, InstanceState, Link, SandboxError, World};
use crate::bindings::llm::{self as wit, Host};
use crate::policy::{LlmPolicy, SandboxPolicy};
use crate::state::HostState;
use crate::v0_1::agent::llm as v0_1_llm;
use crate::v0_2::agent::llm as v0_2_llm;
use agl_llm::{ChatRequest, ChatResponse, LlmBackend, LlmError, Message, Role, Tool};
use agl_trace::{AttemptTrace, LiveSpan, llm as llm_span, names};
use agl_trace::{LlmAllowance, LlmRefusal, Refused};
use opentelemetry::KeyValue;
use opentelemetry::trace::{SpanKind, Status};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tokio_util::task::AbortOnDropHandle;
use wasmtime::component::{HasSelf, Linker};

/// The LLM access of one attempt (or one algorithm run): the backend, and the allowance its
/// requests are admitted and charged through (shared with the LLM proxy's capability for the
/// same attempt, when it has one).
pub struct LlmGate {
    backend: Arc<dyn LlmBackend>,
    allowance: Arc<LlmAllowance>,
    /// The attempt's tape: what the backend answered is kept, or, replaying, read from it.
    tape: TapeHandle,
}

impl LlmGate {
    pub fn new(backend: Arc<dyn LlmBackend>, policy: &LlmPolicy) -> Self {
        Self::with_allowance(backend, Arc::new(LlmAllowance::new(policy)))
    }

    /// A gate spending `allowance`, which other callers of the same attempt may share.
    pub fn with_allowance(backend: Arc<dyn LlmBackend>, allowance: Arc<LlmAllowance>) -> Self {
        Self {
            backend,
            allowance,
            tape: TapeHandle::default(),
        }
    }

    /// Calls admitted so far (by every caller of the allowance).
    pub(crate) fn calls(&self) -> u32 {
        self.allowance.calls()
    }

    /// Tokens spent so far (by every caller of the allowance).
    pub(crate) fn tokens(&self) -> u64 {
        self.allowance.tokens()
    }

    /// The model `request` will use: its own, else the default — the backend's, or, while a
    /// replay answers from its tape, the one the recorded backend had (so that the request is
    /// the recorded one whatever backend the replay is given).
    pub(crate) fn model_of(&self, request: &wit::ChatRequest) -> String {
        request
            .model
            .clone()
            .or_else(|| self.tape.recorded_default_model())
            .unwrap_or_else(|| self.backend.default_model().to_owned())
    }

    /// Admits, sends and accounts one converted request: model, budget and size checks, the call
    /// under its own timeout, token usage. Nothing reaches the backend unless every check passes;
    /// a refusal of those checks comes with what was refused and what would grant it.
    ///
    /// `cue` is what the attempt's tape made of the call: the backend's answer is kept, or,
    /// replaying, read from the tape instead of asked for (the checks and accounting run the same).
    pub(crate) async fn call(
        &mut self,
        request: ChatRequest,
        cue: Cue,
    ) -> Result<ChatResponse, (wit::LlmError, Option<Refused>)> {
        let default_model = self.tape.recorded_default_model();
        let default_model = default_model.as_deref().unwrap_or(self.backend.default_model());
        self.allowance
            .admit_explained(&request, default_model)
            .map_err(|(refusal, refused)| {
                let error = match refusal {
                    LlmRefusal::ModelNotAllowed(model) => wit::LlmError::ModelNotAllowed(model),
                    LlmRefusal::BudgetExceeded(why) => wit::LlmError::BudgetExceeded(why),
                    LlmRefusal::InvalidRequest(why) => wit::LlmError::InvalidRequest(why),
                };
                (error, refused)
            })?;
        let answer = match cue {
            Cue::Recorded(answer) => BackendAnswer::read(answer),
            Cue::Live(ticket) => {
                let answer = self.ask_backend(request).await;
                ticket.answer(|| answer.kept());
                answer
            }
        };
        match answer {
            BackendAnswer::Response(response) => {
                self.allowance.charge(&response.usage);
                Ok(*response)
            }
            BackendAnswer::Timeout => Err((wit::LlmError::Timeout, None)),
            BackendAnswer::Backend(message) => Err((wit::LlmError::Backend(message), None)),
            BackendAnswer::InvalidRequest(message) => Err((wit::LlmError::InvalidRequest(message), None)),
        }
    }

    /// Sends an admitted request to the backend, under the allowance's timeout.
    async fn ask_backend(&self, request: ChatRequest) -> BackendAnswer {
        let backend = Arc::clone(&self.backend);
        let timeout = self.allowance.timeout();
        // The call is a task of its own: the HTTP client's deep polling then runs on a runtime
        // worker's stack, not on this instance's fiber stack, whose pages stay resident for as
        // long as the agent waits (thousands of agents waiting on their LLM at once).
        // Aborted when dropped: an abandoned host call (the attempt's deadline) cancels the request.
        let call = AbortOnDropHandle::new(tokio::spawn(async move {
            tokio::time::timeout(timeout, backend.chat(&request)).await
        }));
        match call.await {
            Err(panicked) => BackendAnswer::Backend(format!("the LLM call failed: {panicked}")),
            Ok(Err(_)) => BackendAnswer::Timeout,
            Ok(Ok(Err(LlmError::InvalidRequest(m)))) => BackendAnswer::InvalidRequest(m),
            Ok(Ok(Err(LlmError::Backend(m)))) => BackendAnswer::Backend(m),
            Ok(Ok(Err(LlmError::Timeout))) => BackendAnswer::Timeout,
            Ok(Ok(Ok(response))) => BackendAnswer::Response(Box::new(response)),
        }
    }
}

/// What the backend answered an admitted request, as the tape keeps it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum BackendAnswer {
    Response(Box<ChatResponse>),
    InvalidRequest(String),
    Backend(String),
    Timeout,
}

impl BackendAnswer {
    fn kept(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// A kept answer read back; one that cannot be read is the backend's error.
    fn read(answer: serde_json::Value) -> Self {
        serde_json::from_value(answer)
            .unwrap_or_else(|e| Self::Backend(format!("the recorded LLM answer cannot be read: {e}")))
    }
}

/// The answer a fork gives its LLM call instead of a live one: the model replying `text`.
pub fn scripted_answer(text: &str, model: &str) -> serde_json::Value {
    BackendAnswer::Response(Box::new(ChatResponse {
        content: text.to_owned(),
        tool_calls: Vec::new(),
        finish_reason: "stop".to_owned(),
        usage: agl_llm::Usage::default(),
        model: model.to_owned(),
        id: None,
        tokens: agl_llm::TokenDetail::default(),
    }))
    .kept()
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
/// span ended with the answer or the error. Returns what the guest gets; a replay that the call
/// leaves (`Diverged`) stops the guest.
pub(crate) async fn traced_chat(
    gate: &mut LlmGate,
    request: wit::ChatRequest,
    trace: Option<&AttemptTrace>,
    cap: usize,
) -> Result<Result<wit::ChatResponse, wit::LlmError>, Diverged> {
    let model = gate.model_of(&request);
    let named_model = request.model.is_some();
    let mut converted = to_backend_request(request, model.clone());
    let cue = gate.tape.call(LLM_CHAT, || match &converted {
        Ok(request) => serde_json::to_value(request).unwrap_or(serde_json::Value::Null),
        Err(error) => serde_json::json!({ "invalid": error_kind(error).1 }),
    })?;
    // A replay's call that leaves the tape (a fork, a divergence gone live) without a model of
    // its own takes the live backend's default, not the recorded one.
    let left_the_tape = gate.tape.is_replaying() && gate.tape.recorded_default_model().is_none();
    if let (Ok(request), false, true) = (&mut converted, named_model, left_the_tape) {
        request.model = None;
    }
    let attributes = match &converted {
        Ok(request) => llm_span::request_attributes(request, &model, cap),
        Err(_) => vec![
            KeyValue::new(names::GEN_AI_OPERATION_NAME, "chat"),
            KeyValue::new(names::GEN_AI_REQUEST_MODEL, model),
        ],
    };
    let mut span: Option<LiveSpan> = trace.map(|trace| trace.start(names::LLM, SpanKind::Client, attributes));
    let outcome = match converted {
        Ok(request) => gate.call(request, cue).await,
        Err(error) => Err((error, None)),
    };
    let spent = [
        KeyValue::new(names::LLM_CALLS_USED, i64::from(gate.calls())),
        KeyValue::new(names::LLM_TOKENS_USED, i64::try_from(gate.tokens()).unwrap_or(i64::MAX)),
    ];
    match outcome {
        Ok(response) => {
            if let Some(mut span) = span.take() {
                span.set_attributes(llm_span::response_attributes(&response, cap).into_iter().chain(spent));
                span.end_with(Status::Ok);
            }
            Ok(Ok(to_guest_response(response)))
        }
        Err((error, refused)) => {
            let (kind, description) = error_kind(&error);
            if let Some(mut span) = span.take() {
                let refused = refused.into_iter().flat_map(|r| {
                    [
                        KeyValue::new(names::SANDBOX_REFUSED, r.what),
                        KeyValue::new(names::SANDBOX_GRANT, r.grant),
                    ]
                });
                span.set_attributes(
                    [KeyValue::new(names::ERROR_TYPE, kind)]
                        .into_iter()
                        .chain(spent)
                        .chain(refused),
                );
                span.end_with(Status::error(description));
            }
            Ok(Err(error))
        }
    }
}

/// `agl:agent/llm` at 0.3.0, 0.2.0 and 0.1.0, which each world serves its own way (an algorithm's calls
/// are also lines of its log, `algorithm::host_imports`).
impl<W: World> Link<W> for LlmGate
where
    InstanceState<W>: Host + v0_2_llm::Host + v0_1_llm::Host,
{
    fn link(linker: &mut Linker<InstanceState<W>>) -> wasmtime::Result<()> {
        wit::add_to_linker::<_, HasSelf<_>>(linker, |state| state)?;
        v0_2_llm::add_to_linker::<_, HasSelf<_>>(linker, |state| state)?;
        v0_1_llm::add_to_linker::<_, HasSelf<_>>(linker, |state| state)
    }
}

/// The LLM capability: the gate of one instance, from the policy's `llm` slice.
impl Capability for LlmGate {
    fn prepare(policy: &SandboxPolicy, instance: &InstanceContext) -> Result<Self, SandboxError> {
        let backend = Arc::clone(&instance.llm);
        let mut gate = match &instance.llm_allowance {
            Some(allowance) => Self::with_allowance(backend, Arc::clone(allowance)),
            None => Self::new(backend, &policy.llm),
        };
        gate.tape = instance.tape.clone();
        Ok(gate)
    }
}

impl Host for HostState {
    async fn chat(&mut self, request: wit::ChatRequest) -> wasmtime::Result<Result<wit::ChatResponse, wit::LlmError>> {
        let trace = self.world.trace().await;
        let cap = trace.map_or(0, |trace| trace.budget().max_attribute_bytes);
        Ok(traced_chat(&mut self.sandbox.llm, request, trace, cap).await?)
    }
}
