//! A tour of the LightningStore in one process: an "algorithm" publishes a prompt and enqueues
//! tasks, four runners dequeue them, report a reward span and finish their attempts (one task in
//! five fails its first attempt and is retried by the store), and the algorithm waits for all of
//! them, then reads the rewards back from the spans.
//!
//! Run: `cargo run --release -p agl-store --example store_tour`
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "an example: a failed step panics with its reason"
)]

use agl_store::*;
use serde_json::json;
use std::time::Duration;

/// The "agent": answers `a + b`, except that it stumbles on the first attempt of every 5th task.
fn agent(input: &serde_json::Value, attempt: u32) -> Result<f64, String> {
    let (a, b) = (input["a"].as_i64().unwrap_or(0), input["b"].as_i64().unwrap_or(0));
    if input["id"].as_i64().unwrap_or(0) % 5 == 0 && attempt == 1 {
        return Err("flaky tool call".into());
    }
    Ok(if a + b == input["expected"].as_i64().unwrap_or(i64::MIN) {
        1.0
    } else {
        0.0
    })
}

fn reward_span(attempt: &Attempt, sequence_id: u64, reward: f64) -> Span {
    let mut span = Span::new(
        &attempt.rollout_id,
        &attempt.attempt_id,
        sequence_id,
        format!("{:032x}", sequence_id),
        format!("{:016x}", sequence_id),
        "agentlightning.annotation",
    );
    span.status.status_code = StatusCode::Ok;
    span.attributes
        .insert("agentlightning.reward.0.name".into(), json!("primary"));
    span.attributes
        .insert("agentlightning.reward.0.value".into(), json!(reward));
    span
}

async fn runner(store: InMemoryLightningStore, worker_id: String) -> StoreResult<usize> {
    let mut handled = 0;
    while let Some(job) = store.dequeue_rollout(Some(&worker_id)).await? {
        let (rollout, attempt) = (&job.rollout, &job.attempt);
        let resources = store
            .get_resources_by_id(rollout.resources_id.as_deref().unwrap_or_default())
            .await?;
        assert!(
            resources.is_some(),
            "every rollout was enqueued with the latest resources"
        );
        let outcome = match agent(&rollout.input, attempt.sequence_id) {
            Ok(reward) => {
                let sequence_id = store
                    .get_next_span_sequence_id(&rollout.rollout_id, &attempt.attempt_id)
                    .await?;
                store.add_span(reward_span(attempt, sequence_id, reward)).await?;
                AttemptStatus::Succeeded
            }
            Err(_) => AttemptStatus::Failed,
        };
        let update = AttemptUpdate::status(outcome);
        store
            .update_attempt(&rollout.rollout_id, AttemptRef::Id(&attempt.attempt_id), update)
            .await?;
        store.update_worker(&worker_id, WorkerUpdate::default()).await?;
        handled += 1;
    }
    Ok(handled)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = InMemoryLightningStore::new();

    // The algorithm: publish resources, then enqueue the dataset (retry a failed attempt once).
    let mut resources = NamedResources::new();
    let template = PromptTemplate {
        template: "Compute {a} + {b}.".into(),
        engine: TemplateEngine::FString,
    };
    resources.insert("prompt".into(), Resource::PromptTemplate(template));
    let published = store.add_resources(resources).await?;
    let retry_once = RolloutConfig {
        max_attempts: 2,
        retry_condition: vec![AttemptStatus::Failed],
        timeout_seconds: Some(30.0),
        ..RolloutConfig::default()
    };
    let tasks = (0..20)
        .map(|id| {
            let input = json!({"id": id, "a": id, "b": 2 * id, "expected": if id == 7 { 0 } else { 3 * id }});
            EnqueueRolloutRequest::new(input)
                .mode(Mode::Train)
                .config(retry_once.clone())
        })
        .collect();
    let ids: Vec<String> = store
        .enqueue_rollouts(tasks)
        .await?
        .into_iter()
        .map(|r| r.rollout_id)
        .collect();
    println!(
        "published {} (v{}), enqueued {} rollouts",
        published.resources_id,
        published.version,
        ids.len()
    );

    // Four runners drain the queue concurrently.
    let runners: Vec<_> = (0..4)
        .map(|i| tokio::spawn(runner(store.clone(), format!("runner-{i}"))))
        .collect();
    let finished = store.wait_for_rollouts(&ids, Some(Duration::from_secs(30))).await?;
    let mut attempts_run = 0;
    for runner in runners {
        attempts_run += runner.await??;
    }

    // Back in the algorithm: read each rollout's rewards from its spans.
    let mut rewards = Vec::new();
    for id in &ids {
        let query = SpanQuery::for_rollout(id)
            .attempt("latest")
            .name("agentlightning.annotation");
        for span in store.query_spans(&query).await?.items {
            rewards.extend(
                span.attributes
                    .get("agentlightning.reward.0.value")
                    .and_then(|v| v.as_f64()),
            );
        }
    }
    let retried = store.query_rollouts(&RolloutQuery::default()).await?;
    let retried = retried
        .items
        .iter()
        .filter(|v| v.attempt.as_ref().is_some_and(|a| a.sequence_id > 1))
        .count();
    let succeeded = finished.iter().filter(|r| r.status == RolloutStatus::Succeeded).count();
    let stats = store.statistics().await?;
    let workers = store.query_workers(&WorkerQuery::default()).await?;

    println!(
        "finished {}/{} rollouts ({succeeded} succeeded) in {attempts_run} attempts; {retried} needed a retry",
        finished.len(),
        ids.len()
    );
    println!(
        "mean reward {:.3} over {} reward spans",
        rewards.iter().sum::<f64>() / rewards.len().max(1) as f64,
        rewards.len()
    );
    println!(
        "store: {} rollouts, {} attempts, {} spans, {} workers ({})",
        stats.total_rollouts,
        stats.total_attempts,
        stats.total_spans,
        stats.total_workers,
        workers
            .items
            .iter()
            .map(|w| format!("{} {}", w.worker_id, w.status))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if finished.len() != ids.len() || succeeded != ids.len() {
        return Err("not every rollout succeeded".into());
    }
    Ok(())
}
