//! Reads of a large SQLite store: `query_rollouts` filtered by one status, and the reads
//! `agl-host show` makes (the run's rollout listing, page by page; finding a rollout by part of
//! its id), on a store of 100,000 rollouts (`--quick`: 2,000), median of 5 runs each.
//!
//! The store is built once through the store API and kept under `target/query_scale/`; later runs
//! reuse it. Run: `cargo bench -p agl-store-db --bench query_scale` (`-- --quick` for a smoke
//! run). Method and figures: `benches/README.md`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark: a failed step panics and ends it"
)]

use agl_store::*;
use agl_store_db::SqliteLightningStore;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How many runs each figure is the median of.
const RUNS: usize = 5;
/// The page size `agl-host show` reads rollouts in (`runtime/host/src/show_cmd.rs`).
const SHOW_PAGE: i64 = 10_000;

type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> BenchResult<()> {
    let quick = std::env::args().any(|arg| arg == "--quick");
    let rollouts: usize = if quick { 2_000 } else { 100_000 };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(bench(rollouts))
}

fn options() -> StoreOptions {
    StoreOptions {
        watchdog_interval: None,
        ..StoreOptions::default()
    }
}

/// `target/query_scale/rollouts-N.db`, built first if missing.
async fn store_file(rollouts: usize) -> BenchResult<PathBuf> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/query_scale");
    let path = folder.join(format!("rollouts-{rollouts}.db"));
    if path.exists() {
        return Ok(path);
    }
    std::fs::create_dir_all(&folder)?;
    let building = folder.join(format!("rollouts-{rollouts}.building.db"));
    for stale in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{stale}", building.display()));
    }
    let started = Instant::now();
    {
        let store = SqliteLightningStore::open(&building, options())?;
        populate(&store, rollouts).await?;
        store.checkpoint().await?;
    }
    std::fs::rename(&building, &path)?;
    for stale in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{stale}", building.display()));
    }
    eprintln!("built {} in {:.1?}", path.display(), started.elapsed());
    Ok(path)
}

/// `rollouts` rollouts: 10 % succeeded, 1 % running (a live attempt each), the rest queuing.
async fn populate(store: &SqliteLightningStore, rollouts: usize) -> BenchResult<()> {
    for start in (0..rollouts).step_by(1_000) {
        let batch = (start..rollouts.min(start + 1_000))
            .map(|i| EnqueueRolloutRequest::new(json!({"task": i, "question": "What is 6 times 7?"})))
            .collect();
        store.enqueue_rollouts(batch).await?;
    }
    let (succeeded, running) = (rollouts / 10, rollouts / 100);
    let mut taken = 0;
    while taken < succeeded + running {
        let limit = 1_000.min(succeeded + running - taken);
        for attempted in store.dequeue_rollouts(limit, Some("worker-1")).await? {
            let status = if taken < succeeded {
                AttemptStatus::Succeeded
            } else {
                AttemptStatus::Running
            };
            store
                .update_attempt(
                    &attempted.rollout.rollout_id,
                    AttemptRef::Id(&attempted.attempt.attempt_id),
                    AttemptUpdate::status(status),
                )
                .await?;
            taken += 1;
        }
    }
    Ok(())
}

/// The median of `RUNS` timings of `op`, and what its last run returned.
async fn median<T, F: Future<Output = BenchResult<T>>>(mut op: impl FnMut() -> F) -> BenchResult<(Duration, T)> {
    let mut times = Vec::with_capacity(RUNS);
    let mut last = None;
    for _ in 0..RUNS {
        let started = Instant::now();
        last = Some(op().await?);
        times.push(started.elapsed());
    }
    times.sort();
    let value = last.ok_or("no run")?;
    Ok((times[RUNS / 2], value))
}

async fn bench(rollouts: usize) -> BenchResult<()> {
    let path = store_file(rollouts).await?;
    // As `agl-host show` opens a kept run.
    let store = SqliteLightningStore::open_read_only(&path, options())?;
    let running = RolloutQuery::default().status_in([RolloutStatus::Running]);
    let probe = store
        .query_rollouts(&running.clone().limit(1))
        .await?
        .items
        .first()
        .map(|view| view.rollout.rollout_id.clone())
        .ok_or("the store has no running rollout")?;
    // The last 8 characters of a rollout's id, as one types it to `agl-host show RUN ROLLOUT`.
    let fragment = probe[probe.len().saturating_sub(8)..].to_owned();

    let mut rows = Vec::new();
    let (time, found) = median(|| async { Ok(store.query_rollouts(&running).await?.total) }).await?;
    rows.push(("query_rollouts, status_in [running]", time, found));
    let (time, found) = median(|| async {
        // `show RUN`'s listing: every rollout, a page of SHOW_PAGE at a time.
        let mut offset = 0;
        loop {
            let page = store
                .query_rollouts(&RolloutQuery::default().limit(SHOW_PAGE).offset(offset))
                .await?;
            offset += page.items.len() as i64;
            if page.items.is_empty() || offset as u64 >= page.total {
                return Ok(offset as u64);
            }
        }
    })
    .await?;
    rows.push(("show RUN: every rollout, in pages of 10,000", time, found));
    let (time, found) = median(|| async {
        // `show RUN ROLLOUT` given part of an id: the lookup by id misses, then the search.
        let missed = store.get_rollout_by_id(&fragment).await?;
        let query = RolloutQuery {
            rollout_id_contains: Some(fragment.clone()),
            ..RolloutQuery::default()
        };
        Ok(missed.map_or(0, |_| 1) + store.query_rollouts(&query).await?.total)
    })
    .await?;
    rows.push(("show RUN ROLLOUT: find by part of its id", time, found));
    let (time, found) = median(|| async { Ok(store.query_rollouts(&running.clone().limit(1)).await?.total) }).await?;
    rows.push(("query_rollouts, status_in [running], limit 1", time, found));

    println!("{rollouts} rollouts in {}; median of {RUNS} runs", path.display());
    println!();
    println!("| read | rollouts found | median |");
    println!("|---|---:|---:|");
    for (name, time, found) in rows {
        println!("| {name} | {found} | {:.2} ms |", time.as_secs_f64() * 1e3);
    }
    Ok(())
}
