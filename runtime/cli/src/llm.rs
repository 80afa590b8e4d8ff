//! The LLM backend of a run, from the flags: an OpenAI-compatible endpoint, a scripted rules
//! file, or none (then every LLM call fails with a message saying how to configure one).

use crate::args::LlmArgs;
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

pub fn backend(args: &LlmArgs) -> Result<Arc<dyn LlmBackend>, InputError> {
    if let Some(script) = &args.llm_script {
        let backend = ScriptedBackend::from_file(script)
            .map_err(|e| InputError(format!("LLM script {}: {e}", script.display())))?;
        return Ok(Arc::new(backend));
    }
    if let Some(endpoint) = &args.llm_endpoint {
        let model = args.llm_model.clone().unwrap_or_default();
        let mut config = OpenAiConfig::new(endpoint.trim_end_matches('/'), model);
        config.api_key = std::env::var(&args.llm_api_key_env)
            .ok()
            .filter(|k| !k.trim().is_empty());
        let backend = OpenAiBackend::new(config).map_err(|e| InputError(format!("LLM endpoint {endpoint}: {e}")))?;
        return Ok(Arc::new(backend));
    }
    Ok(Arc::new(NoLlm))
}
