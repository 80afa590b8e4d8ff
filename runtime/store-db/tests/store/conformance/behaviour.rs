//! The store's behaviour beyond the status table: spans and sequence ids, workers, resources,
//! queries, waits, the background watchdog, bad input, and many concurrent callers.

use crate::backends::{live_store, manual_store};
use crate::common::*;
use agl_store::AttemptStatus as A;
use agl_store::RolloutStatus as R;
use agl_store::*;
use agl_testkit::{Backend, each_backend};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

// ---- spans and sequence ids --------------------------------------------------------------------

#[each_backend]
async fn a_duplicate_span_is_not_stored_twice(backend: Backend) {
    let (store, _) = manual_store(backend);
    enqueue(&store, RolloutConfig::default()).await;
    let ar = dequeue(&store, "w").await;
    let span = span_for(&ar.attempt, 1, "00000000000000aa");
    assert!(store.add_span(span.clone()).await.unwrap().is_some());
    assert!(store.add_span(span.clone()).await.unwrap().is_none());
    let odd = span_for(&ar.attempt, 2, "not-hex-id");
    assert!(store.add_span(odd.clone()).await.unwrap().is_some());
    let stored = store
        .add_spans(vec![odd.clone(), span_for(&ar.attempt, 3, "00000000000000bb"), odd])
        .await
        .unwrap();
    assert_eq!(stored.len(), 1, "duplicates inside a batch are skipped too");
    let all = store
        .query_spans(&SpanQuery::for_rollout(&ar.rollout.rollout_id))
        .await
        .unwrap();
    assert_eq!(all.total, 3);
    assert_eq!(store.statistics().await.unwrap().total_spans, 3);
}

#[each_backend]
async fn the_same_span_id_may_appear_once_per_attempt(backend: Backend) {
    let (store, _) = manual_store(backend);
    enqueue(&store, config(2, &[A::Failed])).await;
    let first = dequeue(&store, "w").await;
    assert!(
        store
            .add_span(span_for(&first.attempt, 1, "00000000000000aa"))
            .await
            .unwrap()
            .is_some()
    );
    set_attempt(&store, &first.attempt, A::Failed).await;
    let second = dequeue(&store, "w").await;
    assert!(
        store
            .add_span(span_for(&second.attempt, 2, "00000000000000aa"))
            .await
            .unwrap()
            .is_some()
    );
}

#[each_backend]
async fn sequence_ids_count_per_rollout_across_attempts_and_explicit_ids_raise_the_counter(backend: Backend) {
    let (store, _) = manual_store(backend);
    enqueue(&store, config(2, &[A::Failed])).await;
    enqueue(&store, RolloutConfig::default()).await;
    let a = dequeue(&store, "w").await;
    let b = dequeue(&store, "w").await;
    let next = |ar: &AttemptedRollout| {
        let (r, at) = (ar.rollout.rollout_id.clone(), ar.attempt.attempt_id.clone());
        let store = store.clone();
        async move { store.get_next_span_sequence_id(&r, &at).await.unwrap() }
    };
    assert_eq!((next(&a).await, next(&a).await, next(&b).await), (1, 2, 1));
    set_attempt(&store, &a.attempt, A::Failed).await;
    let a2 = dequeue(&store, "w").await;
    assert_eq!(next(&a2).await, 3, "one counter per rollout, not per attempt");
    store
        .add_span(span_for(&a2.attempt, 40, "00000000000000cc"))
        .await
        .unwrap();
    assert_eq!(next(&a2).await, 41);
    let batch = store
        .get_next_span_sequence_ids(&[
            (&a.rollout.rollout_id, &a2.attempt.attempt_id),
            (&b.rollout.rollout_id, &b.attempt.attempt_id),
            (&a.rollout.rollout_id, &a2.attempt.attempt_id),
        ])
        .await
        .unwrap();
    assert_eq!(batch, vec![42, 2, 43]);
}

#[each_backend]
async fn spans_are_queried_per_rollout_with_filters_and_attempt_selection(backend: Backend) {
    let (store, _) = manual_store(backend);
    enqueue(&store, config(2, &[A::Failed])).await;
    let first = dequeue(&store, "w").await;
    let mut llm = span_for(&first.attempt, 1, "0000000000000001");
    llm.name = "openai.chat.completion".into();
    let mut reward = span_for(&first.attempt, 2, "0000000000000002");
    reward.name = "agentlightning.annotation".into();
    reward.parent_id = Some("0000000000000001".into());
    store.add_spans(vec![llm, reward]).await.unwrap();
    set_attempt(&store, &first.attempt, A::Failed).await;
    let second = dequeue(&store, "w").await;
    store
        .add_span(span_for(&second.attempt, 3, "0000000000000003"))
        .await
        .unwrap();

    let id = &first.rollout.rollout_id;
    let names = |page: Paginated<Arc<Span>>| page.items.iter().map(|s| s.span_id.clone()).collect::<Vec<_>>();
    let all = store.query_spans(&SpanQuery::for_rollout(id)).await.unwrap();
    assert_eq!(names(all), ["0000000000000001", "0000000000000002", "0000000000000003"]);
    let latest = store
        .query_spans(&SpanQuery::for_rollout(id).attempt("latest"))
        .await
        .unwrap();
    assert_eq!(names(latest), ["0000000000000003"]);
    let of_first = store
        .query_spans(&SpanQuery::for_rollout(id).attempt(&first.attempt.attempt_id))
        .await
        .unwrap();
    assert_eq!(of_first.total, 2);
    let by_name = store
        .query_spans(&SpanQuery::for_rollout(id).name("agentlightning.annotation"))
        .await
        .unwrap();
    assert_eq!(names(by_name), ["0000000000000002"]);
    let either = SpanQuery {
        name_contains: Some("openai".into()),
        parent_id: Some("0000000000000001".into()),
        ..SpanQuery::for_rollout(id)
    };
    assert_eq!(
        store.query_spans(&either.clone()).await.unwrap().total,
        0,
        "and: no span has both"
    );
    let either = either.filter_logic(FilterLogic::Or).attempt(&first.attempt.attempt_id);
    assert_eq!(
        store.query_spans(&either).await.unwrap().total,
        2,
        "or, within the chosen attempt"
    );
    let desc = SpanQuery::for_rollout(id)
        .sort_by("sequence_id", SortOrder::Desc)
        .limit(1);
    let page = store.query_spans(&desc).await.unwrap();
    assert_eq!(
        (names(page.clone()), page.total, page.limit),
        (vec!["0000000000000003".to_string()], 3, 1)
    );
    let unknown = store.query_spans(&SpanQuery::for_rollout("ro-unknown")).await.unwrap();
    assert_eq!(unknown.total, 0);
}

#[each_backend]
async fn extra_span_fields_survive_storage(backend: Backend) {
    let (store, _) = manual_store(backend);
    enqueue(&store, RolloutConfig::default()).await;
    let ar = dequeue(&store, "w").await;
    let mut span = span_for(&ar.attempt, 1, "0000000000000001");
    span.extra.insert("vendor".into(), json!({"k": [1, 2]}));
    span.attributes.insert("gen_ai.request.model".into(), json!("m"));
    store.add_span(span).await.unwrap();
    let page = store
        .query_spans(&SpanQuery::for_rollout(&ar.rollout.rollout_id))
        .await
        .unwrap();
    assert_eq!(page.items[0].extra["vendor"], json!({"k": [1, 2]}));
    assert_eq!(page.items[0].attributes["gen_ai.request.model"], json!("m"));
}

// ---- workers ---------------------------------------------------------------------------------

#[each_backend]
async fn worker_status_follows_its_attempts(backend: Backend) {
    let (store, clock) = manual_store(backend);
    assert!(store.dequeue_rollout(Some("w")).await.unwrap().is_none());
    let w = store.get_worker_by_id("w").await.unwrap().unwrap();
    assert_eq!(
        (w.status, w.last_dequeue_time, w.last_idle_time),
        (WorkerStatus::Idle, Some(T0), Some(T0))
    );

    enqueue(&store, RolloutConfig::default()).await;
    clock.advance(1.0);
    let ar = dequeue(&store, "w").await;
    let w = store.get_worker_by_id("w").await.unwrap().unwrap();
    assert_eq!(w.status, WorkerStatus::Busy);
    assert_eq!(w.current_rollout_id.as_deref(), Some(ar.rollout.rollout_id.as_str()));
    assert_eq!(w.current_attempt_id.as_deref(), Some(ar.attempt.attempt_id.as_str()));
    assert_eq!(
        (w.last_busy_time, w.last_dequeue_time),
        (Some(T0 + 1.0), Some(T0 + 1.0))
    );

    let hb = store
        .update_worker(
            "w",
            WorkerUpdate {
                heartbeat_stats: Some(json!({"cpu": 0.5}).as_object().unwrap().clone()),
            },
        )
        .await
        .unwrap();
    assert_eq!(hb.status, WorkerStatus::Busy, "a heartbeat never changes the status");
    assert_eq!(hb.heartbeat_stats.unwrap()["cpu"], json!(0.5));

    clock.advance(1.0);
    set_attempt(&store, &ar.attempt, A::Succeeded).await;
    let w = store.get_worker_by_id("w").await.unwrap().unwrap();
    assert_eq!(
        (w.status, w.current_attempt_id, w.last_idle_time),
        (WorkerStatus::Idle, None, Some(T0 + 2.0))
    );

    let mut cfg = config(1, &[]);
    cfg.timeout_seconds = Some(1.0);
    enqueue(&store, cfg).await;
    dequeue(&store, "w").await;
    clock.advance(2.0);
    store.run_watchdog().await.unwrap();
    let w = store.get_worker_by_id("w").await.unwrap().unwrap();
    assert_eq!((w.status, w.current_rollout_id), (WorkerStatus::Unknown, None));

    let fresh = store
        .update_worker("new-worker", WorkerUpdate::default())
        .await
        .unwrap();
    assert_eq!(
        (fresh.status, fresh.last_heartbeat_time),
        (WorkerStatus::Unknown, Some(T0 + 4.0))
    );
    let busy = store
        .query_workers(&WorkerQuery::default().status_in([WorkerStatus::Unknown]))
        .await
        .unwrap();
    assert_eq!(busy.total, 2);
    store.check_invariants().await.unwrap();
}

#[each_backend]
async fn an_old_attempt_finishing_does_not_take_its_worker_off_newer_work(backend: Backend) {
    let (store, _) = manual_store(backend);
    enqueue(&store, RolloutConfig::default()).await;
    enqueue(&store, RolloutConfig::default()).await;
    let old = dequeue(&store, "w").await;
    let new = dequeue(&store, "w").await;
    set_attempt(&store, &old.attempt, A::Succeeded).await;
    let w = store.get_worker_by_id("w").await.unwrap().unwrap();
    assert_eq!(w.status, WorkerStatus::Busy);
    assert_eq!(w.current_attempt_id.as_deref(), Some(new.attempt.attempt_id.as_str()));
    store.check_invariants().await.unwrap();
}

// ---- resources ---------------------------------------------------------------------------------

fn prompt(template: &str) -> NamedResources {
    let mut resources = NamedResources::new();
    resources.insert(
        "prompt".into(),
        Resource::PromptTemplate(PromptTemplate {
            template: template.into(),
            engine: TemplateEngine::FString,
        }),
    );
    resources
}

#[each_backend]
async fn resources_are_versioned_and_the_latest_is_the_default_for_new_rollouts(backend: Backend) {
    let (store, clock) = manual_store(backend);
    assert!(store.get_latest_resources().await.unwrap().is_none());
    let r0 = enqueue(&store, RolloutConfig::default()).await;
    assert_eq!(r0.resources_id, None);

    let v1 = store.add_resources(prompt("a {x}")).await.unwrap();
    assert!(v1.resources_id.starts_with("rs-") && v1.version == 1);
    let r1 = enqueue(&store, RolloutConfig::default()).await;
    assert_eq!(r1.resources_id.as_deref(), Some(v1.resources_id.as_str()));

    clock.advance(1.0);
    let named = store.update_resources("v2", prompt("b {x}")).await.unwrap();
    assert_eq!((named.version, named.create_time), (1, T0 + 1.0));
    assert_eq!(store.get_latest_resources().await.unwrap().unwrap().resources_id, "v2");
    clock.advance(1.0);
    let bumped = store.update_resources(&v1.resources_id, prompt("c {x}")).await.unwrap();
    assert_eq!(
        (bumped.version, bumped.create_time, bumped.update_time),
        (2, T0, T0 + 2.0)
    );
    assert_eq!(
        store.get_latest_resources().await.unwrap().unwrap().resources_id,
        v1.resources_id
    );

    let pinned = store
        .enqueue_rollout(EnqueueRolloutRequest::new(json!(1)).resources_id("v2"))
        .await
        .unwrap();
    assert_eq!(pinned.resources_id.as_deref(), Some("v2"));

    let found = store
        .query_resources(&ResourcesQuery {
            resources_id_contains: Some("v2".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(found.total, 1);
    let by_update = store
        .query_resources(&ResourcesQuery::default().sort_by("update_time", SortOrder::Desc))
        .await
        .unwrap();
    assert_eq!(by_update.items[0].resources_id, v1.resources_id);
    assert!(store.get_resources_by_id("nope").await.unwrap().is_none());
}

// ---- queries -----------------------------------------------------------------------------------

// ---- what Agent-lightning 0.3.0 accepts without a lookup (collection_based.py) -------------------

#[each_backend]
async fn an_unknown_resources_id_is_kept_on_enqueue_start_and_update_as_0_3_0_does(backend: Backend) {
    let (store, _) = manual_store(backend);
    let queued = store
        .enqueue_rollout(EnqueueRolloutRequest::new(json!(1)).resources_id("rs-nowhere"))
        .await
        .expect("0.3.0 enqueues with any resources_id");
    assert_eq!(queued.resources_id.as_deref(), Some("rs-nowhere"));
    let batch = store
        .enqueue_rollouts(vec![
            EnqueueRolloutRequest::new(json!(2)).resources_id("rs-a"),
            EnqueueRolloutRequest::new(json!(3)),
        ])
        .await
        .expect("and in a batch");
    assert_eq!(batch[0].resources_id.as_deref(), Some("rs-a"));
    assert_eq!(batch[1].resources_id, None, "no resources: none by default");

    let started = store
        .start_rollout(StartRolloutRequest {
            rollout: EnqueueRolloutRequest::new(json!(4)).resources_id("rs-b"),
            worker_id: None,
        })
        .await
        .expect("0.3.0 starts a rollout with any resources_id");
    assert_eq!(started.rollout.resources_id.as_deref(), Some("rs-b"));

    let update: RolloutUpdate = serde_json::from_value(json!({"resources_id": "rs-c"})).unwrap();
    let updated = store
        .update_rollout(&queued.rollout_id, update)
        .await
        .expect("0.3.0 updates to any resources_id");
    assert_eq!(updated.resources_id.as_deref(), Some("rs-c"));
    let stored = store.get_rollout_by_id(&queued.rollout_id).await.unwrap().unwrap();
    assert_eq!(stored.rollout.resources_id.as_deref(), Some("rs-c"));
    assert!(store.get_resources_by_id("rs-c").await.unwrap().is_none());
    store.check_invariants().await.unwrap();
}

#[each_backend]
async fn a_caller_chosen_rollout_id_is_kept_and_creating_it_again_changes_nothing(backend: Backend) {
    let (store, _) = manual_store(backend);
    let batch = store
        .enqueue_rollouts(vec![
            EnqueueRolloutRequest::new(json!(1)).with_rollout_id("mine-1"),
            EnqueueRolloutRequest::new(json!(2)),
            EnqueueRolloutRequest::new(json!(3)).with_rollout_id("mine-1"),
        ])
        .await
        .expect("chosen ids are accepted");
    assert_eq!(batch[0].rollout_id, "mine-1");
    assert_eq!(batch[2], batch[0], "the same id in one batch: the one rollout");
    assert_ne!(batch[1].rollout_id, "mine-1");
    let again = store
        .enqueue_rollout(EnqueueRolloutRequest::new(json!(9)).with_rollout_id("mine-1"))
        .await
        .unwrap();
    assert_eq!(again, batch[0], "created again: unchanged");
    let taken = store.dequeue_rollouts(10, None).await.unwrap();
    assert_eq!(taken.len(), 2, "queued once");
    let running = store
        .enqueue_rollout(EnqueueRolloutRequest::new(json!(9)).with_rollout_id("mine-1"))
        .await
        .unwrap();
    assert_eq!(running.status, R::Preparing, "a taken rollout is not queued again");
    assert!(store.dequeue_rollouts(10, None).await.unwrap().is_empty());
    let start = StartRolloutRequest {
        rollout: EnqueueRolloutRequest::new(json!(1)).with_rollout_id("mine-1"),
        worker_id: None,
    };
    assert!(matches!(
        store.start_rollout(start).await,
        Err(StoreError::InvalidArgument(_))
    ));
    for bad in ["", "a/b", "tab\there", &"x".repeat(300)] {
        let refused = store
            .enqueue_rollouts(vec![
                EnqueueRolloutRequest::new(json!(1)),
                EnqueueRolloutRequest::new(json!(1)).with_rollout_id(bad),
            ])
            .await;
        assert!(matches!(refused, Err(StoreError::InvalidArgument(_))), "{bad:?}");
    }
    assert_eq!(store.query_rollouts(&RolloutQuery::default()).await.unwrap().total, 2);
    store.check_invariants().await.unwrap();
}

#[each_backend]
async fn span_sequence_ids_are_issued_for_unknown_rollouts_and_attempts_as_0_3_0_does(backend: Backend) {
    let (store, _) = manual_store(backend);
    let ids = |r: &'static str, a: &'static str| {
        let store = store.clone();
        async move {
            store
                .get_next_span_sequence_id(r, a)
                .await
                .expect("0.3.0 issues for any id")
        }
    };
    assert_eq!((ids("ro-x", "at-x").await, ids("ro-x", "at-y").await), (1, 2));
    assert_eq!(ids("ro-y", "at-x").await, 1, "one counter per unknown rollout id");
    assert!(
        store.get_rollout_by_id("ro-x").await.unwrap().is_none(),
        "no rollout is made"
    );

    enqueue(&store, RolloutConfig::default()).await;
    let a = dequeue(&store, "w").await;
    let known = store
        .get_next_span_sequence_id(&a.rollout.rollout_id, &a.attempt.attempt_id)
        .await
        .unwrap();
    let stray = store
        .get_next_span_sequence_id(&a.rollout.rollout_id, "at-nope")
        .await
        .expect("an unknown attempt draws from its rollout's counter");
    assert_eq!((known, stray), (1, 2));
    let batch = store
        .get_next_span_sequence_ids(&[("ro-x", "at-x"), (&a.rollout.rollout_id, "at-nope"), ("ro-x", "at-z")])
        .await
        .unwrap();
    assert_eq!(batch, vec![3, 3, 4]);
    assert_eq!(
        store.statistics().await.unwrap().total_rollouts,
        1,
        "sequence ids for unknown rollouts create none"
    );
    store.check_invariants().await.unwrap();
}

#[each_backend]
async fn rollouts_are_queried_with_filters_logic_sorting_and_pages(backend: Backend) {
    let (store, clock) = manual_store(backend);
    let mut ids = Vec::new();
    for _ in 0..6 {
        clock.advance(1.0);
        ids.push(enqueue(&store, config(1, &[])).await.rollout_id);
    }
    let ar = dequeue(&store, "w").await;
    set_attempt(&store, &ar.attempt, A::Succeeded).await;

    let all = store.query_rollouts(&RolloutQuery::default()).await.unwrap();
    assert_eq!(all.total, 6);
    assert_eq!(
        all.items
            .iter()
            .map(|v| v.rollout.rollout_id.clone())
            .collect::<Vec<_>>(),
        ids,
        "insertion order"
    );
    assert!(all.items[0].attempt.is_some() && all.items[1].attempt.is_none());

    let queued = store
        .query_rollouts(&RolloutQuery::default().status_in([R::Queuing]))
        .await
        .unwrap();
    assert_eq!(queued.total, 5);
    let picked = RolloutQuery::default().rollout_id_in([ids[4].clone(), ids[1].clone(), "ro-nope".into()]);
    let page = store.query_rollouts(&picked).await.unwrap();
    assert_eq!(
        page.items.iter().map(|v| &v.rollout.rollout_id).collect::<Vec<_>>(),
        [&ids[1], &ids[4]]
    );
    let or = picked.status_in([R::Succeeded]).filter_logic(FilterLogic::Or);
    assert_eq!(store.query_rollouts(&or).await.unwrap().total, 3);

    let newest = RolloutQuery::default()
        .sort_by("start_time", SortOrder::Desc)
        .limit(2)
        .offset(1);
    let page = store.query_rollouts(&newest).await.unwrap();
    assert_eq!(
        page.items.iter().map(|v| &v.rollout.rollout_id).collect::<Vec<_>>(),
        [&ids[4], &ids[3]]
    );
    assert_eq!((page.total, page.limit, page.offset), (6, 2, 1));

    let by_end = RolloutQuery::default().sort_by("end_time", SortOrder::Asc).limit(1);
    assert_eq!(
        store.query_rollouts(&by_end).await.unwrap().items[0].rollout.rollout_id,
        ids[0],
        "missing times last"
    );

    let attempts = store.query_attempts(&ids[0], &AttemptQuery::default()).await.unwrap();
    assert_eq!(attempts.total, 1);
    assert_eq!(
        store
            .query_attempts("ro-nope", &AttemptQuery::default())
            .await
            .unwrap()
            .total,
        0
    );
}

#[each_backend]
async fn bad_arguments_are_typed_errors(backend: Backend) {
    let (store, _) = manual_store(backend);
    let invalid = |r: StoreResult<_>| matches!(r, Err(StoreError::InvalidArgument(_)));
    assert!(invalid(
        store
            .query_rollouts(&RolloutQuery::default().limit(0))
            .await
            .map(|_| ())
    ));
    assert!(invalid(
        store
            .query_rollouts(&RolloutQuery::default().limit(-5))
            .await
            .map(|_| ())
    ));
    assert!(invalid(
        store
            .query_workers(&WorkerQuery::default().offset(-1))
            .await
            .map(|_| ())
    ));
    assert!(invalid(
        store
            .query_rollouts(&RolloutQuery::default().sort_by("input", SortOrder::Asc))
            .await
            .map(|_| ())
    ));
    assert!(invalid(
        store
            .query_spans(&SpanQuery::for_rollout("x").sort_by("bogus", SortOrder::Asc))
            .await
            .map(|_| ())
    ));
    assert!(invalid(
        store
            .enqueue_rollout(EnqueueRolloutRequest::new(json!(1)).config(config(0, &[])))
            .await
            .map(|_| ())
    ));
    let negative = RolloutConfig {
        timeout_seconds: Some(-1.0),
        ..RolloutConfig::default()
    };
    assert!(invalid(
        store
            .enqueue_rollout(EnqueueRolloutRequest::new(json!(1)).config(negative))
            .await
            .map(|_| ())
    ));
    assert!(invalid(
        store.update_worker("", WorkerUpdate::default()).await.map(|_| ())
    ));

    let not_found = |r: StoreResult<()>| r.is_err_and(|e| e.is_not_found());
    assert!(not_found(
        store
            .update_rollout("ro-x", RolloutUpdate::status(R::Cancelled))
            .await
            .map(|_| ())
    ));
    assert!(not_found(
        store
            .update_attempt("ro-x", AttemptRef::Latest, AttemptUpdate::default())
            .await
            .map(|_| ())
    ));
    assert!(not_found(store.start_attempt("ro-x", None).await.map(|_| ())));
    let r = enqueue(&store, RolloutConfig::default()).await;
    assert_eq!(
        store
            .update_attempt(&r.rollout_id, AttemptRef::Latest, AttemptUpdate::default())
            .await
            .unwrap_err(),
        StoreError::NoAttempts(r.rollout_id.clone())
    );
    let ar = dequeue(&store, "w").await;
    assert!(not_found(
        store
            .update_attempt(&r.rollout_id, "at-nope".into(), AttemptUpdate::default())
            .await
            .map(|_| ())
    ));
    let stray = Span::new(&r.rollout_id, "at-nope", 1, "t", "s", "n");
    let good = span_for(&ar.attempt, 1, "0000000000000001");
    assert!(not_found(store.add_spans(vec![good, stray]).await.map(|_| ())));
    assert_eq!(
        store.statistics().await.unwrap().total_spans,
        0,
        "a rejected batch stores nothing"
    );
    assert!(store.get_rollout_by_id("ro-x").await.unwrap().is_none());
    assert!(store.get_latest_attempt("ro-x").await.unwrap().is_none());
    assert!(store.get_worker_by_id("nobody").await.unwrap().is_none());
    assert!(invalid(
        store
            .enqueue_rollouts(vec![
                EnqueueRolloutRequest::new(json!(1)),
                EnqueueRolloutRequest::new(json!(2)).config(config(0, &[])),
            ])
            .await
            .map(|_| ())
    ));
    assert_eq!(
        store.statistics().await.unwrap().total_rollouts,
        1,
        "a rejected batch enqueues nothing"
    );
}

#[each_backend]
async fn update_rollout_changes_only_the_keys_present(backend: Backend) {
    let (store, _) = manual_store(backend);
    let r = store
        .enqueue_rollout(EnqueueRolloutRequest::new(json!({"q": 1})).mode(Mode::Train))
        .await
        .unwrap();
    let update: RolloutUpdate = serde_json::from_value(json!({"metadata": {"why": "test"}})).unwrap();
    let updated = store.update_rollout(&r.rollout_id, update).await.unwrap();
    assert_eq!(
        (updated.mode, updated.status, updated.input.clone()),
        (Some(Mode::Train), R::Queuing, json!({"q": 1}))
    );
    assert_eq!(updated.metadata.unwrap()["why"], json!("test"));
    let update: RolloutUpdate = serde_json::from_value(json!({"mode": null, "input": "new"})).unwrap();
    let updated = store.update_rollout(&r.rollout_id, update).await.unwrap();
    assert_eq!((updated.mode, updated.input), (None, json!("new")));
}

// ---- waiting -----------------------------------------------------------------------------------

#[each_backend(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_rollouts_wakes_when_the_last_one_finishes(backend: Backend) {
    let store = live_store(backend, Some(Duration::from_millis(250)));
    let a = enqueue(&store, RolloutConfig::default()).await;
    let b = enqueue(&store, RolloutConfig::default()).await;
    let ids = vec![a.rollout_id.clone(), b.rollout_id.clone(), "ro-unknown".to_string()];
    let waiter = {
        let (store, ids) = (store.clone(), ids.clone());
        tokio::spawn(async move {
            let started = Instant::now();
            let done = store
                .wait_for_rollouts(&ids, Some(Duration::from_secs(30)))
                .await
                .unwrap();
            (done, started.elapsed())
        })
    };
    let first = dequeue(&store, "w").await;
    set_attempt(&store, &first.attempt, A::Succeeded).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!waiter.is_finished(), "one of two finished: still waiting");
    store
        .update_rollout(&b.rollout_id, RolloutUpdate::status(R::Cancelled))
        .await
        .unwrap();
    let (done, elapsed) = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        done.iter().map(|r| &r.rollout_id).collect::<Vec<_>>(),
        [&a.rollout_id, &b.rollout_id]
    );
    assert!(elapsed < Duration::from_secs(30), "woken by the event, not the timeout");
}

#[each_backend]
async fn wait_for_rollouts_returns_what_finished_when_the_timeout_passes(backend: Backend) {
    let (store, _) = manual_store(backend);
    let a = enqueue(&store, RolloutConfig::default()).await;
    let b = enqueue(&store, RolloutConfig::default()).await;
    let ar = dequeue(&store, "w").await;
    set_attempt(&store, &ar.attempt, A::Failed).await;
    let ids = [a.rollout_id.clone(), b.rollout_id.clone()];
    let done = store
        .wait_for_rollouts(&ids, Some(Duration::from_millis(20)))
        .await
        .unwrap();
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].status, R::Failed);
    let now = store.wait_for_rollouts(&ids, Some(Duration::ZERO)).await.unwrap();
    assert_eq!(now.len(), 1, "timeout 0 only looks");
    assert!(
        store
            .wait_for_rollouts(&["ro-unknown".into()], None)
            .await
            .unwrap()
            .is_empty(),
        "unknown ids never block"
    );
}

#[each_backend(flavor = "multi_thread", worker_threads = 2)]
async fn the_background_watchdog_times_out_an_attempt_with_no_calls_arriving(backend: Backend) {
    let store = live_store(backend, Some(Duration::from_millis(10)));
    let cfg = RolloutConfig {
        timeout_seconds: Some(0.05),
        ..RolloutConfig::default()
    };
    let r = enqueue(&store, cfg).await;
    let ar = dequeue(&store, "w").await;
    let started = Instant::now();
    // wait_for_rollouts makes no further store calls: only the tick can finish the rollout.
    let done = store
        .wait_for_rollouts(std::slice::from_ref(&r.rollout_id), Some(Duration::from_secs(10)))
        .await
        .unwrap();
    assert_eq!(done.len(), 1, "finished by the watchdog");
    assert_eq!(done[0].status, R::Failed);
    assert!(started.elapsed() < Duration::from_secs(5));
    let attempt = store.get_latest_attempt(&ar.rollout.rollout_id).await.unwrap().unwrap();
    assert_eq!(attempt.status, A::Timeout);
}

#[each_backend]
async fn a_call_that_finds_the_watchdog_due_acts_on_it_first(backend: Backend) {
    // The dequeue and the add_span are the first calls after the deadline: each must see the
    // watchdog's verdict (a PostgreSQL store assumes nothing is due and runs the call again
    // when that was wrong).
    let (store, clock) = manual_store(backend);
    let mut cfg = config(2, &[A::Timeout]);
    cfg.timeout_seconds = Some(5.0);
    let r = enqueue(&store, cfg).await;
    dequeue(&store, "w").await;
    clock.advance(6.0);
    let second = store.dequeue_rollouts(1, Some("w")).await.unwrap();
    assert_eq!(
        second.len(),
        1,
        "the timed-out rollout, requeued before the dequeue looked"
    );
    assert_eq!(second[0].rollout.rollout_id, r.rollout_id);
    assert_eq!(second[0].attempt.sequence_id, 2);
    let attempts = store
        .query_attempts(&r.rollout_id, &AttemptQuery::default())
        .await
        .unwrap();
    assert_eq!(attempts.items[0].status, A::Timeout);
    clock.advance(6.0);
    // The second attempt is over its limit too: a span for it arrives after the verdict.
    let late = store
        .add_span(span_for(&second[0].attempt, 1, "00000000000000cc"))
        .await
        .unwrap();
    assert!(late.is_some(), "a span for a timed-out attempt is still kept");
    assert_eq!(rollout(&store, &r.rollout_id).await.rollout.status, R::Failed);
    assert_eq!(
        store.get_latest_attempt(&r.rollout_id).await.unwrap().unwrap().status,
        A::Timeout
    );
    store.check_invariants().await.unwrap();
}

#[each_backend]
async fn a_dropped_wait_leaves_no_waiter_behind(backend: Backend) {
    let (store, _) = manual_store(backend);
    let r = enqueue(&store, RolloutConfig::default()).await;
    let ids = [r.rollout_id.clone()];
    let wait = store.wait_for_rollouts(&ids, None);
    assert!(tokio::time::timeout(Duration::from_millis(10), wait).await.is_err());
    let ar = dequeue(&store, "w").await;
    set_attempt(&store, &ar.attempt, A::Succeeded).await;
    assert_eq!(store.wait_for_rollouts(&ids, None).await.unwrap().len(), 1);
}

// ---- concurrency -------------------------------------------------------------------------------

#[each_backend(flavor = "multi_thread", worker_threads = 4)]
async fn many_concurrent_runners_lose_nothing(backend: Backend) {
    let store = live_store(backend, Some(Duration::from_millis(250)));
    let total = 2_000;
    let requests = (0..total)
        .map(|i| EnqueueRolloutRequest::new(json!({ "i": i })))
        .collect();
    let ids: Vec<String> = store
        .enqueue_rollouts(requests)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.rollout_id)
        .collect();
    let mut runners = Vec::new();
    for worker in 0..16 {
        let store = store.clone();
        runners.push(tokio::spawn(async move {
            let worker_id = format!("worker-{worker}");
            let mut done = 0;
            while let Some(ar) = store.dequeue_rollout(Some(&worker_id)).await.unwrap() {
                for k in 0..3 {
                    let seq = store
                        .get_next_span_sequence_id(&ar.rollout.rollout_id, &ar.attempt.attempt_id)
                        .await
                        .unwrap();
                    store
                        .add_span(span_for(&ar.attempt, seq, &format!("{k:016x}")))
                        .await
                        .unwrap()
                        .unwrap();
                }
                set_attempt(&store, &ar.attempt, A::Succeeded).await;
                done += 1;
                tokio::task::yield_now().await;
            }
            done
        }));
    }
    let waited = store
        .wait_for_rollouts(&ids, Some(Duration::from_secs(60)))
        .await
        .unwrap();
    let mut processed = 0;
    for runner in runners {
        processed += runner.await.unwrap();
    }
    assert_eq!((processed, waited.len()), (total, total));
    assert!(waited.iter().all(|r| r.status == R::Succeeded));
    let stats = store.statistics().await.unwrap();
    assert_eq!(
        (stats.total_rollouts, stats.total_attempts, stats.total_spans),
        (2_000, 2_000, 6_000)
    );
    for id in ids.iter().take(50) {
        let spans = store.query_spans(&SpanQuery::for_rollout(id)).await.unwrap();
        let seqs: Vec<u64> = spans.items.iter().map(|s| s.sequence_id).collect();
        assert_eq!(seqs, [1, 2, 3]);
    }
    let idle = store
        .query_workers(&WorkerQuery::default().status_in([WorkerStatus::Idle]))
        .await
        .unwrap();
    assert_eq!(idle.total, 16);
    store.check_invariants().await.unwrap();
}

#[each_backend]
async fn spans_arriving_out_of_sequence_order_come_back_sorted(backend: Backend) {
    let (store, _) = manual_store(backend);
    enqueue(&store, RolloutConfig::default()).await;
    let ar = dequeue(&store, "w").await;
    for (seq, id) in [(2, "b"), (1, "a"), (3, "c"), (1, "a2")] {
        store.add_span(span_for(&ar.attempt, seq, id)).await.unwrap().unwrap();
    }
    let query = SpanQuery::for_rollout(&ar.rollout.rollout_id);
    let ids = |page: Paginated<Arc<Span>>| page.items.iter().map(|s| s.span_id.clone()).collect::<Vec<_>>();
    assert_eq!(
        ids(store.query_spans(&query).await.unwrap()),
        ["a", "a2", "b", "c"],
        "stable on ties"
    );
    let desc = query.clone().sort_by("sequence_id", SortOrder::Desc);
    assert_eq!(ids(store.query_spans(&desc).await.unwrap()), ["c", "b", "a", "a2"]);
    let by_name = query.sort_by("span_id", SortOrder::Asc).limit(2).offset(1);
    assert_eq!(ids(store.query_spans(&by_name).await.unwrap()), ["a2", "b"]);
}

#[each_backend]
fn plain_os_threads_each_with_their_own_runtime_share_one_store(backend: Backend) {
    let store = live_store(backend, None);
    let per_thread = 500;
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .build()
                    .unwrap();
                runtime.block_on(async {
                    let worker = format!("thread-{t}");
                    for i in 0..per_thread {
                        store
                            .enqueue_rollout(EnqueueRolloutRequest::new(json!(i)))
                            .await
                            .unwrap();
                        if let Some(ar) = store.dequeue_rollout(Some(&worker)).await.unwrap() {
                            add_span(&store, &ar.attempt).await.unwrap();
                            set_attempt(&store, &ar.attempt, A::Succeeded).await;
                        }
                    }
                })
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        let stats = store.statistics().await.unwrap();
        assert_eq!(
            (stats.total_rollouts, stats.total_attempts, stats.total_spans),
            (2_000, 2_000, 2_000)
        );
        let done = store
            .query_rollouts(&RolloutQuery::default().status_in([R::Succeeded]))
            .await
            .unwrap();
        assert_eq!(done.total, 2_000);
        store.check_invariants().await.unwrap();
    });
}

// ---- the run record ------------------------------------------------------------------------------

#[each_backend]
async fn the_run_record_is_kept_and_replaced(backend: Backend) {
    let (store, _) = manual_store(backend);
    assert_eq!(store.run_record().await.unwrap(), None);
    let mut record = RunRecord {
        run_id: "run-20261124-210512-3f2a".into(),
        name: Some("baseline on the new prompt".into()),
        started_at: T0,
        finished_at: None,
        status: "running".into(),
        agent: "examples/math-agent".into(),
        algorithm: "apo".into(),
        command: vec!["run".into(), "--agent".into(), "examples/math-agent".into()],
        directory: Some("/work".into()),
        resumed_at: Vec::new(),
        results: None,
    };
    store.save_run(&record).await.unwrap();
    assert_eq!(store.run_record().await.unwrap().as_ref(), Some(&record));
    record.status = "completed".into();
    record.finished_at = Some(T0 + 2.5);
    record.results = Some(json!({"total": {"rollouts": 4}}));
    store.save_run(&record).await.unwrap();
    assert_eq!(store.run_record().await.unwrap(), Some(record));
}
