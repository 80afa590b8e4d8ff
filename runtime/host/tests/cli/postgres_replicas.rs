//! Two `agl-host store --db postgres://...` processes on one database are one store: 16 HTTP
//! clients, half on each replica, dequeue 10,000 rollouts until the queue is empty and each
//! rollout is handed out exactly once; a `wait_for_rollouts` held by one replica answers when a
//! client finishes the rollout through the other (its commit's `NOTIFY`, heard by the first
//! replica's `LISTEN`). Nothing runs where this machine has no PostgreSQL, outside CI (the
//! testkit says why; under `CI=true` it fails instead).

use crate::support;

use agl_client::{ClientOptions, HttpStoreClient};
use agl_store::{AttemptRef, AttemptStatus, AttemptUpdate, EnqueueRolloutRequest, LightningStore, RolloutStatus};
use agl_store_db::postgres::RECHECK;
use serde_json::json;
use std::collections::HashSet;
use std::time::{Duration, Instant};
use support::{Backend, BackendDb as _, ServerProcess};

/// Rollouts enqueued for the dequeue race.
const ROLLOUTS: usize = 10_000;
/// Rollouts per enqueue request.
const ENQUEUE_BATCH: usize = 1_000;
/// Clients dequeuing at once, each over its own connection; even ones talk to replica A.
const CLIENTS: usize = 16;
/// Rollouts one dequeue request asks for.
const DEQUEUE_BATCH: usize = 5;

/// A client that does not retry: an error is an answer the test sees, not one it never learns of
/// (a dequeue retried after its answer was lost would hide a rollout).
fn client(url: &str) -> HttpStoreClient {
    let options = ClientOptions {
        retry_delays: Vec::new(),
        ..ClientOptions::default()
    };
    HttpStoreClient::new(url, options).expect("HTTP store client")
}

/// Two `agl-host store` processes on one fresh database.
fn replicas() -> (ServerProcess, ServerProcess) {
    let db = Backend::Postgres.fresh_db();
    // One after the other: the second finds the schema the first made.
    let a = ServerProcess::agl_host_store(&["--db", &db.url]);
    let b = ServerProcess::agl_host_store(&["--db", &db.url]);
    (a, b)
}

#[agl_testkit::needs(postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_store_processes_on_one_database_hand_out_each_of_10000_rollouts_exactly_once() {
    let (a, b) = replicas();
    let mut enqueued = HashSet::new();
    for batch in 0..ROLLOUTS / ENQUEUE_BATCH {
        let requests = (0..ENQUEUE_BATCH)
            .map(|i| EnqueueRolloutRequest::new(json!({ "i": batch * ENQUEUE_BATCH + i })))
            .collect();
        let by = if batch % 2 == 0 { &a } else { &b };
        for rollout in client(&by.url).enqueue_rollouts(requests).await.expect("enqueue") {
            enqueued.insert(rollout.rollout_id);
        }
    }
    assert_eq!(enqueued.len(), ROLLOUTS);

    let started = Instant::now();
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|n| {
            let store = client(if n % 2 == 0 { &a.url } else { &b.url });
            tokio::spawn(async move {
                let worker = format!("worker-{n}");
                let mut taken = Vec::new();
                loop {
                    let got = store
                        .dequeue_rollouts(DEQUEUE_BATCH, Some(&worker))
                        .await
                        .unwrap_or_else(|e| panic!("client {n}: dequeue failed: {e}"));
                    if got.is_empty() {
                        break;
                    }
                    taken.extend(got.into_iter().map(|ar| ar.rollout.rollout_id));
                }
                taken
            })
        })
        .collect();
    let mut handed_out = Vec::with_capacity(ROLLOUTS);
    for task in tasks {
        handed_out.extend(task.await.expect("a client task"));
    }
    let elapsed = started.elapsed();

    let mut seen: HashSet<String> = HashSet::new();
    let twice: Vec<&String> = handed_out.iter().filter(|id| !seen.insert((*id).clone())).collect();
    assert!(
        twice.is_empty(),
        "{} rollouts handed out twice, e.g. {:?}",
        twice.len(),
        &twice[..twice.len().min(5)]
    );
    let missing: Vec<&String> = enqueued.difference(&seen).collect();
    assert!(
        missing.is_empty(),
        "{} rollouts never handed out, e.g. {:?}",
        missing.len(),
        &missing[..missing.len().min(5)]
    );
    let strangers: Vec<&String> = seen.difference(&enqueued).collect();
    assert!(strangers.is_empty(), "handed out but never enqueued: {strangers:?}");
    let stats = client(&a.url).statistics().await.expect("statistics");
    assert_eq!(
        (stats.total_rollouts, stats.total_attempts),
        (ROLLOUTS as u64, ROLLOUTS as u64)
    );
    println!(
        "{CLIENTS} clients over 2 agl-host store processes dequeued {} rollouts ({DEQUEUE_BATCH} a request) in \
         {elapsed:.2?} ({:.0}/s): each once, none missing",
        handed_out.len(),
        handed_out.len() as f64 / elapsed.as_secs_f64()
    );
}

#[agl_testkit::needs(postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_held_by_one_store_process_answers_when_a_client_finishes_the_rollout_through_the_other() {
    let (a, b) = replicas();
    let (on_a, on_b) = (client(&a.url), client(&b.url));
    let rollout = on_a
        .enqueue_rollout(EnqueueRolloutRequest::new(json!("task")))
        .await
        .expect("enqueue on A");
    let ids = vec![rollout.rollout_id.clone()];
    // Shorter than A's re-check: A answers the finished rollout within it only if B's commit
    // woke it (no wake: A looks again at the timeout's end, too late, and answers nothing).
    let wait = RECHECK - Duration::from_millis(100);
    let waiter = tokio::spawn(async move { on_a.wait_for_rollouts(&ids, Some(wait)).await });
    // Let A look once and go to sleep.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiter.is_finished(), "A waits: the rollout is queued");

    let taken = on_b
        .dequeue_rollout(Some("w"))
        .await
        .expect("dequeue on B")
        .expect("queued through A, taken through B");
    assert_eq!(taken.rollout.rollout_id, rollout.rollout_id);
    on_b.update_attempt(
        &rollout.rollout_id,
        AttemptRef::Id(&taken.attempt.attempt_id),
        AttemptUpdate::status(AttemptStatus::Succeeded),
    )
    .await
    .expect("succeed on B");
    let finished_at = Instant::now();

    let done = tokio::time::timeout(Duration::from_secs(30), waiter)
        .await
        .expect("A answers")
        .expect("the waiting task")
        .expect("wait on A");
    let woken_after = finished_at.elapsed();
    let statuses: Vec<(&str, RolloutStatus)> = done.iter().map(|r| (r.rollout_id.as_str(), r.status)).collect();
    assert_eq!(
        statuses,
        [(rollout.rollout_id.as_str(), RolloutStatus::Succeeded)],
        "A answered within its {wait:?} wait: woken by B's notification, not its {RECHECK:?} re-check"
    );
    println!("A answered {woken_after:.2?} after B finished the rollout");
}
