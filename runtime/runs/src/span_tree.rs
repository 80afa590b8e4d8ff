//! One attempt's spans as the indented lines `agl-host show RUN ROLLOUT` prints: each span under
//! its parent with what it says in a few words (an LLM call's prompt and answer, a reward, a log
//! line, an operation, a failure), read through the adapter as algorithms read them. Text only:
//! nothing here reads a store.

use crate::text::{duration, one_line};
use agl_store::{Span, StatusCode, semconv as c};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// The spans as indented lines: each under its parent (a span whose parent is not among them is
/// a root), siblings by start time; each span's line, then what it holds (prompt messages...).
pub fn lines(spans: &[Arc<Span>]) -> Vec<String> {
    let mut ordered: Vec<&Span> = spans.iter().map(AsRef::as_ref).collect();
    ordered.sort_by(|a, b| {
        let start = |s: &Span| s.start_time.unwrap_or(f64::NEG_INFINITY);
        start(a).total_cmp(&start(b)).then(a.sequence_id.cmp(&b.sequence_id))
    });
    let ids: HashSet<&str> = ordered.iter().map(|s| s.span_id.as_str()).collect();
    let mut children: HashMap<&str, Vec<&Span>> = HashMap::new();
    let mut roots = Vec::new();
    for span in &ordered {
        match span
            .parent_id
            .as_deref()
            .filter(|p| ids.contains(p) && *p != span.span_id)
        {
            Some(parent) => children.entry(parent).or_default().push(*span),
            None => roots.push(*span),
        }
    }
    let mut lines = Vec::new();
    let mut shown: HashSet<&str> = HashSet::new();
    // Depth-first, without recursion; a span is shown once even if parent ids loop.
    let mut stack: Vec<(&Span, usize)> = roots.iter().rev().map(|s| (*s, 0)).collect();
    while let Some((span, depth)) = stack.pop() {
        if !shown.insert(span.span_id.as_str()) {
            continue;
        }
        let indent = "  ".repeat(depth);
        let (head, details) = describe(span);
        lines.push(format!("{indent}{head}"));
        lines.extend(details.into_iter().map(|d| format!("{indent}    {d}")));
        if let Some(kids) = children.get(span.span_id.as_str()) {
            stack.extend(kids.iter().rev().map(|k| (*k, depth + 1)));
        }
    }
    // Spans only reachable through a parent loop.
    for span in ordered {
        if !shown.contains(span.span_id.as_str()) {
            lines.push(describe(span).0);
        }
    }
    lines
}

fn text_attr<'a>(span: &'a Span, key: &str) -> Option<&'a str> {
    span.attributes.get(key).and_then(Value::as_str)
}

fn attr(span: &Span, key: &str) -> Option<String> {
    span.attributes.get(key).map(|v| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

/// The name and attribute keys of an outgoing HTTP request's span as the host writes them, and
/// OpenTelemetry's `url.full`, which other tracers write.
mod http {
    pub use agl_trace::names::http::{HOST, METHOD, PATH, PORT, SCHEME, SPAN, STATUS};
    pub const FULL: &str = "url.full";
}

fn is_http_request(span: &Span) -> bool {
    span.name == http::SPAN
        || (span.attributes.contains_key(http::METHOD)
            && (span.attributes.contains_key(http::FULL) || span.attributes.contains_key(http::HOST)))
}

/// An HTTP request in a few words: `METHOD URL → STATUS` ("→ no response" when none came). The
/// URL is the guest's text: it is shown without credentials (userinfo), query or fragment, and
/// safe to print.
fn http_request(span: &Span) -> String {
    let method = attr(span, http::METHOD).unwrap_or_else(|| "?".to_owned());
    let url = match text_attr(span, http::FULL) {
        Some(full) => url_without_secrets(full),
        None => {
            let scheme = text_attr(span, http::SCHEME).unwrap_or("http");
            let host = without_userinfo(text_attr(span, http::HOST).unwrap_or("?"));
            let host = if host.contains(':') && !host.starts_with('[') {
                format!("[{host}]") // an IPv6 address
            } else {
                host.to_owned()
            };
            let port = span.attributes.get(http::PORT).and_then(Value::as_u64);
            let port = match (scheme, port) {
                (_, None) | ("http", Some(80)) | ("https", Some(443)) => String::new(),
                (_, Some(port)) => format!(":{port}"),
            };
            let path = text_attr(span, http::PATH).unwrap_or("");
            format!("{scheme}://{host}{port}{}", without_query(path))
        }
    };
    let status = attr(span, http::STATUS).unwrap_or_else(|| "no response".to_owned());
    one_line(&format!("{method} {url} → {status}"))
}

/// `url` without its userinfo (`user:password@`), query and fragment.
fn url_without_secrets(url: &str) -> String {
    let url = without_query(url);
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (authority, path) = rest.find('/').map_or((rest, ""), |at| rest.split_at(at));
    let authority = without_userinfo(authority);
    if scheme.is_empty() {
        format!("{authority}{path}")
    } else {
        format!("{scheme}://{authority}{path}")
    }
}

fn without_userinfo(authority: &str) -> &str {
    authority.rsplit_once('@').map_or(authority, |(_, host)| host)
}

fn without_query(text: &str) -> &str {
    text.find(['?', '#']).map_or(text, |at| &text[..at])
}

/// A span's line (its name and what it says in a few words) and the lines under it.
fn describe(span: &Span) -> (String, Vec<String>) {
    let mut head = span.name.clone();
    if let (Some(start), Some(end)) = (span.start_time, span.end_time)
        && end - start >= 0.001
    {
        head.push_str(&format!(" ({})", duration(end - start)));
    }
    let mut details = Vec::new();
    let mut say = |text: String| {
        if text.is_empty() {
            return;
        }
        head.push_str("  ");
        head.push_str(&text);
    };
    let name = span.name.as_str();
    if name == c::ROLLOUT_SPAN {
        let mut parts = Vec::new();
        if let Some(calls) = attr(span, c::LLM_CALLS) {
            let tokens = attr(span, c::LLM_TOKENS).unwrap_or_else(|| "0".into());
            parts.push(format!("{calls} LLM call(s), {tokens} tokens"));
        }
        if let Some(bytes) = span.attributes.get(c::MEMORY_BYTES).and_then(Value::as_f64) {
            parts.push(format!("{:.1} MiB memory", bytes / (1024.0 * 1024.0)));
        }
        if let Some(agent) = text_attr(span, c::AGENT) {
            parts.push(format!("agent {agent}"));
        }
        if let Some(failure) = attr(span, c::FAILURE) {
            parts.insert(0, format!("failure: {}", one_line(&failure)));
        }
        say(parts.join(" · "));
    } else if name.contains(c::LLM_SPAN) && span.status.status_code != StatusCode::Error {
        if let Some(call) = agl_adapter::triplets(std::slice::from_ref(span)).into_iter().next() {
            let usage = match (call.usage.input_tokens, call.usage.output_tokens) {
                (Some(i), Some(o)) => format!(" · {i}+{o} tokens"),
                _ => String::new(),
            };
            say(format!("{}{usage}", call.model));
            for message in &call.prompt {
                details.push(format!("{}: {}", message.role, one_line(&message.content)));
            }
            details.push(format!("→ {}: {}", c::ASSISTANT, one_line(&call.response)));
            for tool in &call.tool_calls {
                details.push(format!("→ tool {}({})", tool.name, one_line(&tool.arguments)));
            }
        }
    } else if name == c::ANNOTATION_SPAN || span.attributes.keys().any(|k| k.starts_with(c::REWARD_PREFIX)) {
        let rewards = agl_adapter::rewards(std::slice::from_ref(span));
        if !rewards.is_empty() {
            let shown: Vec<String> = rewards.iter().map(|(n, v)| format!("{n} = {v:.4}")).collect();
            say(format!("reward {}", shown.join(", ")));
        }
    } else if name == c::MESSAGE_SPAN || name == c::legacy::MESSAGE || name == c::legacy::LOG_SPAN {
        let body = [c::MESSAGE_BODY, c::legacy::MESSAGE, c::legacy::LOG_MESSAGE]
            .iter()
            .find_map(|key| text_attr(span, key))
            .unwrap_or("");
        match text_attr(span, c::LOG_LEVEL) {
            Some(level) => say(format!("log {level}: {}", one_line(body))),
            None => say(format!("message: {}", one_line(body))),
        }
    } else if name == c::OBJECT_SPAN || name == c::legacy::OBJECT {
        if let Some(object) = attr(span, c::OBJECT_JSON).or_else(|| attr(span, c::legacy::OBJECT)) {
            say(format!("object {}", one_line(&object)));
        }
    } else if name == c::OPERATION_SPAN {
        say(attr(span, c::OPERATION_NAME).unwrap_or_default());
    } else if name == c::STDOUT_SPAN || name == c::STDERR_SPAN {
        let dropped = attr(span, c::OUTPUT_DROPPED_BYTES)
            .filter(|d| d != "0")
            .map_or_else(String::new, |d| format!(" [{d} more bytes not kept]"));
        say(format!(
            "{}{dropped}",
            one_line(text_attr(span, c::OUTPUT_TEXT).unwrap_or(""))
        ));
    } else if name == c::RESOURCE_GET_SPAN {
        let found = match span.attributes.get(c::RESOURCE_FOUND).and_then(Value::as_bool) {
            Some(false) => " (not found)",
            _ => "",
        };
        say(format!("{}{found}", attr(span, c::RESOURCE_NAME).unwrap_or_default()));
    } else if name == c::FORMAT_PROMPT_SPAN {
        let version = attr(span, c::RESOURCES_ID).map_or_else(String::new, |id| format!(" of {id}"));
        say(format!("{}{version}", attr(span, c::RESOURCE_NAME).unwrap_or_default()));
    } else if name == c::SPANS_DROPPED_SPAN {
        say(format!(
            "{} span(s) not kept ({} bound reached): {}",
            attr(span, c::SPANS_DROPPED_COUNT).unwrap_or_default(),
            attr(span, c::SPANS_BUDGET_BOUND).unwrap_or_default(),
            one_line(&attr(span, c::SPANS_DROPPED_BY_NAME).unwrap_or_default())
        ));
    } else if is_http_request(span) {
        say(http_request(span));
    } else if !span.attributes.is_empty() {
        let mut keys: Vec<&String> = span.attributes.keys().collect();
        keys.sort();
        let shown: Vec<String> = keys
            .iter()
            .take(8)
            .filter_map(|k| attr(span, k).map(|v| format!("{k}={}", one_line(&v))))
            .collect();
        say(shown.join(" "));
    }
    if span.status.status_code == StatusCode::Error {
        say(format!(
            "ERROR: {}",
            one_line(span.status.description.as_deref().unwrap_or("(no description)"))
        ));
    }
    (head, details)
}

#[cfg(test)]
mod tests {
    //! The shared test vectors (tests/vectors/span_describe.json, read by the dashboard's tests
    //! too): each case's `show` lines.

    use super::*;
    use serde_json::json;

    /// A span as the store keeps it, from a vector's few fields.
    fn span(fields: &Value) -> Arc<Span> {
        let start = fields["start_time"].clone();
        let end = fields.get("end_time").cloned().unwrap_or_else(|| start.clone());
        let status = fields
            .get("status")
            .cloned()
            .unwrap_or_else(|| json!({"status_code": "OK"}));
        let record = json!({
            "rollout_id": "ro-1", "attempt_id": "at-1", "sequence_id": fields["sequence_id"],
            "trace_id": "0".repeat(32), "span_id": fields["span_id"], "parent_id": fields["parent_id"],
            "name": fields["name"], "status": status, "attributes": fields["attributes"],
            "events": [], "links": [], "start_time": start, "end_time": end,
            "context": null, "parent": null, "resource": {"attributes": {}, "schema_url": ""},
        });
        Arc::new(serde_json::from_value(record).expect("a span"))
    }

    #[test]
    fn spans_are_described_as_the_vectors_say() {
        let vectors: Value = serde_json::from_str(include_str!("../../../tests/vectors/span_describe.json"))
            .expect("the vectors are JSON");
        let cases: Vec<&Value> = vectors["cases"]
            .as_array()
            .expect("cases")
            .iter()
            .filter(|case| case.get("show").is_some())
            .collect();
        assert!(cases.len() >= 6);
        for case in cases {
            let spans: Vec<Arc<Span>> = case["spans"].as_array().expect("spans").iter().map(span).collect();
            let expected: Vec<&str> = case["show"]
                .as_array()
                .expect("lines")
                .iter()
                .map(|line| line.as_str().expect("a line"))
                .collect();
            assert_eq!(lines(&spans), expected, "{}", case["name"]);
        }
    }
}
