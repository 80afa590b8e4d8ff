//! `GET /v1/agl/export/tokens`: the token rows `agl-host export --format tokens` writes, for a
//! trainer that pulls them over HTTP, as JSON lines (`application/x-ndjson`). The same filters as
//! the command's flags, chosen by `agl_adapter::export::select`; the lines are
//! `agl_adapter::export::tokens`'s (`run_id` is `null`, as from `agl-host export --store`).
//! Fork rollouts (`agl-host fork`'s) only with `include_forks=true`, their rows carrying `fork`.

use super::AppState;
use crate::error::{ApiError, ApiResult};
use crate::query_string::{self, QuerySpec};
use agl_adapter::export::{self, Origin, select};
use agl_store::{Mode, RolloutStatus};
use axum::extract::{RawQuery, State};
use axum::http::header::{CONTENT_TYPE, HeaderName};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

/// Each list takes repeated keys or commas (`status=succeeded,failed`), as the command's flags.
const QUERY: QuerySpec = QuerySpec {
    lists: &["status", "mode", "resources_version", "resources_id"],
    integers: &[],
};

/// How many rows were written, and how many of them are LLM calls without token ids.
const LINES: HeaderName = HeaderName::from_static("x-agl-export-lines");
const MISSING_TOKEN_IDS: HeaderName = HeaderName::from_static("x-agl-missing-token-ids");

#[derive(Debug, Default, Deserialize)]
struct Params {
    #[serde(default)]
    status: Vec<String>,
    #[serde(default)]
    mode: Vec<String>,
    #[serde(default)]
    resources_version: Vec<String>,
    #[serde(default)]
    resources_id: Vec<String>,
    all_attempts: Option<String>,
    include_forks: Option<String>,
    min_reward: Option<String>,
    max_reward: Option<String>,
}

/// The comma-separated items of every value, trimmed, empty ones dropped.
fn items(values: &[String]) -> impl Iterator<Item = &str> {
    values
        .iter()
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .filter(|item| !item.is_empty())
}

fn reward(key: &str, value: Option<&str>) -> ApiResult<Option<f64>> {
    value
        .map(|text| match text.trim().parse::<f64>() {
            Ok(reward) if reward.is_finite() => Ok(reward),
            _ => Err(ApiError::unprocessable(format!(
                "query parameter `{key}` must be a number, e.g. 0.5 or -1, got `{text}`"
            ))),
        })
        .transpose()
}

/// A flag: absent, `false` or `0` is off; present bare, `true` or `1` is on.
fn flag(key: &str, value: Option<&str>) -> ApiResult<bool> {
    match value.map(str::trim) {
        None | Some("false" | "0") => Ok(false),
        Some("" | "true" | "1") => Ok(true),
        Some(other) => Err(ApiError::unprocessable(format!(
            "query parameter `{key}` must be true or false, got `{other}`"
        ))),
    }
}

fn filter(params: &Params) -> ApiResult<select::Filter> {
    let statuses = items(&params.status)
        .map(|text| {
            RolloutStatus::ALL
                .into_iter()
                .find(|status| status.as_str() == text)
                .ok_or_else(|| {
                    let names: Vec<&str> = RolloutStatus::ALL.iter().map(|s| s.as_str()).collect();
                    ApiError::unprocessable(format!("status `{text}`: expected one of {}", names.join(", ")))
                })
        })
        .collect::<ApiResult<_>>()?;
    let modes = items(&params.mode)
        .map(|text| {
            [Mode::Train, Mode::Val, Mode::Test]
                .into_iter()
                .find(|mode| mode.as_str() == text)
                .ok_or_else(|| ApiError::unprocessable(format!("mode `{text}`: expected train, val or test")))
        })
        .collect::<ApiResult<_>>()?;
    let all_attempts = flag("all_attempts", params.all_attempts.as_deref())?;
    let include_forks = flag("include_forks", params.include_forks.as_deref())?;
    let min_reward = reward("min_reward", params.min_reward.as_deref())?;
    let max_reward = reward("max_reward", params.max_reward.as_deref())?;
    if let (Some(min), Some(max)) = (min_reward, max_reward)
        && min > max
    {
        return Err(ApiError::unprocessable(format!(
            "min_reward {min} is above max_reward {max}: no reward is both"
        )));
    }
    Ok(select::Filter {
        statuses,
        modes,
        resources: items(&params.resources_version)
            .chain(items(&params.resources_id))
            .map(str::to_owned)
            .collect(),
        all_attempts,
        min_reward,
        max_reward,
        include_forks,
    })
}

/// `GET /v1/agl/export/tokens?status=&mode=&resources_version=&min_reward=&max_reward=&all_attempts=&include_forks=`
/// → the token rows of the chosen attempts, one JSON object a line; a resources id the store does
/// not hold is a 404, a bad filter a 422.
pub(crate) async fn tokens(State(state): State<AppState>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let params: Params = query_string::parse(raw.as_deref(), &QUERY)?;
    let filter = filter(&params)?;
    let store = state.store.as_ref();
    for id in &filter.resources {
        if store.get_resources_by_id(id).await?.is_none() {
            return Err(ApiError::not_found(format!("no such resources: {id}")));
        }
    }
    let mut body = String::new();
    let (mut lines, mut missing) = (0, 0);
    for view in select::rollouts(store, &filter).await? {
        for attempt in select::attempts(store, &view, filter.all_attempts).await? {
            let spans = select::spans(store, &view.rollout.rollout_id, &attempt.attempt_id).await?;
            if !filter.admits(agl_adapter::final_reward(&spans)) {
                continue;
            }
            let origin = Origin::new(None, &view.rollout, &attempt);
            let written = export::tokens(&origin, &spans, &mut body)
                .map_err(|error| ApiError::new(axum::http::StatusCode::INTERNAL_SERVER_ERROR, error.to_string()))?;
            lines += written.lines;
            missing += written.missing_token_ids;
        }
    }
    let headers = [
        (CONTENT_TYPE, "application/x-ndjson".to_owned()),
        (LINES, lines.to_string()),
        (MISSING_TOKEN_IDS, missing.to_string()),
    ];
    Ok((headers, body).into_response())
}
