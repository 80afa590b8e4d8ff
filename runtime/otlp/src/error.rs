//! What can go wrong with an OTLP request, its HTTP status and its `google.rpc.Status` body.

use crate::status::{self, RpcStatus};
use agl_store::StoreError;

/// `google.rpc.Code` values used in error bodies.
pub mod code {
    pub const INVALID_ARGUMENT: i32 = 3;
    pub const INTERNAL: i32 = 13;
    pub const NOT_FOUND: i32 = 5;
    pub const UNAVAILABLE: i32 = 14;
}

#[derive(Debug, thiserror::Error)]
pub enum OtlpError {
    /// Neither `application/x-protobuf` nor `application/json` (the media type, or empty).
    #[error("Unsupported Content-Type '{0}', expected 'application/x-protobuf' or 'application/json'")]
    UnsupportedContentType(String),
    /// An unsupported `Content-Encoding`, or a body that does not gunzip.
    #[error("{0}")]
    BadEncoding(String),
    /// The body inflates beyond the limit ([`crate::MAX_DECOMPRESSED_BYTES`] unless given).
    #[error("the gzip body inflates to more than the limit of {limit} bytes; send smaller batches")]
    BodyTooLarge { limit: usize },
    /// Not an `ExportTraceServiceRequest` in the announced format.
    #[error("{0}")]
    Decode(String),
    /// The store refused or failed (an unknown rollout or attempt rejects the whole batch).
    #[error("store error: {0}")]
    Store(#[from] StoreError),
}

impl OtlpError {
    /// 400 for a bad request (content type, encoding, body), 413 for a body that inflates too
    /// far, 503 for a store backend failure (OTLP exporters retry it), 404 for spans of an unknown
    /// rollout or attempt and 400 for other store refusals (final: a 5xx would be retried).
    pub fn http_status(&self) -> u16 {
        match self {
            Self::UnsupportedContentType(_) | Self::BadEncoding(_) | Self::Decode(_) => 400,
            Self::BodyTooLarge { .. } => 413,
            Self::Store(StoreError::Backend(_)) => 503,
            // Spans naming an unknown rollout or attempt, or otherwise invalid: the client's
            // fault, final (a 5xx would make exporters retry for nothing).
            Self::Store(e) if e.is_not_found() => 404,
            Self::Store(_) => 400,
        }
    }

    /// The `google.rpc.Code` of the error body.
    pub fn grpc_code(&self) -> i32 {
        match self.http_status() {
            503 => code::UNAVAILABLE,
            404 => code::NOT_FOUND,
            _ => code::INVALID_ARGUMENT,
        }
    }

    /// The error body: `(content type, google.rpc.Status)`, JSON for a JSON request, protobuf
    /// otherwise.
    pub fn response(&self, content_type: Option<&str>) -> (&'static str, Vec<u8>) {
        status::encode_status(
            &RpcStatus {
                code: self.grpc_code(),
                message: self.to_string(),
            },
            content_type,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_codes() {
        let cases = [
            (
                OtlpError::UnsupportedContentType("text/plain".into()),
                400,
                code::INVALID_ARGUMENT,
            ),
            (OtlpError::BadEncoding("x".into()), 400, code::INVALID_ARGUMENT),
            (OtlpError::Decode("x".into()), 400, code::INVALID_ARGUMENT),
            (OtlpError::BodyTooLarge { limit: 1 }, 413, code::INVALID_ARGUMENT),
            (
                OtlpError::Store(StoreError::RolloutNotFound("ro".into())),
                404,
                code::NOT_FOUND,
            ),
            (
                OtlpError::Store(StoreError::InvalidArgument("x".into())),
                400,
                code::INVALID_ARGUMENT,
            ),
            (
                OtlpError::Store(StoreError::Backend("down".into())),
                503,
                code::UNAVAILABLE,
            ),
        ];
        for (error, http, grpc) in cases {
            assert_eq!((error.http_status(), error.grpc_code()), (http, grpc), "{error}");
        }
    }
}
