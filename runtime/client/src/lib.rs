//! `HttpStoreClient`: the [`LightningStore`](agl_store::LightningStore) trait over HTTP, speaking
//! Agent-lightning 0.3.0's wire API (`/v1/agl/...`), so runners and algorithms use a remote store
//! (ours, or Agent-lightning's own `agl store`) exactly as they use an in-memory one.
//!
//! - One keep-alive connection pool per client; a bearer token when the server wants one.
//! - 5xx, 408 and network errors are retried with backoff, probing `/health` between tries;
//!   other 4xx answers are final and become typed [`StoreError`](agl_store::StoreError)s.
//! - Spans go one per request, each clipped to fit the server's body limit; one the server still
//!   refuses is logged and skipped, and the rest of the batch is sent.

mod fit;
mod options;
mod store_impl;
mod transport;

pub use fit::CLIPPED_BYTES;
pub use options::{ClientOptions, DEFAULT_MAX_SPAN_BYTES};
pub use transport::HttpStoreClient;
