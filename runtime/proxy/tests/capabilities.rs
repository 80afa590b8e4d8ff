//! The per-attempt capability over real HTTP: a call through a live capability is answered and
//! recorded as a span of its attempt; once the runner drops it (the attempt ended) the same URL
//! is a 404; and calls naming an ended attempt by its ids (the operator's routes) are refused, so
//! nothing is added to an attempt whose spans are final.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test: a failed step panics and fails it"
)]

use agl_llm::ScriptedBackend;
use agl_policy::LlmPolicy;
use agl_proxy::{Proxy, ProxyConfig, Upstream, Upstreams};
use agl_store::{
    AttemptRef, AttemptStatus, AttemptUpdate, EnqueueRolloutRequest, InMemoryLightningStore, LightningStore, SpanQuery,
    StartRolloutRequest,
};
use agl_trace::LlmAllowance;
use serde_json::{Value, json};
use std::sync::Arc;

const RULES: &str = r#"{"model": "m", "rules": [
    {"when": [{"role": "user", "matches": "^say (.*)$"}], "reply": "{1}", "usage": {"input_tokens": 5, "output_tokens": 2}}
], "fallback": {"reply": "ok"}}"#;

async fn serve(proxy: &Proxy) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let url = format!("http://{}", listener.local_addr().expect("an address"));
    let app = proxy.agent_router().merge(proxy.router());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// A store holding one rollout, its attempt running.
async fn store_with_a_running_attempt() -> (Arc<dyn LightningStore>, agl_store::AttemptedRollout) {
    let store: Arc<dyn LightningStore> = Arc::new(InMemoryLightningStore::new());
    let started = store
        .start_rollout(StartRolloutRequest {
            rollout: EnqueueRolloutRequest::new(json!({"q": 1})),
            worker_id: None,
        })
        .await
        .expect("a rollout");
    (store, started)
}

fn spans_of(rollout: &str) -> SpanQuery {
    SpanQuery {
        rollout_id: rollout.to_owned(),
        ..SpanQuery::default()
    }
}

async fn chat(url: &str) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(url)
        .json(&json!({"messages": [{"role": "user", "content": "say hi"}]}))
        .send()
        .await
        .expect("the proxy answers");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_capability_lives_with_its_attempt_and_ended_attempts_take_no_calls() {
    let (store, started) = store_with_a_running_attempt().await;
    let (rollout, attempt) = (started.rollout.rollout_id.clone(), started.attempt.attempt_id.clone());
    let backend = ScriptedBackend::from_json_str(RULES).expect("rules");
    let upstreams = Upstreams::new(vec![Upstream::backend(Arc::new(backend))]).expect("an upstream");
    let proxy = Proxy::new(store.clone(), ProxyConfig::new(upstreams));
    let base = serve(&proxy).await;

    let allowance = Arc::new(LlmAllowance::new(&LlmPolicy::default()));
    let grant = proxy
        .grants()
        .issue(&rollout, &attempt, allowance.clone())
        .expect("a capability");
    let endpoint = grant.endpoint(&base);
    let (status, body) = chat(&format!("{endpoint}/chat/completions")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["choices"][0]["message"]["content"], "hi");
    assert_eq!(
        (allowance.calls(), allowance.tokens()),
        (1, 7),
        "charged to the attempt"
    );
    // Agent-lightning's per-attempt spelling of the same capability, and another attempt's ids.
    let (status, _) = chat(&format!(
        "{}/agent/{}/rollout/{rollout}/attempt/{attempt}/v1/chat/completions",
        base,
        endpoint.trim_end_matches("/v1").rsplit('/').next().unwrap_or_default()
    ))
    .await;
    assert_eq!(status, 200);
    let spans = store.query_spans(&spans_of(&rollout)).await.expect("spans");
    assert_eq!(spans.items.len(), 2, "each call a span of the attempt");

    drop(grant);
    let (status, body) = chat(&format!("{endpoint}/chat/completions")).await;
    assert_eq!(status, 404, "a revoked capability opens nothing: {body}");

    let by_ids = format!("{base}/rollout/{rollout}/attempt/{attempt}/v1/chat/completions");
    assert_eq!(
        chat(&by_ids).await.0,
        200,
        "the operator's route, while the attempt runs"
    );
    store
        .update_attempt(
            &rollout,
            AttemptRef::Id(&attempt),
            AttemptUpdate::status(AttemptStatus::Succeeded),
        )
        .await
        .expect("the attempt ends");
    let (status, body) = chat(&by_ids).await;
    assert_eq!(status, 409, "{body}");
    let after = store.query_spans(&spans_of(&rollout)).await.expect("spans");
    assert_eq!(after.items.len(), 3, "nothing added once the attempt ended");
}

/// Calls through one capability go one at a time, as through the `llm` import: calls sent at
/// once cannot all be admitted against the same tokens left.
#[tokio::test]
async fn concurrent_calls_of_one_attempt_cannot_overspend_its_tokens() {
    let (store, started) = store_with_a_running_attempt().await;
    // An upstream that takes its time: calls sent at once are all in flight together unless the
    // proxy takes them in turn.
    let backend = ScriptedBackend::from_json_str(RULES).expect("rules");
    let slow = agl_testkit::llm_server::serve_with_faults(
        Arc::new(backend),
        "127.0.0.1:0".parse().expect("an address"),
        agl_testkit::llm_server::Faults::default().with_delay(std::time::Duration::from_millis(200)),
    )
    .await
    .expect("an upstream");
    let upstream = Upstream::openai(agl_llm::OpenAiConfig::new(slow.base_url(), "m")).expect("an upstream");
    let upstreams = Upstreams::new(vec![upstream]).expect("upstreams");
    let proxy = Proxy::new(store.clone(), ProxyConfig::new(upstreams));
    let base = serve(&proxy).await;
    let mut policy = LlmPolicy::default();
    // Each call spends 7 tokens: the second starts with 1 left, the third with none.
    policy.budget.max_tokens = 8;
    let policy = policy;
    let allowance = Arc::new(LlmAllowance::new(&policy));
    let grant = proxy
        .grants()
        .issue(
            &started.rollout.rollout_id,
            &started.attempt.attempt_id,
            allowance.clone(),
        )
        .expect("a capability");
    let url = format!("{}/chat/completions", grant.endpoint(&base));
    let calls: Vec<_> = (0..6).map(|_| tokio::spawn(chat_owned(url.clone()))).collect();
    let mut answered = 0;
    for call in calls {
        let (status, _) = call.await.expect("the call ran");
        answered += usize::from(status == 200);
    }
    assert_eq!(answered, 2, "{} tokens spent", allowance.tokens());
    assert_eq!(allowance.tokens(), 14);
}

async fn chat_owned(url: String) -> (u16, Value) {
    chat(&url).await
}
