//! Which rollout, attempt and sequence id each span gets: span attributes override resource
//! attributes, spans without ids are dropped, explicit sequence ids are kept and missing ones are
//! issued by the store in request order.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test: a failed step panics and fails it"
)]

mod common;

use agl_otlp::{decode, ingest};
use agl_store::InMemoryLightningStore;
use common::*;

#[tokio::test]
async fn span_attributes_override_the_resource() {
    let store = InMemoryLightningStore::new();
    let (ro_res, at_res) = start(&store).await;
    let (ro_span, at_span) = start(&store).await;
    let body = protobuf(&request(vec![resource_spans(
        ids(&ro_res, &at_res),
        vec![
            span(1, 1, None, "from-resource", vec![]),
            span(2, 1, None, "from-span", ids(&ro_span, &at_span)),
        ],
    )]));
    let report = ingest(&store, Some(PROTOBUF), None, &body).await.expect("ingest");
    assert_eq!((report.accepted, report.dropped), (2, 0));
    let res = spans_of(&store, &ro_res).await;
    let spn = spans_of(&store, &ro_span).await;
    assert_eq!(
        res.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
        ["from-resource"]
    );
    assert_eq!(spn.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["from-span"]);
    assert_eq!(spn[0].attempt_id, at_span);
    assert_eq!(
        spn[0].resource.attributes[ROLLOUT_ID],
        ro_res.as_str(),
        "the resource is kept as sent"
    );
}

#[tokio::test]
async fn one_id_may_come_from_each_level() {
    let store = InMemoryLightningStore::new();
    let (rollout_id, attempt_id) = start(&store).await;
    let body = protobuf(&request(vec![resource_spans(
        vec![s(ROLLOUT_ID, &rollout_id)],
        vec![span(1, 1, None, "mixed", vec![s(ATTEMPT_ID, &attempt_id)])],
    )]));
    let report = ingest(&store, Some(PROTOBUF), None, &body).await.expect("ingest");
    assert_eq!(report.accepted, 1);
    assert_eq!(spans_of(&store, &rollout_id).await[0].attempt_id, attempt_id);
}

#[tokio::test]
async fn spans_without_ids_are_dropped_and_counted() {
    let store = InMemoryLightningStore::new();
    let (rollout_id, attempt_id) = start(&store).await;
    let body = protobuf(&request(vec![
        resource_spans(
            vec![s("service.name", "no-ids")],
            vec![
                span(1, 1, None, "nothing", vec![]),
                span(1, 2, None, "rollout only", vec![s(ROLLOUT_ID, &rollout_id)]),
                span(1, 3, None, "attempt only", vec![s(ATTEMPT_ID, &attempt_id)]),
                span(1, 4, None, "empty ids", ids("", "")),
                span(1, 5, None, "kept", ids(&rollout_id, &attempt_id)),
            ],
        ),
        resource_spans(vec![], vec![span(2, 1, None, "bare", vec![])]),
    ]));
    let report = ingest(&store, Some(PROTOBUF), None, &body).await.expect("ingest");
    assert_eq!((report.accepted, report.dropped), (1, 5));
    let stored = spans_of(&store, &rollout_id).await;
    assert_eq!(stored.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["kept"]);
    assert_eq!(stored[0].sequence_id, 1);
}

#[tokio::test]
async fn explicit_sequence_ids_are_kept_and_missing_ones_issued_in_order() {
    let store = InMemoryLightningStore::new();
    let (ro_a, at_a) = start(&store).await;
    let (ro_b, at_b) = start(&store).await;
    let with_a = |extra: Vec<_>| [ids(&ro_a, &at_a), extra].concat();
    let body = protobuf(&request(vec![
        resource_spans(
            vec![],
            vec![
                span(1, 1, None, "a-auto-1", with_a(vec![])),
                span(
                    1,
                    2,
                    None,
                    "a-explicit-int",
                    with_a(vec![kv(SEQUENCE_ID, V::IntValue(40))]),
                ),
                span(2, 1, None, "b-auto-1", ids(&ro_b, &at_b)),
                span(1, 3, None, "a-explicit-str", with_a(vec![s(SEQUENCE_ID, "41")])),
                span(1, 4, None, "a-negative", with_a(vec![kv(SEQUENCE_ID, V::IntValue(-1))])),
                span(1, 5, None, "a-garbage", with_a(vec![s(SEQUENCE_ID, "seven")])),
                span(2, 2, None, "b-auto-2", ids(&ro_b, &at_b)),
            ],
        ),
        // A resource-level sequence id is shared by its spans unless a span overrides it.
        resource_spans(
            [ids(&ro_b, &at_b), vec![s(SEQUENCE_ID, "77")]].concat(),
            vec![
                span(2, 3, None, "b-resource-seq", vec![]),
                span(2, 4, None, "b-span-seq", vec![kv(SEQUENCE_ID, V::IntValue(78))]),
            ],
        ),
    ]));

    let decoded = decode(Some(PROTOBUF), None, &body).expect("decode");
    let explicit: Vec<_> = decoded
        .spans
        .iter()
        .map(|d| (d.span.name.as_str(), d.sequence_id))
        .collect();
    assert_eq!(
        explicit,
        [
            ("a-auto-1", None),
            ("a-explicit-int", Some(40)),
            ("b-auto-1", None),
            ("a-explicit-str", Some(41)),
            ("a-negative", None),
            ("a-garbage", None),
            ("b-auto-2", None),
            ("b-resource-seq", Some(77)),
            ("b-span-seq", Some(78)),
        ]
    );

    let report = ingest(&store, Some(PROTOBUF), None, &body).await.expect("ingest");
    assert_eq!((report.accepted, report.dropped), (9, 0));
    let sequence = |spans: Vec<std::sync::Arc<agl_store::Span>>| {
        spans
            .iter()
            .map(|s| (s.name.clone(), s.sequence_id))
            .collect::<Vec<_>>()
    };
    let owned = |pairs: &[(&str, u64)]| pairs.iter().map(|(n, i)| (n.to_string(), *i)).collect::<Vec<_>>();
    assert_eq!(
        sequence(spans_of(&store, &ro_a).await),
        owned(&[
            ("a-auto-1", 1),
            ("a-negative", 2),
            ("a-garbage", 3),
            ("a-explicit-int", 40),
            ("a-explicit-str", 41)
        ])
    );
    assert_eq!(
        sequence(spans_of(&store, &ro_b).await),
        owned(&[
            ("b-auto-1", 1),
            ("b-auto-2", 2),
            ("b-resource-seq", 77),
            ("b-span-seq", 78)
        ])
    );
}

#[tokio::test]
async fn the_counter_goes_on_across_requests() {
    let store = InMemoryLightningStore::new();
    let (rollout_id, attempt_id) = start(&store).await;
    for (id, name) in [(1, "first"), (2, "second")] {
        let body = protobuf(&request(vec![resource_spans(
            ids(&rollout_id, &attempt_id),
            vec![span(1, id, None, name, vec![])],
        )]));
        ingest(&store, Some(PROTOBUF), None, &body).await.expect("ingest");
    }
    let stored = spans_of(&store, &rollout_id).await;
    assert_eq!(stored.iter().map(|s| s.sequence_id).collect::<Vec<_>>(), [1, 2]);
}
