//! What only a SQLite database file shows, beyond the conformance suite (which runs on SQLite
//! from `main.rs`'s backend list).

use crate::backends::fresh_sqlite_path as fresh_path;
use agl_store::*;
use agl_store_db::SqliteLightningStore;
use std::time::Duration;

#[tokio::test]
async fn a_checkpoint_empties_the_write_ahead_log_and_a_reopened_store_has_everything() {
    let path = fresh_path();
    let store = SqliteLightningStore::open(&path, StoreOptions::default()).unwrap();
    let rollout = store
        .enqueue_rollout(EnqueueRolloutRequest::new(serde_json::json!({"q": 1})))
        .await
        .unwrap();
    let wal = path.with_extension("db-wal");
    assert!(std::fs::metadata(&wal).unwrap().len() > 0, "the write went to the log");
    store.checkpoint().await.unwrap();
    assert_eq!(std::fs::metadata(&wal).unwrap().len(), 0);
    drop(store);
    let reopened = SqliteLightningStore::open(&path, StoreOptions::default()).unwrap();
    let view = reopened.get_rollout_by_id(&rollout.rollout_id).await.unwrap();
    assert_eq!(view.map(|v| v.rollout), Some(rollout));
}

/// The store remembers what it wrote between calls; a write by another connection to the
/// same file (another process) must not be overwritten by what it remembers.
#[tokio::test]
async fn writes_by_another_connection_are_seen_by_the_next_call() {
    let path = fresh_path();
    let store = SqliteLightningStore::open(&path, StoreOptions::default()).unwrap();
    let rollout = store
        .enqueue_rollout(EnqueueRolloutRequest::new(serde_json::json!({"q": 1})))
        .await
        .unwrap();
    store.update_worker("w-1", WorkerUpdate::default()).await.unwrap();
    let other = rusqlite::Connection::open(&path).unwrap();
    other
        .execute(
            "UPDATE rollouts SET record = json_set(record, '$.input', json('{\"q\": 2}')) WHERE rollout_id = ?1",
            [&rollout.rollout_id],
        )
        .unwrap();
    other
        .execute("DELETE FROM workers WHERE worker_id = 'w-1'", [])
        .unwrap();
    drop(other);

    let updated = store
        .update_rollout(&rollout.rollout_id, RolloutUpdate::status(RolloutStatus::Running))
        .await
        .unwrap();
    assert_eq!(
        updated.input,
        serde_json::json!({"q": 2}),
        "the other connection's input is kept"
    );
    let dequeued = store.dequeue_rollouts(1, Some("w-2")).await.unwrap();
    assert!(dequeued.is_empty(), "a running rollout is not in the queue");
    assert!(
        store.get_worker_by_id("w-1").await.unwrap().is_none(),
        "the deleted worker stays deleted"
    );
}

/// A dequeue takes rollouts off the queue in order, several in one call, and what it took
/// stays taken in the file (a reopened store does not hand them out again).
#[tokio::test]
async fn dequeued_rollouts_leave_the_queue_in_the_file_in_order() {
    let path = fresh_path();
    let store = SqliteLightningStore::open(&path, StoreOptions::default()).unwrap();
    let mut queued = Vec::new();
    for q in 0..4 {
        let request = EnqueueRolloutRequest::new(serde_json::json!({ "q": q }));
        queued.push(store.enqueue_rollout(request).await.unwrap().rollout_id);
    }
    // The second leaves the queue by another road: it is no longer queuing.
    store
        .update_rollout(&queued[1], RolloutUpdate::status(RolloutStatus::Running))
        .await
        .unwrap();
    let first = store.dequeue_rollouts(2, Some("w-1")).await.unwrap();
    let ids: Vec<&str> = first.iter().map(|r| r.rollout.rollout_id.as_str()).collect();
    assert_eq!(ids, [queued[0].as_str(), queued[2].as_str()]);
    drop(store);
    let reopened = SqliteLightningStore::open(&path, StoreOptions::default()).unwrap();
    let rest = reopened.dequeue_rollouts(5, Some("w-1")).await.unwrap();
    let ids: Vec<&str> = rest.iter().map(|r| r.rollout.rollout_id.as_str()).collect();
    assert_eq!(ids, [queued[3].as_str()]);
    assert!(reopened.dequeue_rollouts(5, Some("w-1")).await.unwrap().is_empty());
    let left: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("SELECT count(*) FROM rollouts WHERE queue_seq IS NOT NULL", [], |row| {
            row.get(0)
        })
        .unwrap();
    assert_eq!(left, 0, "every row has left the queue");
}

#[test]
fn opened_to_read_only_an_empty_file_is_refused_and_stays_empty() {
    let path = fresh_path();
    std::fs::write(&path, b"").unwrap();
    let Err(error) = SqliteLightningStore::open_read_only(&path, StoreOptions::default()) else {
        panic!("an empty file opened as a store")
    };
    assert!(matches!(error, agl_store_db::DbError::NoStore { .. }), "{error}");
    assert!(!error.to_string().contains('\n'), "one line: {error}");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0, "no schema was written");
    let missing = path.with_extension("missing.db");
    assert!(SqliteLightningStore::open_read_only(&missing, StoreOptions::default()).is_err());
    assert!(!missing.exists(), "no file was created");
}

/// Opened to read only beside the process that writes it: every committed write is seen,
/// and nothing can be written through it.
#[tokio::test]
async fn opened_to_read_only_a_store_is_read_as_its_writer_goes_and_refuses_writes() {
    let path = fresh_path();
    let writer = SqliteLightningStore::open(&path, StoreOptions::default()).unwrap();
    let first = writer
        .enqueue_rollout(EnqueueRolloutRequest::new(serde_json::json!({"q": 1})))
        .await
        .unwrap();
    let reader = SqliteLightningStore::open_read_only(&path, StoreOptions::default()).unwrap();
    let page = reader.query_rollouts(&RolloutQuery::default()).await.unwrap();
    let ids: Vec<&str> = page.items.iter().map(|v| v.rollout.rollout_id.as_str()).collect();
    assert_eq!(ids, [first.rollout_id.as_str()]);
    let second = writer
        .enqueue_rollout(EnqueueRolloutRequest::new(serde_json::json!({"q": 2})))
        .await
        .unwrap();
    assert_eq!(
        reader.query_rollouts(&RolloutQuery::default()).await.unwrap().total,
        2,
        "the writer's next commit is seen"
    );
    assert!(reader.get_rollout_by_id(&second.rollout_id).await.unwrap().is_some());
    let refused = reader
        .enqueue_rollout(EnqueueRolloutRequest::new(serde_json::json!({"q": 3})))
        .await;
    assert!(refused.is_err(), "a write through a read-only store");
    assert_eq!(writer.query_rollouts(&RolloutQuery::default()).await.unwrap().total, 2);
    // Closed, its log folded and gone: read as the file alone.
    writer.checkpoint().await.unwrap();
    drop((writer, reader));
    std::thread::sleep(Duration::from_millis(200));
    let later = SqliteLightningStore::open_read_only(&path, StoreOptions::default()).unwrap();
    assert_eq!(later.query_rollouts(&RolloutQuery::default()).await.unwrap().total, 2);
}

#[test]
fn a_file_that_is_not_a_database_is_one_clear_error() {
    let path = fresh_path();
    std::fs::write(&path, b"this is not an SQLite database, just text that is long enough").unwrap();
    let err = SqliteLightningStore::open(&path, StoreOptions::default())
        .err()
        .expect("refused")
        .to_string();
    assert!(
        err.contains(&path.display().to_string()) && err.contains("not a database"),
        "{err}"
    );
    assert!(!err.contains('\n'), "one line: {err}");
}

/// A started attempt of the store, and a recording of it with two blobs.
async fn recorded_attempt(store: &SqliteLightningStore) -> (Attempt, Recording) {
    store
        .enqueue_rollout(EnqueueRolloutRequest::new(serde_json::json!({"q": 1})))
        .await
        .unwrap();
    let attempt = store.dequeue_rollout(Some("w")).await.unwrap().expect("queued").attempt;
    let texts = ["a response", "a tool's answer"];
    let recording = Recording {
        rollout_id: attempt.rollout_id.clone(),
        attempt_id: attempt.attempt_id.clone(),
        tape: r#"{"entries": ["a", "b"]}"#.into(),
        blobs: texts.iter().map(|t| (blob_address(t), (*t).to_owned())).collect(),
    };
    (attempt, recording)
}

#[tokio::test]
async fn a_recording_survives_reopening_and_is_read_by_a_read_only_store() {
    let path = fresh_path();
    let store = SqliteLightningStore::open(&path, StoreOptions::default()).unwrap();
    let (attempt, recording) = recorded_attempt(&store).await;
    store.add_recording(recording.clone()).await.unwrap();
    drop(store);
    std::thread::sleep(Duration::from_millis(100));
    let reopened = SqliteLightningStore::open(&path, StoreOptions::default()).unwrap();
    let read = reopened
        .get_recording(&attempt.rollout_id, &attempt.attempt_id)
        .await
        .unwrap();
    assert_eq!(read.as_ref(), Some(&recording));
    let again = reopened.add_recording(recording.clone()).await.unwrap();
    assert_eq!(again.new_blobs, 0, "the reopened file still holds the blobs: {again:?}");
    let reader = SqliteLightningStore::open_read_only(&path, StoreOptions::default()).unwrap();
    let read = reader
        .get_recording(&attempt.rollout_id, &attempt.attempt_id)
        .await
        .unwrap();
    assert_eq!(read, Some(recording));
}

/// A file written before recordings existed (schema version 1): opened to read only it has none
/// (and is not changed); opened to write it gains the tables and keeps recordings.
#[tokio::test]
async fn a_store_file_from_before_recordings_opens_to_read_and_to_write() {
    let path = fresh_path();
    let store = SqliteLightningStore::open(&path, StoreOptions::default()).unwrap();
    let (attempt, recording) = recorded_attempt(&store).await;
    store.checkpoint().await.unwrap();
    drop(store);
    std::thread::sleep(Duration::from_millis(100));
    // Back to what version 1 left: no recording tables, its version.
    let old = rusqlite::Connection::open(&path).unwrap();
    old.execute_batch("DROP TABLE recordings; DROP TABLE recording_blobs; PRAGMA user_version = 1;")
        .unwrap();
    drop(old);

    let reader = SqliteLightningStore::open_read_only(&path, StoreOptions::default()).unwrap();
    assert!(reader.get_rollout_by_id(&attempt.rollout_id).await.unwrap().is_some());
    let none = reader
        .get_recording(&attempt.rollout_id, &attempt.attempt_id)
        .await
        .unwrap();
    assert_eq!(none, None);
    drop(reader);
    let version: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, 1, "reading changed nothing");

    let writer = SqliteLightningStore::open(&path, StoreOptions::default()).unwrap();
    assert_eq!(
        writer
            .get_recording(&attempt.rollout_id, &attempt.attempt_id)
            .await
            .unwrap(),
        None
    );
    writer.add_recording(recording.clone()).await.unwrap();
    let read = writer
        .get_recording(&attempt.rollout_id, &attempt.attempt_id)
        .await
        .unwrap();
    assert_eq!(read, Some(recording));
    let version: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, agl_store_db::sqlite::SCHEMA_VERSION);
}
