//! Prompt templates: a rollout's `prompt_template` resource (formatted by the host, which records
//! which version was used) or an inline template the agent carries (formatted here, f-string style:
//! `{name}` placeholders, `{{` and `}}` for literal braces).

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

/// Formats `template` with `{name}` placeholders taken from `vars`; `{{` and `}}` are literal braces.
/// A placeholder name is letters, digits and underscores.
pub(crate) fn format_f_string(template: &str, vars: &[(&str, &str)]) -> Result<String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(at) = rest.find(['{', '}']) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("{{") {
            out.push('{');
            rest = after;
        } else if let Some(after) = tail.strip_prefix("}}") {
            out.push('}');
            rest = after;
        } else if tail.starts_with('}') {
            return Err(template_error(
                template,
                "a single `}` (write `}}` for a literal brace)",
            ));
        } else {
            let Some(end) = tail.find('}') else {
                return Err(template_error(
                    template,
                    "a `{` that is never closed (write `{{` for a literal brace)",
                ));
            };
            let name = &tail[1..end];
            if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
                return Err(template_error(
                    template,
                    &format!("the placeholder `{{{name}}}`, which is not a plain name"),
                ));
            }
            let Some((_, value)) = vars.iter().find(|(key, _)| *key == name) else {
                let given: Vec<&str> = vars.iter().map(|(key, _)| *key).collect();
                return Err(Error::new(format!(
                    "prompt template needs `{{{name}}}`, which was not given (given: {})",
                    if given.is_empty() {
                        "nothing".to_string()
                    } else {
                        given.join(", ")
                    }
                )));
            };
            out.push_str(value);
            rest = &tail[end + 1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

fn template_error(template: &str, what: &str) -> Error {
    let shown: String = template.chars().take(60).collect();
    let ellipsis = if template.chars().count() > 60 { "..." } else { "" };
    Error::new(format!("prompt template {shown:?}{ellipsis} has {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled() {
        let text = format_f_string(
            "Problem: {question}\nLabels: {labels}.",
            &[("labels", "a, b"), ("question", "1+1?")],
        );
        assert_eq!(text.unwrap(), "Problem: 1+1?\nLabels: a, b.");
    }

    #[test]
    fn a_placeholder_may_repeat_and_extra_vars_are_ignored() {
        let text = format_f_string("{x}-{x}", &[("x", "7"), ("unused", "?")]).unwrap();
        assert_eq!(text, "7-7");
    }

    #[test]
    fn doubled_braces_are_literal() {
        assert_eq!(
            format_f_string("{{\"json\": {v}}}", &[("v", "1")]).unwrap(),
            "{\"json\": 1}"
        );
    }

    #[test]
    fn values_are_not_reformatted() {
        assert_eq!(format_f_string("{a}", &[("a", "{b}")]).unwrap(), "{b}");
    }

    #[test]
    fn a_missing_variable_is_named() {
        let err = format_f_string("Q: {question}", &[("text", "x")]).unwrap_err();
        assert_eq!(
            err.message(),
            "prompt template needs `{question}`, which was not given (given: text)"
        );
        let err = format_f_string("Q: {question}", &[]).unwrap_err();
        assert!(err.message().ends_with("(given: nothing)"));
    }

    #[test]
    fn malformed_templates_are_rejected() {
        assert!(
            format_f_string("open {question", &[])
                .unwrap_err()
                .message()
                .contains("never closed")
        );
        assert!(
            format_f_string("close } here", &[])
                .unwrap_err()
                .message()
                .contains("single `}`")
        );
        assert!(
            format_f_string("{a b}", &[("a b", "x")])
                .unwrap_err()
                .message()
                .contains("not a plain name")
        );
        assert!(
            format_f_string("{}", &[])
                .unwrap_err()
                .message()
                .contains("not a plain name")
        );
    }

    #[test]
    fn unicode_text_around_placeholders_survives() {
        assert_eq!(format_f_string("é {n} ü", &[("n", "ß")]).unwrap(), "é ß ü");
    }

    #[test]
    fn inline_prompts_format_in_the_guest() {
        let prompt = Prompt::inline("Hello {who}");
        assert_eq!(prompt.resource_name(), None);
        assert_eq!(prompt.engine(), "f-string");
        assert_eq!(prompt.template(), "Hello {who}");
        assert_eq!(prompt.format(&[("who", "world")]).unwrap(), "Hello world");
    }
}
