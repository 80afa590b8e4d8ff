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
    use super::*;

    #[test]
    fn placeholders_are_filled_repeated_and_extra_values_ignored() {
        let text = format(
            "Problem: {question}\nLabels: {labels}. Again: {question}",
            &[("labels", "a, b"), ("question", "1+1?"), ("unused", "?")],
        );
        assert_eq!(text.unwrap(), "Problem: 1+1?\nLabels: a, b. Again: 1+1?");
    }

    #[test]
    fn doubled_braces_are_literal_and_values_are_not_rescanned() {
        assert_eq!(format("{{\"json\": {v}}}", &[("v", "1")]).unwrap(), "{\"json\": 1}");
        assert_eq!(format("{a}", &[("a", "{b}")]).unwrap(), "{b}");
        assert_eq!(format("é {n} ü", &[("n", "ß")]).unwrap(), "é ß ü");
    }

    #[test]
    fn a_missing_value_is_named_with_what_was_given() {
        let err = format("Q: {question}", &[("text", "x")]).unwrap_err();
        assert_eq!(
            err,
            TemplateError::Missing {
                name: "question".into(),
                given: vec!["text".into()]
            }
        );
        assert_eq!(err.to_string(), "no value for placeholder `{question}` (given: text)");
        let none: [(&str, &str); 0] = [];
        assert!(
            format("{q}", &none)
                .unwrap_err()
                .to_string()
                .ends_with("(given: nothing)")
        );
    }

    #[test]
    fn malformed_templates_are_refused() {
        let none: [(&str, &str); 0] = [];
        assert_eq!(format("open {question", &none), Err(TemplateError::Unclosed));
        assert_eq!(format("close } here", &none), Err(TemplateError::SingleClose));
        assert_eq!(
            format("{a b}", &[("a b", "x")]),
            Err(TemplateError::BadPlaceholder("a b".into()))
        );
        assert_eq!(format("{}", &none), Err(TemplateError::BadPlaceholder(String::new())));
        assert_eq!(
            format("{n:>4}", &[("n", "1")]),
            Err(TemplateError::BadPlaceholder("n:>4".into()))
        );
    }

    #[test]
    fn placeholders_are_listed_once_in_order() {
        assert_eq!(placeholders("{b} {{literal}} {a} {b}").unwrap(), ["b", "a"]);
        assert_eq!(placeholders("no fields").unwrap(), Vec::<String>::new());
        assert!(placeholders("{x").is_err());
    }
}
