//! What the bridges of the older `agl:agent` versions (`v0_1`, `v0_2`) share: the [`Convert`]
//! trait; the conversions of the types every version has alike (`convert_common_types!`); and the
//! older imports served by the current implementation, one macro per interface (`serve_llm!` ...).
//! The macros are expanded in a version's own modules, where `old_llm`, `new_llm` and the rest name
//! that version's bindings and the current ones; what differs between versions (0.1.0's messages
//! have no tool calls) stays in the version's `convert.rs`.

/// A conversion between the two versions of one WIT type (`From` cannot be used for `Vec` and
/// `Option` of generated types: both are foreign).
pub(crate) trait Convert<T> {
    fn convert(self) -> T;
}

impl<A: Convert<B>, B> Convert<Vec<B>> for Vec<A> {
    fn convert(self) -> Vec<B> {
        self.into_iter().map(Convert::convert).collect()
    }
}

impl<A: Convert<B>, B> Convert<Option<B>> for Option<A> {
    fn convert(self) -> Option<B> {
        self.map(Convert::convert)
    }
}

/// Enums and variants without payloads: the same case names on both sides.
macro_rules! same_cases {
    ($from:ident :: $ty:ident => $to:ident, $($case:ident),+) => {
        impl $crate::older::Convert<$to::$ty> for $from::$ty {
            fn convert(self) -> $to::$ty {
                match self {
                    $($from::$ty::$case => $to::$ty::$case),+
                }
            }
        }
    };
}
pub(crate) use same_cases;

/// The conversions of the types that are the same in every version, both ways where a call needs
/// both, for a version module whose `convert.rs` has the `old_*` and `new_*` names in scope.
macro_rules! convert_common_types {
    () => {
        $crate::older::same_cases!(old_types::Mode => new_types, Train, Val, Test);
        $crate::older::same_cases!(new_types::Mode => old_types, Train, Val, Test);
        $crate::older::same_cases!(old_llm::Role => new_llm, System, User, Assistant, Tool);
        $crate::older::same_cases!(new_llm::Role => old_llm, System, User, Assistant, Tool);
        $crate::older::same_cases!(old_trace::Level => new_trace, Trace, Debug, Info, Warn, Error);
        $crate::older::same_cases!(old_store::RolloutStatus => new_store, Queuing, Preparing, Running, Failed, Succeeded, Cancelled, Requeuing);
        $crate::older::same_cases!(new_store::RolloutStatus => old_store, Queuing, Preparing, Running, Failed, Succeeded, Cancelled, Requeuing);

        impl $crate::older::Convert<new_llm::Tool> for old_llm::Tool {
            fn convert(self) -> new_llm::Tool {
                new_llm::Tool {
                    name: self.name,
                    description: self.description,
                    parameters_json: self.parameters_json,
                }
            }
        }

        impl $crate::older::Convert<new_llm::ChatRequest> for old_llm::ChatRequest {
            fn convert(self) -> new_llm::ChatRequest {
                new_llm::ChatRequest {
                    messages: self.messages.convert(),
                    model: self.model,
                    temperature: self.temperature,
                    max_tokens: self.max_tokens,
                    stop: self.stop,
                    tools: self.tools.convert(),
                }
            }
        }

        impl $crate::older::Convert<old_llm::ToolCall> for new_llm::ToolCall {
            fn convert(self) -> old_llm::ToolCall {
                old_llm::ToolCall {
                    id: self.id,
                    name: self.name,
                    arguments_json: self.arguments_json,
                }
            }
        }

        impl $crate::older::Convert<old_llm::ChatResponse> for new_llm::ChatResponse {
            fn convert(self) -> old_llm::ChatResponse {
                old_llm::ChatResponse {
                    content: self.content,
                    tool_calls: self.tool_calls.convert(),
                    finish_reason: self.finish_reason,
                    usage: old_llm::Usage {
                        input_tokens: self.usage.input_tokens,
                        output_tokens: self.usage.output_tokens,
                    },
                    model: self.model,
                }
            }
        }

        impl $crate::older::Convert<old_llm::LlmError> for new_llm::LlmError {
            fn convert(self) -> old_llm::LlmError {
                match self {
                    new_llm::LlmError::ModelNotAllowed(m) => old_llm::LlmError::ModelNotAllowed(m),
                    new_llm::LlmError::BudgetExceeded(m) => old_llm::LlmError::BudgetExceeded(m),
                    new_llm::LlmError::Timeout => old_llm::LlmError::Timeout,
                    new_llm::LlmError::InvalidRequest(m) => old_llm::LlmError::InvalidRequest(m),
                    new_llm::LlmError::Backend(m) => old_llm::LlmError::Backend(m),
                }
            }
        }

        impl $crate::older::Convert<old_resources::LlmEndpoint> for new_resources::LlmEndpoint {
            fn convert(self) -> old_resources::LlmEndpoint {
                old_resources::LlmEndpoint {
                    endpoint: self.endpoint,
                    model: self.model,
                    sampling_parameters_json: self.sampling_parameters_json,
                }
            }
        }

        impl $crate::older::Convert<old_resources::Resource> for new_resources::Resource {
            fn convert(self) -> old_resources::Resource {
                match self {
                    new_resources::Resource::PromptTemplate(t) => {
                        old_resources::Resource::PromptTemplate(old_resources::PromptTemplate {
                            template: t.template,
                            engine: t.engine,
                        })
                    }
                    new_resources::Resource::Llm(e) => old_resources::Resource::Llm(e.convert()),
                    new_resources::Resource::ProxyLlm(e) => old_resources::Resource::ProxyLlm(e.convert()),
                }
            }
        }

        impl $crate::older::Convert<new_store::NewRollout> for old_store::NewRollout {
            fn convert(self) -> new_store::NewRollout {
                new_store::NewRollout {
                    input_json: self.input_json,
                    mode: self.mode.convert(),
                    resources_id: self.resources_id,
                    config_json: self.config_json,
                    metadata_json: self.metadata_json,
                }
            }
        }

        impl $crate::older::Convert<old_store::Rollout> for new_store::Rollout {
            fn convert(self) -> old_store::Rollout {
                old_store::Rollout {
                    rollout_id: self.rollout_id,
                    input_json: self.input_json,
                    mode: self.mode.convert(),
                    resources_id: self.resources_id,
                    status: self.status.convert(),
                    attempts: self.attempts,
                    failure: self.failure,
                    start_time: self.start_time,
                    end_time: self.end_time,
                }
            }
        }

        impl $crate::older::Convert<old_store::ResourcesVersion> for new_store::ResourcesVersion {
            fn convert(self) -> old_store::ResourcesVersion {
                old_store::ResourcesVersion {
                    resources_id: self.resources_id,
                    resources_json: self.resources_json,
                }
            }
        }

        impl $crate::older::Convert<old_adapter::Triplet> for new_adapter::Triplet {
            fn convert(self) -> old_adapter::Triplet {
                old_adapter::Triplet {
                    prompt: self.prompt.convert(),
                    response: self.response,
                    reward: self.reward,
                    model: self.model,
                }
            }
        }
    };
}
pub(crate) use convert_common_types;

/// `llm` of an older version for each state that serves it now.
macro_rules! serve_llm {
    ($($state:ty),+) => {$(
        impl old_llm::Host for $state {
            async fn chat(
                &mut self,
                request: old_llm::ChatRequest,
            ) -> wasmtime::Result<Result<old_llm::ChatResponse, old_llm::LlmError>> {
                let answer = new_llm::Host::chat(self, request.convert()).await?;
                Ok(answer.map(Convert::convert).map_err(Convert::convert))
            }
        }
    )+};
}
pub(crate) use serve_llm;

/// `reward` of an older version for each state that serves it now.
macro_rules! serve_reward {
    ($($state:ty),+) => {$(
        impl old_reward::Host for $state {
            fn emit(&mut self, value: f64) -> wasmtime::Result<()> {
                new_reward::Host::emit(self, value)
            }

            fn emit_named(&mut self, name: String, value: f64) -> wasmtime::Result<()> {
                new_reward::Host::emit_named(self, name, value)
            }
        }
    )+};
}
pub(crate) use serve_reward;

/// `resources` of an older version for each state that serves it now.
macro_rules! serve_resources {
    ($($state:ty),+) => {$(
        impl old_resources::Host for $state {
            fn get(&mut self, name: String) -> wasmtime::Result<Option<old_resources::Resource>> {
                Ok(new_resources::Host::get(self, name)?.convert())
            }

            fn format_prompt(&mut self, name: String, vars: Vec<(String, String)>) -> wasmtime::Result<Result<String, String>> {
                new_resources::Host::format_prompt(self, name, vars)
            }
        }
    )+};
}
pub(crate) use serve_resources;

/// `trace` of an older version for each state that serves it now.
macro_rules! serve_trace {
    ($($state:ty),+) => {$(
        impl old_trace::Host for $state {
            fn log(&mut self, level: old_trace::Level, message: String) -> wasmtime::Result<()> {
                new_trace::Host::log(self, level.convert(), message)
            }

            fn message(&mut self, text: String) -> wasmtime::Result<()> {
                new_trace::Host::message(self, text)
            }

            fn object(&mut self, json: String) -> wasmtime::Result<()> {
                new_trace::Host::object(self, json)
            }

            fn start_operation(&mut self, name: String) -> wasmtime::Result<u64> {
                new_trace::Host::start_operation(self, name)
            }

            fn end_operation(&mut self, handle: u64, error: Option<String>) -> wasmtime::Result<()> {
                new_trace::Host::end_operation(self, handle, error)
            }
        }
    )+};
}
pub(crate) use serve_trace;

/// `progress` of an older version for each state that serves it now.
macro_rules! serve_progress {
    ($($state:ty),+) => {$(
        impl old_progress::Host for $state {
            fn status(&mut self, text: String) {
                new_progress::Host::status(self, text);
            }

            fn best(&mut self, score: f64, resources_id: Option<String>, detail_json: String) {
                new_progress::Host::best(self, score, resources_id, detail_json);
            }
        }
    )+};
}
pub(crate) use serve_progress;

/// `store` of an older version for each state that serves it now.
macro_rules! serve_store {
    ($($state:ty),+) => {$(
        impl old_store::Host for $state {
            async fn enqueue(&mut self, rollouts: Vec<old_store::NewRollout>) -> Result<Vec<old_store::Rollout>, String> {
                Ok(new_store::Host::enqueue(self, rollouts.convert()).await?.convert())
            }

            async fn wait(&mut self, rollout_ids: Vec<String>, timeout_seconds: f64) -> Result<Vec<old_store::Rollout>, String> {
                Ok(new_store::Host::wait(self, rollout_ids, timeout_seconds).await?.convert())
            }

            async fn get_rollout(&mut self, rollout_id: String) -> Result<Option<old_store::Rollout>, String> {
                Ok(new_store::Host::get_rollout(self, rollout_id).await?.convert())
            }

            async fn query_rollouts(
                &mut self,
                statuses: Vec<old_store::RolloutStatus>,
                limit: u32,
                offset: u32,
            ) -> Result<Vec<old_store::Rollout>, String> {
                Ok(new_store::Host::query_rollouts(self, statuses.convert(), limit, offset)
                    .await?
                    .convert())
            }

            async fn query_spans(&mut self, rollout_id: String, attempt_id: Option<String>) -> Result<Vec<String>, String> {
                new_store::Host::query_spans(self, rollout_id, attempt_id).await
            }

            async fn cancel(&mut self, rollout_id: String) -> Result<(), String> {
                new_store::Host::cancel(self, rollout_id).await
            }

            async fn add_resources(&mut self, resources_json: String) -> Result<String, String> {
                new_store::Host::add_resources(self, resources_json).await
            }

            async fn update_resources(&mut self, resources_id: String, resources_json: String) -> Result<(), String> {
                new_store::Host::update_resources(self, resources_id, resources_json).await
            }

            async fn latest_resources(&mut self) -> Result<Option<old_store::ResourcesVersion>, String> {
                Ok(new_store::Host::latest_resources(self).await?.convert())
            }

            async fn get_resources(&mut self, resources_id: String) -> Result<Option<old_store::ResourcesVersion>, String> {
                Ok(new_store::Host::get_resources(self, resources_id).await?.convert())
            }
        }
    )+};
}
pub(crate) use serve_store;

/// `adapter` of an older version for each state that serves it now.
macro_rules! serve_adapter {
    ($($state:ty),+) => {$(
        impl old_adapter::Host for $state {
            async fn triplets(
                &mut self,
                rollout_id: String,
                attempt_id: Option<String>,
            ) -> Result<Vec<old_adapter::Triplet>, String> {
                Ok(new_adapter::Host::triplets(self, rollout_id, attempt_id).await?.convert())
            }

            async fn messages(
                &mut self,
                rollout_id: String,
                attempt_id: Option<String>,
            ) -> Result<Vec<Vec<old_llm::Message>>, String> {
                Ok(new_adapter::Host::messages(self, rollout_id, attempt_id).await?.convert())
            }

            async fn final_reward(&mut self, rollout_id: String, attempt_id: Option<String>) -> Result<Option<f64>, String> {
                new_adapter::Host::final_reward(self, rollout_id, attempt_id).await
            }
        }
    )+};
}
pub(crate) use serve_adapter;
