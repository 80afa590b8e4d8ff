//! The resources capability, `agl:agent/resources` (agents only): the rollout's resources,
//! read-only; LLM endpoints without their keys. No policy slice: its state is the attempt's
//! resources version.

use super::tape::answered;
use super::{Capability, InstanceContext, Link, SandboxError};
use crate::algorithm::AlgorithmRun;
use crate::bindings::resources::{Host, LlmEndpoint, PromptTemplate, Resource};
use crate::policy::SandboxPolicy;
use crate::state::{AttemptState, HostState};
use crate::v0_1::agent::resources as v0_1_resources;
use crate::v0_2::agent::resources as v0_2_resources;
use agl_store::{LlmResource, Resource as StoreResource, ResourcesUpdate, TemplateEngine};
use agl_trace::names;
use opentelemetry::KeyValue;
use opentelemetry::trace::Status;
use std::sync::Arc;
use wasmtime::component::{HasSelf, Linker};

/// The rollout's resources version, if it has one.
pub struct Resources(Option<Arc<ResourcesUpdate>>);

impl Capability for Resources {
    fn prepare(_policy: &SandboxPolicy, instance: &InstanceContext) -> Result<Self, SandboxError> {
        Ok(Self(instance.resources.clone()))
    }
}

/// `agl:agent/resources` at 0.3.0, 0.2.0 and 0.1.0.
impl Link<AttemptState> for Resources {
    fn link(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
        crate::bindings::resources::add_to_linker::<_, HasSelf<_>>(linker, |state| state)?;
        v0_2_resources::add_to_linker::<_, HasSelf<_>>(linker, |state| state)?;
        v0_1_resources::add_to_linker::<_, HasSelf<_>>(linker, |state| state)
    }
}

/// The algorithm world reads resources through its store instead.
impl Link<AlgorithmRun> for Resources {}

fn engine_name(engine: TemplateEngine) -> &'static str {
    match engine {
        TemplateEngine::FString => "f-string",
        TemplateEngine::Jinja => "jinja",
        TemplateEngine::Poml => "poml",
    }
}

fn endpoint(llm: &LlmResource) -> LlmEndpoint {
    LlmEndpoint {
        endpoint: llm.endpoint.clone(),
        model: llm.model.clone(),
        sampling_parameters_json: serde_json::Value::Object(llm.sampling_parameters.clone()).to_string(),
    }
}

impl HostState {
    fn resource(&self, name: &str) -> Option<&StoreResource> {
        self.sandbox.resources.0.as_ref()?.resources.get(name)
    }

    fn format_named_prompt(&self, name: &str, vars: &[(String, String)]) -> Result<String, String> {
        match self.resource(name) {
            None => Err(format!("no resource named '{name}' in this rollout's resources")),
            Some(StoreResource::PromptTemplate(t)) if t.engine == TemplateEngine::FString => {
                agl_template::format(&t.template, vars).map_err(|e| format!("prompt '{name}': {e}"))
            }
            Some(StoreResource::PromptTemplate(t)) => Err(format!(
                "prompt '{name}' uses the {} engine; format-prompt fills f-string templates (read it with get)",
                engine_name(t.engine)
            )),
            Some(_) => Err(format!("resource '{name}' is not a prompt template")),
        }
    }
}

impl Host for HostState {
    fn get(&mut self, name: String) -> wasmtime::Result<Option<Resource>> {
        let cue = self
            .sandbox
            .tape
            .handle
            .call("resources.get", || serde_json::json!({ "name": name }))?;
        let found = answered(cue, || self.resource(&name).cloned());
        let found = found.as_ref().map(|r| match r {
            StoreResource::PromptTemplate(t) => Resource::PromptTemplate(PromptTemplate {
                template: t.template.clone(),
                engine: engine_name(t.engine).to_owned(),
            }),
            StoreResource::Llm(llm) => Resource::Llm(endpoint(llm)),
            StoreResource::ProxyLlm(llm) => Resource::ProxyLlm(endpoint(llm)),
        });
        let attributes = vec![
            KeyValue::new(names::RESOURCE_NAME, name),
            KeyValue::new(names::RESOURCE_FOUND, found.is_some()),
        ];
        self.world.trace.instant(names::RESOURCE_GET, attributes, Status::Unset);
        Ok(found)
    }

    fn format_prompt(&mut self, name: String, vars: Vec<(String, String)>) -> wasmtime::Result<Result<String, String>> {
        let cue = self.sandbox.tape.handle.call(
            "resources.format-prompt",
            || serde_json::json!({ "name": name, "vars": vars }),
        )?;
        let result = answered(cue, || self.format_named_prompt(&name, &vars));
        let mut attributes = vec![KeyValue::new(names::RESOURCE_NAME, name)];
        if let Some(id) = self.sandbox.resources.0.as_ref().map(|r| r.resources_id.clone()) {
            attributes.push(KeyValue::new(names::RESOURCES_ID, id));
        }
        let status = match &result {
            Ok(_) => Status::Ok,
            Err(e) => Status::error(e.clone()),
        };
        self.world.trace.instant(names::FORMAT_PROMPT, attributes, status);
        Ok(result)
    }
}
