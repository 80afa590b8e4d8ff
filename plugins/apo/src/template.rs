//! Prompt-template text handling: the `{name}` placeholders of an f-string template (`{{` and
//! `}}` are literal braces), filling APO's own meta-prompts in one pass (so text inserted for one
//! marker is never scanned for another), and pulling the new template out of an edit reply.

use std::collections::BTreeSet;

/// The placeholder names of an f-string template, e.g. `{question}` -> `question`. A format spec
/// or conversion (`{x:>4}`, `{x!r}`) belongs to `x`.
pub fn placeholders(template: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut chars = template.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        match c {
            '{' if chars.peek().map(|&(_, n)| n) == Some('{') => {
                chars.next();
            }
            '{' => {
                let rest = &template[start + 1..];
                if let Some(end) = rest.find('}') {
                    let inner = &rest[..end];
                    let name = inner.split(['!', ':']).next().unwrap_or("").trim();
                    if !name.is_empty() && !name.contains('{') {
                        names.insert(name.to_owned());
                    }
                }
            }
            _ => {}
        }
    }
    names
}

/// The placeholders of `original` that `edited` lost.
pub fn missing_placeholders(original: &str, edited: &str) -> Vec<String> {
    let kept = placeholders(edited);
    placeholders(original)
        .into_iter()
        .filter(|name| !kept.contains(name))
        .collect()
}

/// Replaces each `{marker}` of `meta` by its value, scanning `meta` only once.
pub fn fill(meta: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(meta.len() + values.iter().map(|(_, v)| v.len()).sum::<usize>());
    let mut rest = meta;
    'scan: while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open..];
        for (name, value) in values {
            let marker_len = name.len() + 2;
            if after.len() >= marker_len && after[1..].starts_with(name) && after[1 + name.len()..].starts_with('}') {
                out.push_str(value);
                rest = &after[marker_len..];
                continue 'scan;
            }
        }
        out.push('{');
        rest = &after[1..];
    }
    out.push_str(rest);
    out
}

/// The markers a meta-prompt must contain (used to check user overrides).
pub fn lacks_markers<'a>(meta: &str, markers: &[&'a str]) -> Vec<&'a str> {
    markers
        .iter()
        .copied()
        .filter(|m| !meta.contains(&format!("{{{m}}}")))
        .collect()
}

/// The new template in an edit reply: between `<prompt>` and `</prompt>` when present, else
/// inside the first code fence, else the whole reply; trimmed. `None` when that is empty.
pub fn extract_edited(reply: &str) -> Option<String> {
    let text = if let Some(start) = reply.find("<prompt>") {
        let inner = &reply[start + "<prompt>".len()..];
        match inner.find("</prompt>") {
            Some(end) => &inner[..end],
            None => inner,
        }
    } else if let Some(start) = reply.find("```") {
        let inner = &reply[start + 3..];
        // Skip a language tag on the fence line.
        let inner = match inner.find('\n') {
            Some(newline) if !inner[..newline].contains(' ') => &inner[newline + 1..],
            _ => inner,
        };
        match inner.find("```") {
            Some(end) => &inner[..end],
            None => inner,
        }
    } else {
        reply
    };
    let trimmed = text.trim_matches(|c: char| c == '\n' || c == '\r').trim_end();
    let trimmed = trimmed.trim_start_matches([' ', '\t']);
    (!trimmed.trim().is_empty()).then(|| trimmed.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_skip_escaped_braces_and_specs() {
        let names = placeholders("Q: {question} {{literal}} {n:>4} {x!r} {}");
        assert_eq!(names.into_iter().collect::<Vec<_>>(), ["n", "question", "x"]);
    }

    #[test]
    fn a_dropped_placeholder_is_reported() {
        assert_eq!(missing_placeholders("{a} and {b}", "only {a}"), ["b"]);
        assert!(missing_placeholders("{a}", "{a} and {c}").is_empty());
    }

    #[test]
    fn fill_does_not_rescan_inserted_text() {
        let filled = fill(
            "T: {prompt_template}\nC: {critique} {other}",
            &[
                ("prompt_template", "uses {critique} literally"),
                ("critique", "be short"),
            ],
        );
        assert_eq!(filled, "T: uses {critique} literally\nC: be short {other}");
    }

    #[test]
    fn markers_are_checked() {
        assert_eq!(lacks_markers("{a} text", &["a", "b"]), ["b"]);
    }

    #[test]
    fn the_edited_template_is_extracted() {
        assert_eq!(
            extract_edited("Sure!\n<prompt>\nSolve {q}.\n</prompt>\nDone").as_deref(),
            Some("Solve {q}.")
        );
        assert_eq!(extract_edited("```text\nA {q}\nB\n```").as_deref(), Some("A {q}\nB"));
        assert_eq!(extract_edited("  Plain {q}  ").as_deref(), Some("Plain {q}"));
        assert_eq!(extract_edited("<prompt> </prompt>"), None);
        assert_eq!(extract_edited(""), None);
    }
}
