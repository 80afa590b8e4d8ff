//! HttpStoreClient against the real server (agl-server over an in-memory store, on loopback):
//! the store API end to end, unknown ids, the token, and retries when the server is gone.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test: a failed step panics and fails it"
)]

use agl_client::{ClientOptions, HttpStoreClient};
use agl_server::{ServerOptions, serve};
use agl_store::*;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

async fn server(token: Option<&str>) -> (agl_server::ServerHandle, Arc<InMemoryLightningStore>) {
    let store = Arc::new(InMemoryLightningStore::new());
    let options = ServerOptions {
        port: 0,
        token: token.map(str::to_owned),
        ..ServerOptions::default()
    };
    let handle = serve(store.clone(), options).await.expect("server starts");
    (handle, store)
}

fn client(url: &str, token: Option<&str>) -> HttpStoreClient {
    let options = ClientOptions {
        token: token.map(str::to_owned),
        retry_delays: vec![Duration::from_millis(20); 2],
        ..ClientOptions::default()
    };
    HttpStoreClient::new(url, options).expect("client")
}

fn reward_span(rollout: &AttemptedRollout, span_id: &str, sequence_id: u64) -> Span {
    serde_json::from_value(json!({
        "rollout_id": rollout.rollout.rollout_id,
        "attempt_id": rollout.attempt.attempt_id,
        "sequence_id": sequence_id,
        "trace_id": "0af7651916cd43dd8448eb211c80319c",
        "span_id": span_id,
        "parent_id": null,
        "name": "agentlightning.annotation",
        "status": {"status_code": "OK"},
        "attributes": {"agentlightning.reward.0.name": "primary", "agentlightning.reward.0.value": 1.0},
        "events": [], "links": [],
        "resource": {"attributes": {}, "schema_url": ""}
    }))
    .expect("span")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_store_api_works_over_http() {
    let (server, _) = server(None).await;
    let store = client(&server.url(), None);
    assert!(store.health().await);

    // Resources.
    let resources: NamedResources = serde_json::from_value(
        json!({"prompt": {"resource_type": "prompt_template", "template": "Q: {q}", "engine": "f-string"}}),
    )
    .expect("resources");
    let added = store.add_resources(resources.clone()).await.expect("add");
    let latest = store.get_latest_resources().await.expect("latest").expect("some");
    assert_eq!(latest.resources_id, added.resources_id);
    let updated = store.update_resources("v1", resources).await.expect("upsert");
    assert_eq!(updated.resources_id, "v1");
    assert!(store.get_resources_by_id("v1").await.expect("get").is_some());
    assert!(store.get_resources_by_id("nope").await.expect("get").is_none());
    let page = store.query_resources(&ResourcesQuery::default()).await.expect("query");
    assert_eq!(page.total, 2);

    // Enqueue, dequeue with a worker, spans, sequence ids.
    let config = RolloutConfig {
        max_attempts: 2,
        retry_condition: vec![AttemptStatus::Failed],
        ..RolloutConfig::default()
    };
    let enqueued = store
        .enqueue_rollouts(vec![
            EnqueueRolloutRequest::new(json!({"q": 1}))
                .mode(Mode::Train)
                .config(config),
            EnqueueRolloutRequest::new(json!({"q": 2})),
        ])
        .await
        .expect("enqueue");
    assert_eq!(enqueued.len(), 2);
    let first = store.dequeue_rollout(Some("w-1")).await.expect("dequeue").expect("one");
    assert_eq!(first.rollout.rollout_id, enqueued[0].rollout_id);
    assert_eq!(first.attempt.worker_id.as_deref(), Some("w-1"));
    let next = store
        .get_next_span_sequence_id(&first.rollout.rollout_id, &first.attempt.attempt_id)
        .await
        .expect("next");
    let stored = store
        .add_span(reward_span(&first, "b7ad6b7169203331", next))
        .await
        .expect("span");
    assert!(stored.is_some());
    let duplicate = store
        .add_span(reward_span(&first, "b7ad6b7169203331", next))
        .await
        .expect("span");
    assert!(duplicate.is_none(), "a duplicate span answers null");
    let spans = store
        .query_spans(&SpanQuery::for_rollout(first.rollout.rollout_id.clone()).name("agentlightning.annotation"))
        .await
        .expect("spans");
    assert_eq!(spans.items.len(), 1);

    // Failed → requeuing → retried.
    store
        .update_attempt(
            &first.rollout.rollout_id,
            AttemptRef::Latest,
            AttemptUpdate::status(AttemptStatus::Failed),
        )
        .await
        .expect("fail");
    let view = store
        .get_rollout_by_id(&first.rollout.rollout_id)
        .await
        .expect("get")
        .expect("some");
    assert_eq!(view.rollout.status, RolloutStatus::Requeuing);
    let second = store.dequeue_rollouts(5, Some("w-2")).await.expect("dequeue");
    let retry = second
        .iter()
        .find(|r| r.rollout.rollout_id == first.rollout.rollout_id)
        .expect("the failed rollout comes back");
    assert_eq!(retry.attempt.sequence_id, 2);
    let attempts = store
        .query_attempts(&first.rollout.rollout_id, &AttemptQuery::default())
        .await
        .expect("attempts");
    assert_eq!(attempts.total, 2);
    store
        .update_attempt(
            &first.rollout.rollout_id,
            AttemptRef::Id(&retry.attempt.attempt_id),
            AttemptUpdate::status(AttemptStatus::Succeeded),
        )
        .await
        .expect("succeed");

    // Cancel, wait.
    let other = &enqueued[1].rollout_id;
    store
        .update_rollout(other, RolloutUpdate::status(RolloutStatus::Cancelled))
        .await
        .expect("cancel");
    let ids = vec![first.rollout.rollout_id.clone(), other.clone()];
    let finished = store
        .wait_for_rollouts(&ids, Some(Duration::from_secs(5)))
        .await
        .expect("wait");
    assert_eq!(finished.len(), 2);

    // Workers, statistics, queries.
    let worker = store
        .update_worker("w-1", WorkerUpdate::default())
        .await
        .expect("heartbeat");
    assert!(worker.last_heartbeat_time.is_some());
    assert!(store.get_worker_by_id("w-1").await.expect("get").is_some());
    assert!(store.get_worker_by_id("w-none").await.expect("get").is_none());
    let workers = store.query_workers(&WorkerQuery::default()).await.expect("workers");
    assert_eq!(workers.total, 2);
    let rollouts = store
        .query_rollouts(&RolloutQuery::default().status_in([RolloutStatus::Succeeded]))
        .await
        .expect("rollouts");
    assert_eq!(rollouts.total, 1);
    let stats = store.statistics().await.expect("statistics");
    assert_eq!(stats.total_rollouts, 2);

    // Unknown ids: None or a typed not-found, never a backend error.
    assert!(store.get_rollout_by_id("ro-nope").await.expect("get").is_none());
    assert!(store.get_latest_attempt("ro-nope").await.expect("get").is_none());
    let error = store
        .update_rollout("ro-nope", RolloutUpdate::status(RolloutStatus::Cancelled))
        .await
        .expect_err("unknown");
    assert!(error.is_not_found(), "{error}");
    let bad = store
        .query_rollouts(&RolloutQuery::default().limit(0))
        .await
        .expect_err("limit 0");
    assert!(matches!(bad, StoreError::InvalidArgument(_)), "{bad}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_is_sent_and_a_wrong_one_is_refused() {
    let (server, _) = server(Some("s3cret")).await;
    assert!(client(&server.url(), Some("s3cret")).statistics().await.is_ok());
    let refused = client(&server.url(), Some("wrong"))
        .statistics()
        .await
        .expect_err("refused");
    assert!(refused.to_string().contains("refused"), "{refused}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gone_server_is_retried_then_reported_as_a_backend_error() {
    let (server, _) = server(None).await;
    let url = server.url();
    server.shutdown().await;
    let store = client(&url, None);
    let started = Instant::now();
    let error = store.statistics().await.expect_err("server gone");
    assert!(matches!(error, StoreError::Backend(_)), "{error}");
    assert!(error.to_string().contains("after 2 retries"), "{error}");
    // Two retries of 20 ms (plus the health probes' waits) happened before giving up.
    assert!(started.elapsed() >= Duration::from_millis(40));
}

/// A server whose body limit is `max_body` bytes.
async fn small_server(max_body: usize) -> (agl_server::ServerHandle, Arc<InMemoryLightningStore>) {
    let store = Arc::new(InMemoryLightningStore::new());
    let options = ServerOptions {
        port: 0,
        max_body_bytes: max_body,
        ..ServerOptions::default()
    };
    let handle = serve(store.clone(), options).await.expect("server starts");
    (handle, store)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversize_span_is_clipped_to_fit_and_never_lost_with_its_neighbours() {
    let (server, store) = small_server(64 << 10).await;
    let rollout = store
        .start_rollout(StartRolloutRequest {
            rollout: EnqueueRolloutRequest::new(json!({"q": 1})),
            worker_id: None,
        })
        .await
        .expect("rollout");
    let big = |span_id: &str, sequence_id: u64| {
        let mut span = reward_span(&rollout, span_id, sequence_id);
        span.attributes
            .insert("agl.log.message".into(), json!("x".repeat(200 << 10)));
        span
    };
    let batch = || {
        vec![
            reward_span(&rollout, "00000000000000a1", 1),
            big("00000000000000a2", 2),
            reward_span(&rollout, "00000000000000a3", 3),
        ]
    };

    // A client that knows the server's limit clips the big span and sends all three.
    let fitting = HttpStoreClient::new(
        &server.url(),
        ClientOptions {
            max_span_bytes: 60 << 10,
            ..ClientOptions::default()
        },
    )
    .expect("client");
    let stored = fitting.add_spans(batch()).await.expect("sent");
    assert_eq!(stored.len(), 3, "the batch arrives whole");
    let clipped = &stored[1];
    assert!(
        clipped.attributes[agl_client::CLIPPED_BYTES]
            .as_u64()
            .is_some_and(|n| n > 140 << 10)
    );

    // One that does not (the default 15 MiB) gets a 413 for the big span: that span is
    // skipped, its neighbours still arrive.
    let rollout_b = store
        .start_rollout(StartRolloutRequest {
            rollout: EnqueueRolloutRequest::new(json!({"q": 2})),
            worker_id: None,
        })
        .await
        .expect("rollout");
    let mut spans = batch();
    for span in &mut spans {
        span.rollout_id.clone_from(&rollout_b.rollout.rollout_id);
        span.attempt_id.clone_from(&rollout_b.attempt.attempt_id);
    }
    let unaware = client(&server.url(), None);
    let stored = unaware.add_spans(spans).await.expect("the batch goes on");
    let ids: Vec<&str> = stored.iter().map(|s| s.span_id.as_str()).collect();
    assert_eq!(ids, ["00000000000000a1", "00000000000000a3"]);
}

/// A started attempt of `store` and a recording of it: a tape and blobs of `blob_bytes` bytes
/// in all, one of them JSON text (its quotes escaped on the wire).
async fn recorded_attempt(store: &InMemoryLightningStore, blob_bytes: usize) -> Recording {
    let started = store
        .start_rollout(StartRolloutRequest {
            rollout: EnqueueRolloutRequest::new(json!({"q": 1})),
            worker_id: None,
        })
        .await
        .unwrap();
    let texts = [
        json!({"choices": [{"message": {"content": "4"}}]}).to_string(),
        "x".repeat(blob_bytes),
    ];
    Recording {
        rollout_id: started.rollout.rollout_id,
        attempt_id: started.attempt.attempt_id,
        tape: json!({"entries": [{"llm": blob_address(&texts[0])}]}).to_string(),
        blobs: texts.into_iter().map(|text| (blob_address(&text), text)).collect(),
    }
}

/// Through the client, a recording is kept and read back whole, also where it is larger than
/// the server's body limit for other routes; a hostile POST (a blob not under its hash) is a
/// 400 and keeps nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_goes_through_the_client_and_a_forged_one_is_refused() {
    let (server, store) = small_server(64 << 10).await;
    let http = client(&server.url(), None);
    let recording = recorded_attempt(&store, 256 << 10).await;
    let (rollout_id, attempt_id) = (recording.rollout_id.clone(), recording.attempt_id.clone());
    assert_eq!(http.get_recording(&rollout_id, &attempt_id).await.unwrap(), None);
    let stored = http.add_recording(recording.clone()).await.unwrap();
    assert_eq!((stored.blobs, stored.new_blobs), (2, 2), "{stored:?}");
    assert_eq!(stored.tape_bytes, recording.tape.len() as u64);
    let read = http.get_recording(&rollout_id, &attempt_id).await.unwrap();
    assert_eq!(read.as_ref(), Some(&recording));
    let again = http.add_recording(recording.clone()).await.unwrap();
    assert_eq!((again.new_blobs, again.new_blob_bytes), (0, 0), "{again:?}");

    let mut unknown = recording.clone();
    unknown.attempt_id = "at-nobody".into();
    let error = http.add_recording(unknown).await.unwrap_err();
    assert!(matches!(error, StoreError::AttemptNotFound { .. }), "{error}");

    // A hostile client, not ours: the second attempt's recording with a forged blob.
    let other = recorded_attempt(&store, 16).await;
    let mut forged = serde_json::to_value(&other).unwrap();
    let first_key = other.blobs.keys().next().unwrap().clone();
    forged["blobs"][&first_key] = json!("not the text this key hashes");
    let answer = reqwest::Client::new()
        .post(format!("{}/v1/agl/recordings", server.url()))
        .json(&forged)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 400);
    let detail = answer.text().await.unwrap();
    assert!(detail.contains("SHA-256"), "{detail}");
    assert_eq!(
        store.get_recording(&other.rollout_id, &other.attempt_id).await.unwrap(),
        None,
        "nothing of it was kept"
    );
    let missing = reqwest::get(format!(
        "{}/v1/agl/recordings/{}/{}",
        server.url(),
        other.rollout_id,
        other.attempt_id
    ))
    .await
    .unwrap();
    assert_eq!(missing.status().as_u16(), 404);
    server.shutdown().await;
}
