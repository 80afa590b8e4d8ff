//! The f-string prompt formatter (`agl-template`: the host's `resources.format-prompt`, the SDK's
//! inline prompts, APO's edit check), and the prompt-text helpers APO and GEPA share
//! (`sdk/rust-algorithm/src/prompt_text.rs`, compiled here from its source: a guest crate, not a
//! dependency). Input: a template, then after a NUL byte `name=value` lines.
//!
//! Invariants: no panic; `format` agrees with a small reference model written here (same
//! success, same output); a parsed template, written back with its braces doubled, parses to the
//! same pieces; `format` succeeds exactly when every placeholder has a value; `fill`,
//! `edit_problem`, `extract_edited` and `extract_fenced` never panic.

#![no_main]

#[allow(dead_code)]
#[path = "../../../sdk/rust-algorithm/src/prompt_text.rs"]
mod prompt_text;

use agl_fuzz::fields;
use agl_template::{Piece, TemplateError, format, parse, placeholders};
use libfuzzer_sys::fuzz_target;

/// The reference: walk the characters; `{{`/`}}` are braces, `{name}` (letters, digits or `_`,
/// not empty) is looked up in `vars`, anything else is an error.
fn reference(template: &str, vars: &[(String, String)]) -> Option<String> {
    let chars: Vec<char> = template.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '{' if chars.get(i + 1) == Some(&'{') => {
                out.push('{');
                i += 2;
            }
            '}' if chars.get(i + 1) == Some(&'}') => {
                out.push('}');
                i += 2;
            }
            '}' => return None,
            '{' => {
                let close = (i + 1..chars.len()).find(|&j| chars[j] == '}')?;
                let name: String = chars[i + 1..close].iter().collect();
                if name.is_empty() || name.chars().any(|c| !(c.is_alphanumeric() || c == '_')) {
                    return None;
                }
                let (_, value) = vars.iter().find(|(k, _)| *k == name)?;
                out.push_str(value);
                i = close + 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(out)
}

/// Writes parsed pieces back as a template.
fn unparse(pieces: &[Piece<'_>]) -> String {
    let mut out = String::new();
    for piece in pieces {
        match piece {
            Piece::Text(text) => out.push_str(&text.replace('{', "{{").replace('}', "}}")),
            Piece::Field(name) => {
                out.push('{');
                out.push_str(name);
                out.push('}');
            }
        }
    }
    out
}

/// Pieces with adjacent text merged, to compare two parses of the same text.
fn merged(pieces: &[Piece<'_>]) -> Vec<(bool, String)> {
    let mut out: Vec<(bool, String)> = Vec::new();
    for piece in pieces {
        match (piece, out.last_mut()) {
            (Piece::Text(text), Some((false, last))) => last.push_str(text),
            (Piece::Text(text), _) => out.push((false, (*text).to_owned())),
            (Piece::Field(name), _) => out.push((true, (*name).to_owned())),
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let parts = fields(data, 2);
    let template = parts[0].as_str();
    let mut vars: Vec<(String, String)> = parts
        .get(1)
        .map(|text| {
            text.lines()
                .filter_map(|line| line.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect()
        })
        .unwrap_or_default();

    let names = placeholders(template);
    if let Ok(names) = &names {
        // Give a value to the names of even length, so both outcomes are reached.
        for name in names {
            if name.len() % 2 == 0 && !vars.iter().any(|(k, _)| k == name) {
                vars.push((name.clone(), format!("<{name}>")));
            }
        }
    }

    let formatted = format(template, &vars);
    let expected = reference(template, &vars);
    assert_eq!(
        formatted.as_ref().ok(),
        expected.as_ref(),
        "format({template:?}) vs the reference"
    );
    match (&names, &formatted) {
        (Ok(names), Ok(_)) => assert!(names.iter().all(|n| vars.iter().any(|(k, _)| k == n))),
        (Ok(names), Err(TemplateError::Missing { name, .. })) => {
            assert!(names.contains(name) && !vars.iter().any(|(k, _)| k == name));
        }
        (Ok(_), Err(other)) => panic!("placeholders accepted {template:?}, format refused it: {other}"),
        (Err(_), Ok(_)) => panic!("format accepted {template:?}, placeholders refused it"),
        (Err(_), Err(_)) => {}
    }

    if let Ok(pieces) = parse(template) {
        let written = unparse(&pieces);
        let again = parse(&written).expect("a written-back template parses");
        assert_eq!(
            merged(&again),
            merged(&pieces),
            "{template:?} written back as {written:?}"
        );
    }

    let pairs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let _ = prompt_text::fill(template, &pairs);
    let _ = prompt_text::edit_problem(template, parts.get(1).map_or("", String::as_str));
    let _ = prompt_text::lacks_markers(template, &["question", "prompt_template"]);
    let _ = prompt_text::extract_edited(template);
    let _ = prompt_text::extract_fenced(template);
});
