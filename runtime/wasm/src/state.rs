//! What a `Store` holds: [`InstanceState`], the sandbox's capabilities (WASI, limits, LLM gate;
//! see `sandbox/`) plus the world's own state. For an agent's attempt that is [`AttemptState`]:
//! its trace, the rollout's resources and the rewards seen so far. Dropped with the store.

use crate::sandbox::{Sandbox, World};
use crate::spans::AttemptTrace;
use agl_store::ResourcesUpdate;
pub use agl_store::clip;
use std::sync::Arc;

/// Longest string kept from a guest where no span budget applies (an algorithm's log line).
pub use agl_policy::DEFAULT_MAX_ATTRIBUTE_BYTES as MAX_ATTRIBUTE_BYTES;

/// A store's data: every capability's state, and the world's (`W`).
pub struct InstanceState<W> {
    pub(crate) sandbox: Sandbox,
    pub(crate) world: W,
}

/// An agent attempt's store data.
pub type HostState = InstanceState<AttemptState>;

/// The rewards an attempt emitted, as far as its final reward is concerned.
#[derive(Debug, Default, Clone, Copy)]
pub struct Rewards {
    /// The last primary reward emitted by the agent (`reward.emit`).
    pub last_primary: Option<f64>,
    /// The last named reward (`reward.emit-named`).
    pub last_named: Option<f64>,
    /// The value of the last reward span recorded when that span is a primary reward (`None`
    /// when the last reward emitted was named, went past the span budget, or none was emitted).
    pub last_recorded: Option<f64>,
    pub emitted: u32,
}

/// What the agent world adds to an attempt's store: its trace, resources and rewards.
pub struct AttemptState {
    pub(crate) trace: AttemptTrace,
    pub(crate) resources: Option<Arc<ResourcesUpdate>>,
    pub(crate) rewards: Rewards,
}

impl World for AttemptState {
    fn trace(&mut self) -> impl Future<Output = Option<&AttemptTrace>> + Send {
        std::future::ready(Some(&self.trace))
    }
}

impl AttemptState {
    pub(crate) fn new(trace: AttemptTrace, resources: Option<Arc<ResourcesUpdate>>) -> Self {
        Self {
            trace,
            resources,
            rewards: Rewards::default(),
        }
    }
}
