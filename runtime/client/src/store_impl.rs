//! The `LightningStore` trait, one wire route per method (Agent-lightning 0.3.0's `/v1/agl`).
//! Batch methods without a batch route (`add_spans`, `get_next_span_sequence_ids`) send one
//! request per item over the kept-alive connection.

use crate::fit::fit_span;
use crate::transport::{Call, HttpStoreClient, NotFound, segment};
use agl_store::*;
use async_trait::async_trait;
use reqwest::Method;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn rollout_missing(rollout_id: &str) -> NotFound {
    let id = rollout_id.to_owned();
    Box::new(move || StoreError::RolloutNotFound(id))
}

fn resources_missing(resources_id: &str) -> NotFound {
    let id = resources_id.to_owned();
    Box::new(move || StoreError::ResourcesNotFound(id))
}

fn attempt_missing(rollout_id: &str, attempt: AttemptRef<'_>) -> NotFound {
    let rollout_id = rollout_id.to_owned();
    match attempt {
        AttemptRef::Latest => Box::new(move || StoreError::NoAttempts(rollout_id)),
        AttemptRef::Id(id) => {
            let attempt_id = id.to_owned();
            Box::new(move || StoreError::AttemptNotFound { rollout_id, attempt_id })
        }
    }
}

fn route_missing(what: &'static str) -> NotFound {
    Box::new(move || StoreError::Backend(format!("the server has no route for {what} (not an agl store?)")))
}

#[async_trait]
impl LightningStore for HttpStoreClient {
    async fn start_rollout(&self, request: StartRolloutRequest) -> StoreResult<AttemptedRollout> {
        self.send(Call::post("rollouts".into(), &request), route_missing("start_rollout"))
            .await
    }

    async fn enqueue_rollouts(&self, requests: Vec<EnqueueRolloutRequest>) -> StoreResult<Vec<Rollout>> {
        let body = EnqueueManyRequest { rollouts: requests };
        self.send(
            Call::post("queues/rollouts/enqueue".into(), &body),
            route_missing("enqueue"),
        )
        .await
    }

    async fn dequeue_rollouts(&self, limit: usize, worker_id: Option<&str>) -> StoreResult<Vec<AttemptedRollout>> {
        let body = DequeueRequest {
            limit: i64::try_from(limit).unwrap_or(i64::MAX),
            worker_id: worker_id.map(str::to_owned),
        };
        self.send(
            Call::post("queues/rollouts/dequeue".into(), &body),
            route_missing("dequeue"),
        )
        .await
    }

    async fn start_attempt(&self, rollout_id: &str, worker_id: Option<&str>) -> StoreResult<AttemptedRollout> {
        let body = StartAttemptRequest {
            worker_id: worker_id.map(str::to_owned),
        };
        let path = format!("rollouts/{}/attempts", segment(rollout_id));
        self.send(Call::post(path, &body), rollout_missing(rollout_id)).await
    }

    async fn update_rollout(&self, rollout_id: &str, update: RolloutUpdate) -> StoreResult<Rollout> {
        let path = format!("rollouts/{}", segment(rollout_id));
        self.send(Call::post(path, &update), rollout_missing(rollout_id)).await
    }

    async fn update_attempt(
        &self,
        rollout_id: &str,
        attempt: AttemptRef<'_>,
        update: AttemptUpdate,
    ) -> StoreResult<Attempt> {
        let which = match attempt {
            AttemptRef::Latest => "latest".to_owned(),
            AttemptRef::Id(id) => segment(id),
        };
        let path = format!("rollouts/{}/attempts/{which}", segment(rollout_id));
        self.send(Call::post(path, &update), attempt_missing(rollout_id, attempt))
            .await
    }

    async fn query_rollouts(&self, query: &RolloutQuery) -> StoreResult<Paginated<RolloutView>> {
        self.send(
            Call::post("rollouts/search".into(), query),
            route_missing("rollouts/search"),
        )
        .await
    }

    async fn query_attempts(&self, rollout_id: &str, query: &AttemptQuery) -> StoreResult<Paginated<Attempt>> {
        let path = format!("rollouts/{}/attempts/search", segment(rollout_id));
        self.send(Call::post(path, query), rollout_missing(rollout_id)).await
    }

    async fn query_spans(&self, query: &SpanQuery) -> StoreResult<Paginated<Arc<Span>>> {
        let page: Paginated<Span> = self
            .send(
                Call::post("spans/search".into(), query),
                rollout_missing(&query.rollout_id),
            )
            .await?;
        Ok(Paginated {
            items: page.items.into_iter().map(Arc::new).collect(),
            limit: page.limit,
            offset: page.offset,
            total: page.total,
        })
    }

    async fn query_resources(&self, query: &ResourcesQuery) -> StoreResult<Paginated<ResourcesUpdate>> {
        let call = Call {
            method: Method::GET,
            path: "resources".into(),
            body: None::<&()>,
            query: Some(query),
            extra_timeout: Duration::ZERO,
        };
        self.send(call, route_missing("resources")).await
    }

    async fn query_workers(&self, query: &WorkerQuery) -> StoreResult<Paginated<Worker>> {
        self.send(
            Call::post("workers/search".into(), query),
            route_missing("workers/search"),
        )
        .await
    }

    async fn get_rollout_by_id(&self, rollout_id: &str) -> StoreResult<Option<RolloutView>> {
        let path = format!("rollouts/{}", segment(rollout_id));
        Ok(self
            .send_optional::<(), (), Option<RolloutView>>(Call::get(path))
            .await?
            .flatten())
    }

    async fn get_latest_attempt(&self, rollout_id: &str) -> StoreResult<Option<Attempt>> {
        let path = format!("rollouts/{}/attempts/latest", segment(rollout_id));
        Ok(self
            .send_optional::<(), (), Option<Attempt>>(Call::get(path))
            .await?
            .flatten())
    }

    async fn add_span(&self, span: Span) -> StoreResult<Option<Arc<Span>>> {
        let rollout_id = span.rollout_id.clone();
        let stored: Option<Span> = self
            .send(Call::post("spans".into(), &span), rollout_missing(&rollout_id))
            .await?;
        Ok(stored.map(Arc::new))
    }

    /// One request per span, each clipped to fit; a span the server still refuses (a 4xx other
    /// than "not found") is logged and skipped so that its neighbours are not lost with it.
    async fn add_spans(&self, spans: Vec<Span>) -> StoreResult<Vec<Arc<Span>>> {
        let mut stored = Vec::with_capacity(spans.len());
        for span in spans {
            let span = fit_span(span, self.options().max_span_bytes);
            let (rollout_id, span_id) = (span.rollout_id.clone(), span.span_id.clone());
            match self.add_span(span).await {
                Ok(kept) => stored.extend(kept),
                Err(StoreError::InvalidArgument(detail)) => {
                    tracing::warn!("span {span_id} of {rollout_id} refused by the store, skipped: {detail}");
                }
                Err(e) => return Err(e),
            }
        }
        Ok(stored)
    }

    async fn get_next_span_sequence_ids(&self, pairs: &[(&str, &str)]) -> StoreResult<Vec<u64>> {
        let mut ids = Vec::with_capacity(pairs.len());
        for (rollout_id, attempt_id) in pairs {
            let body = NextSequenceIdRequest {
                rollout_id: (*rollout_id).to_owned(),
                attempt_id: (*attempt_id).to_owned(),
            };
            let next: NextSequenceIdResponse = self
                .send(Call::post("spans/next".into(), &body), rollout_missing(rollout_id))
                .await?;
            ids.push(next.sequence_id);
        }
        Ok(ids)
    }

    async fn add_resources(&self, resources: NamedResources) -> StoreResult<ResourcesUpdate> {
        self.send(Call::post("resources".into(), &resources), route_missing("resources"))
            .await
    }

    async fn update_resources(&self, resources_id: &str, resources: NamedResources) -> StoreResult<ResourcesUpdate> {
        let path = format!("resources/{}", segment(resources_id));
        self.send(Call::post(path, &resources), resources_missing(resources_id))
            .await
    }

    async fn get_latest_resources(&self) -> StoreResult<Option<ResourcesUpdate>> {
        Ok(self
            .send_optional::<(), (), Option<ResourcesUpdate>>(Call::get("resources/latest".into()))
            .await?
            .flatten())
    }

    async fn get_resources_by_id(&self, resources_id: &str) -> StoreResult<Option<ResourcesUpdate>> {
        let path = format!("resources/{}", segment(resources_id));
        Ok(self
            .send_optional::<(), (), Option<ResourcesUpdate>>(Call::get(path))
            .await?
            .flatten())
    }

    async fn update_worker(&self, worker_id: &str, update: WorkerUpdate) -> StoreResult<Worker> {
        let path = format!("workers/{}", segment(worker_id));
        self.send(Call::post(path, &update), route_missing("workers")).await
    }

    async fn get_worker_by_id(&self, worker_id: &str) -> StoreResult<Option<Worker>> {
        let path = format!("workers/{}", segment(worker_id));
        Ok(self
            .send_optional::<(), (), Option<Worker>>(Call::get(path))
            .await?
            .flatten())
    }

    async fn wait_for_rollouts(&self, rollout_ids: &[String], timeout: Option<Duration>) -> StoreResult<Vec<Rollout>> {
        let body = json!({
            "rollout_ids": rollout_ids,
            "timeout": timeout.map(|t| t.as_secs_f64()),
        });
        let mut call = Call::post("waits/rollouts".into(), &body);
        // The server holds the request for up to `timeout`; without one, wait as long as it takes.
        call.extra_timeout = timeout.unwrap_or(Duration::from_secs(365 * 24 * 3600));
        self.send(call, route_missing("waits/rollouts")).await
    }

    /// `POST /v1/agl/recordings` (agl-host's own route), given a second more to answer per MiB
    /// sent; posting the same recording again replaces it with itself, so a retry is safe.
    async fn add_recording(&self, recording: Recording) -> StoreResult<RecordingStored> {
        let missing: NotFound = {
            let (rollout_id, attempt_id) = (recording.rollout_id.clone(), recording.attempt_id.clone());
            Box::new(move || StoreError::AttemptNotFound { rollout_id, attempt_id })
        };
        let mut call = Call::post("recordings".into(), &recording);
        call.extra_timeout = Duration::from_secs(u64::try_from(recording.content_bytes() >> 20).unwrap_or(u64::MAX));
        self.send(call, missing).await
    }

    /// `GET /v1/agl/recordings/{rollout_id}/{attempt_id}`; a 404 is `None`.
    async fn get_recording(&self, rollout_id: &str, attempt_id: &str) -> StoreResult<Option<Recording>> {
        let path = format!("recordings/{}/{}", segment(rollout_id), segment(attempt_id));
        self.send_optional::<(), (), Recording>(Call::get(path)).await
    }

    async fn statistics(&self) -> StoreResult<Statistics> {
        self.send(Call::get("statistics".into()), route_missing("statistics"))
            .await
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            thread_safe: true,
            async_safe: true,
            zero_copy: true,
            otlp_traces: true,
        }
    }
}
