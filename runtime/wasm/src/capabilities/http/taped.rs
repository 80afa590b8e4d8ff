//! Outgoing HTTP on the attempt's tape (`capabilities/tape`). The call (`http.send`: method,
//! URL and headers) takes its place on the tape when the guest hands the request over, so calls
//! keep the guest's order; its answer — the request body the guest sent, then the response
//! (status, headers, the body as far as the guest read it and how it ended) or the failure — is
//! kept as the exchange goes. Replaying, the request body is read and checked against the
//! recorded one, and the recorded answer is played back through the same span accounting
//! (`RequestSpan`) a live one goes through; nothing leaves the host.
//!
//! Failures are kept as the error the guest was given. Transport errors that carry an I/O or
//! hyper error are kept by their description and replayed as `HTTP-protocol-error` (what
//! wasi:http makes of most of them).

use super::Target;
use super::send::{self, Limits, Sent};
use super::span::RequestSpan;
use crate::capabilities::tape::bytes::KeptBytes;
use crate::capabilities::tape::{TapeHandle, Ticket};
use crate::policy::Granted;
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::{BodyExt, Full};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::pin::Pin;
use std::task::{Context, Poll};
use wasmtime_wasi_http::p2::bindings::http::types::ErrorCode;
use wasmtime_wasi_http::{Error, WasiBody};

/// The tape's name of an outgoing HTTP request.
pub(crate) const HTTP_SEND: &str = "http.send";

/// The error a guest was given, as the tape keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum KeptError {
    DnsTimeout,
    DnsError {
        rcode: Option<String>,
        info_code: Option<u16>,
    },
    DestinationNotFound,
    DestinationUnavailable,
    DestinationIpProhibited,
    ConnectionRefused,
    ConnectionTimeout,
    ConnectionReadTimeout,
    HttpResponseTimeout,
    HttpRequestUriInvalid,
    HttpRequestDenied,
    TlsProtocolError,
    TlsCertificateError,
    HttpResponseBodySize(Option<u64>),
    HttpResponseIncomplete,
    /// Any other: its description.
    Other(String),
}

impl KeptError {
    pub(crate) fn of(error: &Error) -> Self {
        match error {
            Error::DnsTimeout => Self::DnsTimeout,
            Error::DnsError { rcode, info_code } => Self::DnsError {
                rcode: rcode.clone(),
                info_code: *info_code,
            },
            Error::DestinationNotFound => Self::DestinationNotFound,
            Error::DestinationUnavailable => Self::DestinationUnavailable,
            Error::DestinationIpProhibited => Self::DestinationIpProhibited,
            Error::ConnectionRefused => Self::ConnectionRefused,
            Error::ConnectionTimeout => Self::ConnectionTimeout,
            Error::ConnectionReadTimeout => Self::ConnectionReadTimeout,
            Error::HttpResponseTimeout => Self::HttpResponseTimeout,
            Error::HttpRequestUriInvalid => Self::HttpRequestUriInvalid,
            Error::HttpRequestDenied => Self::HttpRequestDenied,
            Error::TlsProtocolError => Self::TlsProtocolError,
            Error::TlsCertificateError => Self::TlsCertificateError,
            Error::HttpResponseBodySize(size) => Self::HttpResponseBodySize(*size),
            Error::Hyper(e) if e.is_incomplete_message() => Self::HttpResponseIncomplete,
            other => Self::Other(other.to_string()),
        }
    }

    fn restore(self) -> Error {
        match self {
            Self::DnsTimeout => Error::DnsTimeout,
            Self::DnsError { rcode, info_code } => Error::DnsError { rcode, info_code },
            Self::DestinationNotFound => Error::DestinationNotFound,
            Self::DestinationUnavailable => Error::DestinationUnavailable,
            Self::DestinationIpProhibited => Error::DestinationIpProhibited,
            Self::ConnectionRefused => Error::ConnectionRefused,
            Self::ConnectionTimeout => Error::ConnectionTimeout,
            Self::ConnectionReadTimeout => Error::ConnectionReadTimeout,
            Self::HttpResponseTimeout => Error::HttpResponseTimeout,
            Self::HttpRequestUriInvalid => Error::HttpRequestUriInvalid,
            Self::HttpRequestDenied => Error::HttpRequestDenied,
            Self::TlsProtocolError => Error::TlsProtocolError,
            Self::TlsCertificateError => Error::TlsCertificateError,
            Self::HttpResponseBodySize(size) => Error::HttpResponseBodySize(size),
            Self::HttpResponseIncomplete => Error::from(ErrorCode::HttpResponseIncomplete),
            Self::Other(_) => Error::from(ErrorCode::HttpProtocolError),
        }
    }
}

/// How a request failed, as its span said and its guest saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct KeptFailure {
    /// The status of a response head that came before the failure (one declaring a body past
    /// the cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered: Option<u16>,
    /// The body bytes the span had counted when a response body failed (more than the guest
    /// read: the piece that crossed the cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received: Option<u64>,
    pub kind: String,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<(String, String)>,
    pub error: KeptError,
}

/// How the response body ended for the guest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum KeptEnd {
    Complete,
    /// The guest let go of it first.
    Dropped,
    Failed(KeptFailure),
}

/// What an exchange answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum KeptResult {
    Response {
        status: u16,
        headers: Vec<(String, String)>,
        body: KeptBytes,
        end: KeptEnd,
    },
    Failure(KeptFailure),
}

/// An exchange's answer on the tape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct KeptExchange {
    pub request_body: KeptBytes,
    pub result: KeptResult,
}

/// Where a live exchange's answer goes, as it becomes known.
pub(crate) struct ExchangeTape {
    ticket: Ticket,
    request_body: KeptBytes,
}

impl ExchangeTape {
    /// The request failed before a response.
    pub(crate) fn failed(self, failure: KeptFailure) {
        let answer = KeptExchange {
            request_body: self.request_body,
            result: KeptResult::Failure(failure),
        };
        self.ticket.answer(|| to_value(&answer));
    }

    /// A response arrived: its body is kept as the guest reads it.
    pub(crate) fn responded(self, status: u16, headers: &http::HeaderMap) -> BodyTape {
        BodyTape {
            exchange: Some(self),
            status,
            headers: kept_headers(headers),
            body: Vec::new(),
        }
    }
}

/// A response body being kept: what the guest read, then how it ended (written once).
pub(crate) struct BodyTape {
    exchange: Option<ExchangeTape>,
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl BodyTape {
    pub(crate) fn read(&mut self, data: &[u8]) {
        self.body.extend_from_slice(data);
    }

    pub(crate) fn end(&mut self, end: KeptEnd) {
        let Some(exchange) = self.exchange.take() else {
            return;
        };
        let answer = KeptExchange {
            request_body: exchange.request_body,
            result: KeptResult::Response {
                status: self.status,
                headers: std::mem::take(&mut self.headers),
                body: KeptBytes::of(&self.body),
                end,
            },
        };
        exchange.ticket.answer(|| to_value(&answer));
    }
}

impl Drop for BodyTape {
    fn drop(&mut self) {
        self.end(KeptEnd::Dropped);
    }
}

fn to_value<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

fn kept_headers(headers: &http::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect()
}

/// The call as the tape keeps it: method, URL and headers (the body comes with the answer).
pub(crate) fn request_head(request: &http::Request<WasiBody>) -> Value {
    serde_json::json!({
        "method": request.method().as_str(),
        "uri": request.uri().to_string(),
        "headers": kept_headers(request.headers()),
    })
}

/// Sends an admitted request live, its answer kept through `ticket` (when the tape is on).
pub(crate) async fn send_live(
    request: http::Request<WasiBody>,
    target: Target,
    granted: Granted,
    limits: Limits,
    span: RequestSpan,
    ticket: Ticket,
) -> Result<Sent, Error> {
    if !ticket.is_kept() {
        return send::send(request, target, granted, limits, span, None).await;
    }
    let (parts, body) = request.into_parts();
    let body = body.collect().await?.to_bytes();
    let tape = ExchangeTape {
        ticket,
        request_body: KeptBytes::of(&body),
    };
    let request = http::Request::from_parts(parts, full(body));
    send::send(request, target, granted, limits, span, Some(tape)).await
}

fn full(bytes: Bytes) -> WasiBody {
    Full::new(bytes).map_err(|never| match never {}).boxed_unsync()
}

/// Plays a recorded exchange back: the guest's request body is read and checked first. Where it
/// differs, the tape decides: the request goes out live (`live` is then what sends it) or the
/// replay stops (the guest gets an error, and its next host call stops it).
pub(crate) async fn replay(
    request: http::Request<WasiBody>,
    answer: Value,
    tape: TapeHandle,
    index: usize,
    mut span: RequestSpan,
    live: impl FnOnce(
        http::Request<WasiBody>,
        RequestSpan,
        Ticket,
    ) -> Pin<Box<dyn Future<Output = Result<Sent, Error>> + Send>>,
) -> Result<Sent, Error> {
    let (parts, body) = request.into_parts();
    let body = body.collect().await?.to_bytes();
    span.sent_counter().add(body.len() as u64);
    let sent = KeptBytes::of(&body);
    let kept: Option<KeptExchange> = serde_json::from_value(answer).ok();
    let Some(kept) = kept.filter(|kept| kept.request_body == sent) else {
        let actual = serde_json::json!({ "body": to_value(&sent) });
        return match tape.diverged_late(index, actual) {
            Some(ticket) => live(http::Request::from_parts(parts, full(body)), span, ticket).await,
            None => {
                span.fail(
                    "replay-diverged",
                    "the request body differs from the recorded one".to_owned(),
                );
                Err(Error::from(ErrorCode::InternalError(Some(
                    "replay diverged".to_owned(),
                ))))
            }
        };
    };
    match kept.result {
        KeptResult::Failure(failure) => {
            if let Some(status) = failure.answered {
                span.answered(status);
            }
            fail(span, failure.refused, failure.kind, failure.reason);
            Err(failure.error.restore())
        }
        KeptResult::Response {
            status,
            headers,
            body,
            end,
        } => {
            span.answered(status);
            let mut response = http::Response::builder().status(status);
            for (name, value) in headers {
                response = response.header(name, value);
            }
            let replayed = ReplayedBody {
                data: Some(body.bytes()),
                end: Some(end),
                status,
                span: Some(span),
            };
            let response = response
                .body(replayed.boxed_unsync())
                .map_err(|e| Error::from(ErrorCode::InternalError(Some(format!("the recorded response: {e}")))))?;
            let io: Box<dyn Future<Output = Result<(), Error>> + Send> = Box::new(async { Ok(()) });
            Ok((response, io))
        }
    }
}

/// Ends a request's span as failed, with what was refused if it was.
pub(crate) fn fail(mut span: RequestSpan, refused: Option<(String, String)>, kind: String, reason: String) {
    if let Some((refused, grant)) = refused {
        span.set(super::refusal(refused, grant));
    }
    span.fail(kind, reason);
}

/// A recorded response body: its bytes, then its recorded end, through the span's accounting.
struct ReplayedBody {
    data: Option<Bytes>,
    end: Option<KeptEnd>,
    status: u16,
    span: Option<RequestSpan>,
}

impl Body for ReplayedBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = self.get_mut();
        if let Some(data) = this.data.take().filter(|data| !data.is_empty()) {
            if let Some(span) = this.span.as_mut() {
                span.add_received(data.len() as u64);
            }
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        match this.end.take() {
            Some(KeptEnd::Complete) => {
                if let Some(span) = this.span.take() {
                    span.complete(this.status);
                }
                Poll::Ready(None)
            }
            Some(KeptEnd::Failed(failure)) => {
                if let (Some(span), Some(received)) = (this.span.as_mut(), failure.received) {
                    let counted = span.add_received(0);
                    span.add_received(received.saturating_sub(counted));
                }
                if let Some(span) = this.span.take() {
                    fail(span, failure.refused, failure.kind, failure.reason);
                }
                Poll::Ready(Some(Err(failure.error.restore())))
            }
            // Dropped by the recorded guest before its end (or already ended): nothing more.
            Some(KeptEnd::Dropped) | None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none() && self.end.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_the_host_makes_come_back_as_themselves() {
        for error in [
            Error::DnsTimeout,
            Error::ConnectionRefused,
            Error::ConnectionReadTimeout,
            Error::HttpResponseBodySize(Some(10)),
            Error::DestinationIpProhibited,
        ] {
            let kept = KeptError::of(&error);
            assert_eq!(KeptError::of(&kept.clone().restore()), kept);
        }
    }
}
