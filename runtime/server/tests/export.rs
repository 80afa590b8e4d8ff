//! `GET /v1/agl/export/tokens` and fork rollouts (`agl-host fork`'s, `agl.fork` in their
//! metadata): left out by default, exported with `include_forks=true`, each of their rows carrying
//! its lineage in `fork` (the other rows without the field).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test: a failed step panics and fails it"
)]

mod support;

use agl_store::{AttemptStatus, AttemptUpdate, LightningStore, Span, StartRolloutRequest};
use serde_json::{Value, json};
use support::TestServer;

/// A finished rollout with `metadata`, whose one attempt made one LLM call with token ids and
/// recorded `reward`; its id.
async fn finished(server: &TestServer, metadata: Value, reward: f64) -> (String, String) {
    let request: StartRolloutRequest =
        serde_json::from_value(json!({"input": {"q": "2+2"}, "mode": "train", "metadata": metadata}))
            .expect("a request");
    let started = server.store.start_rollout(request).await.expect("started");
    let rollout = started.rollout.rollout_id.clone();
    let attempt = started.attempt.attempt_id.clone();
    let span = |id: &str, sequence: u64, name: &str, attributes: Value| -> Span {
        serde_json::from_value(json!({
            "rollout_id": rollout, "attempt_id": attempt, "sequence_id": sequence,
            "trace_id": "ab".repeat(16), "span_id": id, "name": name,
            "start_time": sequence as f64, "end_time": sequence as f64 + 0.5, "attributes": attributes,
        }))
        .expect("a span")
    };
    server
        .store
        .add_spans(vec![
            span(
                "llm",
                1,
                "openai.chat.completion",
                json!({
                    "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "2+2?",
                    "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "4",
                    "prompt_token_ids": [1, 2], "response_token_ids": [3],
                }),
            ),
            span(
                "reward",
                2,
                "agentlightning.annotation",
                json!({"agentlightning.reward.0.name": "primary", "agentlightning.reward.0.value": reward}),
            ),
        ])
        .await
        .expect("spans added");
    server
        .store
        .update_attempt(
            &rollout,
            attempt.as_str().into(),
            AttemptUpdate::status(AttemptStatus::Succeeded),
        )
        .await
        .expect("attempt ended");
    (rollout, attempt)
}

fn rows(text: &str) -> Vec<Value> {
    text.lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_rollouts_are_exported_only_when_asked_for_and_carry_their_lineage() {
    let server = TestServer::start().await;
    let (parent, parent_attempt) = finished(&server, json!({}), 0.0).await;
    let lineage = json!({"parent_rollout_id": parent, "parent_attempt_id": parent_attempt,
                         "at_llm_call": 1, "branch": 1, "branches": 2});
    let (fork, _) = finished(&server, json!({"agl.fork": lineage}), 1.0).await;

    // By default: the run's own rollouts only.
    let plain = server.get("/v1/agl/export/tokens").await;
    assert_eq!(plain.status, 200, "{}", plain.text);
    let lines = rows(&plain.text);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert_eq!(lines[0]["rollout_id"], parent.as_str());
    assert!(lines[0].get("fork").is_none(), "{}", lines[0]);
    assert_eq!(plain.headers["x-agl-export-lines"], "1");

    for query in ["include_forks=true", "include_forks", "include_forks=1&mode=train"] {
        let both = server.get(&format!("/v1/agl/export/tokens?{query}")).await;
        assert_eq!(both.status, 200, "{query}: {}", both.text);
        let lines = rows(&both.text);
        assert_eq!(lines.len(), 2, "{query}: {lines:#?}");
        let of = |id: &str| lines.iter().find(|l| l["rollout_id"] == id).expect("a row");
        assert!(of(&parent).get("fork").is_none(), "{query}: {}", of(&parent));
        let forked = of(&fork);
        assert_eq!(forked["fork"], lineage, "{query}: {forked}");
        assert_eq!(forked["reward"], 1.0, "{query}: {forked}");
        assert_eq!(forked["prompt_token_ids"], json!([1, 2]), "{query}: {forked}");
    }
    // Off spelled out, and the other filters still apply to forks.
    assert_eq!(
        rows(&server.get("/v1/agl/export/tokens?include_forks=false").await.text).len(),
        1
    );
    let rewarded = server
        .get("/v1/agl/export/tokens?include_forks=true&min_reward=0.5")
        .await;
    let ids: Vec<Value> = rows(&rewarded.text).iter().map(|l| l["rollout_id"].clone()).collect();
    assert_eq!(ids, [json!(fork)], "{}", rewarded.text);
    let detail = server.get("/v1/agl/export/tokens?include_forks=maybe").await.error(422);
    assert!(detail.contains("include_forks") && detail.contains("maybe"), "{detail}");
    server.handle.shutdown().await;
}
