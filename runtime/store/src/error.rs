//! The store's typed errors: every bad input is one of these, never a panic.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum StoreError {
    #[error("rollout {0} not found")]
    RolloutNotFound(String),
    #[error("attempt {attempt_id} not found for rollout {rollout_id}")]
    AttemptNotFound { rollout_id: String, attempt_id: String },
    #[error("rollout {0} has no attempts yet")]
    NoAttempts(String),
    #[error("resources {0} not found")]
    ResourcesNotFound(String),
    /// A malformed argument: bad limit/offset, an unknown sort field, an invalid config...
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The backend itself failed (I/O, a remote store); the request may be retried.
    #[error("store backend error: {0}")]
    Backend(String),
}

impl StoreError {
    /// True when the error names something that does not exist (the HTTP layer answers 404).
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            Self::RolloutNotFound(_) | Self::AttemptNotFound { .. } | Self::NoAttempts(_) | Self::ResourcesNotFound(_)
        )
    }
}

pub type StoreResult<T> = Result<T, StoreError>;
