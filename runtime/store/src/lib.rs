//! The LightningStore: the single source of truth and task queue of agl-host.
//!
//! This crate owns four things and nothing else (it knows nothing of wasm or HTTP):
//! - [`model`]: the data model, serde-identical to Agent-lightning 0.3.0's wire shapes;
//! - [`LightningStore`]: the async store API; [`rules`]: the status decisions; [`transitions`]:
//!   every change a call makes, written once over the [`Storage`] primitives each backend provides;
//! - [`InMemoryLightningStore`]: the in-memory backend with its watchdog and event-driven waits;
//! - [`semconv`]: the span contract (names and attribute keys) every crate writes and reads.

pub mod backend;
pub mod clock;
pub mod error;
pub mod memory;
pub mod model;
pub mod query_exec;
pub mod rules;
pub mod semconv;
pub mod storage;
pub mod store;
pub mod text;
pub mod transitions;

pub use backend::{RunRecord, StoreBackend, StoreOptions, check_through_api};
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{StoreError, StoreResult};
pub use memory::{InMemoryLightningStore, InMemoryOptions};
pub use model::*;
pub use storage::{Storage, StorageCounts};
pub use store::{AttemptRef, LightningStore};
pub use text::clip;
