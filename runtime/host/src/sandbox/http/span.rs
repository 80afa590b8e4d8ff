//! One request's span, from `outgoing-handler.handle` to the end of its response body: a child
//! of the operation open when the guest sent it (or of the attempt's root). It carries the
//! method, scheme, host, port and path (not the query, not the bodies), the status, the bytes sent
//! and received and the time to the response's head; a refused or failed request ends it as an
//! error with the reason. A span dropped unfinished (the guest let go of the request or its body,
//! or its instance ended) is ended then with what it saw.

use crate::spans::LiveSpan;
use opentelemetry::KeyValue;
use opentelemetry::trace::Status;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// The span's name and attribute keys (OpenTelemetry's HTTP client conventions where they have one).
pub(crate) mod keys {
    pub const SPAN: &str = "agl.http.request";
    pub const METHOD: &str = "http.request.method";
    pub const SCHEME: &str = "url.scheme";
    pub const HOST: &str = "server.address";
    pub const PORT: &str = "server.port";
    pub const PATH: &str = "url.path";
    pub const STATUS: &str = "http.response.status_code";
    pub const BYTES_SENT: &str = "http.request.body.size";
    pub const BYTES_RECEIVED: &str = "http.response.body.size";
    /// Milliseconds from `handle` to the response's head.
    pub const LATENCY_MS: &str = "agl.http.latency_ms";
    /// False when the guest stopped before the response body's end.
    pub const BODY_COMPLETE: &str = "agl.http.response.body.complete";
    /// Requests sent so far in this attempt, this one included.
    pub const REQUESTS_USED: &str = "agl.http.requests_used";
    pub use crate::spans::names::ERROR_TYPE;
}

/// The span of one request in flight; inert when the trace had no room for it (or no trace).
pub(crate) struct RequestSpan {
    span: Option<LiveSpan>,
    started: Instant,
    sent: Arc<AtomicU64>,
    received: u64,
    /// Whether the response head arrived (a later drop means the body was not read to its end).
    answered: bool,
}

impl RequestSpan {
    pub(crate) fn new(span: Option<LiveSpan>) -> Self {
        Self {
            span,
            started: Instant::now(),
            sent: Arc::default(),
            received: 0,
            answered: false,
        }
    }

    /// The counter the request body adds the bytes it sends to.
    pub(crate) fn sent_counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.sent)
    }

    pub(crate) fn set(&mut self, attributes: impl IntoIterator<Item = KeyValue>) {
        if let Some(span) = self.span.as_mut() {
            span.set_attributes(attributes);
        }
    }

    /// The response head arrived with `status`.
    pub(crate) fn answered(&mut self, status: u16) {
        self.answered = true;
        let latency_ms = self.started.elapsed().as_secs_f64() * 1000.0;
        self.set([
            KeyValue::new(keys::STATUS, i64::from(status)),
            KeyValue::new(keys::LATENCY_MS, latency_ms),
        ]);
    }

    pub(crate) fn add_received(&mut self, bytes: u64) {
        self.received = self.received.saturating_add(bytes);
    }

    pub(crate) fn received(&self) -> u64 {
        self.received
    }

    /// Ends the span: the exchange is over (`Ok` for 1xx-3xx, an error naming a 4xx/5xx status).
    pub(crate) fn complete(mut self, status: u16) {
        let outcome = if status >= 400 {
            Status::error(format!("HTTP status {status}"))
        } else {
            Status::Ok
        };
        self.end(outcome, vec![KeyValue::new(keys::BODY_COMPLETE, true)]);
    }

    /// Ends the span as failed: `kind` (its `error.type`) and the reason.
    pub(crate) fn fail(mut self, kind: &'static str, reason: String) {
        self.end(Status::error(reason), vec![KeyValue::new(keys::ERROR_TYPE, kind)]);
    }

    fn end(&mut self, status: Status, mut attributes: Vec<KeyValue>) {
        let Some(mut span) = self.span.take() else { return };
        attributes.push(KeyValue::new(
            keys::BYTES_SENT,
            bytes(self.sent.load(Ordering::Relaxed)),
        ));
        attributes.push(KeyValue::new(keys::BYTES_RECEIVED, bytes(self.received)));
        span.set_attributes(attributes);
        span.end_with(status);
    }
}

impl Drop for RequestSpan {
    fn drop(&mut self) {
        if self.span.is_none() {
            return;
        }
        if self.answered {
            // The guest let go of the body before its end: the exchange stopped there.
            self.end(Status::Unset, vec![KeyValue::new(keys::BODY_COMPLETE, false)]);
        } else {
            self.end(
                Status::error("abandoned before the response arrived (the guest dropped it, or its instance ended)"),
                vec![KeyValue::new(keys::ERROR_TYPE, "abandoned")],
            );
        }
    }
}

fn bytes(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
