//! One request's span, from `outgoing-handler.handle` to the end of its response body: a child
//! of the operation open when the guest sent it (or of the attempt's root). It carries the
//! method, scheme, host, port and path (not the query, not the bodies), the status, the bytes sent
//! and received and the time to the response's head; a refused or failed request ends it as an
//! error with the reason. A span dropped unfinished (the guest let go of the request or its body)
//! is ended then with what it saw; one still open when the instance ends is ended by
//! [`OpenSpans::close_all`], before the attempt's trace is.

use agl_trace::LiveSpan;
use opentelemetry::KeyValue;
use opentelemetry::trace::Status;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Instant;

use agl_trace::names::http as keys;

/// What one request's span shares between the request, its body and the instance's list of
/// open requests: the span itself (taken once, by whoever ends it) and its counters.
struct Slot {
    span: Mutex<Option<LiveSpan>>,
    sent: AtomicU64,
    received: AtomicU64,
    /// Whether the response head arrived (a later drop means the body was not read to its end).
    answered: AtomicBool,
}

impl Slot {
    fn end(&self, status: Status, mut attributes: Vec<KeyValue>) {
        let Some(mut span) = self.span.lock().take() else {
            return;
        };
        attributes.push(KeyValue::new(
            keys::BYTES_SENT,
            bytes(self.sent.load(Ordering::Relaxed)),
        ));
        attributes.push(KeyValue::new(
            keys::BYTES_RECEIVED,
            bytes(self.received.load(Ordering::Relaxed)),
        ));
        span.set_attributes(attributes);
        span.end_with(status);
    }
}

/// The span of one request in flight; inert when the trace had no room for it (or no trace).
pub(crate) struct RequestSpan {
    slot: Arc<Slot>,
    started: Instant,
}

/// Where the request body counts the bytes it sends.
pub(crate) struct SentCounter(Arc<Slot>);

impl SentCounter {
    pub(crate) fn add(&self, bytes: u64) {
        self.0.sent.fetch_add(bytes, Ordering::Relaxed);
    }
}

/// The spans of an instance's requests still in flight, so that they end with the instance
/// (before its trace does) rather than whenever their last piece is dropped.
#[derive(Default)]
pub(crate) struct OpenSpans(Vec<Weak<Slot>>);

impl OpenSpans {
    pub(crate) fn track(&mut self, span: &RequestSpan) {
        self.0.retain(|slot| slot.strong_count() > 0);
        self.0.push(Arc::downgrade(&span.slot));
    }

    /// Ends every span still open: the instance ended while its request was in flight.
    pub(crate) fn close_all(&mut self) {
        for slot in self.0.drain(..).filter_map(|slot| slot.upgrade()) {
            let complete = slot
                .answered
                .load(Ordering::Relaxed)
                .then(|| KeyValue::new(keys::BODY_COMPLETE, false));
            let mut attributes = vec![KeyValue::new(keys::ERROR_TYPE, "abandoned")];
            attributes.extend(complete);
            slot.end(
                Status::error("the instance ended while the request was in flight (its attempt ended or trapped)"),
                attributes,
            );
        }
    }
}

impl RequestSpan {
    pub(crate) fn new(span: Option<LiveSpan>) -> Self {
        Self {
            slot: Arc::new(Slot {
                span: Mutex::new(span),
                sent: AtomicU64::new(0),
                received: AtomicU64::new(0),
                answered: AtomicBool::new(false),
            }),
            started: Instant::now(),
        }
    }

    /// The counter the request body adds the bytes it sends to.
    pub(crate) fn sent_counter(&self) -> SentCounter {
        SentCounter(Arc::clone(&self.slot))
    }

    pub(crate) fn set(&mut self, attributes: impl IntoIterator<Item = KeyValue>) {
        if let Some(span) = self.slot.span.lock().as_mut() {
            span.set_attributes(attributes);
        }
    }

    /// The response head arrived with `status`.
    pub(crate) fn answered(&mut self, status: u16) {
        self.slot.answered.store(true, Ordering::Relaxed);
        let latency_ms = self.started.elapsed().as_secs_f64() * 1000.0;
        self.set([
            KeyValue::new(keys::STATUS, i64::from(status)),
            KeyValue::new(keys::LATENCY_MS, latency_ms),
        ]);
    }

    /// Adds `bytes` to what was received; returns the total.
    pub(crate) fn add_received(&mut self, bytes: u64) -> u64 {
        self.slot
            .received
            .fetch_add(bytes, Ordering::Relaxed)
            .saturating_add(bytes)
    }

    /// Ends the span: the exchange is over (`Ok` for 1xx-3xx, an error naming a 4xx/5xx status).
    pub(crate) fn complete(self, status: u16) {
        let outcome = if status >= 400 {
            Status::error(format!("HTTP status {status}"))
        } else {
            Status::Ok
        };
        self.slot.end(outcome, vec![KeyValue::new(keys::BODY_COMPLETE, true)]);
    }

    /// Ends the span as failed: `kind` (its `error.type`) and the reason.
    pub(crate) fn fail(self, kind: impl Into<opentelemetry::Value>, reason: String) {
        self.slot
            .end(Status::error(reason), vec![KeyValue::new(keys::ERROR_TYPE, kind)]);
    }
}

impl Drop for RequestSpan {
    fn drop(&mut self) {
        if self.slot.answered.load(Ordering::Relaxed) {
            // The guest let go of the body before its end: the exchange stopped there.
            self.slot
                .end(Status::Unset, vec![KeyValue::new(keys::BODY_COMPLETE, false)]);
        } else {
            self.slot.end(
                Status::error("abandoned before the response arrived (the guest dropped the request)"),
                vec![KeyValue::new(keys::ERROR_TYPE, "abandoned")],
            );
        }
    }
}

fn bytes(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
