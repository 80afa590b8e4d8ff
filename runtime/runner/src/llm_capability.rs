//! The LLM proxy's per-attempt capability, as runners hand it to agents: for each attempt whose
//! resources hold a `proxy_llm` resource, the runner asks its [`ProxyCapabilities`] for a
//! capability spending the attempt's own LLM allowance, points every `proxy_llm` resource (in the
//! copy the agent sees) at the capability's endpoint, and drops the capability (revoking it) when
//! the attempt ends. What issues capabilities (the proxy in this process, or one reached over
//! HTTP) is the binary's to say.

use agl_store::{Resource, ResourcesUpdate};
use agl_wasm::LlmAllowance;
use std::sync::Arc;

/// Issues per-attempt capabilities of one LLM proxy.
#[async_trait::async_trait]
pub trait ProxyCapabilities: Send + Sync {
    /// A capability for the attempt, admitting and charging its calls through `allowance`;
    /// `None` when there is no proxy to issue one (the resources are left as they are).
    async fn issue(
        &self,
        rollout_id: &str,
        attempt_id: &str,
        allowance: Arc<LlmAllowance>,
    ) -> Result<Option<IssuedCapability>, String>;
}

/// A live capability.
pub struct IssuedCapability {
    /// The API root to hand the agent in place of the proxy's own.
    pub endpoint: String,
    /// Revokes the capability when dropped.
    pub guard: Box<dyn Send + Sync>,
}

/// Whether the resources hold a `proxy_llm` resource.
pub(crate) fn has_proxy_llm(resources: &ResourcesUpdate) -> bool {
    resources.resources.values().any(|r| matches!(r, Resource::ProxyLlm(_)))
}

/// `resources` with every `proxy_llm` resource pointed at `capability`: the only way into the
/// proxy an agent gets.
pub(crate) fn pointed_at_capability(resources: &ResourcesUpdate, capability: &str) -> ResourcesUpdate {
    let mut copy = resources.clone();
    for resource in copy.resources.values_mut() {
        if let Resource::ProxyLlm(llm) = resource {
            llm.endpoint = capability.to_owned();
        }
    }
    copy
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resources(json: serde_json::Value) -> ResourcesUpdate {
        serde_json::from_value(
            json!({"resources_id": "rs-1", "resources": json, "create_time": 0.0, "update_time": 0.0, "version": 1}),
        )
        .expect("resources")
    }

    use serde_json::json;

    #[test]
    fn every_proxy_llm_resource_is_pointed_at_the_capability() {
        let given = resources(json!({
            "llm": {"resource_type": "proxy_llm", "endpoint": "http://127.0.0.1:9/v1/", "model": "m"},
            "other": {"resource_type": "proxy_llm", "endpoint": "http://elsewhere/v1", "model": "m"},
            "prompt": {"resource_type": "prompt_template", "template": "x", "engine": "f-string"}
        }));
        assert!(has_proxy_llm(&given));
        let seen = pointed_at_capability(&given, "http://127.0.0.1:9/agent/s/v1");
        for name in ["llm", "other"] {
            assert!(
                matches!(&seen.resources[name], Resource::ProxyLlm(llm) if llm.endpoint == "http://127.0.0.1:9/agent/s/v1")
            );
        }
        assert!(matches!(&seen.resources["prompt"], Resource::PromptTemplate(_)));
        let none =
            resources(json!({"prompt": {"resource_type": "prompt_template", "template": "x", "engine": "f-string"}}));
        assert!(!has_proxy_llm(&none));
    }
}
