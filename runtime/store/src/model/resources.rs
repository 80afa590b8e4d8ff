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

/// Model servers registered through Agent-lightning 1.0's gateway (`POST /api/models`), kept as
/// `proxy_llm` resources named `gateway-model.{place}.v{version}` (the endpoint is the server's,
/// never the proxy's), the first also as [`ALIAS`]: the gateway lists them back, agents find the
/// model where they always look, and the LLM proxy sends the calls of a rollout whose resources
/// hold one to the first of them.
pub mod registered_model {
    use super::{LlmResource, NamedResources, Resource};

    /// The name prefix of a registered model's resource.
    pub const PREFIX: &str = "gateway-model.";

    /// The name the first registered model server also has: the `proxy_llm` resource agents look
    /// up (as `agl-host run --llm-proxy` names its own).
    pub const ALIAS: &str = "llm";

    /// The resource name of the model server registered at `place` (0 first) with `version`.
    pub fn name(place: usize, version: i64) -> String {
        format!("{PREFIX}{place}.v{version}")
    }

    /// The place and version that `name` gives a registered model, if it names one.
    pub fn parse(name: &str) -> Option<(usize, i64)> {
        let (place, version) = name.strip_prefix(PREFIX)?.split_once(".v")?;
        Some((place.parse().ok()?, version.parse().ok()?))
    }

    /// The registered model servers of `resources`: (place, version, server), in place order.
    pub fn all(resources: &NamedResources) -> Vec<(usize, i64, &LlmResource)> {
        let mut found: Vec<(usize, i64, &LlmResource)> = resources
            .iter()
            .filter_map(|(name, resource)| match (parse(name), resource) {
                (Some((place, version)), Resource::ProxyLlm(llm)) => Some((place, version, llm)),
                _ => None,
            })
            .collect();
        found.sort_by_key(|(place, _, _)| *place);
        found
    }

    /// The server a rollout with `resources` is served by: the first registered, if any.
    pub fn first(resources: &NamedResources) -> Option<(i64, &LlmResource)> {
        all(resources)
            .into_iter()
            .next()
            .map(|(_, version, llm)| (version, llm))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn names_round_trip_and_others_are_not_registered_models() {
            assert_eq!(parse(&name(3, 17)), Some((3, 17)));
            for other in [
                "llm",
                "gateway-model.",
                "gateway-model.x.v1",
                "gateway-model.0.vx",
                "gateway-model.0",
            ] {
                assert_eq!(parse(other), None, "{other}");
            }
        }

        #[test]
        fn the_first_is_the_lowest_place_of_a_proxy_llm() {
            let llm = |endpoint: &str| LlmResource {
                endpoint: endpoint.into(),
                model: "m".into(),
                api_key: None,
                sampling_parameters: Default::default(),
            };
            let mut resources = NamedResources::new();
            resources.insert("llm".into(), Resource::ProxyLlm(llm("http://proxy")));
            resources.insert(name(1, 2), Resource::ProxyLlm(llm("http://b")));
            resources.insert(name(0, 2), Resource::ProxyLlm(llm("http://a")));
            resources.insert(name(2, 2), Resource::Llm(llm("http://not-proxy")));
            assert_eq!(
                first(&resources).map(|(v, l)| (v, l.endpoint.as_str())),
                Some((2, "http://a"))
            );
            assert_eq!(all(&resources).len(), 2);
        }
    }
}
