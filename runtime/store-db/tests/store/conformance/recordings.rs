//! Recordings (replay and fork) on every backend: kept and read back whole, replaced, refused for
//! an unknown attempt or a blob whose key is not its hash (nothing of it kept), and blobs kept once
//! across recordings.

use crate::backends::manual_store;
use crate::common::*;
use agl_store::*;
use agl_testkit::{Backend, each_backend};
use std::collections::BTreeMap;

/// A recording of `attempt` with these blob texts, each under its address.
pub(crate) fn recording_of(attempt: &Attempt, tape: &str, texts: &[&str]) -> Recording {
    Recording {
        rollout_id: attempt.rollout_id.clone(),
        attempt_id: attempt.attempt_id.clone(),
        tape: tape.to_owned(),
        blobs: texts
            .iter()
            .map(|text| (blob_address(text), (*text).to_owned()))
            .collect(),
    }
}

async fn running_attempt(store: &Store) -> Attempt {
    enqueue(store, RolloutConfig::default()).await;
    dequeue(store, "w").await.attempt
}

async fn read_back(store: &Store, attempt: &Attempt) -> Option<Recording> {
    store
        .get_recording(&attempt.rollout_id, &attempt.attempt_id)
        .await
        .unwrap()
}

#[each_backend]
async fn a_recording_is_read_back_whole(backend: Backend) {
    let (store, _) = manual_store(backend);
    let attempt = running_attempt(&store).await;
    assert_eq!(read_back(&store, &attempt).await, None, "nothing kept yet");
    let texts = ["{\"choices\": [\"héllo\"]}", "", "a tool's answer\nwith lines"];
    let recording = recording_of(&attempt, r#"{"events": [1, 2, 3]}"#, &texts);
    let stored = store.add_recording(recording.clone()).await.unwrap();
    let bytes: u64 = texts.iter().map(|t| t.len() as u64).sum();
    assert_eq!(
        stored,
        RecordingStored {
            tape_bytes: recording.tape.len() as u64,
            blobs: 3,
            new_blobs: 3,
            new_blob_bytes: bytes,
        }
    );
    assert_eq!(read_back(&store, &attempt).await, Some(recording));
    assert!(
        store
            .get_recording(&attempt.rollout_id, "at-unknown")
            .await
            .unwrap()
            .is_none()
    );
    store.check_invariants().await.unwrap();
}

#[each_backend]
async fn a_second_recording_of_an_attempt_replaces_the_first(backend: Backend) {
    let (store, _) = manual_store(backend);
    let attempt = running_attempt(&store).await;
    store
        .add_recording(recording_of(&attempt, "[1]", &["first", "shared"]))
        .await
        .unwrap();
    let second = recording_of(&attempt, "[2]", &["shared", "second"]);
    let stored = store.add_recording(second.clone()).await.unwrap();
    assert_eq!((stored.blobs, stored.new_blobs), (2, 1), "{stored:?}");
    assert_eq!(read_back(&store, &attempt).await, Some(second));
    store.check_invariants().await.unwrap();
}

#[each_backend]
async fn a_recording_of_an_unknown_rollout_or_attempt_is_refused(backend: Backend) {
    let (store, _) = manual_store(backend);
    let attempt = running_attempt(&store).await;
    let mut unknown_attempt = recording_of(&attempt, "[]", &["x"]);
    unknown_attempt.attempt_id = "at-nobody".into();
    let error = store.add_recording(unknown_attempt).await.unwrap_err();
    assert!(matches!(error, StoreError::AttemptNotFound { .. }), "{error}");
    let mut unknown_rollout = recording_of(&attempt, "[]", &["x"]);
    unknown_rollout.rollout_id = "ro-nobody".into();
    let error = store.add_recording(unknown_rollout).await.unwrap_err();
    assert!(error.is_not_found(), "{error}");
    // Nothing of them was kept: the blob is new to the next recording.
    let stored = store.add_recording(recording_of(&attempt, "[]", &["x"])).await.unwrap();
    assert_eq!(stored.new_blobs, 1, "{stored:?}");
}

#[each_backend]
async fn a_blob_whose_key_is_not_its_hash_is_refused_and_nothing_is_kept(backend: Backend) {
    let (store, _) = manual_store(backend);
    let attempt = running_attempt(&store).await;
    let mut forged = recording_of(&attempt, "[]", &["honest"]);
    forged
        .blobs
        .insert(blob_address("what the key claims"), "what the text is".into());
    let error = store.add_recording(forged).await.unwrap_err();
    assert!(matches!(error, StoreError::InvalidArgument(_)), "{error}");
    assert!(error.to_string().contains("SHA-256"), "{error}");
    assert_eq!(read_back(&store, &attempt).await, None);
    // Not even the honest blob beside it was kept.
    let stored = store
        .add_recording(recording_of(&attempt, "[]", &["honest"]))
        .await
        .unwrap();
    assert_eq!(stored.new_blobs, 1, "{stored:?}");
    // An uppercase (or otherwise non-canonical) address is refused too.
    let mut upper = recording_of(&attempt, "[]", &[]);
    upper.blobs.insert(blob_address("text").to_uppercase(), "text".into());
    assert!(store.add_recording(upper).await.is_err());
}

#[each_backend]
async fn a_blob_shared_by_two_recordings_is_kept_once(backend: Backend) {
    let (store, _) = manual_store(backend);
    let first = running_attempt(&store).await;
    let second = running_attempt(&store).await;
    let shared = "the same system prompt, every attempt";
    let one = recording_of(&first, "[\"one\"]", &[shared, "only in one"]);
    let two = recording_of(&second, "[\"two\"]", &[shared]);
    let stored_one = store.add_recording(one.clone()).await.unwrap();
    assert_eq!(stored_one.new_blobs, 2);
    let stored_two = store.add_recording(two.clone()).await.unwrap();
    assert_eq!(
        stored_two,
        RecordingStored {
            tape_bytes: two.tape.len() as u64,
            blobs: 1,
            new_blobs: 0,
            new_blob_bytes: 0,
        }
    );
    assert_eq!(read_back(&store, &first).await, Some(one));
    assert_eq!(read_back(&store, &second).await, Some(two));
}

#[each_backend]
async fn a_recording_over_the_limits_is_refused(backend: Backend) {
    let (store, _) = manual_store(backend);
    let attempt = running_attempt(&store).await;
    let mut big = recording_of(&attempt, "", &[]);
    big.tape = " ".repeat(MAX_TAPE_BYTES + 1);
    let error = store.add_recording(big).await.unwrap_err();
    assert!(matches!(error, StoreError::InvalidArgument(_)), "{error}");
    let mut many = recording_of(&attempt, "[]", &[]);
    many.blobs = (0..=MAX_RECORDING_BLOBS)
        .map(|i| (format!("k{i}"), String::new()))
        .collect::<BTreeMap<_, _>>();
    assert!(store.add_recording(many).await.is_err());
    assert_eq!(read_back(&store, &attempt).await, None);
}
