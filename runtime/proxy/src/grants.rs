//! Per-attempt capabilities: the only way a sandboxed agent reaches the proxy. A runner issues
//! one for each attempt it runs ([`Grants::issue`]): an unguessable secret (256 bits from the
//! operating system) in the path of the endpoint handed to the agent in its `proxy_llm`
//! resource, `{proxy}/agent/{secret}/v1`. A call through it is attributed to that attempt, admitted
//! and charged through the attempt's own [`LlmAllowance`] (the same one its `llm` import
//! spends, when the runner is in this process), and recorded as its span. Dropping the
//! [`GrantGuard`] (the attempt ended) revokes it: later calls are 404s. Runners in other
//! processes ask for one over HTTP with the operator's token ([`GrantRequest`], `POST
//! /proxy/grants`), giving the attempt's LLM policy ([`LlmLimits`]), and revoke it with `DELETE
//! /proxy/grants/{secret}`; a grant whose attempt is found ended is revoked too.

use agl_policy::{LlmBudget, LlmPolicy, LlmRequestLimits};
use agl_trace::LlmAllowance;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// Refused calls recorded as spans per attempt; later refusals are answered but not recorded
/// (an agent looping on a refusal must not flood the store).
const MAX_RECORDED_REFUSALS: u32 = 64;

/// What a capability lets its holder do: LLM calls of one attempt, under its allowance.
#[derive(Debug)]
pub struct AttemptGrant {
    pub rollout_id: String,
    pub attempt_id: String,
    pub allowance: Arc<LlmAllowance>,
    refusals: AtomicU32,
    /// One call at a time, as through the `llm` import: concurrent calls could each be admitted
    /// against the same tokens left and together spend many times them.
    turn: Arc<tokio::sync::Semaphore>,
}

impl AttemptGrant {
    /// Counts one refused call; `true` while it may still be recorded.
    pub(crate) fn record_refusal(&self) -> bool {
        self.refusals.fetch_add(1, Ordering::Relaxed) < MAX_RECORDED_REFUSALS
    }

    /// Waits for the attempt's turn to call; the call holds it until it has ended (a stream
    /// until its last event).
    pub(crate) async fn turn(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        self.turn.clone().acquire_owned().await.ok()
    }
}

/// The capabilities alive now, by secret. Cheap to clone; every clone is the same set.
#[derive(Debug, Clone, Default)]
pub struct Grants {
    live: Arc<Mutex<HashMap<String, Arc<AttemptGrant>>>>,
}

/// The operating system could not give randomness for a secret.
#[derive(Debug, thiserror::Error)]
#[error("no randomness for an LLM proxy capability: {0}")]
pub struct GrantError(String);

impl Grants {
    /// A new capability for the attempt, spending `allowance`; revoked when the guard drops.
    pub fn issue(
        &self,
        rollout_id: &str,
        attempt_id: &str,
        allowance: Arc<LlmAllowance>,
    ) -> Result<GrantGuard, GrantError> {
        let secret = self.issue_detached(rollout_id, attempt_id, allowance)?;
        Ok(GrantGuard {
            grants: self.clone(),
            secret,
        })
    }

    /// A new capability, alive until [`Self::revoke`]d (or its attempt is found ended): its
    /// secret.
    pub fn issue_detached(
        &self,
        rollout_id: &str,
        attempt_id: &str,
        allowance: Arc<LlmAllowance>,
    ) -> Result<String, GrantError> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| GrantError(e.to_string()))?;
        let secret: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let grant = Arc::new(AttemptGrant {
            rollout_id: rollout_id.to_owned(),
            attempt_id: attempt_id.to_owned(),
            allowance,
            refusals: AtomicU32::new(0),
            turn: Arc::new(tokio::sync::Semaphore::new(1)),
        });
        self.live.lock().insert(secret.clone(), grant);
        Ok(secret)
    }

    /// Ends the capability with this secret; `false` when there was none.
    pub fn revoke(&self, secret: &str) -> bool {
        self.live.lock().remove(secret).is_some()
    }

    /// The live capability with this secret.
    pub(crate) fn get(&self, secret: &str) -> Option<Arc<AttemptGrant>> {
        self.live.lock().get(secret).cloned()
    }

    /// How many capabilities are alive.
    pub fn len(&self) -> usize {
        self.live.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A live capability; dropping it revokes it.
#[derive(Debug)]
pub struct GrantGuard {
    grants: Grants,
    secret: String,
}

impl GrantGuard {
    /// The API root to hand the agent, under the proxy's base URL (`http://127.0.0.1:PORT`):
    /// `{base}/agent/{secret}/v1`.
    pub fn endpoint(&self, base_url: &str) -> String {
        format!("{}/agent/{}/v1", base_url.trim_end_matches('/'), self.secret)
    }
}

impl Drop for GrantGuard {
    fn drop(&mut self) {
        self.grants.revoke(&self.secret);
    }
}

/// A runner's request for a capability (`POST /proxy/grants`, the operator's token).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GrantRequest {
    pub rollout_id: String,
    pub attempt_id: String,
    /// The attempt's LLM policy, as the runner applies it to the agent's `llm` import.
    pub llm: LlmLimits,
}

/// The proxy's answer: the capability's secret, the path of its API root on the agents'
/// listener, and that listener's port (the runner reaches the proxy at its host).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GrantAnswer {
    pub capability: String,
    pub path: String,
    pub port: Option<u16>,
}

/// An LLM policy over the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmLimits {
    #[serde(default)]
    pub allowed_models: Vec<String>,
    pub max_calls: u32,
    pub max_tokens: u64,
    pub max_request_bytes: u64,
    pub max_output_tokens: u32,
    pub max_tools: u32,
    pub max_tools_bytes: u64,
    pub timeout_seconds: f64,
}

impl From<&LlmPolicy> for LlmLimits {
    fn from(policy: &LlmPolicy) -> Self {
        LlmLimits {
            allowed_models: policy.allowed_models.clone(),
            max_calls: policy.budget.max_calls,
            max_tokens: policy.budget.max_tokens,
            max_request_bytes: policy.request.max_request_bytes,
            max_output_tokens: policy.request.max_output_tokens,
            max_tools: policy.request.max_tools,
            max_tools_bytes: policy.request.max_tools_bytes,
            timeout_seconds: policy.timeout.as_secs_f64(),
        }
    }
}

impl LlmLimits {
    /// The policy these limits say (a bad timeout: the default one).
    pub fn policy(&self) -> LlmPolicy {
        LlmPolicy {
            allowed_models: self.allowed_models.clone(),
            budget: LlmBudget {
                max_calls: self.max_calls,
                max_tokens: self.max_tokens,
            },
            timeout: std::time::Duration::try_from_secs_f64(self.timeout_seconds)
                .unwrap_or(LlmPolicy::default().timeout),
            request: LlmRequestLimits {
                max_request_bytes: self.max_request_bytes,
                max_output_tokens: self.max_output_tokens,
                max_tools: self.max_tools,
                max_tools_bytes: self.max_tools_bytes,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_lives_as_long_as_its_guard_and_secrets_differ() {
        let grants = Grants::default();
        let allowance = Arc::new(LlmAllowance::new(&agl_policy::LlmPolicy::default()));
        let first = grants.issue("ro-1", "at-1", allowance.clone()).expect("a grant");
        let second = grants.issue("ro-2", "at-2", allowance).expect("a grant");
        assert_ne!(first.secret, second.secret);
        assert_eq!(first.secret.len(), 64);
        assert_eq!(
            grants.get(&first.secret).map(|g| g.rollout_id.clone()),
            Some("ro-1".into())
        );
        assert_eq!(
            first.endpoint("http://127.0.0.1:9/"),
            format!("http://127.0.0.1:9/agent/{}/v1", first.secret)
        );
        let secret = first.secret.clone();
        drop(first);
        assert!(grants.get(&secret).is_none());
        assert_eq!(grants.len(), 1);
    }

    #[test]
    fn limits_cross_the_wire_unchanged() {
        let mut policy = LlmPolicy {
            allowed_models: vec!["x".into()],
            ..LlmPolicy::default()
        };
        policy.budget.max_calls = 7;
        let limits = LlmLimits::from(&policy);
        let back: LlmLimits = serde_json::from_value(serde_json::to_value(&limits).expect("JSON")).expect("limits");
        assert_eq!(back.policy(), policy);
    }
}
