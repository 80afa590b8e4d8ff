//! Tunable resources (prompt templates, LLM endpoints) and their versioned snapshots.

use super::JsonMap;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TemplateEngine {
    #[serde(rename = "f-string")]
    FString,
    #[serde(rename = "jinja")]
    Jinja,
    #[serde(rename = "poml")]
    Poml,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptTemplate {
    pub template: String,
    pub engine: TemplateEngine,
}

/// An LLM endpoint (also the shape of `proxy_llm`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmResource {
    pub endpoint: String,
    pub model: String,
    #[serde(default)]
    pub api_key: Option<String>,
    #[serde(default)]
    pub sampling_parameters: JsonMap,
}

/// One named resource, discriminated by `resource_type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "resource_type")]
pub enum Resource {
    #[serde(rename = "prompt_template")]
    PromptTemplate(PromptTemplate),
    #[serde(rename = "llm")]
    Llm(LlmResource),
    #[serde(rename = "proxy_llm")]
    ProxyLlm(LlmResource),
}

/// A bundle of resources by name, e.g. `{"prompt": {...}, "llm": {...}}`.
pub type NamedResources = indexmap::IndexMap<String, Resource>;

/// A stored version of a resource bundle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourcesUpdate {
    pub resources_id: String,
    pub create_time: f64,
    pub update_time: f64,
    /// Starts at 1; bumped by every `update_resources` on the same id.
    pub version: u64,
    pub resources: NamedResources,
}
