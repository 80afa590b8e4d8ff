//! `agl:agent/store` for algorithms: each call delegates to the LightningStore trait. Bad input
//! from the algorithm (JSON that does not parse, an unknown id) comes back as `err(reason)`;
//! nothing an algorithm sends can trap the host.

use super::bindings::store::{self as wit, Host};
use super::convert::{store_status, wit_rollout};
use super::state::AlgorithmState;
use crate::bindings::store_mode;
use agl_store::{
    EnqueueRolloutRequest, JsonMap, NamedResources, Resource, ResourcesUpdate, RolloutConfig, RolloutQuery,
    RolloutStatus, RolloutUpdate, SpanQuery, StoreError,
};
use std::time::Duration;

/// Most rollouts one `query-rollouts` call returns.
const MAX_PAGE: u32 = 10_000;
/// Longest single `wait` (an algorithm that wants longer calls again).
const MAX_WAIT: Duration = Duration::from_secs(3600);

fn store_error(e: StoreError) -> String {
    e.to_string()
}

fn parse_json<T: serde::de::DeserializeOwned>(what: &str, text: &str) -> Result<T, String> {
    serde_json::from_str(text).map_err(|e| format!("{what} is not valid JSON for its type: {e}"))
}

fn enqueue_request(index: usize, rollout: wit::NewRollout) -> Result<EnqueueRolloutRequest, String> {
    let input: serde_json::Value = parse_json(&format!("rollout {index}: input-json"), &rollout.input_json)?;
    let config = match rollout.config_json {
        Some(text) => {
            let config: RolloutConfig = parse_json(&format!("rollout {index}: config-json"), &text)?;
            config
                .validate()
                .map_err(|e| format!("rollout {index}: config-json: {e}"))?;
            Some(config)
        }
        None => None,
    };
    let metadata = match rollout.metadata_json {
        Some(text) => Some(parse_json::<JsonMap>(
            &format!("rollout {index}: metadata-json"),
            &text,
        )?),
        None => None,
    };
    Ok(EnqueueRolloutRequest {
        input,
        mode: rollout.mode.map(store_mode),
        resources_id: rollout.resources_id,
        config,
        metadata,
        rollout_id: None,
    })
}

/// A resources version as the algorithm sees it: API keys are never shown to plugins.
fn resources_version(update: ResourcesUpdate) -> Result<wit::ResourcesVersion, String> {
    let mut resources = update.resources;
    for resource in resources.values_mut() {
        if let Resource::Llm(llm) | Resource::ProxyLlm(llm) = resource {
            llm.api_key = None;
        }
    }
    let resources_json = serde_json::to_string(&resources).map_err(|e| e.to_string())?;
    Ok(wit::ResourcesVersion {
        resources_id: update.resources_id,
        resources_json,
    })
}

fn wait_timeout(seconds: f64) -> Duration {
    if seconds.is_finite() && seconds > 0.0 {
        Duration::try_from_secs_f64(seconds).unwrap_or(MAX_WAIT).min(MAX_WAIT)
    } else {
        Duration::ZERO
    }
}

impl Host for AlgorithmState {
    async fn enqueue(&mut self, rollouts: Vec<wit::NewRollout>) -> Result<Vec<wit::Rollout>, String> {
        let requests = rollouts
            .into_iter()
            .enumerate()
            .map(|(i, r)| enqueue_request(i, r))
            .collect::<Result<Vec<_>, _>>()?;
        let enqueued = self.world.store.enqueue_rollouts(requests).await.map_err(store_error)?;
        Ok(enqueued.iter().map(|r| wit_rollout(r, None)).collect())
    }

    async fn wait(&mut self, rollout_ids: Vec<String>, timeout_seconds: f64) -> Result<Vec<wit::Rollout>, String> {
        let store = self.world.store.clone();
        let finished = store
            .wait_for_rollouts(&rollout_ids, Some(wait_timeout(timeout_seconds)))
            .await
            .map_err(store_error)?;
        let mut out = Vec::with_capacity(finished.len());
        for rollout in &finished {
            let latest = store
                .get_latest_attempt(&rollout.rollout_id)
                .await
                .map_err(store_error)?;
            out.push(wit_rollout(rollout, latest.as_ref()));
        }
        Ok(out)
    }

    async fn get_rollout(&mut self, rollout_id: String) -> Result<Option<wit::Rollout>, String> {
        let view = self
            .world
            .store
            .get_rollout_by_id(&rollout_id)
            .await
            .map_err(store_error)?;
        Ok(view.map(|v| wit_rollout(&v.rollout, v.attempt.as_ref())))
    }

    async fn query_rollouts(
        &mut self,
        statuses: Vec<wit::RolloutStatus>,
        limit: u32,
        offset: u32,
    ) -> Result<Vec<wit::Rollout>, String> {
        let mut query = RolloutQuery::default()
            .limit(i64::from(limit.min(MAX_PAGE)))
            .offset(i64::from(offset));
        if !statuses.is_empty() {
            query = query.status_in(statuses.into_iter().map(store_status).collect::<Vec<RolloutStatus>>());
        }
        let page = self.world.store.query_rollouts(&query).await.map_err(store_error)?;
        Ok(page
            .items
            .iter()
            .map(|v| wit_rollout(&v.rollout, v.attempt.as_ref()))
            .collect())
    }

    async fn query_spans(&mut self, rollout_id: String, attempt_id: Option<String>) -> Result<Vec<String>, String> {
        let query = SpanQuery::for_rollout(rollout_id).attempt(attempt_id.unwrap_or_else(|| "latest".to_owned()));
        let page = self.world.store.query_spans(&query).await.map_err(store_error)?;
        page.items
            .iter()
            .map(|span| serde_json::to_string(span.as_ref()).map_err(|e| e.to_string()))
            .collect()
    }

    async fn cancel(&mut self, rollout_id: String) -> Result<(), String> {
        self.world
            .store
            .update_rollout(&rollout_id, RolloutUpdate::status(RolloutStatus::Cancelled))
            .await
            .map(drop)
            .map_err(store_error)
    }

    async fn add_resources(&mut self, resources_json: String) -> Result<String, String> {
        let resources: NamedResources = parse_json("resources-json", &resources_json)?;
        let added = self.world.store.add_resources(resources).await.map_err(store_error)?;
        Ok(added.resources_id)
    }

    async fn update_resources(&mut self, resources_id: String, resources_json: String) -> Result<(), String> {
        let resources: NamedResources = parse_json("resources-json", &resources_json)?;
        self.world
            .store
            .update_resources(&resources_id, resources)
            .await
            .map(drop)
            .map_err(store_error)
    }

    async fn latest_resources(&mut self) -> Result<Option<wit::ResourcesVersion>, String> {
        let latest = self.world.store.get_latest_resources().await.map_err(store_error)?;
        latest.map(resources_version).transpose()
    }

    async fn get_resources(&mut self, resources_id: String) -> Result<Option<wit::ResourcesVersion>, String> {
        let found = self
            .world
            .store
            .get_resources_by_id(&resources_id)
            .await
            .map_err(store_error)?;
        found.map(resources_version).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_timeouts_are_clamped() {
        assert_eq!(wait_timeout(f64::NAN), Duration::ZERO);
        assert_eq!(wait_timeout(-1.0), Duration::ZERO);
        assert_eq!(wait_timeout(1e12), MAX_WAIT);
        assert_eq!(wait_timeout(0.5), Duration::from_millis(500));
    }

    #[test]
    fn a_bad_rollout_names_its_index_and_field() {
        let bad = wit::NewRollout {
            input_json: "{not json".into(),
            mode: None,
            resources_id: None,
            config_json: None,
            metadata_json: None,
        };
        let error = enqueue_request(3, bad).unwrap_err();
        assert!(error.starts_with("rollout 3: input-json"), "{error}");
        let zero_attempts = wit::NewRollout {
            input_json: "{}".into(),
            mode: None,
            resources_id: None,
            config_json: Some(r#"{"max_attempts": 0}"#.into()),
            metadata_json: None,
        };
        let error = enqueue_request(0, zero_attempts).unwrap_err();
        assert!(error.contains("max_attempts"), "{error}");
    }
}
