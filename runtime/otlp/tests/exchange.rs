//! The one OTLP exchange captured between Agent-lightning 0.3.0's client and server
//! (`tests/fixtures/agentlightning-0.3/exchanges.jsonl`, path `/v1/traces`).
//!
//! The capture stored the protobuf body as a *lossy* UTF-8 string: every byte sequence that was
//! not valid UTF-8 (in the trace and span ids, the timestamps, and the outer length prefixes)
//! became U+FFFD, so the body as a whole cannot be decoded (and `ingest` refuses it with a 400
//! rather than storing garbage). The parts that were plain ASCII survive byte for byte: the
//! whole `Resource` message (with the rollout and attempt ids), the span name and its attribute.
//! These tests decode those captured parts and put them back into a well-formed request.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test: a failed step panics and fails it"
)]

mod common;

use agl_otlp::{OtlpError, decode, ingest, success_response};
use agl_store::InMemoryLightningStore;
use common::*;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::ResourceSpans;
use prost::Message;
use serde_json::Value;

const EXCHANGES: &str = include_str!("../../../tests/fixtures/agentlightning-0.3/exchanges.jsonl");

fn captured() -> Value {
    EXCHANGES
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|exchange| exchange["path"] == "/v1/traces")
        .expect("the /v1/traces exchange")
}

fn captured_body() -> Vec<u8> {
    captured()["req_body"]
        .as_str()
        .expect("req_body string")
        .as_bytes()
        .to_vec()
}

/// The bytes of the length-delimited field whose tag byte and one-byte length start at the
/// first occurrence of `marker` (which begins with the tag).
fn field_at<'a>(body: &'a [u8], marker: &[u8]) -> &'a [u8] {
    let at = body
        .windows(marker.len())
        .position(|w| w == marker)
        .expect("marker in the captured body");
    let len = usize::from(body[at + 1]);
    &body[at + 2..at + 2 + len]
}

#[test]
fn the_capture_is_lossy() {
    let exchange = captured();
    assert_eq!(exchange["req_headers"]["Content-Type"], PROTOBUF);
    assert_eq!(exchange["status"], 200);
    let text = exchange["req_body"].as_str().expect("req_body string");
    assert!(
        text.contains('\u{FFFD}'),
        "bytes were replaced by U+FFFD: the raw body is gone"
    );
}

#[tokio::test]
async fn the_lossy_body_is_refused_not_misread() {
    let store = InMemoryLightningStore::new();
    let error = ingest(&store, Some(PROTOBUF), None, &captured_body())
        .await
        .expect_err("a corrupted length prefix");
    assert!(matches!(error, OtlpError::Decode(_)), "{error:?}");
    assert_eq!(error.http_status(), 400);
}

#[test]
fn the_captured_resource_and_attribute_decode_and_attribute_the_span() {
    let body = captured_body();
    // ResourceSpans (tag 0x0a, length lost) → Resource (tag 0x0a, 92 bytes, intact).
    let resource = Resource::decode(field_at(&body, b"\n\\\n.\n\x19agentlightning.rollout_id")).expect("Resource");
    let name = String::from_utf8(field_at(&body, b"*\x16openai").to_vec()).expect("span name");
    let attribute = KeyValue::decode(field_at(&body, b"J\x1f\n\x17gen_ai")).expect("KeyValue");
    assert_eq!(name, "openai.chat.completion");

    // The captured parts in a well-formed request, with fresh ids and times.
    let mut rebuilt = span(0x5a, 0x61, None, &name, vec![attribute]);
    rebuilt.kind = 3;
    let request = request(vec![ResourceSpans {
        resource: Some(resource),
        ..resource_spans(vec![], vec![rebuilt])
    }]);
    let decoded = decode(Some(PROTOBUF), None, &protobuf(&request)).expect("decode");
    assert_eq!(decoded.dropped, 0);
    let [one] = decoded.spans.as_slice() else {
        panic!("one span expected");
    };
    assert_eq!(one.span.rollout_id, "ro-a538efef5409");
    assert_eq!(one.span.attempt_id, "at-5a618b20");
    assert_eq!(
        one.sequence_id, None,
        "0.3.0's client sent no sequence id: the server issues one"
    );
    assert_eq!(one.span.name, "openai.chat.completion");
    assert_eq!(one.span.attributes["gen_ai.prompt.0.content"], "hi");
    assert_eq!(
        one.span.resource.attributes["agentlightning.rollout_id"],
        "ro-a538efef5409"
    );
}

#[test]
fn the_success_response_matches_the_capture() {
    let exchange = captured();
    // 0.3.0 answered 200 with an empty ExportTraceServiceResponse: zero bytes of protobuf.
    assert_eq!(exchange["resp_body"], "");
    assert_eq!(success_response(Some(PROTOBUF)), (PROTOBUF, Vec::new()));
}
