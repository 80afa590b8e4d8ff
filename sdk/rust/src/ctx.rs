//! [`Ctx`]: what one attempt of a rollout can reach — who is running, the LLM, rewards and the
//! rollout's resources. A capability module (`src/capabilities/`) adds its own accessor (e.g.
//! `ctx.http()`, the `Trace` calls). Every call goes to the host, which records it as a span.

use crate::bindings::agl::agent::{resources, reward};
use crate::{Error, Llm, Mode, Prompt, Resource, Result, RolloutContext};

/// The context of one attempt, handed to the agent function by [`export_agent!`](crate::export_agent).
#[derive(Debug)]
pub struct Ctx {
    context: RolloutContext,
}

impl Ctx {
    pub(crate) fn new(context: RolloutContext) -> Self {
        Ctx { context }
    }

    /// The rollout this attempt belongs to.
    pub fn rollout_id(&self) -> &str {
        &self.context.rollout_id
    }

    /// This attempt's id.
    pub fn attempt_id(&self) -> &str {
        &self.context.attempt_id
    }

    /// 1 for the first attempt, 2 for the first retry, ...
    pub fn attempt_number(&self) -> u32 {
        self.context.attempt_number
    }

    /// The split of the rollout (train, val, test), when the algorithm set one.
    pub fn mode(&self) -> Option<Mode> {
        self.context.mode
    }

    /// The version of the resources this attempt uses (e.g. "rs-1a2b3c4d5e6f").
    pub fn resources_id(&self) -> Option<&str> {
        self.context.resources_id.as_deref()
    }

    /// The host's LLM.
    pub fn llm(&self) -> Llm {
        Llm::new()
    }

    /// Records the rollout's primary reward (a later one replaces an earlier one as "final").
    pub fn reward(&self, value: f64) {
        reward::emit(value);
    }

    /// Records one of several named rewards.
    pub fn reward_named(&self, name: &str, value: f64) {
        reward::emit_named(name, value);
    }

    /// Gives textual feedback on this attempt beside its reward: what went wrong on this task
    /// ("expected 27, got 2.7: units", a compiler error, a failed check), for algorithms that learn
    /// from text. Several calls append, in order; the host keeps up to 16 KiB in all (the rest is
    /// dropped and counted, never failing the attempt) and records them on the final reward span.
    pub fn feedback(&self, text: &str) {
        reward::feedback(text);
    }

    /// The resource called `name` in this attempt's resources, if there is one.
    pub fn resource(&self, name: &str) -> Option<Resource> {
        resources::get(name)
    }

    /// The prompt template called `name`; an error when there is none or it is not a template.
    pub fn prompt(&self, name: &str) -> Result<Prompt> {
        match self.resource(name) {
            Some(resource) => prompt_from(name, resource),
            None => Err(Error::new(format!(
                "no resource named `{name}` in this rollout's resources ({})",
                self.resources_id()
                    .map_or("the rollout has no resources".to_string(), |id| format!("version {id}"))
            ))),
        }
    }

    /// The prompt template called `name`, or `fallback_template` (an inline f-string template) when
    /// the resources have no such resource. A resource of another kind is still an error.
    pub fn prompt_or(&self, name: &str, fallback_template: &str) -> Result<Prompt> {
        match self.resource(name) {
            Some(resource) => prompt_from(name, resource),
            None => Ok(Prompt::inline(fallback_template)),
        }
    }
}

fn prompt_from(name: &str, resource: Resource) -> Result<Prompt> {
    match resource {
        Resource::PromptTemplate(t) => Ok(Prompt::from_resource(name, t.template, t.engine)),
        other => Err(Error::new(format!(
            "resource `{name}` is {}, not a prompt template",
            other.kind()
        ))),
    }
}

impl Resource {
    /// What kind of resource this is, in words ("a prompt template", "an LLM endpoint", ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Resource::PromptTemplate(_) => "a prompt template",
            Resource::Llm(_) => "an LLM endpoint",
            Resource::ProxyLlm(_) => "a proxy LLM endpoint",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LlmEndpoint, PromptTemplate};

    fn context() -> RolloutContext {
        RolloutContext {
            rollout_id: "ro-1".into(),
            attempt_id: "at-2".into(),
            attempt_number: 2,
            mode: Some(Mode::Val),
            resources_id: Some("rs-9".into()),
        }
    }

    #[test]
    fn identity_comes_from_the_rollout_context() {
        let ctx = Ctx::new(context());
        assert_eq!(ctx.rollout_id(), "ro-1");
        assert_eq!(ctx.attempt_id(), "at-2");
        assert_eq!(ctx.attempt_number(), 2);
        assert_eq!(ctx.mode(), Some(Mode::Val));
        assert_eq!(ctx.resources_id(), Some("rs-9"));
    }

    #[test]
    fn a_template_resource_becomes_a_prompt() {
        let resource = Resource::PromptTemplate(PromptTemplate {
            template: "Q: {q}".into(),
            engine: "f-string".into(),
        });
        let prompt = prompt_from("prompt", resource).unwrap();
        assert_eq!(prompt.resource_name(), Some("prompt"));
        assert_eq!(prompt.template(), "Q: {q}");
        assert_eq!(prompt.engine(), "f-string");
    }

    #[test]
    fn another_kind_of_resource_is_not_a_prompt() {
        let endpoint = LlmEndpoint {
            endpoint: "http://x".into(),
            model: "m".into(),
            sampling_parameters_json: "{}".into(),
        };
        let err = prompt_from("main", Resource::Llm(endpoint)).unwrap_err();
        assert_eq!(
            err.message(),
            "resource `main` is an LLM endpoint, not a prompt template"
        );
    }
}
