//! Requests built with opentelemetry-proto's types, sent as protobuf, OTLP/JSON and gzip, come
//! out of `ingest` as the spans Agent-lightning 0.3.0 would store.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test: a failed step panics and fails it"
)]

mod common;

use agl_otlp::{decode, decode_spans, ingest, success_response};
use agl_store::{InMemoryLightningStore, StatusCode};
use common::*;
use opentelemetry_proto::tonic::common::v1::{AnyValue, ArrayValue, KeyValue, KeyValueList};
use opentelemetry_proto::tonic::trace::v1::{Status, span};
use serde_json::json;

/// One span using every field the conversion reads.
fn rich_request(
    rollout_id: &str,
    attempt_id: &str,
) -> opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest {
    let mut child = span(
        0x11,
        0x02,
        Some(0x01),
        "openai.chat.completion",
        vec![
            s("gen_ai.prompt.0.content", "hi"),
            kv("flag", V::BoolValue(true)),
            kv("tokens", V::IntValue(-42)),
            kv("temperature", V::DoubleValue(0.25)),
            kv("blob", V::BytesValue(vec![0xde, 0xad])),
            kv(
                "list",
                V::ArrayValue(ArrayValue {
                    values: vec![
                        AnyValue {
                            value: Some(V::IntValue(1)),
                        },
                        AnyValue {
                            value: Some(V::StringValue("two".into())),
                        },
                    ],
                }),
            ),
            kv(
                "map",
                V::KvlistValue(KeyValueList {
                    values: vec![s("inner", "x")],
                }),
            ),
            KeyValue {
                key: "empty".into(),
                value: None,
                key_strindex: 0,
            },
        ],
    );
    child.status = Some(Status {
        message: "rate limited".into(),
        code: 2,
    });
    child.events = vec![span::Event {
        time_unix_nano: 1_700_000_000_250_000_000,
        name: "exception".into(),
        attributes: vec![s("exception.type", "RateLimit")],
        dropped_attributes_count: 0,
    }];
    child.links = vec![
        span::Link {
            trace_id: vec![0x22; 16],
            span_id: vec![0x33; 8],
            attributes: vec![s("why", "retry-of")],
            ..Default::default()
        },
        span::Link {
            trace_id: vec![0x22; 16],
            span_id: vec![0x44; 8],
            ..Default::default()
        },
    ];
    let mut resource = resource_spans(
        [ids(rollout_id, attempt_id), vec![s("service.name", "agent")]].concat(),
        vec![span(0x11, 0x01, None, "agent.run", vec![]), child],
    );
    resource.schema_url = "https://opentelemetry.io/schemas/1.26.0".into();
    request(vec![resource])
}

#[tokio::test]
async fn protobuf_spans_are_stored_field_for_field() {
    let store = InMemoryLightningStore::new();
    let (rollout_id, attempt_id) = start(&store).await;
    let body = protobuf(&rich_request(&rollout_id, &attempt_id));

    let report = ingest(&store, Some(PROTOBUF), None, &body).await.expect("ingest");
    assert_eq!((report.accepted, report.dropped), (2, 0));

    let spans = spans_of(&store, &rollout_id).await;
    assert_eq!(spans.len(), 2);
    let (root, child) = (&spans[0], &spans[1]);
    assert_eq!((root.sequence_id, child.sequence_id), (1, 2));
    assert_eq!(root.name, "agent.run");
    assert_eq!(root.parent_id, None);
    assert_eq!(root.status.status_code, StatusCode::Unset);

    assert_eq!(child.rollout_id, rollout_id);
    assert_eq!(child.attempt_id, attempt_id);
    assert_eq!(child.trace_id, "11".repeat(16));
    assert_eq!(child.span_id, "0202020202020202");
    assert_eq!(child.parent_id.as_deref(), Some("0101010101010101"));
    assert_eq!(child.status.status_code, StatusCode::Error);
    assert_eq!(child.status.description.as_deref(), Some("rate limited"));
    assert_eq!(
        serde_json::Value::Object(child.attributes.clone()),
        json!({
            "gen_ai.prompt.0.content": "hi",
            "flag": true,
            "tokens": -42,
            "temperature": 0.25,
            "blob": "dead",
            "list": [1, "two"],
            "map": {"inner": "x"},
            "empty": null,
        })
    );
    assert_eq!(child.start_time, Some(1_700_000_000.002));
    assert_eq!(child.end_time, Some(1_700_000_000.502));
    let context = child.context.as_ref().expect("context");
    assert_eq!(
        (context.trace_id.as_str(), context.span_id.as_str()),
        (child.trace_id.as_str(), "0202020202020202")
    );
    assert!(!context.is_remote);
    assert_eq!(child.parent, None, "OTLP carries only the parent's span id");

    assert_eq!(child.events.len(), 1);
    assert_eq!(child.events[0].name, "exception");
    assert_eq!(child.events[0].timestamp, Some(1_700_000_000.25));
    assert_eq!(child.events[0].attributes["exception.type"], "RateLimit");
    assert_eq!(child.links.len(), 2);
    assert_eq!(child.links[0].context.span_id, "3333333333333333");
    assert_eq!(
        child.links[0].attributes.as_ref().map(|a| a["why"].clone()),
        Some(json!("retry-of"))
    );
    assert_eq!(
        child.links[1].attributes, None,
        "empty link attributes are None, as in 0.3.0"
    );

    assert_eq!(child.resource.schema_url, "https://opentelemetry.io/schemas/1.26.0");
    assert_eq!(child.resource.attributes["service.name"], "agent");
    assert_eq!(child.resource.attributes[ROLLOUT_ID], rollout_id.as_str());
}

#[test]
fn otlp_json_decodes_to_the_same_spans_as_protobuf() {
    let request = rich_request("ro-1", "at-1");
    let from_protobuf = decode_spans(Some(PROTOBUF), None, &protobuf(&request)).expect("protobuf");
    let from_json = decode_spans(Some(JSON), None, &json(&request)).expect("json");
    assert_eq!(from_protobuf.len(), 2);
    assert_eq!(from_json, from_protobuf);
}

#[test]
fn gzip_works_for_both_formats() {
    let request = rich_request("ro-1", "at-1");
    let plain = decode_spans(Some(PROTOBUF), None, &protobuf(&request)).expect("plain");
    let zipped = decode_spans(Some(PROTOBUF), Some("gzip"), &gzip(&protobuf(&request))).expect("gzip protobuf");
    assert_eq!(zipped, plain);
    let zipped_json = decode_spans(Some(JSON), Some("gzip"), &gzip(&json(&request))).expect("gzip json");
    assert_eq!(zipped_json, plain);
}

/// OTLP/JSON as the spec writes it, by hand: upper-case hex ids, int64 as strings, enums as
/// integers, an empty `arrayValue`, nulls and unknown keys.
#[test]
fn handwritten_otlp_json_follows_the_spec() {
    let body = r#"{
      "resourceSpans": [{
        "resource": {"attributes": [
          {"key": "agentlightning.rollout_id", "value": {"stringValue": "ro-json"}},
          {"key": "agentlightning.attempt_id", "value": {"stringValue": "at-json"}}
        ]},
        "schemaUrl": null,
        "scopeSpans": [{
          "scope": {"name": "manual"},
          "spans": [{
            "traceId": "5B8EFFF798038103D269B633813FC60C",
            "spanId": "EEE19B7EC3C1B174",
            "parentSpanId": "",
            "name": "I'm a server span",
            "kind": 2,
            "startTimeUnixNano": "1544712660000000000",
            "endTimeUnixNano": 1544712661000000000,
            "attributes": [
              {"key": "agentlightning.span_sequence_id", "value": {"intValue": "9"}},
              {"key": "big", "value": {"intValue": "9007199254740993"}},
              {"key": "none", "value": {"arrayValue": {}}},
              {"key": "inf", "value": {"doubleValue": "Infinity"}}
            ],
            "droppedAttributesCount": "0",
            "events": null,
            "status": {"code": 1},
            "futureField": {"x": 1}
          }]
        }]
      }]
    }"#;
    let decoded = decode(Some("application/json; charset=utf-8"), None, body.as_bytes()).expect("decode");
    assert_eq!(decoded.dropped, 0);
    let [one] = decoded.spans.as_slice() else {
        panic!("one span expected, got {}", decoded.spans.len());
    };
    assert_eq!(one.sequence_id, Some(9));
    let span = &one.span;
    assert_eq!(
        (span.rollout_id.as_str(), span.attempt_id.as_str()),
        ("ro-json", "at-json")
    );
    assert_eq!(span.trace_id, "5b8efff798038103d269b633813fc60c");
    assert_eq!(span.span_id, "eee19b7ec3c1b174");
    assert_eq!(span.parent_id, None);
    assert_eq!(span.status.status_code, StatusCode::Ok);
    assert_eq!(span.start_time, Some(1_544_712_660.0));
    assert_eq!(span.end_time, Some(1_544_712_661.0));
    assert_eq!(
        span.attributes["big"],
        json!(9_007_199_254_740_993_i64),
        "int64 kept exactly"
    );
    assert_eq!(span.attributes["none"], json!([]));
    assert_eq!(
        span.attributes["inf"],
        json!(null),
        "non-finite doubles have no JSON number"
    );
    assert_eq!(span.resource.schema_url, "");
}

#[tokio::test]
async fn many_resources_and_scopes_keep_request_order() {
    let store = InMemoryLightningStore::new();
    let (ro_a, at_a) = start(&store).await;
    let (ro_b, at_b) = start(&store).await;
    let mut first = resource_spans(ids(&ro_a, &at_a), vec![span(1, 1, None, "a1", vec![])]);
    let mut second_scope = first.scope_spans[0].clone();
    second_scope.scope = None;
    second_scope.spans = vec![span(1, 2, Some(1), "a2", vec![])];
    first.scope_spans.push(second_scope);
    let second = resource_spans(
        ids(&ro_b, &at_b),
        vec![span(2, 1, None, "b1", vec![]), span(2, 2, Some(1), "b2", vec![])],
    );
    let third = resource_spans(ids(&ro_a, &at_a), vec![span(1, 3, Some(1), "a3", vec![])]);
    let body = protobuf(&request(vec![first, second, third]));

    let report = ingest(&store, Some(PROTOBUF), None, &body).await.expect("ingest");
    assert_eq!(report.accepted, 5);
    let names_and_sequence = |spans: Vec<std::sync::Arc<agl_store::Span>>| {
        spans
            .iter()
            .map(|s| (s.name.clone(), s.sequence_id))
            .collect::<Vec<_>>()
    };
    let a = names_and_sequence(spans_of(&store, &ro_a).await);
    let b = names_and_sequence(spans_of(&store, &ro_b).await);
    assert_eq!(a, [("a1".to_string(), 1), ("a2".to_string(), 2), ("a3".to_string(), 3)]);
    assert_eq!(b, [("b1".to_string(), 1), ("b2".to_string(), 2)]);
}

#[tokio::test]
async fn an_empty_request_succeeds_with_an_empty_response() {
    let store = InMemoryLightningStore::new();
    for (content_type, body) in [
        (PROTOBUF, Vec::new()),
        (JSON, b"{}".to_vec()),
        (PROTOBUF, protobuf(&request(vec![]))),
    ] {
        let report = ingest(&store, Some(content_type), None, &body).await.expect("ingest");
        assert_eq!((report.accepted, report.dropped), (0, 0));
    }
    assert_eq!(success_response(Some(PROTOBUF)).1, Vec::<u8>::new());
}

#[tokio::test]
async fn a_repeated_export_is_not_stored_twice() {
    let store = InMemoryLightningStore::new();
    let (rollout_id, attempt_id) = start(&store).await;
    let body = protobuf(&rich_request(&rollout_id, &attempt_id));
    ingest(&store, Some(PROTOBUF), None, &body).await.expect("first");
    let again = ingest(&store, Some(PROTOBUF), None, &body).await.expect("second");
    assert_eq!(again.accepted, 2, "accepted, and skipped by the store as duplicates");
    assert_eq!(spans_of(&store, &rollout_id).await.len(), 2);
}
