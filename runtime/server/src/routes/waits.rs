//! `POST /v1/agl/waits/rollouts` `{rollout_ids, timeout}`: holds the request (not a thread) until
//! every listed rollout has finished or the timeout passes, then answers the finished ones. When
//! the server shuts down, pending waits answer at once with what has finished so far.

use super::AppState;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::json::Json;
use agl_store::{Rollout, WaitForRolloutsRequest};
use axum::extract::State;
use std::time::Duration;

pub(crate) async fn wait_for_rollouts(
    State(state): State<AppState>,
    JsonBody(request): JsonBody<WaitForRolloutsRequest>,
) -> ApiResult<Json<Vec<Rollout>>> {
    let timeout = timeout_of(request.timeout)?;
    let ids = request.rollout_ids;
    let finished = tokio::select! {
        finished = state.store.wait_for_rollouts(&ids, timeout) => finished?,
        () = state.shutting_down() => state.store.wait_for_rollouts(&ids, Some(Duration::ZERO)).await?,
    };
    Ok(Json(finished))
}

/// Seconds → a duration; absent (or too long to represent) means no limit; negative is a 400.
fn timeout_of(seconds: Option<f64>) -> Result<Option<Duration>, ApiError> {
    match seconds {
        None => Ok(None),
        Some(s) if s.is_nan() || s < 0.0 => Err(ApiError::bad_request(format!(
            "timeout must be a number of seconds ≥ 0, got {s}"
        ))),
        Some(s) => Ok(Duration::try_from_secs_f64(s).ok()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_convert_without_panicking() {
        assert_eq!(timeout_of(None), Ok(None));
        assert_eq!(timeout_of(Some(0.05)), Ok(Some(Duration::from_millis(50))));
        assert_eq!(timeout_of(Some(0.0)), Ok(Some(Duration::ZERO)));
        assert_eq!(timeout_of(Some(1e300)), Ok(None));
        assert_eq!(timeout_of(Some(-1.0)).map_err(|e| e.status.as_u16()), Err(400));
    }
}
