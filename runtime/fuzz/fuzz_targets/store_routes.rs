//! The store's HTTP API (`agl-server`) through the real axum `Router`, in process: the first byte
//! picks one of the POST routes (and, for `/v1/traces`, the content type), the rest is the body.
//! The store behind it is a fresh in-memory store holding one running rollout with its attempt,
//! one queued rollout, a resources version and a worker, so that the id routes reach the store.
//!
//! Invariants: no panic, no 5xx answer, every answer's body is JSON (or OTLP protobuf for
//! `/v1/traces`), and the store's invariants hold afterwards.

#![no_main]

use agl_fuzz::{assert_invariants, memory_store, runtime};
use agl_server::{ServerOptions, router};
use agl_store::{EnqueueRolloutRequest, LightningStore, NamedResources, StartRolloutRequest, WorkerUpdate};
use axum::body::Body;
use axum::http::{Method, Request, header};
use libfuzzer_sys::fuzz_target;
use std::sync::Arc;
use tower::ServiceExt;

/// POST routes; `{r}` is the running rollout's id, `{a}` its attempt's, `{q}` the queued
/// rollout's, `{rs}` the resources id, `{w}` the worker id.
const ROUTES: &[&str] = &[
    "/v1/agl/queues/rollouts/enqueue",
    "/v1/agl/queues/rollouts/dequeue",
    "/v1/agl/rollouts",
    "/v1/agl/rollouts/search",
    "/v1/agl/rollouts/{r}",
    "/v1/agl/rollouts/{q}",
    "/v1/agl/rollouts/{r}/attempts",
    "/v1/agl/rollouts/{q}/attempts",
    "/v1/agl/rollouts/{r}/attempts/search",
    "/v1/agl/rollouts/{r}/attempts/latest",
    "/v1/agl/rollouts/{r}/attempts/{a}",
    "/v1/agl/workers/search",
    "/v1/agl/workers/{w}",
    "/v1/agl/resources",
    "/v1/agl/resources/latest",
    "/v1/agl/resources/{rs}",
    "/v1/agl/spans",
    "/v1/agl/spans/search",
    "/v1/agl/spans/next",
    "/v1/agl/waits/rollouts",
    "/v1/traces",
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let route = ROUTES[usize::from(selector) % ROUTES.len()];
    let rt = runtime();
    rt.block_on(async {
        let store = memory_store();
        let running = store
            .start_rollout(StartRolloutRequest {
                rollout: EnqueueRolloutRequest::new(serde_json::json!({"q": "2+2"})),
                worker_id: Some("w-1".into()),
            })
            .await
            .expect("start a rollout");
        let queued = store
            .enqueue_rollout(EnqueueRolloutRequest::new(serde_json::json!({"q": "3+3"})))
            .await
            .expect("enqueue a rollout");
        let resources = store
            .add_resources(NamedResources::default())
            .await
            .expect("add resources");
        store
            .update_worker("w-1", WorkerUpdate::default())
            .await
            .expect("add a worker");

        let path = route
            .replace("{r}", &running.rollout.rollout_id)
            .replace("{a}", &running.attempt.attempt_id)
            .replace("{q}", &queued.rollout_id)
            .replace("{rs}", &resources.resources_id)
            .replace("{w}", "w-1");
        let content_type = if route == "/v1/traces" && selector & 0x80 == 0 {
            "application/x-protobuf"
        } else {
            "application/json"
        };
        let request = Request::builder()
            .method(Method::POST)
            .uri(path.as_str())
            .header(header::CONTENT_TYPE, content_type)
            .body(Body::from(body.to_vec()))
            .expect("a request");
        let app = router(store.clone() as Arc<dyn LightningStore>, &ServerOptions::default());
        let response = app.oneshot(request).await.expect("the router is infallible");
        let status = response.status();
        let answer = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("read the answer");
        assert!(
            !status.is_server_error(),
            "POST {route} answered {status}: {}",
            String::from_utf8_lossy(&answer)
        );
        if content_type == "application/json" && !answer.is_empty() {
            assert!(
                serde_json::from_slice::<serde_json::Value>(&answer).is_ok(),
                "POST {route} answered {status} with a body that is not JSON"
            );
        }
        assert_invariants(&store);
    });
});
