//! Response bodies: `google.rpc.Status` for errors and `ExportTraceServiceResponse` for success,
//! each protobuf or JSON to match the request (OTLP/HTTP answers in the request's encoding).

use crate::IngestReport;
use crate::decode::Format;
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTracePartialSuccess, ExportTraceServiceResponse};
use prost::Message;
use serde::Serialize;

/// `google.rpc.Status` without `details` (field numbers as in google/rpc/status.proto).
#[derive(Clone, PartialEq, Message, Serialize)]
pub struct RpcStatus {
    #[prost(int32, tag = "1")]
    pub code: i32,
    #[prost(string, tag = "2")]
    pub message: String,
}

/// Encodes a status for a request of `content_type`.
pub fn encode_status(status: &RpcStatus, content_type: Option<&str>) -> (&'static str, Vec<u8>) {
    let format = Format::for_response(content_type);
    let body = match format {
        Format::Protobuf => status.encode_to_vec(),
        Format::Json => serde_json::to_vec(status).unwrap_or_default(),
    };
    (format.content_type(), body)
}

/// The success body: an empty `ExportTraceServiceResponse` (no bytes in protobuf, `{}` in JSON).
pub fn success_response(content_type: Option<&str>) -> (&'static str, Vec<u8>) {
    encode_response(&ExportTraceServiceResponse::default(), content_type)
}

impl IngestReport {
    /// The success body for this report: with `partial_success` (`rejected_spans` = the dropped
    /// spans) when some were dropped, else the same as [`success_response`]. Agent-lightning
    /// 0.3.0 always leaves `partial_success` unset.
    pub fn response(&self, content_type: Option<&str>) -> (&'static str, Vec<u8>) {
        let partial_success = (self.dropped > 0).then(|| ExportTracePartialSuccess {
            rejected_spans: i64::try_from(self.dropped).unwrap_or(i64::MAX),
            error_message: format!(
                "{} span(s) without agentlightning.rollout_id or agentlightning.attempt_id were dropped",
                self.dropped
            ),
        });
        encode_response(&ExportTraceServiceResponse { partial_success }, content_type)
    }
}

fn encode_response(response: &ExportTraceServiceResponse, content_type: Option<&str>) -> (&'static str, Vec<u8>) {
    let format = Format::for_response(content_type);
    let body = match format {
        Format::Protobuf => response.encode_to_vec(),
        Format::Json => {
            // OTLP/JSON: lowerCamelCase keys, int64 as a string, default fields left out.
            let mut object = serde_json::Map::new();
            if let Some(partial) = &response.partial_success {
                object.insert(
                    "partialSuccess".into(),
                    serde_json::json!({
                        "rejectedSpans": partial.rejected_spans.to_string(),
                        "errorMessage": partial.error_message,
                    }),
                );
            }
            serde_json::to_vec(&object).unwrap_or_default()
        }
    };
    (format.content_type(), body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_bodies_in_both_encodings() {
        let status = RpcStatus {
            code: 3,
            message: "bad".into(),
        };
        let (content_type, body) = encode_status(&status, Some("application/x-protobuf"));
        assert_eq!(content_type, "application/x-protobuf");
        assert_eq!(body, [0x08, 0x03, 0x12, 0x03, b'b', b'a', b'd']);
        let (content_type, body) = encode_status(&status, Some("application/json"));
        assert_eq!(content_type, "application/json");
        assert_eq!(body, br#"{"code":3,"message":"bad"}"#);
    }

    #[test]
    fn success_is_an_empty_response() {
        assert_eq!(
            success_response(Some("application/x-protobuf")),
            ("application/x-protobuf", vec![])
        );
        assert_eq!(
            success_response(Some("application/json")),
            ("application/json", b"{}".to_vec())
        );
        let report = IngestReport {
            accepted: 1,
            dropped: 0,
        };
        assert_eq!(
            report.response(Some("application/json")),
            success_response(Some("application/json"))
        );
    }

    #[test]
    fn dropped_spans_are_a_partial_success() {
        let report = IngestReport {
            accepted: 1,
            dropped: 2,
        };
        let (_, body) = report.response(Some("application/json"));
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        assert_eq!(json["partialSuccess"]["rejectedSpans"], "2");
        let (_, body) = report.response(Some("application/x-protobuf"));
        let decoded = ExportTraceServiceResponse::decode(body.as_slice()).ok();
        let rejected = decoded.and_then(|r| r.partial_success).map(|p| p.rejected_spans);
        assert_eq!(rejected, Some(2));
    }
}
