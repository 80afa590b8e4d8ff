//! The [`LlmBackend`] trait: the single seam between the runtime and whatever answers chat
//! requests (an OpenAI-compatible server, a scripted rules file, a test double).

use crate::{ChatRequest, ChatResponse, LlmError};

/// Something that answers chat requests. Object-safe: used as `Arc<dyn LlmBackend>`.
#[async_trait::async_trait]
pub trait LlmBackend: Send + Sync {
    /// Answers one request. `request.model` `None` means [`Self::default_model`].
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError>;

    /// The model used when a request names none.
    fn default_model(&self) -> &str;

    /// Short human name for logs, e.g. `"openai-compatible http://127.0.0.1:8000/v1"` or
    /// `"scripted rules.json"`.
    fn describe(&self) -> String;
}
