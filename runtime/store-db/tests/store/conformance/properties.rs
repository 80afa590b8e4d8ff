//! Property tests: random sequences of store operations (runners, algorithms, the clock and the
//! watchdog interleaved) must keep the store's invariants after every single step:
//! - every non-terminal rollout is queued exactly once or has a live latest attempt;
//! - nothing is lost (every rollout, attempt and span created can be found again);
//! - span sequence ids strictly increase per rollout;
//! - attempts never exceed max_attempts except through an explicit start_attempt;
//! - terminal rollouts and finished attempts have an end_time;
//! - a worker's status always matches its current attempt.

use crate::backends::{manual_store, property_cases};
use crate::common::*;
use agl_store::*;
use agl_testkit::{Backend, each_backend};
use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, TestRunner};
use std::collections::HashMap;

#[derive(Debug, Clone)]
enum Op {
    Enqueue {
        max_attempts: u32,
        retry_on: Vec<AttemptStatus>,
        timeout: Option<u8>,
        unresponsive: Option<u8>,
    },
    StartRollout {
        worker: u8,
    },
    Dequeue {
        worker: u8,
        limit: u8,
    },
    StartAttempt {
        pick: usize,
        worker: u8,
    },
    Span {
        pick: usize,
        older_attempt: bool,
        explicit_sequence: Option<u8>,
    },
    NextSequence {
        pick: usize,
    },
    Finish {
        pick: usize,
        older_attempt: bool,
        status: AttemptStatus,
    },
    Cancel {
        pick: usize,
    },
    Heartbeat {
        worker: u8,
    },
    Advance {
        seconds: u8,
    },
    Watchdog,
}

fn attempt_status() -> impl Strategy<Value = AttemptStatus> {
    prop::sample::select(AttemptStatus::ALL.to_vec())
}

fn op() -> impl Strategy<Value = Op> {
    let failure = prop::sample::select(vec![
        AttemptStatus::Failed,
        AttemptStatus::Timeout,
        AttemptStatus::Unresponsive,
    ]);
    prop_oneof![
        3 => (1u32..4, prop::collection::vec(failure, 0..3), prop::option::of(1u8..30), prop::option::of(1u8..15))
            .prop_map(|(max_attempts, retry_on, timeout, unresponsive)| Op::Enqueue { max_attempts, retry_on, timeout, unresponsive }),
        1 => (0u8..3).prop_map(|worker| Op::StartRollout { worker }),
        3 => (0u8..3, 1u8..4).prop_map(|(worker, limit)| Op::Dequeue { worker, limit }),
        1 => (any::<usize>(), 0u8..3).prop_map(|(pick, worker)| Op::StartAttempt { pick, worker }),
        4 => (any::<usize>(), prop::bool::weighted(0.2), prop::option::weighted(0.2, 1u8..60))
            .prop_map(|(pick, older_attempt, explicit_sequence)| Op::Span { pick, older_attempt, explicit_sequence }),
        2 => any::<usize>().prop_map(|pick| Op::NextSequence { pick }),
        3 => (any::<usize>(), prop::bool::weighted(0.2), attempt_status())
            .prop_map(|(pick, older_attempt, status)| Op::Finish { pick, older_attempt, status }),
        1 => any::<usize>().prop_map(|pick| Op::Cancel { pick }),
        1 => (0u8..3).prop_map(|worker| Op::Heartbeat { worker }),
        2 => (0u8..12).prop_map(|seconds| Op::Advance { seconds }),
        1 => Just(Op::Watchdog),
    ]
}

/// What the test itself remembers, to check the store against.
#[derive(Default)]
struct Ledger {
    rollouts: Vec<String>,
    max_attempts: HashMap<String, u32>,
    explicit_attempts: HashMap<String, u32>,
    last_sequence: HashMap<String, u64>,
    spans: u64,
    span_counter: u64,
}

async fn pick_attempt(store: &Store, ledger: &Ledger, pick: usize, older: bool) -> Option<Attempt> {
    let id = ledger.rollouts.get(pick % ledger.rollouts.len().max(1))?;
    let attempts = store.query_attempts(id, &AttemptQuery::default()).await.unwrap().items;
    if older && attempts.len() > 1 {
        attempts.get(pick % (attempts.len() - 1)).cloned()
    } else {
        attempts.last().cloned()
    }
}

async fn apply(store: &Store, clock: &ManualClock, ledger: &mut Ledger, op: Op) {
    let worker = |w: u8| format!("w{w}");
    match op {
        Op::Enqueue {
            max_attempts,
            retry_on,
            timeout,
            unresponsive,
        } => {
            let cfg = RolloutConfig {
                timeout_seconds: timeout.map(f64::from),
                unresponsive_seconds: unresponsive.map(f64::from),
                max_attempts,
                retry_condition: retry_on,
            };
            let r = store
                .enqueue_rollout(EnqueueRolloutRequest::new(serde_json::json!(1)).config(cfg))
                .await
                .unwrap();
            ledger.max_attempts.insert(r.rollout_id.clone(), max_attempts);
            ledger.rollouts.push(r.rollout_id);
        }
        Op::StartRollout { worker: w } => {
            let request = StartRolloutRequest {
                rollout: EnqueueRolloutRequest::new(serde_json::json!(2)),
                worker_id: Some(worker(w)),
            };
            let r = store.start_rollout(request).await.unwrap();
            ledger.max_attempts.insert(r.rollout.rollout_id.clone(), 1);
            ledger.rollouts.push(r.rollout.rollout_id);
        }
        Op::Dequeue { worker: w, limit } => {
            let got = store.dequeue_rollouts(limit as usize, Some(&worker(w))).await.unwrap();
            assert!(got.len() <= limit as usize);
            for ar in got {
                assert_eq!(
                    (ar.rollout.status, ar.attempt.status),
                    (RolloutStatus::Preparing, AttemptStatus::Preparing)
                );
            }
        }
        Op::StartAttempt { pick, worker: w } => {
            if let Some(id) = ledger.rollouts.get(pick % ledger.rollouts.len().max(1)).cloned() {
                store.start_attempt(&id, Some(&worker(w))).await.unwrap();
                *ledger.explicit_attempts.entry(id).or_default() += 1;
            }
        }
        Op::Span {
            pick,
            older_attempt,
            explicit_sequence,
        } => {
            if let Some(attempt) = pick_attempt(store, ledger, pick, older_attempt).await {
                let sequence = match explicit_sequence {
                    Some(s) => u64::from(s),
                    None => store
                        .get_next_span_sequence_id(&attempt.rollout_id, &attempt.attempt_id)
                        .await
                        .unwrap(),
                };
                let last = ledger.last_sequence.entry(attempt.rollout_id.clone()).or_default();
                if explicit_sequence.is_none() {
                    assert!(
                        sequence > *last,
                        "sequence ids strictly increase: {sequence} after {last}"
                    );
                }
                *last = (*last).max(sequence);
                ledger.span_counter += 1;
                let span = span_for(&attempt, sequence, &format!("{:016x}", ledger.span_counter));
                assert!(store.add_span(span).await.unwrap().is_some());
                ledger.spans += 1;
                let after = store
                    .query_attempts(&attempt.rollout_id, &AttemptQuery::default())
                    .await
                    .unwrap();
                let stored = after.items.iter().find(|a| a.attempt_id == attempt.attempt_id).unwrap();
                assert_eq!(stored.last_heartbeat_time, Some(clock.now()), "a span is a heartbeat");
            }
        }
        Op::NextSequence { pick } => {
            if let Some(attempt) = pick_attempt(store, ledger, pick, false).await {
                let sequence = store
                    .get_next_span_sequence_id(&attempt.rollout_id, &attempt.attempt_id)
                    .await
                    .unwrap();
                let last = ledger.last_sequence.entry(attempt.rollout_id.clone()).or_default();
                assert!(
                    sequence > *last,
                    "sequence ids strictly increase: {sequence} after {last}"
                );
                *last = sequence;
            }
        }
        Op::Finish {
            pick,
            older_attempt,
            status,
        } => {
            if let Some(attempt) = pick_attempt(store, ledger, pick, older_attempt).await {
                set_attempt(store, &attempt, status).await;
            }
        }
        Op::Cancel { pick } => {
            if let Some(id) = ledger.rollouts.get(pick % ledger.rollouts.len().max(1)) {
                let r = store
                    .update_rollout(id, RolloutUpdate::status(RolloutStatus::Cancelled))
                    .await
                    .unwrap();
                assert_eq!(r.status, RolloutStatus::Cancelled);
            }
        }
        Op::Heartbeat { worker: w } => {
            let before = store.get_worker_by_id(&worker(w)).await.unwrap().map(|w| w.status);
            let after = store.update_worker(&worker(w), WorkerUpdate::default()).await.unwrap();
            assert_eq!(
                after.status,
                before.unwrap_or(WorkerStatus::Unknown),
                "heartbeats never change status"
            );
        }
        Op::Advance { seconds } => clock.advance(f64::from(seconds)),
        Op::Watchdog => {
            store.run_watchdog().await.unwrap();
        }
    }
}

async fn check_ledger(store: &Store, ledger: &Ledger) {
    store.check_invariants().await.unwrap();
    let stats = store.statistics().await.unwrap();
    assert_eq!(stats.total_rollouts, ledger.rollouts.len() as u64, "no rollout lost");
    assert_eq!(stats.total_spans, ledger.spans, "no span lost");
    let mut attempts = 0;
    for id in &ledger.rollouts {
        let view = store
            .get_rollout_by_id(id)
            .await
            .unwrap()
            .expect("every rollout can be found");
        let count = store.query_attempts(id, &AttemptQuery::default()).await.unwrap().total;
        attempts += count;
        let allowed = ledger.max_attempts[id] + ledger.explicit_attempts.get(id).copied().unwrap_or(0);
        assert!(
            count as u32 <= allowed,
            "rollout {id} has {count} attempts, allowed {allowed} ({:?})",
            view.rollout.status
        );
    }
    assert_eq!(stats.total_attempts, attempts, "no attempt lost");
}

/// Random operation sequences, as many as the backend's harness affords
/// ([`property_cases`]: a database backend runs fewer, each call being a committed transaction);
/// failures are saved beside this file, as `proptest!` saves them.
#[each_backend]
fn random_operation_sequences_keep_every_invariant(backend: Backend) {
    let config = ProptestConfig {
        cases: property_cases(backend),
        source_file: Some(file!()),
        failure_persistence: Some(Box::new(FileFailurePersistence::SourceParallel("proptest-regressions"))),
        ..ProptestConfig::default()
    };
    let result = TestRunner::new(config).run(&prop::collection::vec(op(), 1..120), |ops| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(async {
            let (store, clock) = manual_store(backend);
            let mut ledger = Ledger::default();
            for op in ops {
                apply(&store, &clock, &mut ledger, op).await;
                check_ledger(&store, &ledger).await;
            }
        });
        Ok(())
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
}
