//! The LLM backend of a run, from the flags: an OpenAI-compatible endpoint, a scripted rules
//! file, or none (then every LLM call fails with a message saying how to configure one).

use crate::args::{LlmArgs, ProxyArgs};
use crate::inputs::InputError;
use agl_llm::{
    ChatRequest, ChatResponse, LlmBackend, LlmError, OpenAiBackend, OpenAiConfig, ScriptedBackend, SimulatedBackend,
};
use std::sync::Arc;

/// Answers every call with an error saying why there is no LLM (none was configured; a replay
/// answers from its record).
pub struct Refusing {
    why: &'static str,
    description: &'static str,
}

impl Refusing {
    /// No LLM was configured.
    pub fn unconfigured() -> Arc<dyn LlmBackend> {
        Arc::new(Self {
            why: "no LLM configured: run with --llm-script RULES.json or --llm-endpoint URL --llm-model MODEL",
            description: "none (LLM calls fail)",
        })
    }

    /// A replay's: every call is answered from the record, and one that is not on it diverges
    /// before it reaches here.
    pub fn record_only() -> Arc<dyn LlmBackend> {
        Arc::new(Self {
            why: "a replay calls no LLM: this call is not on the record (use --live to go on with one)",
            description: "none (answered from the record)",
        })
    }
}

#[async_trait::async_trait]
impl LlmBackend for Refusing {
    async fn chat(&self, _request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        Err(LlmError::Backend(self.why.into()))
    }

    fn default_model(&self) -> &str {
        "none"
    }

    fn describe(&self) -> String {
        self.description.into()
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
    if let Some(spec) = &args.llm_simulate {
        return Ok(Arc::new(simulated(spec)?));
    }
    if let Some(endpoint) = &args.llm_endpoint {
        let model = args.llm_model.clone().unwrap_or_default();
        let mut config = OpenAiConfig::new(endpoint.trim_end_matches('/'), model);
        config.api_key = api_key(args);
        let backend = OpenAiBackend::new(config).map_err(|e| InputError(format!("LLM endpoint {endpoint}: {e}")))?;
        return Ok(Arc::new(backend));
    }
    Ok(Refusing::unconfigured())
}

/// The simulated LLM of `--llm-simulate SPEC.json` (its errors name the file).
fn simulated(spec: &std::path::Path) -> Result<SimulatedBackend, InputError> {
    SimulatedBackend::from_file(spec).map_err(|e| InputError(format!("--llm-simulate: {e}")))
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
    } else if let Some(spec) = &args.llm_simulate {
        vec![agl_proxy::Upstream::backend(Arc::new(simulated(spec)?))]
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

/// The run's resources with the LLM proxy at `endpoint` (its `/v1` root) in them: every
/// `proxy_llm` resource pointed at it (its model, when empty, the upstream's default); with none,
/// one named `llm` is added (unless the name is taken). Returns what was done, for the log.
pub fn with_proxy_resource(
    resources: Option<agl_store::NamedResources>,
    endpoint: &str,
    model: &str,
) -> (agl_store::NamedResources, String) {
    use agl_store::{LlmResource, Resource};
    let mut resources = resources.unwrap_or_default();
    let mut pointed = Vec::new();
    for (name, resource) in resources.iter_mut() {
        if let Resource::ProxyLlm(llm) = resource {
            llm.endpoint = endpoint.to_owned();
            if llm.model.trim().is_empty() {
                llm.model = model.to_owned();
            }
            pointed.push(name.clone());
        }
    }
    if !pointed.is_empty() {
        return (
            resources,
            format!("proxy_llm resource(s) {} point at it", pointed.join(", ")),
        );
    }
    if resources.contains_key("llm") {
        return (
            resources,
            "no proxy_llm resource points at it (the name `llm` is taken)".to_owned(),
        );
    }
    let resource = Resource::ProxyLlm(LlmResource {
        endpoint: endpoint.to_owned(),
        model: model.to_owned(),
        api_key: None,
        sampling_parameters: Default::default(),
    });
    resources.insert("llm".to_owned(), resource);
    (resources, "published as the proxy_llm resource `llm`".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agl_store::{NamedResources, Resource};

    fn resources(json: serde_json::Value) -> NamedResources {
        serde_json::from_value(json).expect("resources")
    }

    #[test]
    fn proxy_llm_resources_point_at_the_proxy_and_one_is_added_when_there_is_none() {
        let given = resources(serde_json::json!({
            "prompt": {"resource_type": "prompt_template", "template": "{q}", "engine": "f-string"},
            "main": {"resource_type": "proxy_llm", "endpoint": "http://placeholder/v1", "model": ""}
        }));
        let (out, said) = with_proxy_resource(Some(given), "http://127.0.0.1:9/v1", "m");
        match &out["main"] {
            Resource::ProxyLlm(llm) => assert_eq!(
                (llm.endpoint.as_str(), llm.model.as_str()),
                ("http://127.0.0.1:9/v1", "m")
            ),
            other => panic!("{other:?}"),
        }
        assert!(!out.contains_key("llm") && said.contains("main"), "{said}");

        let (out, _) = with_proxy_resource(None, "http://127.0.0.1:9/v1", "m");
        assert!(matches!(&out["llm"], Resource::ProxyLlm(llm) if llm.endpoint == "http://127.0.0.1:9/v1"));
    }
}
