//! One attempt's spans as the indented lines `agl-host show RUN ROLLOUT` prints: each span under
//! its parent with what it says in a few words (an LLM call's prompt and answer, a reward, a log
//! line, an operation, a failure), read through the adapter as algorithms read them. Text only:
//! nothing here reads a store.

use crate::table::{self, one_line};
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
    pub use agl_wasm::http_span_keys::{HOST, METHOD, PATH, PORT, SCHEME, SPAN, STATUS};
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
        head.push_str(&format!(" ({})", table::duration(end - start)));
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
    use super::*;
    use serde_json::json;

    fn span(id: &str, parent: Option<&str>, name: &str, start: f64, attributes: Value) -> Arc<Span> {
        let record = json!({
            "rollout_id": "ro-1", "attempt_id": "at-1", "sequence_id": 1,
            "trace_id": "0".repeat(32), "span_id": id, "parent_id": parent, "name": name,
            "status": {"status_code": "OK"}, "attributes": attributes,
            "events": [], "links": [], "start_time": start, "end_time": start,
            "context": null, "parent": null, "resource": {"attributes": {}, "schema_url": ""},
        });
        Arc::new(serde_json::from_value(record).expect("a span"))
    }

    #[test]
    fn children_sit_under_their_parent_in_start_order() {
        let spans = [
            span(
                "b",
                Some("root"),
                c::ANNOTATION_SPAN,
                3.0,
                json!({c::REWARD_0_NAME: "primary", c::REWARD_0_VALUE: 0.5}),
            ),
            span("root", None, c::ROLLOUT_SPAN, 1.0, json!({c::FAILURE: "boom"})),
            span(
                "a",
                Some("root"),
                c::MESSAGE_SPAN,
                2.0,
                json!({c::LOG_LEVEL: "info", c::MESSAGE_BODY: "two\nlines"}),
            ),
            span(
                "orphan",
                Some("elsewhere"),
                c::OPERATION_SPAN,
                0.5,
                json!({c::OPERATION_NAME: "op"}),
            ),
        ];
        assert_eq!(
            lines(&spans),
            [
                "agentlightning.operation  op",
                "agentlightning.rollout  failure: boom",
                "  agentlightning.message  log info: two⏎lines",
                "  agentlightning.annotation  reward primary = 0.5000",
            ]
        );
    }

    #[test]
    fn an_http_request_reads_as_method_url_and_status() {
        let mut request = json!({
            http::METHOD: "GET", http::SCHEME: "http", http::HOST: "127.0.0.1", http::PORT: 8080,
            http::PATH: "/capital", http::STATUS: 200, "http.response.body.size": 42,
            "agl.http.latency_ms": 1.5,
        });
        let shown = |attributes: &Value, status: &str| {
            let mut span = (*span("h", None, http::SPAN, 1.0, attributes.clone())).clone();
            span.end_time = Some(1.25);
            if status == "ERROR" {
                span.status = serde_json::from_value(json!({"status_code": "ERROR", "description": "not granted"}))
                    .expect("a status");
            }
            lines(&[Arc::new(span)]).remove(0)
        };
        assert_eq!(
            shown(&request, "OK"),
            "agl.http.request (0.25 s)  GET http://127.0.0.1:8080/capital → 200"
        );
        // Default ports go unsaid; a refused request has no status but its reason.
        request[http::PORT] = json!(443);
        request[http::SCHEME] = json!("https");
        request.as_object_mut().expect("object").remove(http::STATUS);
        assert_eq!(
            shown(&request, "ERROR"),
            "agl.http.request (0.25 s)  GET https://127.0.0.1/capital → no response  ERROR: not granted"
        );
        // Hostile text: no credentials, no query, no terminal controls.
        let hostile = json!({
            http::METHOD: "POST", http::FULL: "https://user:secret@evil.example/x\u{1b}[2J?token=abc#f",
            http::STATUS: 500,
        });
        let line = shown(&hostile, "OK");
        assert_eq!(
            line,
            "agl.http.request (0.25 s)  POST https://evil.example/x\\u001b[2J → 500"
        );
        let host_with_userinfo = json!({
            http::METHOD: "GET", http::SCHEME: "http", http::HOST: "me:pw@h\nost", http::PORT: 80,
            http::PATH: "/p?q=1",
        });
        assert_eq!(
            shown(&host_with_userinfo, "OK"),
            "agl.http.request (0.25 s)  GET http://h⏎ost/p → no response"
        );
    }

    #[test]
    fn a_parent_loop_shows_each_span_once() {
        let spans = [
            span("a", Some("b"), "x", 1.0, json!({})),
            span("b", Some("a"), "y", 2.0, json!({})),
        ];
        assert_eq!(lines(&spans), ["x", "y"]);
    }
}
