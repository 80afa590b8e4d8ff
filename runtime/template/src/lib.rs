//! f-string prompt templates, as Agent-lightning formats a `PromptTemplate` with engine
//! `f-string`: `{name}` placeholders (a name is letters, digits and underscores), `{{` and `}}`
//! for literal braces. Values are inserted as they are, never scanned again.
//!
//! The one formatter of agl-host: the host's `resources.format-prompt`, the Rust SDK's inline
//! prompts and APO's placeholder checks all use it. No dependencies, so it builds for the host
//! and for wasm32 guests alike.

use std::fmt;

/// Why a template cannot be formatted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateError {
    /// A `{` that is never closed.
    Unclosed,
    /// A `}` that closes nothing (and is not doubled).
    SingleClose,
    /// `{...}` whose inside is not a plain name (a format spec, a space, nothing).
    BadPlaceholder(String),
    /// A placeholder with no value; `given` are the names that were given.
    Missing { name: String, given: Vec<String> },
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TemplateError::Unclosed => write!(f, "a `{{` that is never closed (write `{{{{` for a literal brace)"),
            TemplateError::SingleClose => write!(f, "a single `}}` (write `}}}}` for a literal brace)"),
            TemplateError::BadPlaceholder(inside) => {
                write!(f, "the placeholder `{{{inside}}}`, which is not a plain name")
            }
            TemplateError::Missing { name, given } => {
                let given = if given.is_empty() {
                    "nothing".to_owned()
                } else {
                    given.join(", ")
                };
                write!(f, "no value for placeholder `{{{name}}}` (given: {given})")
            }
        }
    }
}

impl std::error::Error for TemplateError {}

/// A piece of a parsed template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    /// Literal text (a doubled brace is one brace).
    Text(&'a str),
    /// A `{name}` placeholder.
    Field(&'a str),
}

fn is_name(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// The template as text and placeholders, in order.
pub fn parse(template: &str) -> Result<Vec<Piece<'_>>, TemplateError> {
    let mut pieces = Vec::new();
    let mut rest = template;
    while let Some(at) = rest.find(['{', '}']) {
        let (before, tail) = rest.split_at(at);
        if !before.is_empty() {
            pieces.push(Piece::Text(before));
        }
        if let Some(after) = tail.strip_prefix("{{") {
            pieces.push(Piece::Text("{"));
            rest = after;
        } else if let Some(after) = tail.strip_prefix("}}") {
            pieces.push(Piece::Text("}"));
            rest = after;
        } else if tail.starts_with('}') {
            return Err(TemplateError::SingleClose);
        } else {
            let end = tail.find('}').ok_or(TemplateError::Unclosed)?;
            let inside = &tail[1..end];
            if !is_name(inside) {
                return Err(TemplateError::BadPlaceholder(inside.to_owned()));
            }
            pieces.push(Piece::Field(inside));
            rest = &tail[end + 1..];
        }
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest));
    }
    Ok(pieces)
}

/// The placeholder names of `template`, each once, in order of first appearance.
pub fn placeholders(template: &str) -> Result<Vec<String>, TemplateError> {
    let mut names: Vec<String> = Vec::new();
    for piece in parse(template)? {
        if let Piece::Field(name) = piece
            && !names.iter().any(|n| n == name)
        {
            names.push(name.to_owned());
        }
    }
    Ok(names)
}

/// Fills every placeholder of `template` from `vars` (name, value); a placeholder without a value
/// is an error, unused values are fine.
pub fn format<K: AsRef<str>, V: AsRef<str>>(template: &str, vars: &[(K, V)]) -> Result<String, TemplateError> {
    let mut out = String::with_capacity(template.len() + 64);
    for piece in parse(template)? {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Field(name) => {
                let (_, value) =
                    vars.iter()
                        .find(|(k, _)| k.as_ref() == name)
                        .ok_or_else(|| TemplateError::Missing {
                            name: name.to_owned(),
                            given: vars.iter().map(|(k, _)| k.as_ref().to_owned()).collect(),
                        })?;
                out.push_str(value.as_ref());
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    //! The shared test vectors (tests/vectors/fstring.json, read by the SDKs' tests too).

    use super::*;
    use serde_json::Value;

    fn vectors() -> Value {
        serde_json::from_str(include_str!("../../../tests/vectors/fstring.json")).expect("the vectors are JSON")
    }

    fn text(value: &Value) -> String {
        match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        }
    }

    fn strings(value: &Value) -> Vec<String> {
        value.as_array().expect("a list").iter().map(text).collect()
    }

    /// The error a vector's `error` describes.
    fn expected_error(error: &Value) -> TemplateError {
        match error["kind"].as_str().expect("an error kind") {
            "unclosed" => TemplateError::Unclosed,
            "single_close" => TemplateError::SingleClose,
            "bad_placeholder" => TemplateError::BadPlaceholder(text(&error["inside"])),
            "missing" => TemplateError::Missing {
                name: text(&error["name"]),
                given: strings(&error["given"]),
            },
            other => panic!("unknown error kind {other}"),
        }
    }

    #[test]
    fn templates_format_as_the_vectors_say() {
        let vectors = vectors();
        let cases = vectors["format"].as_array().expect("format cases");
        assert!(cases.len() >= 15);
        for case in cases {
            let template = case["template"].as_str().expect("a template");
            let values: Vec<(String, String)> = case["values"]
                .as_array()
                .expect("values")
                .iter()
                .map(|pair| (text(&pair[0]), text(&pair[1])))
                .collect();
            let formatted = format(template, &values);
            match case.get("expected") {
                Some(expected) => assert_eq!(formatted.as_deref(), Ok(text(expected).as_str()), "{template:?}"),
                None => {
                    let error = formatted.expect_err(template);
                    assert_eq!(error, expected_error(&case["error"]), "{template:?}");
                    assert_eq!(error.to_string(), text(&case["error"]["message"]), "{template:?}");
                }
            }
        }
    }

    #[test]
    fn placeholders_are_listed_as_the_vectors_say() {
        let vectors = vectors();
        for case in vectors["placeholders"].as_array().expect("placeholders cases") {
            let template = case["template"].as_str().expect("a template");
            match case.get("expected") {
                Some(expected) => assert_eq!(placeholders(template), Ok(strings(expected)), "{template:?}"),
                None => assert_eq!(
                    placeholders(template),
                    Err(expected_error(&case["error"])),
                    "{template:?}"
                ),
            }
        }
    }
}
