//! The proxy agent: calls the LLM through agl-host's LLM proxy over HTTP (`ctx.http()`), as an
//! agent with an OpenAI client would, instead of through the host's `llm` interface. The
//! `proxy_llm` resource `llm` gives the proxy's endpoint and model; the per-attempt base URL is
//! built as Agent-lightning's `ProxyLLM.get_base_url` builds it, so the proxy records the call as
//! an LLM span of this attempt. The task: `{"question": "...", "answer": "..."}`; the reward is 1
//! when the model's text ends with `answer`.
//!
//! It is also the attacker of the proxy's port (the hostile fields of the task, all optional):
//! `probes` (`[{"method", "path", "body"}]`, sent to the proxy's origin, each logged as
//! `probe METHOD PATH: STATUS`), `calls` (more chat calls through its capability after the
//! first, each with `model` and a user message of `pad` bytes, logged as `call N: STATUS
//! <start of the body>`). It logs its capability's endpoint (`capability ENDPOINT`) so that a
//! test can try it once the attempt has ended.

use agl_sdk::Resource;

use agl_sdk::prelude::*;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize)]
struct Task {
    question: String,
    answer: String,
    #[serde(default)]
    probes: Vec<Probe>,
    #[serde(default)]
    calls: u32,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    pad: usize,
}

#[derive(Deserialize)]
struct Probe {
    method: String,
    path: String,
    #[serde(default)]
    body: Option<Value>,
}

/// `scheme://host[:port]` of a URL.
fn origin(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(slash) => &url[..after_scheme + slash],
        None => url,
    }
}

/// `ProxyLLM.get_base_url`: `/rollout/{rollout}/attempt/{attempt}` before the endpoint's `/v1`.
fn base_url(endpoint: &str, rollout_id: &str, attempt_id: &str) -> String {
    let prefix = endpoint.trim_end_matches('/');
    match prefix.strip_suffix("/v1") {
        Some(root) => format!("{root}/rollout/{rollout_id}/attempt/{attempt_id}/v1"),
        None => format!("{prefix}/rollout/{rollout_id}/attempt/{attempt_id}"),
    }
}

fn rollout(task: Task, ctx: &Ctx) -> Result<Option<f64>> {
    let Some(Resource::ProxyLlm(llm)) = ctx.resource("llm") else {
        return Err(Error::new("the resources have no proxy_llm resource named `llm`"));
    };
    let url = format!(
        "{}/chat/completions",
        base_url(&llm.endpoint, ctx.rollout_id(), ctx.attempt_id())
    );
    let body = json!({"model": llm.model, "messages": [{"role": "user", "content": task.question}]});
    ctx.info(&format!("capability {}", llm.endpoint));
    let answer: Value = ctx.http().post_json(&url, &body)?.error_for_status()?.json()?;
    let text = answer["choices"][0]["message"]["content"].as_str().unwrap_or_default();
    ctx.info(&format!("the proxy answered: {text}"));
    let reward = if text.trim().ends_with(&task.answer) { 1.0 } else { 0.0 };
    for probe in &task.probes {
        let mut request = HttpRequest::new(
            probe.method.as_str(),
            format!("{}{}", origin(&llm.endpoint), probe.path),
        );
        if let Some(body) = &probe.body {
            request = request.json(body)?;
        }
        match ctx.http().send(&request) {
            Ok(response) => ctx.info(&format!("probe {} {}: {}", probe.method, probe.path, response.status)),
            Err(e) => ctx.info(&format!("probe {} {}: error {e}", probe.method, probe.path)),
        }
    }
    for n in 1..=task.calls {
        let model = task.model.clone().unwrap_or_else(|| llm.model.clone());
        let content = format!("say {n}{}", " ".repeat(task.pad));
        let body = json!({"model": model, "messages": [{"role": "user", "content": content}]});
        match ctx.http().post_json(&url, &body) {
            Ok(response) => {
                let text = String::from_utf8_lossy(&response.body);
                let start: String = text.chars().take(160).collect();
                ctx.info(&format!("call {n}: {} {start}", response.status));
            }
            Err(e) => ctx.info(&format!("call {n}: error {e}")),
        }
    }
    Ok(Some(reward))
}

agl_sdk::export_agent!(rollout);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_origin_is_the_urls_scheme_host_and_port() {
        assert_eq!(origin("http://127.0.0.1:9/agent/s/v1"), "http://127.0.0.1:9");
        assert_eq!(origin("http://h"), "http://h");
    }

    #[test]
    fn the_base_url_is_agent_lightnings() {
        assert_eq!(
            base_url("http://127.0.0.1:4747/v1", "ro-1", "at-1"),
            "http://127.0.0.1:4747/rollout/ro-1/attempt/at-1/v1"
        );
        assert_eq!(
            base_url("http://h:1/", "ro-1", "at-1"),
            "http://h:1/rollout/ro-1/attempt/at-1"
        );
    }
}
