//! Shared test helpers: a store with started rollouts, OTLP messages built with
//! opentelemetry-proto's types, encoders for each wire format.
#![allow(dead_code)]

use agl_store::{EnqueueRolloutRequest, InMemoryLightningStore, LightningStore, Span, SpanQuery, StartRolloutRequest};
use flate2::Compression;
use flate2::write::GzEncoder;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span as ProtoSpan};
use prost::Message;
use std::io::Write;
use std::sync::Arc;

pub use any_value::Value as V;

pub const PROTOBUF: &str = "application/x-protobuf";
pub const JSON: &str = "application/json";
pub const ROLLOUT_ID: &str = "agentlightning.rollout_id";
pub const ATTEMPT_ID: &str = "agentlightning.attempt_id";
pub const SEQUENCE_ID: &str = "agentlightning.span_sequence_id";

/// A rollout started in the store: `(rollout_id, attempt_id)`.
pub async fn start(store: &InMemoryLightningStore) -> (String, String) {
    let started = store
        .start_rollout(StartRolloutRequest {
            rollout: EnqueueRolloutRequest::new(serde_json::json!({"task": 1})),
            worker_id: None,
        })
        .await
        .expect("start_rollout");
    (started.rollout.rollout_id, started.attempt.attempt_id)
}

/// Every span of a rollout, in sequence order.
pub async fn spans_of(store: &InMemoryLightningStore, rollout_id: &str) -> Vec<Arc<Span>> {
    store
        .query_spans(&SpanQuery::for_rollout(rollout_id))
        .await
        .expect("query_spans")
        .items
}

pub fn kv(key: &str, value: V) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(value) }),
        key_strindex: 0,
    }
}

pub fn s(key: &str, value: &str) -> KeyValue {
    kv(key, V::StringValue(value.into()))
}

pub fn ids(rollout_id: &str, attempt_id: &str) -> Vec<KeyValue> {
    vec![s(ROLLOUT_ID, rollout_id), s(ATTEMPT_ID, attempt_id)]
}

/// A span with trace id `[trace; 16]`, span id `[id; 8]` and an optional parent `[parent; 8]`.
pub fn span(trace: u8, id: u8, parent: Option<u8>, name: &str, attributes: Vec<KeyValue>) -> ProtoSpan {
    ProtoSpan {
        trace_id: vec![trace; 16],
        span_id: vec![id; 8],
        parent_span_id: parent.map(|p| vec![p; 8]).unwrap_or_default(),
        name: name.into(),
        kind: 1,
        start_time_unix_nano: 1_700_000_000_000_000_000 + u64::from(id) * 1_000_000,
        end_time_unix_nano: 1_700_000_000_500_000_000 + u64::from(id) * 1_000_000,
        attributes,
        ..Default::default()
    }
}

pub fn resource_spans(resource: Vec<KeyValue>, spans: Vec<ProtoSpan>) -> ResourceSpans {
    ResourceSpans {
        resource: Some(Resource {
            attributes: resource,
            ..Default::default()
        }),
        scope_spans: vec![ScopeSpans {
            scope: Some(InstrumentationScope {
                name: "test-scope".into(),
                version: "1.0".into(),
                ..Default::default()
            }),
            spans,
            schema_url: String::new(),
        }],
        schema_url: String::new(),
    }
}

pub fn request(resource_spans: Vec<ResourceSpans>) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest { resource_spans }
}

pub fn protobuf(request: &ExportTraceServiceRequest) -> Vec<u8> {
    request.encode_to_vec()
}

/// OTLP/JSON as opentelemetry-proto's serde writes it (hex ids, int64 as strings).
pub fn json(request: &ExportTraceServiceRequest) -> Vec<u8> {
    serde_json::to_vec(request).expect("serialize OTLP/JSON")
}

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(bytes).expect("gzip");
    encoder.finish().expect("gzip")
}
