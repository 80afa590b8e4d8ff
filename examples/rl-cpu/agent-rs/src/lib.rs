//! The RL example's Rust agent: the same task as `../agent-py`. One chat call through agl-host's
//! LLM proxy (the `proxy_llm` resource `llm`: this attempt's own capability endpoint), graded by
//! the first word of the reply.

use agl_sdk::Resource;
use agl_sdk::prelude::*;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize)]
struct Task {
    question: String,
    answer: String,
}

fn rollout(task: Task, ctx: &Ctx) -> Result<Option<f64>> {
    let Some(Resource::ProxyLlm(llm)) = ctx.resource("llm") else {
        return Err(Error::new("the resources have no proxy_llm resource named `llm`"));
    };
    let url = format!("{}/chat/completions", llm.endpoint.trim_end_matches('/'));
    let body = json!({
        "model": llm.model,
        "max_tokens": 2,
        "messages": [{"role": "user", "content": task.question}],
    });
    let answer: Value = ctx.http().post_json(&url, &body)?.error_for_status()?.json()?;
    let text = answer["choices"][0]["message"]["content"].as_str().unwrap_or_default();
    let first = text.split_whitespace().next().unwrap_or_default();
    Ok(Some(if first == task.answer { 1.0 } else { 0.0 }))
}

agl_sdk::export_agent!(rollout);
