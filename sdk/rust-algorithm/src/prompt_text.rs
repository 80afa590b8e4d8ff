//! Prompt-template text for algorithms that rewrite templates (APO, GEPA): whether a rewritten
//! template keeps the original's placeholders (parsed by `agl-template`, the host's own f-string
//! formatter), filling an algorithm's own meta-prompts in one pass (a marker substitution, not
//! template formatting: text inserted for one marker is never scanned for another, other braces
//! stay as they are), and pulling the new template out of an LLM's reply.

/// Why an edit of `original` is not acceptable: it dropped placeholders, or it is no longer a
/// template the host can format (`agl-template`, the host's own f-string formatter). An original
/// that is not an f-string template itself (jinja, poml) is not checked.
pub fn edit_problem(original: &str, edited: &str) -> Option<String> {
    let before = agl_template::placeholders(original).ok()?;
    let after = match agl_template::placeholders(edited) {
        Ok(after) => after,
        Err(why) => return Some(format!("the edit is not a valid f-string template: {why}")),
    };
    let missing: Vec<String> = before.into_iter().filter(|name| !after.contains(name)).collect();
    (!missing.is_empty()).then(|| format!("the edit dropped placeholder(s) {}", missing.join(", ")))
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

/// The new text in a reply that was asked to give it "within ``` blocks" (GEPA's reflection):
/// what lies between the first fence and the last one (a language tag on the opening fence line
/// is skipped); with one fence only, the text after an opening fence or before a closing one;
/// without a fence, the whole reply. Trimmed; `None` when that is empty.
pub fn extract_fenced(reply: &str) -> Option<String> {
    const FENCE: &str = "```";
    let skip_tag = |text: &str| -> String {
        match text.find('\n') {
            Some(newline) if !text[..newline].trim().contains(char::is_whitespace) => text[newline + 1..].to_owned(),
            // A fence with its text on the same line and no newline after it.
            _ => text.to_owned(),
        }
    };
    let text = match (reply.find(FENCE), reply.rfind(FENCE)) {
        // Two fences that do not overlap (in "`````" the last one starts inside the first).
        (Some(first), Some(last)) if last >= first + FENCE.len() => skip_tag(&reply[first + FENCE.len()..last]),
        (Some(only), _) => {
            let trimmed = reply.trim();
            if let Some(after) = trimmed.strip_prefix(FENCE) {
                skip_tag(after)
            } else if let Some(before) = trimmed.strip_suffix(FENCE) {
                before.to_owned()
            } else {
                // A fence in the middle of the text, never closed: what follows it.
                skip_tag(&reply[only + FENCE.len()..])
            }
        }
        _ => reply.to_owned(),
    };
    let trimmed = text.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_fences_are_one_fence_not_a_panic() {
        // Found by the `template` fuzz target: five backticks hold a "first" and a "last" fence
        // that overlap.
        assert_eq!(extract_fenced("`````\u{FFFD}").as_deref(), Some("``\u{FFFD}"));
        assert_eq!(extract_fenced("````"), Some("`".to_owned()));
        assert_eq!(extract_fenced("```"), None);
    }

    #[test]
    fn a_dropped_placeholder_or_a_broken_template_is_a_problem() {
        assert_eq!(
            edit_problem("{a} and {b}", "only {a} {{literal}}").as_deref(),
            Some("the edit dropped placeholder(s) b")
        );
        assert_eq!(edit_problem("{a}", "{a} and {c}"), None);
        let broken = edit_problem("{a}", "{a} and {n:>4}").unwrap_or_default();
        assert!(broken.contains("not a valid f-string template"), "{broken}");
        assert_eq!(
            edit_problem("{% if x %}jinja{% endif %}", "anything"),
            None,
            "not f-string: unchecked"
        );
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

    #[test]
    fn a_fenced_answer_is_read_between_the_first_and_last_fence() {
        assert_eq!(
            extract_fenced("Here it is:\n```text\nSolve {q}.\nUse ``` rarely.\n```\nGood luck").as_deref(),
            Some("Solve {q}.\nUse ``` rarely.")
        );
        assert_eq!(extract_fenced("```\nA {q}\n```").as_deref(), Some("A {q}"));
        assert_eq!(extract_fenced("```A {q}```").as_deref(), Some("A {q}"));
        assert_eq!(
            extract_fenced("```markdown\nUnclosed {q}").as_deref(),
            Some("Unclosed {q}")
        );
        assert_eq!(
            extract_fenced("Only closed {q}\n```").as_deref(),
            Some("Only closed {q}")
        );
        assert_eq!(
            extract_fenced("  The whole {q} reply  ").as_deref(),
            Some("The whole {q} reply")
        );
        assert_eq!(extract_fenced("``` ```"), None);
        assert_eq!(extract_fenced("```\n\n```"), None);
        assert_eq!(extract_fenced(""), None);
    }
}
