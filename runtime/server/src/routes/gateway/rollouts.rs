//! 1.0's rollout routes over our rollouts: create (a caller-chosen id is idempotent), list by
//! state, the terminal-rollouts cursor, get (with the attempt ids), patch the status, delete.

use super::shapes::{self, GATEWAY_KEY, Kept, RolloutCreate, RolloutPatch, State};
use super::visible;
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, PathParams};
use crate::json::Json;
use crate::routes::{AppState, Created, created};
use agl_store::{
    AttemptQuery, EnqueueRolloutRequest, Mode, RolloutConfig, RolloutQuery, RolloutStatus, RolloutUpdate, RolloutView,
    SortOrder,
};
use axum::extract::{RawQuery, State as AxumState};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

/// The most rollouts one list or page answers.
const MAX_PAGE: i64 = 10_000;

/// `POST /api/rollouts` `[RolloutCreate, ...]` → 201 with the rollouts, in order; an id that
/// exists gives that rollout unchanged.
pub(crate) async fn create(
    AxumState(state): AxumState<AppState>,
    JsonBody(body): JsonBody<Vec<RolloutCreate>>,
) -> ApiResult<Created<Vec<Value>>> {
    let mut requests = Vec::with_capacity(body.len());
    for create in body {
        if let Some(metadata) = &create.metadata
            && metadata.contains_key(GATEWAY_KEY)
        {
            return Err(ApiError::unprocessable(format!(
                "metadata key `{GATEWAY_KEY}` is reserved"
            )));
        }
        let config = create.config.unwrap_or_default();
        if config.timeout_seconds < 0 {
            return Err(ApiError::unprocessable("config.timeout_seconds must be ≥ 0"));
        }
        let kept = Kept {
            config: Some(config.clone()),
            ..Kept::default()
        };
        requests.push(EnqueueRolloutRequest {
            input: create.input,
            mode: Some(if create.is_train { Mode::Train } else { Mode::Val }),
            resources_id: None,
            config: Some(RolloutConfig {
                timeout_seconds: Some(config.timeout_seconds as f64),
                ..RolloutConfig::default()
            }),
            metadata: Some(kept.into_metadata(create.metadata)),
            rollout_id: create.rollout_id,
        });
    }
    let chosen: Vec<bool> = requests.iter().map(|r| r.rollout_id.is_some()).collect();
    let stored = state.store.enqueue_rollouts(requests).await?;
    let mut out = Vec::with_capacity(stored.len());
    for (rollout, chosen) in stored.into_iter().zip(chosen) {
        // A chosen id may name a rollout made earlier, which may have an attempt by now.
        let view = match chosen {
            true => state.store.get_rollout_by_id(&rollout.rollout_id).await?,
            false => None,
        };
        let view = view.unwrap_or(RolloutView { rollout, attempt: None });
        out.push(shapes::rollout(&view));
    }
    Ok(created(out))
}

/// `GET /api/rollouts?state_in=..&state_in=..&limit=500` → the rollouts in those states.
pub(crate) async fn list(
    AxumState(state): AxumState<AppState>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Vec<Value>>> {
    #[derive(Deserialize)]
    struct Query {
        state_in: Vec<State>,
        #[serde(default = "default_list_limit")]
        limit: i64,
    }
    fn default_list_limit() -> i64 {
        500
    }
    let spec = crate::query_string::QuerySpec {
        lists: &["state_in"],
        integers: &["limit"],
    };
    let query: Query = crate::query_string::parse(raw.as_deref(), &spec)?;
    if query.limit < 0 {
        return Err(ApiError::unprocessable("limit must be ≥ 0"));
    }
    let limit = query.limit.min(MAX_PAGE);
    let statuses: Vec<RolloutStatus> = query.state_in.iter().flat_map(|s| s.statuses()).copied().collect();
    let mut out = Vec::new();
    let mut offset = 0;
    while (out.len() as i64) < limit {
        let page = RolloutQuery::default()
            .status_in(statuses.iter().copied())
            .limit(limit)
            .offset(offset);
        let page = state.store.query_rollouts(&page).await?;
        let read = page.items.len() as i64;
        out.extend(
            page.items
                .iter()
                .filter(|view| !shapes::is_deleted(view))
                .map(shapes::rollout),
        );
        offset += read;
        if read == 0 || offset >= page.total as i64 {
            break;
        }
    }
    out.truncate(limit as usize);
    Ok(Json(out))
}

/// `GET /api/rollouts/terminal?after=0&limit=1000` → `{items, next_after, total_terminal}`: the
/// finished rollouts by end time, from position `after`.
pub(crate) async fn terminal(AxumState(state): AxumState<AppState>, RawQuery(raw): RawQuery) -> ApiResult<Json<Value>> {
    #[derive(Deserialize)]
    struct Query {
        #[serde(default)]
        after: i64,
        #[serde(default = "default_terminal_limit")]
        limit: i64,
    }
    fn default_terminal_limit() -> i64 {
        1000
    }
    let spec = crate::query_string::QuerySpec {
        lists: &[],
        integers: &["after", "limit"],
    };
    let query: Query = crate::query_string::parse(raw.as_deref(), &spec)?;
    let after = query.after.max(0);
    let limit = query.limit.clamp(1, MAX_PAGE);
    let page = RolloutQuery::default()
        .status_in([
            RolloutStatus::Succeeded,
            RolloutStatus::Failed,
            RolloutStatus::Cancelled,
        ])
        .sort_by("end_time", SortOrder::Asc)
        .limit(limit)
        .offset(after);
    let page = state.store.query_rollouts(&page).await?;
    let read = page.items.len() as i64;
    let items: Vec<Value> = page
        .items
        .iter()
        .filter(|view| !shapes::is_deleted(view))
        .map(|view| {
            json!({
                "rollout_id": view.rollout.rollout_id,
                "state": State::of(view.rollout.status).as_str(),
                "data_id": shapes::data_id(&view.rollout.input),
                "is_train": !matches!(view.rollout.mode, Some(Mode::Val | Mode::Test)),
            })
        })
        .collect();
    Ok(Json(json!({
        "items": items,
        "next_after": after + read,
        "total_terminal": page.total,
    })))
}

/// `GET /api/rollouts/{rollout_id}` → `{rollout, attempts}` (attempt ids, oldest first).
pub(crate) async fn get(
    AxumState(state): AxumState<AppState>,
    PathParams(rollout_id): PathParams<String>,
) -> ApiResult<Json<Value>> {
    let view = visible(&state, &rollout_id).await?;
    let attempts = state
        .store
        .query_attempts(&rollout_id, &AttemptQuery::default())
        .await?;
    let mut attempts = attempts.items;
    attempts.sort_by_key(|a| a.sequence_id);
    let ids: Vec<&str> = attempts.iter().map(|a| a.attempt_id.as_str()).collect();
    Ok(Json(json!({"rollout": shapes::rollout(&view), "attempts": ids})))
}

/// `PATCH /api/rollouts/{rollout_id}` `{status: {...}}` → the rollout; a state change 1.0 does
/// not allow is a 409.
pub(crate) async fn patch(
    AxumState(state): AxumState<AppState>,
    PathParams(rollout_id): PathParams<String>,
    JsonBody(patch): JsonBody<RolloutPatch>,
) -> ApiResult<Json<Value>> {
    let view = visible(&state, &rollout_id).await?;
    let Some(status) = patch.status else {
        return Ok(Json(shapes::rollout(&view)));
    };
    let nothing = status.state.is_none()
        && status.k8s_job_name.is_none()
        && status.last_attempt_id.is_none()
        && status.error_message.is_none();
    if nothing {
        return Ok(Json(shapes::rollout(&view)));
    }
    let current = State::of(view.rollout.status);
    if let Some(next) = status.state
        && !current.may_become(next)
    {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!(
                "Rollout {rollout_id}: cannot transition {} -> {}",
                current.as_str(),
                next.as_str()
            ),
        ));
    }
    let mut kept = Kept::of(view.rollout.metadata.as_ref());
    kept.version = Some(kept.version.unwrap_or(1) + 1);
    kept.updated_at = Some(now());
    if status.k8s_job_name.is_some() {
        kept.k8s_job_name = status.k8s_job_name;
    }
    if status.last_attempt_id.is_some() {
        kept.last_attempt_id = status.last_attempt_id;
    }
    if status.error_message.is_some() {
        kept.error_message = status.error_message;
    }
    let update = RolloutUpdate {
        status: status.state.map(State::status),
        metadata: Some(Some(kept.into_metadata(view.rollout.metadata.clone()))),
        ..RolloutUpdate::default()
    };
    state.store.update_rollout(&rollout_id, update).await?;
    let view = visible(&state, &rollout_id).await?;
    Ok(Json(shapes::rollout(&view)))
}

/// `DELETE /api/rollouts/{rollout_id}` → 204, whether or not it exists. The rollout is kept (with
/// its spans: it is part of the run) but hidden from the gateway; one not finished is cancelled.
pub(crate) async fn delete(
    AxumState(state): AxumState<AppState>,
    PathParams(rollout_id): PathParams<String>,
) -> ApiResult<StatusCode> {
    let Some(view) = state.store.get_rollout_by_id(&rollout_id).await? else {
        return Ok(StatusCode::NO_CONTENT);
    };
    if shapes::is_deleted(&view) {
        return Ok(StatusCode::NO_CONTENT);
    }
    let mut kept = Kept::of(view.rollout.metadata.as_ref());
    kept.deleted = true;
    let update = RolloutUpdate {
        status: (!view.rollout.status.is_finished()).then_some(RolloutStatus::Cancelled),
        metadata: Some(Some(kept.into_metadata(view.rollout.metadata.clone()))),
        ..RolloutUpdate::default()
    };
    match state.store.update_rollout(&rollout_id, update).await {
        Ok(_) => Ok(StatusCode::NO_CONTENT),
        Err(error) if error.is_not_found() => Ok(StatusCode::NO_CONTENT),
        Err(error) => Err(error.into()),
    }
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
