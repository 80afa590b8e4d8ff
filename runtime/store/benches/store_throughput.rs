//! In-process throughput of the in-memory LightningStore, with 1 and 8 concurrent Tokio tasks
//! (a 2-thread runtime): enqueue, dequeue, add_span, the full enqueue → dequeue → span →
//! update_attempt cycle, and query_spans on a rollout holding 10,000 spans.
//!
//! Run: `cargo bench -p agl-store --bench store_throughput` (`-- --quick` for a smoke run).
//! Prints a Markdown table; the figures in README.md ("Performance") come from it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark: a failed step panics and ends it"
)]

use agl_store::*;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// mimalloc: the store allocates per record and glibc's malloc topped the profile (about half the
/// single-task throughput). The `agl-host` binary is to use it as its global allocator too.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A realistic reward span, as Agent-lightning 0.3.0 records `emit_reward(1.0)`.
fn reward_span(attempt: &Attempt) -> Span {
    let mut span = Span::new(
        &attempt.rollout_id,
        &attempt.attempt_id,
        0,
        "931cdf1a1293b86cc9d0c7f923b7815c",
        "0000000000000000",
        "agentlightning.annotation",
    );
    span.status.status_code = StatusCode::Ok;
    span.attributes
        .insert("agentlightning.reward.0.name".into(), json!("primary"));
    span.attributes
        .insert("agentlightning.reward.0.value".into(), json!(1.0));
    span.start_time = Some(1_795_294_840.597_283);
    span.end_time = Some(1_795_294_840.597_283_4);
    span.context = Some(SpanContext {
        trace_id: span.trace_id.clone(),
        span_id: span.span_id.clone(),
        is_remote: false,
        trace_state: Default::default(),
        extra: Default::default(),
    });
    span
}

/// The template with a fresh span id and sequence id (16 hex digits of `n`).
fn nth_span(template: &Span, n: u64, sequence_id: u64) -> Span {
    let mut span = template.clone();
    span.sequence_id = sequence_id;
    // SAFETY-free: overwrite the 16 ASCII hex digits in place.
    let mut bytes = [0u8; 16];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = HEX[((n >> (60 - 4 * i)) & 0xf) as usize];
    }
    span.span_id.clear();
    span.span_id
        .push_str(std::str::from_utf8(&bytes).unwrap_or("0000000000000000"));
    span
}

fn store() -> InMemoryLightningStore {
    InMemoryLightningStore::new()
}

async fn dequeued(store: &InMemoryLightningStore, worker: &str) -> AttemptedRollout {
    store
        .enqueue_rollout(EnqueueRolloutRequest::new(json!(0)))
        .await
        .unwrap();
    store.dequeue_rollout(Some(worker)).await.unwrap().unwrap()
}

/// Runs `per_task` iterations of `body` on each of `tasks` tasks; returns ops/s over all.
async fn measure<F, Fut>(tasks: usize, per_task: usize, body: F) -> (f64, Duration)
where
    F: Fn(usize, usize) -> Fut + Send + Sync + 'static + Clone,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let started = Instant::now();
    let handles: Vec<_> = (0..tasks)
        .map(|task| {
            let body = body.clone();
            tokio::spawn(async move {
                for i in 0..per_task {
                    body(task, i).await;
                }
            })
        })
        .collect();
    for handle in handles {
        handle.await.unwrap();
    }
    let elapsed = started.elapsed();
    ((tasks * per_task) as f64 / elapsed.as_secs_f64(), elapsed)
}

struct Row {
    name: &'static str,
    tasks: usize,
    ops_per_sec: f64,
    ops: usize,
}

async fn bench_enqueue(tasks: usize, total: usize) -> f64 {
    let store = store();
    let (rate, _) = measure(tasks, total / tasks, move |_, i| {
        let store = store.clone();
        async move {
            store
                .enqueue_rollout(EnqueueRolloutRequest::new(json!(i)))
                .await
                .unwrap();
        }
    })
    .await;
    rate
}

async fn bench_dequeue(tasks: usize, total: usize) -> f64 {
    let store = store();
    for chunk in 0..total.div_ceil(10_000) {
        let n = 10_000.min(total - chunk * 10_000);
        let batch = (0..n).map(|i| EnqueueRolloutRequest::new(json!(i))).collect();
        store.enqueue_rollouts(batch).await.unwrap();
    }
    let workers: Arc<Vec<String>> = Arc::new((0..tasks).map(|t| format!("worker-{t}")).collect());
    let (rate, _) = measure(tasks, total / tasks, move |task, _| {
        let (store, workers) = (store.clone(), workers.clone());
        async move {
            store.dequeue_rollout(Some(&workers[task])).await.unwrap().unwrap();
        }
    })
    .await;
    rate
}

/// add_span with the span built inside the timed loop (as a tracer would hand it over).
async fn bench_add_span(tasks: usize, total: usize, batch: usize) -> f64 {
    let store = store();
    let mut templates = Vec::new();
    for t in 0..tasks {
        let ar = dequeued(&store, &format!("worker-{t}")).await;
        templates.push(reward_span(&ar.attempt));
    }
    let templates = Arc::new(templates);
    let (rate, _) = measure(tasks, total / tasks / batch, move |task, i| {
        let (store, templates) = (store.clone(), templates.clone());
        async move {
            let first = (i * batch) as u64;
            if batch == 1 {
                let span = nth_span(&templates[task], first, first + 1);
                store.add_span(span).await.unwrap().unwrap();
            } else {
                let spans = (first..first + batch as u64)
                    .map(|n| nth_span(&templates[task], n, n + 1))
                    .collect();
                assert_eq!(store.add_spans(spans).await.unwrap().len(), batch);
            }
        }
    })
    .await;
    rate * batch as f64
}

/// add_span alone: every span is built before the clock starts.
async fn bench_add_prebuilt_span(tasks: usize, total: usize) -> f64 {
    let store = store();
    let per_task = total / tasks;
    let mut prepared = Vec::new();
    for t in 0..tasks {
        let ar = dequeued(&store, &format!("worker-{t}")).await;
        let template = reward_span(&ar.attempt);
        let spans: Vec<Span> = (0..per_task as u64).map(|n| nth_span(&template, n, n + 1)).collect();
        prepared.push(spans);
    }
    let started = Instant::now();
    let handles: Vec<_> = prepared
        .into_iter()
        .map(|spans| {
            let store = store.clone();
            tokio::spawn(async move {
                for span in spans {
                    store.add_span(span).await.unwrap().unwrap();
                }
            })
        })
        .collect();
    for handle in handles {
        handle.await.unwrap();
    }
    (tasks * per_task) as f64 / started.elapsed().as_secs_f64()
}

async fn bench_cycle(tasks: usize, total: usize) -> f64 {
    let store = store();
    let template = {
        let ar = dequeued(&store, "setup").await;
        Arc::new(reward_span(&ar.attempt))
    };
    let workers: Arc<Vec<String>> = Arc::new((0..tasks).map(|t| format!("worker-{t}")).collect());
    let (rate, _) = measure(tasks, total / tasks, move |task, i| {
        let (store, workers, template) = (store.clone(), workers.clone(), template.clone());
        async move {
            store
                .enqueue_rollout(EnqueueRolloutRequest::new(json!(i)))
                .await
                .unwrap();
            let ar = store.dequeue_rollout(Some(&workers[task])).await.unwrap().unwrap();
            let mut span = nth_span(&template, i as u64, 1);
            span.rollout_id.clone_from(&ar.rollout.rollout_id);
            span.attempt_id.clone_from(&ar.attempt.attempt_id);
            store.add_span(span).await.unwrap().unwrap();
            let done = store
                .update_attempt(
                    &ar.rollout.rollout_id,
                    AttemptRef::Id(&ar.attempt.attempt_id),
                    AttemptUpdate::status(AttemptStatus::Succeeded),
                )
                .await
                .unwrap();
            debug_assert_eq!(done.status, AttemptStatus::Succeeded);
        }
    })
    .await;
    rate
}

async fn bench_query_spans(tasks: usize, queries: usize) -> f64 {
    let store = store();
    let ar = dequeued(&store, "setup").await;
    let template = reward_span(&ar.attempt);
    for chunk in 0..10u64 {
        let spans = (chunk * 1_000..(chunk + 1) * 1_000)
            .map(|n| nth_span(&template, n, n + 1))
            .collect();
        store.add_spans(spans).await.unwrap();
    }
    let query = Arc::new(SpanQuery::for_rollout(&ar.rollout.rollout_id));
    let (rate, _) = measure(tasks, queries / tasks, move |_, _| {
        let (store, query) = (store.clone(), query.clone());
        async move {
            let page = store.query_spans(&query).await.unwrap();
            assert_eq!(page.items.len(), 10_000);
        }
    })
    .await;
    rate
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let n = |full: usize| if quick { full / 50 } else { full };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    let mut rows = Vec::new();
    for tasks in [1, 8] {
        let runs: [(&'static str, usize, f64); 7] = [
            (
                "enqueue_rollout",
                n(800_000),
                runtime.block_on(bench_enqueue(tasks, n(800_000))),
            ),
            (
                "dequeue_rollout",
                n(800_000),
                runtime.block_on(bench_dequeue(tasks, n(800_000))),
            ),
            (
                "add_span (spans built beforehand)",
                n(1_200_000),
                runtime.block_on(bench_add_prebuilt_span(tasks, n(1_200_000))),
            ),
            (
                "add_span (span built in the loop)",
                n(1_200_000),
                runtime.block_on(bench_add_span(tasks, n(1_200_000), 1)),
            ),
            (
                "add_spans, batches of 100 (built in the loop)",
                n(1_200_000),
                runtime.block_on(bench_add_span(tasks, n(1_200_000), 100)),
            ),
            (
                "full cycle: enqueue → dequeue → add_span → update_attempt",
                n(800_000),
                runtime.block_on(bench_cycle(tasks, n(800_000))),
            ),
            (
                "query_spans, rollout with 10,000 spans",
                n(4_000),
                runtime.block_on(bench_query_spans(tasks, n(4_000))),
            ),
        ];
        rows.extend(runs.into_iter().map(|(name, ops, ops_per_sec)| Row {
            name,
            tasks,
            ops_per_sec,
            ops,
        }));
    }
    println!("| operation | tasks | ops | ops/s | µs/op |");
    println!("|---|---:|---:|---:|---:|");
    for row in rows {
        println!(
            "| {} | {} | {} | {:.0} | {:.3} |",
            row.name,
            row.tasks,
            row.ops,
            row.ops_per_sec,
            1e6 / row.ops_per_sec
        );
    }
}
