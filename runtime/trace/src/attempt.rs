//! The trace of one attempt: its root span, the agent's open operation spans, and helpers that
//! record a host call as a child of whatever is open. Every span a guest causes goes through the
//! attempt's [`SpanAccount`] first: clipped, weighed, and built only if the budget admits it.

use crate::budget::{DroppedSpans, SpanAccount};
use crate::names;
use agl_policy::SpanBudget;
use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt, TraceId, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{SdkTracer, Span as SdkSpan};
use parking_lot::Mutex;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::SystemTime;

/// A span in flight (e.g. an LLM call): set attributes as results arrive, then end it. A span
/// the budget refused is inert: nothing is kept.
pub struct LiveSpan {
    span: Option<SdkSpan>,
    account: Arc<Mutex<SpanAccount>>,
}

impl LiveSpan {
    pub fn set_attributes(&mut self, attributes: impl IntoIterator<Item = KeyValue>) {
        let Some(span) = self.span.as_mut() else { return };
        let mut attributes: Vec<KeyValue> = attributes.into_iter().collect();
        let mut account = self.account.lock();
        let bytes = account.clip(&mut attributes);
        account.add(bytes);
        span.set_attributes(attributes);
    }

    pub fn end_with(self, status: Status) {
        if let Some(mut span) = self.span {
            span.set_status(status);
            span.end();
        }
    }
}

pub struct AttemptTrace {
    tracer: SdkTracer,
    root: Context,
    operations: Vec<(u64, Context)>,
    next_handle: u64,
    trace_id: TraceId,
    account: Arc<Mutex<SpanAccount>>,
}

impl AttemptTrace {
    pub(super) fn begin(tracer: SdkTracer, rollout_id: &str, attempt_id: &str, budget: SpanBudget) -> Self {
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
            account: Arc::new(Mutex::new(SpanAccount::new(budget))),
        }
    }

    /// The budget this trace runs under.
    pub fn budget(&self) -> SpanBudget {
        self.account.lock().budget()
    }

    /// What went past the budget so far.
    pub fn dropped(&self) -> DroppedSpans {
        self.account.lock().dropped()
    }

    /// Clips `attributes` and asks the budget for a span named `name` carrying them.
    fn admit(&self, name: &'static str, attributes: &mut [KeyValue]) -> bool {
        let mut account = self.account.lock();
        let bytes = account.clip(attributes);
        account.admit(name, bytes)
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
    /// as its start and its end. Past the budget it is only counted; says whether it was kept.
    pub fn instant(&self, name: &'static str, mut attributes: Vec<KeyValue>, status: Status) -> bool {
        let admitted = self.admit(name, &mut attributes);
        if admitted {
            self.record_instant(name, attributes, status);
        }
        admitted
    }

    /// Like [`instant`](Self::instant), outside the budget: for the few spans every attempt must
    /// keep whatever its guest did (the final reward, the captured output, the drop summary),
    /// each bounded on its own. Attributes are still clipped.
    pub fn instant_always(&self, name: &'static str, mut attributes: Vec<KeyValue>, status: Status) {
        self.account.lock().clip(&mut attributes);
        self.record_instant(name, attributes, status);
    }

    fn record_instant(&self, name: &'static str, attributes: Vec<KeyValue>, status: Status) {
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

    /// Starts a span for a host call that takes time (an LLM call); inert past the budget.
    pub fn start(&self, name: &'static str, kind: SpanKind, mut attributes: Vec<KeyValue>) -> LiveSpan {
        let span = self
            .admit(name, &mut attributes)
            .then(|| self.start_span(name, kind, attributes));
        LiveSpan {
            span,
            account: Arc::clone(&self.account),
        }
    }

    /// Opens an operation span of the agent's own (`agentlightning.operation`, its name in
    /// `agentlightning.operation.name`, as Agent-lightning's `operation` emitter); later spans
    /// nest under it until it closes. Past the budget nothing opens and the handle is 0 (closing
    /// it does nothing).
    pub fn open_operation(&mut self, name: String) -> u64 {
        if !self.account.lock().admit(names::OPERATION_SPAN, name.len() as u64) {
            return 0;
        }
        let attributes = vec![KeyValue::new(names::OPERATION_NAME, name)];
        let span = self.start_span(names::OPERATION_SPAN, SpanKind::Internal, attributes);
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

    /// Ends open operations (as errors: the agent never closed them), records what went past the
    /// budget as one marker span, then ends the root.
    pub(super) fn end(mut self) {
        while let Some((_, cx)) = self.operations.pop() {
            end_context(&cx, Status::error("not ended by the agent"));
        }
        let dropped = self.dropped();
        if dropped.spans > 0 {
            let budget = self.account.lock().budget();
            self.instant_always(names::SPANS_DROPPED, drop_summary(&dropped, budget), Status::Unset);
        }
        self.annotate_root(vec![KeyValue::new(
            names::SPANS_DROPPED_COUNT,
            i64::from(dropped.spans),
        )]);
        self.root.span().end();
    }
}

/// The marker span's attributes: counts, bytes, by name, and the budget that was reached.
fn drop_summary(dropped: &DroppedSpans, budget: SpanBudget) -> Vec<KeyValue> {
    let by_name = serde_json::to_string(&dropped.by_name).unwrap_or_default();
    vec![
        KeyValue::new(names::SPANS_DROPPED_COUNT, i64::from(dropped.spans)),
        KeyValue::new(
            names::SPANS_DROPPED_BYTES,
            i64::try_from(dropped.bytes).unwrap_or(i64::MAX),
        ),
        KeyValue::new(names::SPANS_DROPPED_BY_NAME, by_name),
        KeyValue::new(names::SPANS_BUDGET_BOUND, dropped.bound.unwrap_or_default()),
        KeyValue::new(names::SPANS_BUDGET_MAX_COUNT, i64::from(budget.max_spans)),
        KeyValue::new(
            names::SPANS_BUDGET_MAX_BYTES,
            i64::try_from(budget.max_bytes).unwrap_or(i64::MAX),
        ),
    ]
}

fn end_context(cx: &Context, status: Status) {
    let span = cx.span();
    span.set_status(status);
    span.end();
}
