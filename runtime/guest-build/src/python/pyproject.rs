//! What a Python guest folder says about itself: from `pyproject.toml`, when it has one, the
//! project's name, its `[project] dependencies`, and agl-host's own `[tool.agl]` keys (`module`,
//! the entry module, `app` by default; `world`, `agent` by default; `sdk`, whether the agl SDK
//! wraps the module, `true` by default). A small reader for those keys (strings, booleans and
//! arrays of strings, comments, multi-line arrays), not a TOML parser: anything else in the file
//! is skipped.

use std::fmt;

/// The entry module when `[tool.agl] module` is not set.
pub(crate) const DEFAULT_MODULE: &str = "app";
/// The world when `[tool.agl] world` is not set.
pub(crate) const DEFAULT_WORLD: &str = "agent";

/// A Python guest project, as read from its `pyproject.toml` (or the defaults without one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Project {
    /// `[project] name`, if set.
    pub name: Option<String>,
    /// `[project] dependencies`, as written (PEP 508 requirement strings).
    pub dependencies: Vec<String>,
    /// `[tool.agl] module`: the module that holds the agent.
    pub module: String,
    /// `[tool.agl] world`: the WIT world to build for.
    pub world: String,
    /// `[tool.agl] sdk`: whether an agent's module is wrapped by the agl SDK (its `@agl.rollout`
    /// function exported); `false` builds the module as it is, written against componentize-py's
    /// own bindings (it defines `WitWorld`).
    pub sdk: bool,
}

impl Default for Project {
    fn default() -> Self {
        Project {
            name: None,
            dependencies: Vec::new(),
            module: DEFAULT_MODULE.to_owned(),
            world: DEFAULT_WORLD.to_owned(),
            sdk: true,
        }
    }
}

/// Why `pyproject.toml` could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PyprojectError {
    /// 1-based line of the problem.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for PyprojectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// A value of one of the keys read.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Value {
    Str(String),
    Bool(bool),
    Array(Vec<String>),
}

/// Reads the keys agl-host needs from the text of a `pyproject.toml`.
pub(crate) fn parse(text: &str) -> Result<Project, PyprojectError> {
    let mut project = Project::default();
    let mut table = String::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut index = 0;
    while index < lines.len() {
        let number = index + 1;
        let line = lines[index].trim();
        index += 1;
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with('[') {
            let header = strip_comment(line).trim();
            table = header
                .trim_start_matches('[')
                .trim_end_matches(']')
                .trim()
                .replace(' ', "");
            continue;
        }
        let Some((key, rest)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim().trim_matches('"');
        let wanted = matches!(
            (table.as_str(), key),
            ("project", "name" | "dependencies") | ("tool.agl", "module" | "world" | "sdk")
        );
        if !wanted {
            continue;
        }
        // An array may go on over the next lines: gather until its closing bracket.
        let mut source = rest.trim().to_owned();
        if source.starts_with('[') {
            while !array_closed(&source) && index < lines.len() {
                source.push('\n');
                source.push_str(lines[index]);
                index += 1;
            }
        }
        let value = read_value(&source).map_err(|message| PyprojectError {
            line: number,
            message: format!("[{table}] {key}: {message}"),
        })?;
        let mismatch = |expected: &str| PyprojectError {
            line: number,
            message: format!("[{table}] {key} must be {expected}"),
        };
        match (table.as_str(), key, value) {
            ("project", "name", Value::Str(name)) => project.name = Some(name),
            ("project", "dependencies", Value::Array(deps)) => project.dependencies = deps,
            ("tool.agl", "module", Value::Str(module)) => {
                if !is_module_name(&module) {
                    return Err(PyprojectError {
                        line: number,
                        message: format!("[tool.agl] module {module:?} is not a Python module name"),
                    });
                }
                project.module = module;
            }
            ("tool.agl", "world", Value::Str(world)) => project.world = world,
            ("tool.agl", "sdk", Value::Bool(sdk)) => project.sdk = sdk,
            (_, "dependencies", _) => return Err(mismatch("an array of strings")),
            (_, "sdk", _) => return Err(mismatch("true or false")),
            _ => return Err(mismatch("a string")),
        }
    }
    Ok(project)
}

/// Whether `name` is a dotted Python module name (`app`, `agents.math`).
fn is_module_name(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|part| {
            part.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
                && part.chars().all(|c| c.is_alphanumeric() || c == '_')
        })
}

/// `line` without a trailing `# comment` outside strings.
fn strip_comment(line: &str) -> &str {
    let mut quote = None;
    for (at, c) in line.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '#') => return &line[..at],
            _ => {}
        }
    }
    line
}

/// Whether the array text has its closing bracket (outside strings and comments).
fn array_closed(source: &str) -> bool {
    let mut depth = 0i32;
    for line in source.lines() {
        let mut quote = None;
        let mut escaped = false;
        for c in line.chars() {
            match quote {
                Some(q) => {
                    if escaped {
                        escaped = false;
                    } else if c == '\\' && q == '"' {
                        escaped = true;
                    } else if c == q {
                        quote = None;
                    }
                }
                None => match c {
                    '"' | '\'' => quote = Some(c),
                    '#' => break,
                    '[' => depth += 1,
                    ']' => depth -= 1,
                    _ => {}
                },
            }
        }
    }
    depth <= 0
}

/// Reads a string, a boolean or an array of strings, and nothing but a comment after it.
fn read_value(source: &str) -> Result<Value, String> {
    let mut chars = source.chars().peekable();
    skip_blank(&mut chars);
    let value = match chars.peek() {
        Some('"' | '\'') => Value::Str(read_string(&mut chars)?),
        Some('[') => {
            chars.next();
            let mut items = Vec::new();
            loop {
                skip_blank(&mut chars);
                match chars.peek() {
                    Some(']') => {
                        chars.next();
                        break;
                    }
                    Some('"' | '\'') => items.push(read_string(&mut chars)?),
                    Some(other) => return Err(format!("expected a string in the array, found `{other}`")),
                    None => return Err("an array that is never closed".to_owned()),
                }
                skip_blank(&mut chars);
                match chars.next() {
                    Some(',') => {}
                    Some(']') => break,
                    Some(other) => return Err(format!("expected `,` or `]` in the array, found `{other}`")),
                    None => return Err("an array that is never closed".to_owned()),
                }
            }
            Value::Array(items)
        }
        Some('t' | 'f') => {
            let word: String = std::iter::from_fn(|| chars.next_if(|c| c.is_ascii_alphanumeric())).collect();
            match word.as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => {
                    return Err(format!(
                        "expected a string, a boolean or an array of strings, found `{word}`"
                    ));
                }
            }
        }
        Some(other) => {
            return Err(format!(
                "expected a string, a boolean or an array of strings, found `{other}`"
            ));
        }
        None => return Err("no value".to_owned()),
    };
    skip_blank(&mut chars);
    match chars.next() {
        None => Ok(value),
        Some(other) => Err(format!("unexpected `{other}` after the value")),
    }
}

/// Skips whitespace, newlines and `# comments`.
fn skip_blank(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '#' {
            while chars.next().is_some_and(|c| c != '\n') {}
        } else {
            break;
        }
    }
}

/// Reads a one-line basic (`"..."`, with escapes) or literal (`'...'`) string.
fn read_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Result<String, String> {
    let Some(quote) = chars.next() else {
        return Err("no value".to_owned());
    };
    let mut out = String::new();
    while let Some(c) = chars.next() {
        if c == quote {
            return Ok(out);
        }
        if c == '\n' {
            break;
        }
        if c == '\\' && quote == '"' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(escaped @ ('"' | '\\')) => out.push(escaped),
                Some(other) => return Err(format!("the escape `\\{other}`, which this reader does not support")),
                None => break,
            }
        } else {
            out.push(c);
        }
    }
    Err("a string that is never closed on its line".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_are_read_and_the_rest_skipped() {
        let text = r#"
[build-system]
requires = ["hatchling"]   # not ours
name = "ignored"

[project]
name = "parse-agent"  # the project
version = "0.1.0"
classifiers = [
    "Programming Language :: Python",
]
dependencies = [
    "parsimonious==0.10.0",  # a PEG parser
    'regex-free>=1; python_version >= "3.9"',
]

[tool.agl]
module = "agents.main"
world = "agent"
sdk = false  # bindings only
"#;
        let project = parse(text).unwrap();
        assert_eq!(project.name.as_deref(), Some("parse-agent"));
        assert_eq!(
            project.dependencies,
            ["parsimonious==0.10.0", "regex-free>=1; python_version >= \"3.9\""]
        );
        assert_eq!(project.module, "agents.main");
        assert_eq!(project.world, "agent");
        assert!(!project.sdk);
    }

    #[test]
    fn defaults_without_keys() {
        assert_eq!(parse("").unwrap(), Project::default());
        let project = parse("[project]\nname = 'x'\ndependencies = []\n").unwrap();
        assert_eq!(project.module, DEFAULT_MODULE);
        assert_eq!(project.world, DEFAULT_WORLD);
        assert!(project.dependencies.is_empty());
        assert!(project.sdk);
        assert_eq!(parse("[tool.agl]\nworld = \"algorithm\"").unwrap().world, "algorithm");
    }

    #[test]
    fn wrong_shapes_name_the_line_and_the_key() {
        let err = parse("[project]\ndependencies = \"requests\"\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "line 2: [project] dependencies must be an array of strings"
        );
        let err = parse("[project]\ndependencies = [\n  \"a\",\n  { x = 1 },\n]\n").unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.message.contains("expected a string in the array"), "{err}");
        let err = parse("[tool.agl]\nmodule = \"not-a-module\"\n").unwrap_err();
        assert!(err.message.contains("is not a Python module name"), "{err}");
        let err = parse("[tool.agl]\nworld = [\"agent\"]\n").unwrap_err();
        assert_eq!(err.to_string(), "line 2: [tool.agl] world must be a string");
        let err = parse("[tool.agl]\nsdk = \"no\"\n").unwrap_err();
        assert_eq!(err.to_string(), "line 2: [tool.agl] sdk must be true or false");
        let err = parse("[tool.agl]\nworld = true\n").unwrap_err();
        assert_eq!(err.to_string(), "line 2: [tool.agl] world must be a string");
        let err = parse("[tool.agl]\nsdk = yes\n").unwrap_err();
        assert!(err.message.contains("found `y`"), "{err}");
        let err = parse("[tool.agl]\nsdk = truely\n").unwrap_err();
        assert!(err.message.contains("found `truely`"), "{err}");
        let err = parse("[project]\ndependencies = [\"a\"\n").unwrap_err();
        assert!(err.message.contains("never closed"), "{err}");
    }

    #[test]
    fn strings_with_escapes_and_brackets() {
        let project = parse("[project]\ndependencies = [\"a[extra]\", \"b \\\"q\\\"\"] # c\n").unwrap();
        assert_eq!(project.dependencies, ["a[extra]", "b \"q\""]);
        assert!(is_module_name("pkg.mod_1") && !is_module_name("1pkg") && !is_module_name("a..b"));
    }
}
