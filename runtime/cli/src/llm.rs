//! The LLM backend of a run, from the flags: an OpenAI-compatible endpoint, a scripted rules
//! file, or none (then every LLM call fails with a message saying how to configure one).

use crate::args::{LlmArgs, ProxyArgs};
use crate::inputs::InputError;
use agl_llm::{ChatRequest, ChatResponse, LlmBackend, LlmError, OpenAiBackend, OpenAiConfig, ScriptedBackend};
use std::sync::Arc;

/// Answers every call with an error: no LLM was configured.
struct NoLlm;

#[async_trait::async_trait]
impl LlmBackend for NoLlm {
    async fn chat(&self, _request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        Err(LlmError::Backend(
            "no LLM configured: run with --llm-script RULES.json or --llm-endpoint URL --llm-model MODEL".into(),
        ))
    }

    fn default_model(&self) -> &str {
        "none"
    }

    fn describe(&self) -> String {
        "none (LLM calls fail)".into()
    }
}

/// The key of an endpoint, from the variable `--llm-api-key-env` names (empty: none).
fn api_key(args: &LlmArgs) -> Option<String> {
    std::env::var(&args.llm_api_key_env)
        .ok()
        .filter(|k| !k.trim().is_empty())
}

pub fn backend(args: &LlmArgs) -> Result<Arc<dyn LlmBackend>, InputError> {
    if let Some(script) = &args.llm_script {
        let backend = ScriptedBackend::from_file(script)
            .map_err(|e| InputError(format!("LLM script {}: {e}", script.display())))?;
        return Ok(Arc::new(backend));
    }
    if let Some(endpoint) = &args.llm_endpoint {
        let model = args.llm_model.clone().unwrap_or_default();
        let mut config = OpenAiConfig::new(endpoint.trim_end_matches('/'), model);
        config.api_key = api_key(args);
        let backend = OpenAiBackend::new(config).map_err(|e| InputError(format!("LLM endpoint {endpoint}: {e}")))?;
        return Ok(Arc::new(backend));
    }
    Ok(Arc::new(NoLlm))
}

/// Where the LLM proxy sends calls (`agl-host store --llm-proxy`): the scripted backend, or
/// `--llm-endpoint` and its `--llm-replica`s, each with the key, timeout and retries given.
pub fn proxy_upstreams(args: &LlmArgs, proxy: &ProxyArgs) -> Result<agl_proxy::Upstreams, InputError> {
    let timeout = agl_wasm::policy::parse_duration(&proxy.llm_proxy_timeout)
        .map_err(|e| InputError(format!("--llm-proxy-timeout: {e}")))?;
    let upstreams = if let Some(script) = &args.llm_script {
        let backend = ScriptedBackend::from_file(script)
            .map_err(|e| InputError(format!("LLM script {}: {e}", script.display())))?;
        vec![agl_proxy::Upstream::backend(Arc::new(backend))]
    } else if let Some(endpoint) = &args.llm_endpoint {
        std::iter::once(endpoint)
            .chain(&proxy.llm_replicas)
            .map(|url| {
                let mut config =
                    OpenAiConfig::new(url.trim_end_matches('/'), args.llm_model.clone().unwrap_or_default());
                config.api_key = api_key(args);
                config.request_timeout = timeout;
                config.max_retries = proxy.llm_retries;
                agl_proxy::Upstream::openai(config).map_err(|e| InputError(e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?
    } else {
        Vec::new()
    };
    agl_proxy::Upstreams::new(upstreams).ok_or_else(|| {
        InputError("--llm-proxy needs an LLM: --llm-endpoint URL --llm-model MODEL, or --llm-script RULES.json".into())
    })
}
