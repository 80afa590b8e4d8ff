//! Prompt templates: a rollout's `prompt_template` resource (formatted by the host, which records
//! which version was used) or an inline template the agent carries (formatted here by `agl-template`,
//! the host's own f-string formatter: `{name}` placeholders, `{{` and `}}` for literal braces).

use crate::bindings::agl::agent::resources;
use crate::{Error, Result};

/// A prompt template, from the rollout's resources ([`Ctx::prompt`](crate::Ctx::prompt)) or inline
/// ([`Prompt::inline`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// The resource name; `None` for an inline template.
    resource: Option<String>,
    template: String,
    engine: String,
}

impl Prompt {
    pub(crate) fn from_resource(name: &str, template: String, engine: String) -> Self {
        Prompt {
            resource: Some(name.to_string()),
            template,
            engine,
        }
    }

    /// A template the agent carries itself (e.g. a fallback when the rollout has none), formatted
    /// in the guest with f-string placeholders.
    pub fn inline(template: impl Into<String>) -> Self {
        Prompt {
            resource: None,
            template: template.into(),
            engine: "f-string".to_string(),
        }
    }

    /// The template text.
    pub fn template(&self) -> &str {
        &self.template
    }

    /// The template engine: "f-string", "jinja" or "poml".
    pub fn engine(&self) -> &str {
        &self.engine
    }

    /// The name of the resource this template came from; `None` for an inline one.
    pub fn resource_name(&self) -> Option<&str> {
        self.resource.as_deref()
    }

    /// Fills the template's placeholders with `vars`. A resource template is formatted by the host
    /// (through `resources.format-prompt`, so the trace shows the prompt used); an inline one here.
    /// Fails when the template needs a variable that `vars` lacks; unused `vars` are fine.
    pub fn format(&self, vars: &[(&str, &str)]) -> Result<String> {
        match &self.resource {
            Some(name) => {
                let owned: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
                resources::format_prompt(name, &owned).map_err(|why| Error::new(format!("prompt `{name}`: {why}")))
            }
            None => format_f_string(&self.template, vars),
        }
    }
}

/// Formats an inline `template` with the one f-string formatter (`agl-template`, as the host's
/// `format-prompt`): `{name}` placeholders from `vars`, `{{` and `}}` for literal braces.
pub(crate) fn format_f_string(template: &str, vars: &[(&str, &str)]) -> Result<String> {
    agl_template::format(template, vars).map_err(|why| {
        let shown: String = template.chars().take(60).collect();
        let ellipsis = if template.chars().count() > 60 { "..." } else { "" };
        Error::new(format!("prompt template {shown:?}{ellipsis}: {why}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_prompts_format_in_the_guest() {
        let prompt = Prompt::inline("Hello {who}");
        assert_eq!(prompt.resource_name(), None);
        assert_eq!(prompt.engine(), "f-string");
        assert_eq!(prompt.template(), "Hello {who}");
        assert_eq!(prompt.format(&[("who", "world")]).unwrap(), "Hello world");
    }

    #[test]
    fn errors_name_the_template_and_the_problem() {
        let err = Prompt::inline("Q: {question}").format(&[("text", "x")]).unwrap_err();
        assert_eq!(
            err.message(),
            "prompt template \"Q: {question}\": no value for placeholder `{question}` (given: text)"
        );
        let long = format!("{} {{x", "a".repeat(100));
        let err = format_f_string(&long, &[]).unwrap_err();
        assert!(
            err.message().contains("...: a `{` that is never closed"),
            "{}",
            err.message()
        );
    }
}
