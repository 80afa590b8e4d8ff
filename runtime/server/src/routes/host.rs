//! agl-host's own routes under `/v1/agl-host/`, for the dashboard: what the 0.3.0 API does not
//! say. The run record (`GET /v1/agl-host/run`; `PUT` keeps one, for `agl-host run --store URL`),
//! each rollout's outcome read from its
//! latest attempt's spans through the adapter (`GET /v1/agl-host/outcomes`: final reward, the
//! reward a mean counts, LLM calls, tokens, and why no triplet came out), and one attempt's LLM calls as triplets. Nothing
//! else here writes to the store.

use super::rollouts;
use crate::error::{ApiError, ApiResult};
use crate::extract::{PathParams, parse_json};
use crate::json::Json;
use crate::query_string;
use agl_store::{
    LightningStore, Paginated, RolloutQuery, RolloutStatus, RunRecord, Span, SpanQuery, StatusCode, StoreBackend,
};
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode as HttpStatus;
use axum::routing::get;
use serde::Serialize;
use std::sync::Arc;

/// The routes, over `backend` (its run record) — merged beside the store's routes by
/// [`crate::serve_with`], under the same token.
pub fn host_routes(backend: Arc<dyn StoreBackend>) -> Router {
    Router::new()
        .route("/v1/agl-host/run", get(run_record).put(save_run_record))
        .route("/v1/agl-host/outcomes", get(outcomes))
        .route(
            "/v1/agl-host/rollouts/{rollout_id}/attempts/{attempt_id}/llm-calls",
            get(llm_calls),
        )
        .with_state(backend)
}

type Backend = State<Arc<dyn StoreBackend>>;

/// `GET /v1/agl-host/run` → the run record the store keeps, or `null`.
async fn run_record(State(backend): Backend) -> ApiResult<Json<Option<RunRecord>>> {
    Ok(Json(backend.run_record().await?))
}

/// `PUT /v1/agl-host/run` with a run record (JSON; the edge refuses other content types, 415) →
/// the record, kept: how `agl-host run --store URL` keeps its run in the store it runs against, at
/// its start and at its end. A store keeps one run: a record of another run id is refused (409)
/// and stays as it was.
async fn save_run_record(State(backend): Backend, body: Result<Bytes, BytesRejection>) -> ApiResult<Json<RunRecord>> {
    let body = body.map_err(|e| ApiError::bad_request(format!("cannot read the request body: {}", e.body_text())))?;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::unprocessable("a JSON request body is required"));
    }
    let record: RunRecord = parse_json(&body)?;
    if let Some(kept) = backend.run_record().await?
        && kept.run_id != record.run_id
    {
        return Err(ApiError::new(
            HttpStatus::CONFLICT,
            format!(
                "this store already keeps run {} ({}, started by `agl-host {}`); a store keeps one run: \
                 serve another one (`agl-host store --db ...`) for this run",
                kept.run_id,
                kept.status,
                kept.command.join(" ")
            ),
        ));
    }
    backend.save_run(&record).await?;
    Ok(Json(record))
}

/// What a rollout's latest attempt came to, read from its spans.
#[derive(Debug, Serialize)]
struct Outcome {
    rollout_id: String,
    /// The latest attempt; `None` while the rollout has none (the rest is then empty).
    attempt_id: Option<String>,
    /// The primary reward of the attempt's last reward span.
    final_reward: Option<f64>,
    /// What the rollout adds to a mean reward (`agl_adapter::counted_reward`: its final reward
    /// if it succeeded, else 0), the definition the run's results and `agl-host show` use: the
    /// dashboard averages these over a group's rollouts.
    counted_reward: f64,
    /// Every reward dimension, `(name, value)`, in span order.
    rewards: Vec<(String, f64)>,
    spans: usize,
    /// Spans that look like LLM calls, failed ones included.
    llm_spans: usize,
    /// LLM calls an adapter turns into (prompt, response, reward) triplets.
    triplets: usize,
    input_tokens: u64,
    output_tokens: u64,
    /// Seconds spent in LLM calls (their spans' durations added up).
    llm_seconds: f64,
    /// Why an ended attempt yields no triplet (no LLM span, every call failed, or only an LLM
    /// judge's calls); `None` when it yields one, or has not ended.
    no_triplet_reason: Option<String>,
}

/// `GET /v1/agl-host/outcomes?status_in=..&rollout_id_in=..&limit=..&offset=..` (as
/// `GET /v1/agl/rollouts` reads them) → a page of outcomes, one per rollout of that page.
async fn outcomes(State(backend): Backend, RawQuery(raw): RawQuery) -> ApiResult<Json<Paginated<Outcome>>> {
    let query: RolloutQuery = query_string::parse(raw.as_deref(), &rollouts::QUERY)?;
    let page = backend.query_rollouts(&query).await?;
    let mut items = Vec::with_capacity(page.items.len());
    for view in page.items {
        let (rollout_id, status) = (view.rollout.rollout_id, view.rollout.status);
        let Some(attempt) = view.attempt else {
            items.push(Outcome::without_attempt(rollout_id));
            continue;
        };
        let spans = attempt_spans(backend.as_ref(), &rollout_id, &attempt.attempt_id).await?;
        items.push(Outcome::read(
            rollout_id,
            attempt.attempt_id,
            (status, attempt.status.has_ended()),
            &spans,
        ));
    }
    Ok(Json(Paginated {
        items,
        limit: page.limit,
        offset: page.offset,
        total: page.total,
    }))
}

/// `GET /v1/agl-host/rollouts/{rollout_id}/attempts/{attempt_id}/llm-calls` → the attempt's LLM
/// calls as triplets (prompt messages, response, tool calls, model, tokens, the span they came
/// from), in call order.
async fn llm_calls(
    State(backend): Backend,
    PathParams((rollout_id, attempt_id)): PathParams<(String, String)>,
) -> ApiResult<Json<Vec<agl_adapter::Triplet>>> {
    let spans = attempt_spans(backend.as_ref(), &rollout_id, &attempt_id).await?;
    Ok(Json(agl_adapter::triplets(&spans)))
}

/// Every span of one attempt.
async fn attempt_spans(store: &dyn LightningStore, rollout_id: &str, attempt_id: &str) -> ApiResult<Vec<Arc<Span>>> {
    let query = SpanQuery::for_rollout(rollout_id.to_owned()).attempt(attempt_id);
    Ok(store.query_spans(&query).await?.items)
}

impl Outcome {
    fn without_attempt(rollout_id: String) -> Self {
        Self {
            rollout_id,
            attempt_id: None,
            final_reward: None,
            counted_reward: 0.0,
            rewards: Vec::new(),
            spans: 0,
            llm_spans: 0,
            triplets: 0,
            input_tokens: 0,
            output_tokens: 0,
            llm_seconds: 0.0,
            no_triplet_reason: None,
        }
    }

    /// `status`: the rollout's, and whether its latest attempt has ended.
    fn read(rollout_id: String, attempt_id: String, status: (RolloutStatus, bool), spans: &[Arc<Span>]) -> Self {
        let (rollout_status, ended) = status;
        let final_reward = agl_adapter::final_reward(spans);
        let llm: Vec<&Span> = spans
            .iter()
            .map(AsRef::as_ref)
            .filter(|s| agl_adapter::is_llm_call(s))
            .collect();
        let triplets = agl_adapter::triplets(spans);
        let failed = llm.iter().filter(|s| s.status.status_code == StatusCode::Error).count();
        let no_triplet_reason = (ended && triplets.is_empty()).then(|| no_triplet_reason(llm.len(), failed));
        Self {
            rollout_id,
            attempt_id: Some(attempt_id),
            final_reward,
            counted_reward: agl_adapter::counted_reward(rollout_status, final_reward),
            rewards: agl_adapter::rewards(spans),
            spans: spans.len(),
            llm_spans: llm.len(),
            triplets: triplets.len(),
            input_tokens: triplets.iter().filter_map(|t| t.usage.input_tokens).sum(),
            output_tokens: triplets.iter().filter_map(|t| t.usage.output_tokens).sum(),
            llm_seconds: llm
                .iter()
                .filter_map(|s| Some(s.end_time? - s.start_time?))
                .filter(|d| d.is_finite() && *d >= 0.0)
                .sum(),
            no_triplet_reason,
        }
    }
}

/// Why an ended attempt with `llm_spans` LLM spans, `failed` of them errors, yields no triplet.
fn no_triplet_reason(llm_spans: usize, failed: usize) -> String {
    if llm_spans == 0 {
        "no LLM span in the trace: the agent made no LLM call the host or an instrumentation recorded".into()
    } else if failed == llm_spans {
        format!("every LLM call failed ({failed} error span(s)): no answer to learn from")
    } else {
        "the LLM calls are all inside the reward computation (an LLM judge), not the agent's".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_names_what_is_missing() {
        assert!(no_triplet_reason(0, 0).starts_with("no LLM span"));
        assert!(no_triplet_reason(2, 2).starts_with("every LLM call failed (2 error span(s))"));
        assert!(no_triplet_reason(2, 1).contains("reward computation"));
    }
}
