//! What only a shared PostgreSQL database has, beyond the conformance suite (which runs on
//! PostgreSQL from `main.rs`'s backend list): replicas (several stores on one database) handing
//! out each rollout once, waking each other's waits, sharing the watchdog and the migration; and
//! how opening fails. Every test here needs PostgreSQL (`#[agl_testkit::needs(postgres)]`).

use crate::backends::manual_options;
use crate::common;
use agl_store::*;
use agl_store_db::postgres::{RECHECK, SCHEMA_VERSION};
use agl_store_db::{DbError, DbUrl, PostgresLightningStore};
use std::collections::HashSet;
use std::time::{Duration, Instant};

// ---- replicas: several stores on one database ----------------------------------------------------

/// Two replicas on one fresh database, on the system clock, with no background tick.
fn replicas() -> (PostgresLightningStore, PostgresLightningStore) {
    let url = agl_testkit::postgres::server().fresh_database();
    let open = || {
        PostgresLightningStore::open(
            &url,
            StoreOptions {
                watchdog_interval: None,
                ..StoreOptions::default()
            },
        )
        .expect("PostgreSQL store")
    };
    (open(), open())
}

#[agl_testkit::needs(postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_hand_out_each_of_10000_rollouts_exactly_once() {
    let (a, b) = replicas();
    let total = 10_000;
    let mut enqueued = HashSet::new();
    for batch in 0..10 {
        let requests = (0..total / 10)
            .map(|i| EnqueueRolloutRequest::new(serde_json::json!({ "i": batch * 1000 + i })))
            .collect();
        let by = if batch % 2 == 0 { &a } else { &b };
        for rollout in by.enqueue_rollouts(requests).await.unwrap() {
            enqueued.insert(rollout.rollout_id);
        }
    }
    assert_eq!(enqueued.len(), total);

    let started = Instant::now();
    let tasks: Vec<_> = (0..16)
        .map(|task| {
            let store = if task % 2 == 0 { a.clone() } else { b.clone() };
            tokio::spawn(async move {
                let worker = format!("worker-{task}");
                let mut taken = Vec::new();
                // Two at a time: dequeue_rollouts takes several heads in one transaction.
                loop {
                    let got = store.dequeue_rollouts(2, Some(&worker)).await.unwrap();
                    if got.is_empty() {
                        break;
                    }
                    taken.extend(got.into_iter().map(|ar| ar.rollout.rollout_id));
                }
                taken
            })
        })
        .collect();
    let mut handed_out = Vec::with_capacity(total);
    for task in tasks {
        handed_out.extend(task.await.unwrap());
    }
    let elapsed = started.elapsed();
    eprintln!(
        "16 tasks over 2 replicas dequeued {} rollouts in {elapsed:.2?} ({:.0}/s)",
        handed_out.len(),
        handed_out.len() as f64 / elapsed.as_secs_f64()
    );
    let distinct: HashSet<String> = handed_out.iter().cloned().collect();
    assert_eq!(handed_out.len(), total, "every rollout handed out, none twice");
    assert_eq!(distinct, enqueued);
    assert_eq!(a.queue_len().await.unwrap(), 0);
    let stats = b.statistics().await.unwrap();
    assert_eq!(
        (stats.total_rollouts, stats.total_attempts),
        (total as u64, total as u64)
    );
    let preparing = a
        .query_rollouts(&RolloutQuery::default().status_in([RolloutStatus::Preparing]))
        .await
        .unwrap();
    assert_eq!(preparing.total, total as u64);
}

#[agl_testkit::needs(postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_rollouts_on_one_replica_wakes_when_another_finishes_the_rollout() {
    let (a, b) = replicas();
    let rollout = a
        .enqueue_rollout(EnqueueRolloutRequest::new(serde_json::json!("task")))
        .await
        .unwrap();
    let ids = vec![rollout.rollout_id.clone()];
    let waiter = {
        let a = a.clone();
        tokio::spawn(async move { a.wait_for_rollouts(&ids, Some(Duration::from_secs(30))).await })
    };
    // Let the waiter look once and go to sleep.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiter.is_finished());
    let taken = b
        .dequeue_rollout(Some("w"))
        .await
        .unwrap()
        .expect("queued on A, taken on B");
    b.update_attempt(
        &rollout.rollout_id,
        AttemptRef::Id(&taken.attempt.attempt_id),
        AttemptUpdate::status(AttemptStatus::Succeeded),
    )
    .await
    .unwrap();
    let finished_at = Instant::now();
    let done = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("woken")
        .unwrap()
        .unwrap();
    let woken_after = finished_at.elapsed();
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].status, RolloutStatus::Succeeded);
    assert!(
        woken_after < RECHECK / 2,
        "woken by B's notification, not A's periodic re-check: {woken_after:?}"
    );
}

#[agl_testkit::needs(postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdog_run_by_every_replica_times_out_each_attempt_once() {
    let server = agl_testkit::postgres::server();
    let url = server.fresh_database();
    let clock = ManualClock::new(common::T0);
    let a = PostgresLightningStore::open(&url, manual_options(&clock)).unwrap();
    let b = PostgresLightningStore::open(&url, manual_options(&clock)).unwrap();
    let config = RolloutConfig {
        timeout_seconds: Some(5.0),
        max_attempts: 2,
        retry_condition: vec![AttemptStatus::Timeout],
        ..RolloutConfig::default()
    };
    let requests = (0..60)
        .map(|i| EnqueueRolloutRequest::new(serde_json::json!(i)).config(config.clone()))
        .collect();
    let rollouts = a.enqueue_rollouts(requests).await.unwrap();
    assert_eq!(a.dequeue_rollouts(100, Some("w")).await.unwrap().len(), 60);
    clock.advance(10.0);
    let (on_a, on_b) = tokio::join!(a.run_watchdog(), b.run_watchdog());
    assert_eq!(
        on_a.unwrap() + on_b.unwrap(),
        60,
        "each attempt timed out by one replica"
    );
    assert_eq!(a.run_watchdog().await.unwrap() + b.run_watchdog().await.unwrap(), 0);
    for rollout in &rollouts {
        let attempts = b
            .query_attempts(&rollout.rollout_id, &AttemptQuery::default())
            .await
            .unwrap();
        assert_eq!(attempts.items.len(), 1);
        assert_eq!(attempts.items[0].status, AttemptStatus::Timeout);
    }
    assert_eq!(a.queue_len().await.unwrap(), 60, "every rollout requeued once");
    a.check_invariants().await.unwrap();
}

#[agl_testkit::needs(postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_the_server_ends_are_opened_again() {
    let server = agl_testkit::postgres::server();
    let url = server.fresh_database();
    let open = || {
        PostgresLightningStore::open(
            &url,
            StoreOptions {
                watchdog_interval: None,
                ..StoreOptions::default()
            },
        )
        .unwrap()
    };
    let (a, b) = (open(), open());
    let rollout = a
        .enqueue_rollout(EnqueueRolloutRequest::new(serde_json::json!("task")))
        .await
        .unwrap();
    assert_eq!(b.queue_len().await.unwrap(), 1);
    let database = url.rsplit('/').next().unwrap();
    let ended = server.psql(
        server.url(),
        &format!(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE datname = '{database}' AND pid <> pg_backend_pid()"
        ),
    );
    assert!(
        ended.trim().parse::<u32>().unwrap() >= 4,
        "both pools and both listeners: {ended}"
    );
    // The next call on each replica finds its connection gone, and runs on a new one.
    let taken = b.dequeue_rollout(Some("w")).await.unwrap().expect("still queued");
    assert_eq!(a.queue_len().await.unwrap(), 0);
    // Once A's listener listens again, B's commit wakes A's wait at once.
    let listening = format!(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = '{database}' AND query = 'LISTEN agl_rollouts_finished'"
    );
    let started = Instant::now();
    while server.psql(server.url(), &listening).trim() != "2" {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the listeners never came back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let ids = vec![rollout.rollout_id.clone()];
    let waiter = {
        let a = a.clone();
        tokio::spawn(async move { a.wait_for_rollouts(&ids, Some(Duration::from_secs(30))).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    b.update_attempt(
        &rollout.rollout_id,
        AttemptRef::Id(&taken.attempt.attempt_id),
        AttemptUpdate::status(AttemptStatus::Succeeded),
    )
    .await
    .unwrap();
    let finished_at = Instant::now();
    let done = waiter.await.unwrap().unwrap();
    assert_eq!(done.len(), 1);
    let woken_after = finished_at.elapsed();
    assert!(woken_after < RECHECK / 2, "woken by the notification: {woken_after:?}");
}

#[agl_testkit::needs(postgres)]
#[test]
fn replicas_opening_a_new_database_together_migrate_it_once() {
    let server = agl_testkit::postgres::server();
    let url = server.fresh_database();
    let opening: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || PostgresLightningStore::open(&url, StoreOptions::default()).map(|_| ()))
        })
        .collect();
    for thread in opening {
        thread.join().unwrap().expect("every replica opens");
    }
    let versions = server.psql(&url, "SELECT version FROM agl_schema");
    assert_eq!(versions.trim(), SCHEMA_VERSION.to_string());
}

#[agl_testkit::needs(postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_1_database_is_migrated_with_its_records_kept() {
    let server = agl_testkit::postgres::server();
    let url = server.fresh_database();
    let store = PostgresLightningStore::open(&url, StoreOptions::default()).unwrap();
    let queued = store
        .enqueue_rollout(EnqueueRolloutRequest::new(serde_json::json!("kept")))
        .await
        .unwrap();
    drop(store);
    // Back to what version 1 left: its status index, its version.
    server.psql(
        &url,
        "CREATE INDEX rollouts_status ON rollouts (status); UPDATE agl_schema SET version = 1",
    );
    let store = PostgresLightningStore::open(&url, StoreOptions::default()).unwrap();
    assert_eq!(
        server.psql(&url, "SELECT version FROM agl_schema").trim(),
        SCHEMA_VERSION.to_string()
    );
    let indexes = server.psql(
        &url,
        "SELECT count(*) FROM pg_indexes WHERE indexname = 'rollouts_status'",
    );
    assert_eq!(indexes.trim(), "0", "version 2 drops it");
    let taken = store
        .dequeue_rollout(Some("w"))
        .await
        .unwrap()
        .expect("the queued rollout");
    assert_eq!(taken.rollout.rollout_id, queued.rollout_id);
}

/// A database from before recordings (version 2): read only, it has none; opened to write, it
/// gains the tables and keeps one.
#[agl_testkit::needs(postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_2_database_gains_recordings() {
    let server = agl_testkit::postgres::server();
    let url = server.fresh_database();
    let store = PostgresLightningStore::open(&url, StoreOptions::default()).unwrap();
    store
        .enqueue_rollout(EnqueueRolloutRequest::new(serde_json::json!("kept")))
        .await
        .unwrap();
    let attempt = store.dequeue_rollout(Some("w")).await.unwrap().expect("queued").attempt;
    drop(store);
    server.psql(
        &url,
        "DROP TABLE recordings; DROP TABLE recording_blobs; UPDATE agl_schema SET version = 2",
    );
    let reader = PostgresLightningStore::open_read_only(&url, StoreOptions::default()).unwrap();
    let none = reader
        .get_recording(&attempt.rollout_id, &attempt.attempt_id)
        .await
        .unwrap();
    assert_eq!(none, None);
    drop(reader);
    let store = PostgresLightningStore::open(&url, StoreOptions::default()).unwrap();
    assert_eq!(
        server.psql(&url, "SELECT version FROM agl_schema").trim(),
        SCHEMA_VERSION.to_string()
    );
    let recording = Recording {
        rollout_id: attempt.rollout_id.clone(),
        attempt_id: attempt.attempt_id.clone(),
        tape: "[]".into(),
        blobs: ["text".to_owned()]
            .into_iter()
            .map(|text| (blob_address(&text), text))
            .collect(),
    };
    store.add_recording(recording.clone()).await.unwrap();
    let read = store
        .get_recording(&attempt.rollout_id, &attempt.attempt_id)
        .await
        .unwrap();
    assert_eq!(read, Some(recording));
}

#[agl_testkit::needs(postgres)]
#[test]
fn a_database_with_a_newer_schema_is_refused() {
    let server = agl_testkit::postgres::server();
    let url = server.fresh_database();
    drop(PostgresLightningStore::open(&url, StoreOptions::default()).unwrap());
    server.psql(&url, &format!("UPDATE agl_schema SET version = {}", SCHEMA_VERSION + 1));
    let Err(error) = PostgresLightningStore::open(&url, StoreOptions::default()) else {
        panic!("a newer schema was accepted")
    };
    assert!(matches!(error, DbError::NewerSchema { .. }), "{error}");
    assert!(error.to_string().contains("newer than this agl-host"), "{error}");
}

#[agl_testkit::needs(postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opened_to_read_only_nothing_is_created_migrated_or_written() {
    let server = agl_testkit::postgres::server();
    let url = server.fresh_database();
    let Err(error) = PostgresLightningStore::open_read_only(&url, StoreOptions::default()) else {
        panic!("a database with no store opened to read")
    };
    assert!(matches!(error, DbError::NoStore { .. }), "{error}");
    let tables = server.psql(
        &url,
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'",
    );
    assert_eq!(tables.trim(), "0", "no schema was created");

    let writer = PostgresLightningStore::open(&url, StoreOptions::default()).unwrap();
    let queued = writer
        .enqueue_rollout(EnqueueRolloutRequest::new(serde_json::json!("kept")))
        .await
        .unwrap();
    // A version 1 database reads as it is, and stays version 1.
    server.psql(&url, "UPDATE agl_schema SET version = 1");
    let reader = PostgresLightningStore::open_read_only(&url, StoreOptions::default()).unwrap();
    let view = reader.get_rollout_by_id(&queued.rollout_id).await.unwrap();
    assert_eq!(view.map(|v| v.rollout.rollout_id), Some(queued.rollout_id));
    assert!(
        reader
            .enqueue_rollout(EnqueueRolloutRequest::new(serde_json::json!("refused")))
            .await
            .is_err(),
        "a write through a read-only store"
    );
    assert_eq!(server.psql(&url, "SELECT version FROM agl_schema").trim(), "1");
    assert_eq!(server.psql(&url, "SELECT count(*) FROM rollouts").trim(), "1");
}

#[test]
fn an_unreachable_server_is_one_error_naming_the_url_without_its_password() {
    // Port 1 on the loopback: nothing listens there.
    let url: DbUrl = "postgres://agl:hunter2@127.0.0.1:1/agl".parse().unwrap();
    let Err(error) = agl_store_db::open(&url, StoreOptions::default()) else {
        panic!("opened a store on a closed port")
    };
    let message = error.to_string();
    assert!(message.contains("postgres://agl:***@127.0.0.1:1/agl"), "{message}");
    assert!(message.contains("connect"), "{message}");
    assert!(!message.contains("hunter2") && !message.contains('\n'), "{message}");
}

#[agl_testkit::needs(postgres)]
#[test]
fn an_unknown_user_is_one_error_naming_the_url() {
    let server = agl_testkit::postgres::server();
    let url = server
        .fresh_database()
        .replacen("postgres://postgres@", "postgres://nobody_here:pw@", 1);
    let Err(error) = agl_store_db::open(&DbUrl::Postgres(url), StoreOptions::default()) else {
        panic!("opened a store as a user the server does not have")
    };
    let message = error.to_string();
    assert!(message.contains("nobody_here:***@"), "{message}");
    assert!(message.contains("role \"nobody_here\" does not exist"), "{message}");
    assert!(!message.contains(":pw@"), "{message}");
}

/// The figure in `src/postgres/mod.rs`'s doc: enqueue + dequeue + succeed round trips per
/// second, 8 tasks over one store. `cargo test -p agl-store-db --test store --release --
/// --ignored --nocapture throughput_figure` (needs PostgreSQL; always ignored otherwise).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a check"]
async fn throughput_figure() {
    let server = agl_testkit::postgres::server();
    let store = PostgresLightningStore::open(
        &server.fresh_database(),
        StoreOptions {
            watchdog_interval: None,
            ..StoreOptions::default()
        },
    )
    .unwrap();
    let per_task = 500;
    let started = Instant::now();
    let tasks: Vec<_> = (0..8)
        .map(|task| {
            let store = store.clone();
            tokio::spawn(async move {
                let worker = format!("w{task}");
                for i in 0..per_task {
                    store
                        .enqueue_rollout(EnqueueRolloutRequest::new(serde_json::json!(i)))
                        .await
                        .unwrap();
                    if let Some(ar) = store.dequeue_rollout(Some(&worker)).await.unwrap() {
                        store
                            .update_attempt(
                                &ar.rollout.rollout_id,
                                AttemptRef::Id(&ar.attempt.attempt_id),
                                AttemptUpdate::status(AttemptStatus::Succeeded),
                            )
                            .await
                            .unwrap();
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let elapsed = started.elapsed().as_secs_f64();
    eprintln!(
        "{} rollouts enqueued, dequeued and succeeded in {elapsed:.2}s: {:.0} rollouts/s, {:.0} calls/s",
        8 * per_task,
        f64::from(8 * per_task) / elapsed,
        f64::from(3 * 8 * per_task) / elapsed
    );
}
