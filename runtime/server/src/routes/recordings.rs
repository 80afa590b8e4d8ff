//! Recordings (replay and fork, agl-host's own routes beside the 0.3.0 API): an attempt's record
//! of what entered its guest, kept (`POST /v1/agl/recordings`, a body up to
//! [`MAX_RECORDING_BODY_BYTES`]) and read back whole (`GET /v1/agl/recordings/{rollout_id}/{attempt_id}`).
//! The store checks every blob's hash and the size limits; this module bounds the body.

use super::AppState;
use crate::error::{ApiError, ApiResult};
use crate::extract::{PathParams, json_body};
use crate::json::Json;
use agl_store::{MAX_RECORDING_BYTES, Recording, RecordingStored};
use axum::extract::{Request, State};

/// The largest body `POST /v1/agl/recordings` reads (unless the server's `max_body_bytes` is
/// larger): twice the most a recording may hold ([`MAX_RECORDING_BYTES`], 256 MiB), room for
/// JSON's escapes and the blobs' keys. A recording over the store's own limits within it is a 400.
pub const MAX_RECORDING_BODY_BYTES: usize = 2 * MAX_RECORDING_BYTES;

/// The body limit of the `POST` route, for its `DefaultBodyLimit` and its reading.
pub(crate) fn body_limit(max_body_bytes: usize) -> usize {
    max_body_bytes.max(MAX_RECORDING_BODY_BYTES)
}

/// `POST /v1/agl/recordings` with a recording → what keeping it cost. An unknown rollout or
/// attempt is a 404; a blob whose key is not its text's SHA-256, or a recording over the limits,
/// a 400 (and nothing of it is kept); a body over [`body_limit`] a 413.
pub(crate) async fn add(State(state): State<AppState>, request: Request) -> ApiResult<Json<RecordingStored>> {
    let recording: Recording = json_body(request, &state, body_limit(state.max_body_bytes)).await?;
    Ok(Json(state.store.add_recording(recording).await?))
}

/// `GET /v1/agl/recordings/{rollout_id}/{attempt_id}` → the recording with every blob it refers
/// to; 404 when none was kept.
pub(crate) async fn get(
    State(state): State<AppState>,
    PathParams((rollout_id, attempt_id)): PathParams<(String, String)>,
) -> ApiResult<Json<Recording>> {
    match state.store.get_recording(&rollout_id, &attempt_id).await? {
        Some(recording) => Ok(Json(recording)),
        None => Err(ApiError::not_found(format!(
            "no recording of attempt {attempt_id} of rollout {rollout_id}"
        ))),
    }
}
