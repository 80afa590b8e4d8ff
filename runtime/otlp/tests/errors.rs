//! Bad requests and store failures answer with a `google.rpc.Status` body in the request's
//! encoding (protobuf unless the request was JSON), and store nothing.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test: a failed step panics and fails it"
)]

mod common;

use agl_otlp::status::RpcStatus;
use agl_otlp::{OtlpError, ingest};
use agl_store::InMemoryLightningStore;
use common::*;
use prost::Message;

async fn refused(content_type: Option<&str>, encoding: Option<&str>, body: &[u8]) -> OtlpError {
    let store = InMemoryLightningStore::new();
    ingest(&store, content_type, encoding, body)
        .await
        .expect_err("the request should be refused")
}

fn protobuf_status(body: &[u8]) -> RpcStatus {
    RpcStatus::decode(body).expect("a google.rpc.Status")
}

#[tokio::test]
async fn an_unsupported_content_type_is_400_with_a_protobuf_status() {
    for content_type in [Some("text/plain"), Some("application/grpc"), None] {
        let error = refused(content_type, None, b"whatever").await;
        assert!(matches!(error, OtlpError::UnsupportedContentType(_)), "{error:?}");
        assert_eq!(error.http_status(), 400);
        let (response_type, body) = error.response(content_type);
        assert_eq!(response_type, PROTOBUF, "0.3.0 answers unsupported types in protobuf");
        let status = protobuf_status(&body);
        assert_eq!(status.code, 3);
        assert!(
            status.message.starts_with("Unsupported Content-Type"),
            "{}",
            status.message
        );
    }
}

#[tokio::test]
async fn an_undecodable_protobuf_body_is_400() {
    let error = refused(Some(PROTOBUF), None, &[0x0a, 0xff, 0xff, 0x01]).await;
    assert!(matches!(error, OtlpError::Decode(_)), "{error:?}");
    assert_eq!(error.http_status(), 400);
    let status = protobuf_status(&error.response(Some(PROTOBUF)).1);
    assert_eq!(status.code, 3);
    assert!(
        status.message.contains("Unable to parse OTLP traces payload"),
        "{}",
        status.message
    );
}

#[tokio::test]
async fn undecodable_json_is_400_with_a_json_status() {
    for body in [
        &b"{not json"[..],
        br#"{"resourceSpans": 3}"#,
        br#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"xyz"}]}]}]}"#,
    ] {
        let error = refused(Some(JSON), None, body).await;
        assert!(matches!(error, OtlpError::Decode(_)), "{error:?}");
        assert_eq!(error.http_status(), 400);
        let (response_type, body) = error.response(Some(JSON));
        assert_eq!(response_type, JSON);
        let status: serde_json::Value = serde_json::from_slice(&body).expect("JSON status");
        assert_eq!(status["code"], 3);
        assert!(status["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
}

#[tokio::test]
async fn bad_gzip_and_unknown_encodings_are_400() {
    let body = protobuf(&request(vec![]));
    for (encoding, payload) in [("gzip", body.clone()), ("br", gzip(&body)), ("deflate", gzip(&body))] {
        let error = refused(Some(PROTOBUF), Some(encoding), &payload).await;
        assert!(matches!(error, OtlpError::BadEncoding(_)), "{encoding}: {error:?}");
        assert_eq!(error.http_status(), 400);
        assert_eq!(protobuf_status(&error.response(Some(PROTOBUF)).1).code, 3);
    }
    let truncated = gzip(&body);
    let error = refused(Some(PROTOBUF), Some("gzip"), &truncated[..truncated.len() / 2]).await;
    assert!(matches!(error, OtlpError::BadEncoding(_)), "{error:?}");
}

#[tokio::test]
async fn an_unknown_rollout_is_a_store_error_and_stores_nothing() {
    let store = InMemoryLightningStore::new();
    let (rollout_id, attempt_id) = start(&store).await;
    let body = protobuf(&request(vec![resource_spans(
        vec![],
        vec![
            span(1, 1, None, "known", ids(&rollout_id, &attempt_id)),
            span(1, 2, None, "unknown", ids("ro-missing", "at-missing")),
        ],
    )]));
    for content_type in [PROTOBUF, JSON] {
        let body = if content_type == JSON {
            json(&protobuf_to_request(&body))
        } else {
            body.clone()
        };
        let error = ingest(&store, Some(content_type), None, &body)
            .await
            .expect_err("unknown rollout");
        assert!(matches!(error, OtlpError::Store(_)), "{error:?}");
        assert_eq!(error.http_status(), 404);
        let (response_type, response) = error.response(Some(content_type));
        assert_eq!(response_type, content_type);
        let code = if content_type == JSON {
            serde_json::from_slice::<serde_json::Value>(&response).expect("json")["code"].clone()
        } else {
            serde_json::json!(protobuf_status(&response).code)
        };
        assert_eq!(code, 5);
    }
    // An explicit sequence id skips the allocation step; add_spans still refuses the batch.
    let body = protobuf(&request(vec![resource_spans(
        vec![s(SEQUENCE_ID, "5")],
        vec![
            span(1, 1, None, "known", ids(&rollout_id, &attempt_id)),
            span(1, 2, None, "unknown", ids(&rollout_id, "at-missing")),
        ],
    )]));
    let error = ingest(&store, Some(PROTOBUF), None, &body)
        .await
        .expect_err("unknown attempt");
    assert_eq!(error.http_status(), 404);
    assert!(spans_of(&store, &rollout_id).await.is_empty());
}

fn protobuf_to_request(body: &[u8]) -> opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest {
    Message::decode(body).expect("protobuf")
}
