//! The proxy agent: calls the LLM through agl-host's LLM proxy over HTTP (`ctx.http()`), as an
//! agent with an OpenAI client would, instead of through the host's `llm` interface. The
//! `proxy_llm` resource `llm` gives the proxy's endpoint and model; the per-attempt base URL is
//! built as Agent-lightning's `ProxyLLM.get_base_url` builds it, so the proxy records the call as
//! an LLM span of this attempt. The task: `{"question": "...", "answer": "..."}`; the reward is 1
//! when the model's text ends with `answer`.

use agl_sdk::Resource;
use agl_sdk::prelude::*;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize)]
struct Task {
    question: String,
    answer: String,
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
    let answer: Value = ctx.http().post_json(&url, &body)?.error_for_status()?.json()?;
    let text = answer["choices"][0]["message"]["content"].as_str().unwrap_or_default();
    ctx.info(&format!("the proxy answered: {text}"));
    Ok(Some(if text.trim().ends_with(&task.answer) { 1.0 } else { 0.0 }))
}

agl_sdk::export_agent!(rollout);

#[cfg(test)]
mod tests {
    use super::*;

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
