//! OTLP/HTTP trace ingest into a LightningStore, as Agent-lightning 0.3.0's `POST /v1/traces`.
//!
//! A request body (`ExportTraceServiceRequest`, protobuf or OTLP/JSON, gzip or not) is decoded
//! ([`decode()`]), each span is attributed to a rollout and attempt from its `agentlightning.*`
//! attributes ([`attribution`]) and converted to the store's [`Span`] ([`convert`]); [`ingest()`]
//! then hands out the missing sequence ids and stores the batch in one `add_spans` call. Errors
//! answer with a `google.rpc.Status` body ([`status`]). This crate knows no HTTP server: the
//! server passes the `Content-Type` / `Content-Encoding` headers and the body in, and sends back
//! what [`OtlpError::response`] or [`success_response`] return.
//!
//! The reference is Agent-lightning 0.3.0's `handle_otlp_export` and `spans_from_proto`
//! (`agentlightning/utils/otlp.py`), mounted by `LightningStoreServer._setup_otlp`
//! (`agentlightning/store/client_server.py`). Where this crate differs, on purpose:
//! - OTLP/JSON (`application/json`) is accepted too, as OTLP/HTTP allows; 0.3.0 takes protobuf only;
//! - media types are matched without regard to case; an unknown `Content-Encoding` and a body
//!   that does not gunzip are 400s (0.3.0 ignores the former and fails with a 500 on the latter);
//!   a body that inflates beyond [`MAX_DECOMPRESSED_BYTES`] (or the limit given to the `_within`
//!   functions) is a 413, found while inflating;
//! - error bodies carry a `google.rpc.Code` (0.3.0 sends only the message); a failing store
//!   backend is a 503, which OTLP exporters retry;
//! - an empty rollout or attempt id counts as missing, and an all-zero parent span id as none;
//! - gzip on the *response* (0.3.0 honours `Accept-Encoding`) is left to the HTTP server.

pub mod attribution;
pub mod convert;
pub mod decode;
pub mod error;
pub mod ingest;
pub mod json;
pub mod status;

pub use decode::{
    Format, JSON_CONTENT_TYPE, MAX_DECOMPRESSED_BYTES, PROTOBUF_CONTENT_TYPE, decode_request, decode_request_within,
};
pub use error::OtlpError;
pub use ingest::{ingest, ingest_within, store_decoded};
pub use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
pub use status::success_response;

use agl_store::Span;

/// What [`ingest()`] did with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IngestReport {
    /// Spans handed to the store (a duplicate the store skips still counts as accepted).
    pub accepted: usize,
    /// Spans dropped for want of a rollout id or an attempt id.
    pub dropped: usize,
}

/// One span of a request, attributed and converted, before its sequence id is settled.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodedSpan {
    /// The store span; `span.sequence_id` is `sequence_id` when that is given, else 0 until
    /// [`ingest()`] allocates one.
    pub span: Span,
    /// The explicit `agentlightning.span_sequence_id` (span-level, else resource-level).
    pub sequence_id: Option<u64>,
}

/// The spans of a request, with how many were dropped.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Decoded {
    pub spans: Vec<DecodedSpan>,
    pub dropped: usize,
}

/// Decodes a request body and attributes its spans; nothing is stored and no sequence id is
/// allocated. Spans without a rollout or attempt id are counted in `dropped`.
pub fn decode(content_type: Option<&str>, content_encoding: Option<&str>, body: &[u8]) -> Result<Decoded, OtlpError> {
    decode_within(content_type, content_encoding, body, MAX_DECOMPRESSED_BYTES)
}

/// [`decode()`] with a gzip body inflated to at most `max_decompressed` bytes.
pub fn decode_within(
    content_type: Option<&str>,
    content_encoding: Option<&str>,
    body: &[u8],
    max_decompressed: usize,
) -> Result<Decoded, OtlpError> {
    let request = decode_request_within(content_type, content_encoding, body, max_decompressed)?;
    Ok(attribution::spans_from_request(&request))
}

/// [`decode()`] without the dropped count: pure decoding and attribution, before sequence ids.
pub fn decode_spans(
    content_type: Option<&str>,
    content_encoding: Option<&str>,
    body: &[u8],
) -> Result<Vec<DecodedSpan>, OtlpError> {
    decode(content_type, content_encoding, body).map(|decoded| decoded.spans)
}
