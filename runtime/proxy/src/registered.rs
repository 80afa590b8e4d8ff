//! Model servers registered through Agent-lightning 1.0's gateway (`POST /api/models`, kept in
//! the store as `agl_store::registered_model` resources): a rollout whose resources hold one has
//! its calls sent to that server, not to the proxy's own upstreams, so that a trainer that
//! registers its inference servers (verl's rollout manager does) serves the rollouts it enqueues.
//! The upstream of each server is made once and kept (a bounded map: a trainer registers a few).

use crate::upstream::{Upstream, UpstreamError};
use agl_llm::OpenAiConfig;
use parking_lot::Mutex;
use std::collections::HashMap;

/// How many registered servers' upstreams are kept at once (beyond it the map starts afresh).
const MAX_KEPT: usize = 64;

/// The upstreams of registered model servers, by (API root, model).
#[derive(Default)]
pub(crate) struct RegisteredServers {
    kept: Mutex<HashMap<(String, String), Upstream>>,
}

impl RegisteredServers {
    /// The upstream of the server at `endpoint` (its OpenAI API root, e.g. `http://h:8000/v1`)
    /// answering as `model`, made on first use with `template`'s timeout and retries.
    pub(crate) fn upstream(
        &self,
        endpoint: &str,
        model: &str,
        template: &OpenAiConfig,
    ) -> Result<Upstream, UpstreamError> {
        let key = (endpoint.to_owned(), model.to_owned());
        let mut kept = self.kept.lock();
        if let Some(upstream) = kept.get(&key) {
            return Ok(upstream.clone());
        }
        let config = OpenAiConfig {
            base_url: endpoint.to_owned(),
            model: model.to_owned(),
            api_key: None,
            ..template.clone()
        };
        let upstream = Upstream::openai(config)?;
        if kept.len() >= MAX_KEPT {
            kept.clear();
        }
        kept.insert(key, upstream.clone());
        Ok(upstream)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_is_made_once_and_a_bad_endpoint_is_refused() {
        let servers = RegisteredServers::default();
        let template = OpenAiConfig::default();
        let first = servers.upstream("http://127.0.0.1:9/v1", "m", &template).unwrap();
        let again = servers.upstream("http://127.0.0.1:9/v1", "m", &template).unwrap();
        assert_eq!(first.describe(), again.describe());
        assert_eq!(servers.kept.lock().len(), 1);
        assert!(servers.upstream("ftp://x/v1", "m", &template).is_err());
        assert!(servers.upstream("http://127.0.0.1:9/v1", " ", &template).is_err());
    }
}
