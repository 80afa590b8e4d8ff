//! The LightningStore: the single source of truth and task queue of agl-host.
//!
//! This crate owns four things and nothing else (it knows nothing of wasm or HTTP):
//! - [`model`]: the data model, serde-identical to Agent-lightning 0.3.0's wire shapes;
//! - [`LightningStore`]: the async store API; [`rules`]: the status decisions; [`transitions`]:
//!   every change a call makes, written once over the [`Storage`] primitives each backend provides;
//!   [`reads`]: every query, written once over the [`Rows`] each backend loads;
//! - [`BackedStore`]: the API written once over a [`StorageBackend`] (its transactions), with the
//!   watchdog tick and event-driven waits ([`notifier`]);
//! - [`InMemoryLightningStore`]: the store over the in-memory backend;
//! - [`semconv`]: the span contract (names and attribute keys) every crate writes and reads.

pub mod backend;
pub mod clock;
pub mod engine;
pub mod error;
pub mod memory;
pub mod model;
pub mod notifier;
pub mod query_exec;
pub mod reads;
pub mod rows;
pub mod rules;
pub mod semconv;
pub mod storage;
pub mod storage_backend;
pub mod store;
pub mod text;
pub mod transitions;

pub use backend::{RunRecord, StoreBackend, StoreOptions, check_through_api};
pub use clock::{Clock, ManualClock, SystemClock};
pub use engine::BackedStore;
pub use error::{StoreError, StoreResult};
pub use memory::{InMemoryLightningStore, InMemoryOptions, MemoryBackend};
pub use model::*;
pub use rows::Rows;
pub use storage::{Storage, StorageCounts};
pub use storage_backend::StorageBackend;
pub use store::{AttemptRef, LightningStore};
pub use text::clip;
