//! The data model, field for field the JSON shapes of Agent-lightning 0.3.0's store
//! (`tests/fixtures/agentlightning-0.3/exchanges.jsonl` round-trips through these types).

mod attempt;
mod ids;
pub(crate) mod keep_extra;
mod query;
mod recording;
mod requests;
mod resources;
mod rollout;
mod serde_util;
mod span;
mod stats;
mod status;
mod worker;

pub use attempt::Attempt;
pub use ids::{new_attempt_id, new_resources_id, new_rollout_id};
pub use query::{
    AttemptQuery, FilterLogic, PageParams, Paginated, ResourcesQuery, RolloutQuery, SortOrder, SpanQuery, WorkerQuery,
};
pub use recording::{
    MAX_RECORDING_BLOBS, MAX_RECORDING_BYTES, MAX_TAPE_BYTES, Recording, RecordingStored, blob_address,
};
pub use requests::{
    AttemptUpdate, DequeueRequest, EnqueueManyRequest, EnqueueRolloutRequest, ErrorBody, HealthResponse,
    NextSequenceIdRequest, NextSequenceIdResponse, RolloutUpdate, StartAttemptRequest, StartRolloutRequest,
    WaitForRolloutsRequest, WorkerUpdate,
};
pub use resources::{
    LlmResource, NamedResources, PromptTemplate, Resource, ResourcesUpdate, TemplateEngine, registered_model,
};
pub use rollout::{AttemptedRollout, Rollout, RolloutConfig, RolloutView};
pub use span::{
    EncodedJson, Event, Link, OtelResource, Span, SpanContext, StatusCode, TraceStatus, hex_id, json_number,
};
pub use stats::{Capabilities, Statistics};
pub use status::{AttemptStatus, Mode, RolloutStatus, WorkerStatus};
pub use worker::Worker;

/// A JSON object (`dict[str, Any]` on the Python side), insertion-ordered.
pub type JsonMap = serde_json::Map<String, serde_json::Value>;
