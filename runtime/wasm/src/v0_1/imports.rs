//! Every `agl:agent@0.1.0` import served by its 0.3.0 implementation, for the agent state and the
//! algorithm state alike (one macro per interface, instantiated for each state that serves it).

use super::agent::{llm as old_llm, resources as old_resources, reward as old_reward, trace as old_trace};
use super::algorithm::{adapter as old_adapter, progress as old_progress, store as old_store};
use super::convert::Convert;
use crate::algorithm::AlgorithmState;
use crate::algorithm::bindings::{adapter as new_adapter, progress as new_progress, store as new_store};
use crate::bindings::{llm as new_llm, resources as new_resources, reward as new_reward, trace as new_trace};
use crate::state::HostState;

/// `llm` at 0.1.0 for each state that serves it at 0.3.0.
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
serve_llm!(HostState, AlgorithmState);

/// `reward` at 0.1.0 for each state that serves it at 0.3.0.
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
serve_reward!(HostState);

/// `resources` at 0.1.0 for each state that serves it at 0.3.0.
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
serve_resources!(HostState);

/// `trace` at 0.1.0 for each state that serves it at 0.3.0.
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
serve_trace!(HostState, AlgorithmState);

/// `progress` at 0.1.0 for each state that serves it at 0.3.0.
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
serve_progress!(AlgorithmState);

/// `store` at 0.1.0 for each state that serves it at 0.3.0.
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
serve_store!(AlgorithmState);

/// `adapter` at 0.1.0 for each state that serves it at 0.3.0.
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
serve_adapter!(AlgorithmState);
