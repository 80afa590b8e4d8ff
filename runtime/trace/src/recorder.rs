//! The span pipeline: an OpenTelemetry tracer whose processor turns each finished span into a
//! store span at once (on the thread that ended it, while its data is still in that core's
//! cache) and buffers it, and a flusher that writes them to the LightningStore in batches — one
//! `get_next_span_sequence_ids` and one `add_spans` per batch. Flushes are serialized so sequence
//! ids follow end order. With a [`SpanExport`], each finished span is also handed to it as it ends.

use crate::attempt::AttemptTrace;
use crate::convert::to_store_span;
use crate::export::SpanExport;
use agl_policy::SpanBudget;
use agl_store::{LightningStore, Span};
use opentelemetry::trace::{TraceId, TracerProvider as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider, SpanData, SpanProcessor};
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

/// Finished spans that wake the flusher (it also runs on a timer). Small, so that most of an
/// attempt's spans reach the store from the flusher, beside the guest, and few are left for the
/// attempt's own final flush (with 512, about half of a 1,000-call rollout's spans were).
const FLUSH_BATCH: usize = 64;

/// The rollout and attempt ids a trace's spans belong to.
type Owner = (Arc<str>, Arc<str>);

/// Finished spans waiting for the store (sequence ids not yet given), and the attempts they
/// belong to (by trace id).
#[derive(Debug, Default)]
struct Pending {
    spans: Mutex<Vec<Span>>,
    attempts: Mutex<FxHashMap<TraceId, Owner>>,
    wake: Notify,
    dropped: AtomicU64,
}

/// The OpenTelemetry side: buffers each finished span, wakes the flusher when a batch is full.
#[derive(Debug)]
struct StoreSpanProcessor {
    pending: Arc<Pending>,
    export: Option<SpanExport>,
}

impl SpanProcessor for StoreSpanProcessor {
    fn on_start(&self, _span: &mut opentelemetry_sdk::trace::Span, _cx: &opentelemetry::Context) {}

    fn on_end(&self, span: SpanData) {
        let owner = self.pending.attempts.lock().get(&span.span_context.trace_id()).cloned();
        let Some((rollout_id, attempt_id)) = owner else {
            self.pending.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        if let Some(export) = &self.export {
            export.send(span.clone(), &rollout_id, &attempt_id);
        }
        let span = to_store_span(span, &rollout_id, &attempt_id, 0);
        let mut spans = self.pending.spans.lock();
        spans.push(span);
        if spans.len() >= FLUSH_BATCH {
            self.pending.wake.notify_one();
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.pending.wake.notify_one();
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        self.pending.wake.notify_one();
        Ok(())
    }
}

/// Records attempts' spans into a LightningStore. Cheap to clone.
#[derive(Clone)]
pub struct SpanRecorder {
    inner: Arc<RecorderInner>,
}

struct RecorderInner {
    _provider: SdkTracerProvider,
    tracer: SdkTracer,
    pending: Arc<Pending>,
    store: Arc<dyn LightningStore>,
    /// The flusher's buffer, traded with `pending.spans` on each flush; held, it serializes
    /// flushes.
    flush_lock: tokio::sync::Mutex<Vec<Span>>,
}

impl SpanRecorder {
    /// A recorder writing to `store`; with a Tokio runtime running, a background task also
    /// flushes every `interval` or whenever `FLUSH_BATCH` spans are waiting.
    pub fn new(store: Arc<dyn LightningStore>, interval: Duration) -> Self {
        Self::with_export(store, interval, None)
    }

    /// [`new`](Self::new), also handing every finished span to `export` when given.
    pub fn with_export(store: Arc<dyn LightningStore>, interval: Duration, export: Option<SpanExport>) -> Self {
        let pending = Arc::new(Pending::default());
        let processor = StoreSpanProcessor {
            pending: Arc::clone(&pending),
            export,
        };
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_max_attributes_per_span(super::llm::MAX_ATTRIBUTES_PER_SPAN)
            .build();
        let tracer = provider.tracer("agl-host");
        let inner = Arc::new(RecorderInner {
            _provider: provider,
            tracer,
            pending,
            store,
            flush_lock: Default::default(),
        });
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(background_flush(Arc::downgrade(&inner), interval));
        }
        Self { inner }
    }

    /// Opens the trace of one attempt (its root span) under a span budget; spans of this trace
    /// go to that attempt.
    pub fn begin_attempt(&self, rollout_id: &str, attempt_id: &str, budget: SpanBudget) -> AttemptTrace {
        let trace = AttemptTrace::begin(self.inner.tracer.clone(), rollout_id, attempt_id, budget);
        self.inner
            .pending
            .attempts
            .lock()
            .insert(trace.trace_id(), (rollout_id.into(), attempt_id.into()));
        trace
    }

    /// Ends the attempt's trace and waits until all its spans are in the store.
    pub async fn finish_attempt(&self, trace: AttemptTrace) -> Result<(), agl_store::StoreError> {
        let trace_id = trace.trace_id();
        trace.end();
        let result = self.flush().await;
        self.inner.pending.attempts.lock().remove(&trace_id);
        result
    }

    /// Writes every finished span to the store now.
    pub async fn flush(&self) -> Result<(), agl_store::StoreError> {
        let mut spare = self.inner.flush_lock.lock().await;
        {
            let mut pending = self.inner.pending.spans.lock();
            if spare.is_empty() {
                // The two buffers trade places and keep their capacity, so the guest's thread
                // pushes into memory already mapped: a fresh buffer, grown span by span, cost it
                // page faults and copies of these large structs on every batch.
                std::mem::swap(&mut *pending, &mut *spare);
            } else {
                spare.append(&mut pending); // a cancelled flush left its batch here
            }
        }
        if spare.is_empty() {
            return Ok(());
        }
        let pairs: Vec<(&str, &str)> = spare
            .iter()
            .map(|span| (span.rollout_id.as_str(), span.attempt_id.as_str()))
            .collect();
        let sequence_ids = self.inner.store.get_next_span_sequence_ids(&pairs).await;
        drop(pairs);
        let sequence_ids = match sequence_ids {
            Ok(ids) => ids,
            Err(e) => {
                spare.clear(); // those spans are lost
                return Err(e);
            }
        };
        // A store answers one id per pair; were it ever fewer, the spans beyond are dropped.
        spare.truncate(sequence_ids.len());
        for (span, sequence_id) in spare.iter_mut().zip(sequence_ids) {
            span.sequence_id = sequence_id;
        }
        // The batch goes to the store as it is (no copy of each span into a new vector); the
        // spare buffer that replaces it is allocated here, off the guest's thread, at full size.
        let capacity = spare.capacity();
        let batch = std::mem::replace(&mut *spare, Vec::with_capacity(capacity));
        self.inner.store.add_spans(batch).await.map(|_| ())
    }

    /// Spans that belonged to no known attempt (a bug if ever non-zero).
    pub fn dropped_spans(&self) -> u64 {
        self.inner.pending.dropped.load(Ordering::Relaxed)
    }
}

async fn background_flush(inner: std::sync::Weak<RecorderInner>, interval: Duration) {
    loop {
        let wake = match inner.upgrade() {
            Some(inner) => {
                let pending = Arc::clone(&inner.pending);
                drop(inner);
                pending
            }
            None => return,
        };
        let _ = tokio::time::timeout(interval, wake.wake.notified()).await;
        let Some(inner) = inner.upgrade() else { return };
        let recorder = SpanRecorder { inner };
        // A failed write (e.g. a remote store that lost the rollout) is not retried; it shows in
        // `dropped_spans` (one per failed batch), and the attempt's own final flush reports it.
        if recorder.flush().await.is_err() {
            recorder.inner.pending.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}
