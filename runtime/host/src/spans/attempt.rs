//! The trace of one attempt: its root span, the agent's open operation spans, and helpers that
//! record a host call as a child of whatever is open.

use super::names;
use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt, TraceId, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{SdkTracer, Span as SdkSpan};
use std::borrow::Cow;
use std::time::SystemTime;

/// A span in flight (e.g. an LLM call): set attributes as results arrive, then end it.
pub struct LiveSpan(SdkSpan);

impl LiveSpan {
    pub fn set_attributes(&mut self, attributes: impl IntoIterator<Item = KeyValue>) {
        self.0.set_attributes(attributes);
    }

    pub fn end_with(mut self, status: Status) {
        self.0.set_status(status);
        self.0.end();
    }
}

pub struct AttemptTrace {
    tracer: SdkTracer,
    root: Context,
    operations: Vec<(u64, Context)>,
    next_handle: u64,
    trace_id: TraceId,
}

impl AttemptTrace {
    pub(super) fn begin(tracer: SdkTracer, rollout_id: &str, attempt_id: &str) -> Self {
        let root = tracer
            .span_builder(names::ROOT)
            .with_kind(SpanKind::Internal)
            .with_attributes([
                KeyValue::new(names::ROLLOUT_ID, rollout_id.to_owned()),
                KeyValue::new(names::ATTEMPT_ID, attempt_id.to_owned()),
            ])
            .start_with_context(&tracer, &Context::new());
        let trace_id = root.span_context().trace_id();
        Self {
            tracer,
            root: Context::new().with_span(root),
            operations: Vec::new(),
            next_handle: 1,
            trace_id,
        }
    }

    pub fn trace_id(&self) -> TraceId {
        self.trace_id
    }

    /// The context new spans hang under: the innermost open operation, else the root.
    fn parent(&self) -> &Context {
        self.operations.last().map_or(&self.root, |(_, cx)| cx)
    }

    fn start_span(&self, name: impl Into<Cow<'static, str>>, kind: SpanKind, attributes: Vec<KeyValue>) -> SdkSpan {
        self.tracer
            .span_builder(name)
            .with_kind(kind)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, self.parent())
    }

    /// Records a host call that completes at once (a log line, a reward): one clock read serves
    /// as its start and its end.
    pub fn instant(&self, name: &'static str, attributes: Vec<KeyValue>, status: Status) {
        let now = SystemTime::now();
        let mut span = self
            .tracer
            .span_builder(name)
            .with_kind(SpanKind::Internal)
            .with_start_time(now)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, self.parent());
        span.set_status(status);
        span.end_with_timestamp(now);
    }

    /// Starts a span for a host call that takes time (an LLM call).
    pub fn start(&self, name: &'static str, kind: SpanKind, attributes: Vec<KeyValue>) -> LiveSpan {
        LiveSpan(self.start_span(name, kind, attributes))
    }

    /// Opens an operation span of the agent's own; later spans nest under it until it closes.
    pub fn open_operation(&mut self, name: String) -> u64 {
        let span = self.start_span(name, SpanKind::Internal, Vec::new());
        let handle = self.next_handle;
        self.next_handle += 1;
        let cx = self.parent().with_span(span);
        self.operations.push((handle, cx));
        handle
    }

    /// Closes an operation (and any opened inside it and left open). Unknown handles: false.
    pub fn close_operation(&mut self, handle: u64, error: Option<String>) -> bool {
        let Some(position) = self.operations.iter().position(|(h, _)| *h == handle) else {
            return false;
        };
        while self.operations.len() > position + 1 {
            if let Some((_, inner)) = self.operations.pop() {
                end_context(&inner, Status::error("closed by an enclosing operation"));
            }
        }
        if let Some((_, cx)) = self.operations.pop() {
            end_context(&cx, error.map_or(Status::Ok, Status::error));
        }
        true
    }

    /// Adds attributes to the root span (the attempt's summary).
    pub fn annotate_root(&self, attributes: Vec<KeyValue>) {
        self.root.span().set_attributes(attributes);
    }

    /// Marks the attempt's outcome on the root span.
    pub fn set_outcome(&self, status: Status) {
        self.root.span().set_status(status);
    }

    /// Ends open operations (as errors: the agent never closed them) and then the root.
    pub(super) fn end(mut self) {
        while let Some((_, cx)) = self.operations.pop() {
            end_context(&cx, Status::error("not ended by the agent"));
        }
        self.root.span().end();
    }
}

fn end_context(cx: &Context, status: Status) {
    let span = cx.span();
    span.set_status(status);
    span.end();
}
