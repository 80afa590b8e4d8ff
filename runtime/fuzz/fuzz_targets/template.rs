//! The f-string prompt formatter. Until the copies are consolidated into one crate this compiles
//! the host's `runtime/host/src/prompt.rs` (what `resources.format-prompt` runs; the file alone,
//! so no wasmtime) and APO's `plugins/apo/src/template.rs` straight from their sources.
//! Input: a template, then after a NUL byte `name=value` lines.
//!
//! Invariants: no panic; the host's `format` agrees with a small reference model written here
//! (same success, same output); APO finds the same placeholder names as the host in every
//! template the host accepts; APO's `fill` and `extract_edited` never panic.

#![no_main]

#[allow(dead_code)]
#[path = "../../host/src/prompt.rs"]
mod host_prompt;

#[allow(dead_code)]
#[path = "../../../plugins/apo/src/template.rs"]
mod apo_template;

use agl_fuzz::fields;
use libfuzzer_sys::fuzz_target;
use std::collections::BTreeSet;

/// The reference: walk the characters; `{{`/`}}` are braces, `{name}` (name trimmed, letters,
/// digits or `_`, not empty) is looked up in `vars`, anything else is an error.
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
                let name = name.trim();
                if name.is_empty() || name.chars().any(|c| !(c.is_alphanumeric() || c == '_')) {
                    return None;
                }
                let (_, value) = vars.iter().find(|(k, _)| k == name)?;
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

    let names = host_prompt::placeholders(template);
    if let Ok(names) = &names {
        // Give a value to the names of even length, so both outcomes are reached.
        for name in names {
            if name.len() % 2 == 0 && !vars.iter().any(|(k, _)| k == name) {
                vars.push((name.clone(), format!("<{name}>")));
            }
        }
        let apo: BTreeSet<String> = apo_template::placeholders(template);
        let host: BTreeSet<String> = names.iter().cloned().collect();
        assert_eq!(apo, host, "APO and the host disagree on the placeholders of {template:?}");
    }

    let formatted = host_prompt::format(template, &vars);
    let expected = reference(template, &vars);
    assert_eq!(formatted.as_ref().ok(), expected.as_ref(), "format({template:?}) vs the reference");
    if formatted.is_ok() {
        assert!(names.is_ok(), "format accepted a template placeholders refused: {template:?}");
    }

    let pairs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let _ = apo_template::fill(template, &pairs);
    let _ = apo_template::missing_placeholders(template, parts.get(1).map_or("", String::as_str));
    let _ = apo_template::extract_edited(template);
});
