//! What a `Store` holds: [`InstanceState`], the sandbox's capabilities (see `capabilities/`)
//! plus the world's own state. For an agent's attempt that is [`AttemptState`]: its trace.
//! Dropped with the store.

use crate::capabilities::{Sandbox, World};
pub use agl_store::clip;
use agl_trace::AttemptTrace;

/// Longest string kept from a guest where no span budget applies (an algorithm's log line).
pub use agl_policy::DEFAULT_MAX_ATTRIBUTE_BYTES as MAX_ATTRIBUTE_BYTES;

/// A store's data: every capability's state, and the world's (`W`).
pub struct InstanceState<W> {
    pub(crate) sandbox: Sandbox,
    pub(crate) world: W,
}

/// An agent attempt's store data.
pub type HostState = InstanceState<AttemptState>;

/// What the agent world adds to an attempt's store: its trace.
pub struct AttemptState {
    pub(crate) trace: AttemptTrace,
}

impl World for AttemptState {
    fn trace(&mut self) -> impl Future<Output = Option<&AttemptTrace>> + Send {
        std::future::ready(Some(&self.trace))
    }
}

impl AttemptState {
    pub(crate) fn new(trace: AttemptTrace) -> Self {
        Self { trace }
    }
}
