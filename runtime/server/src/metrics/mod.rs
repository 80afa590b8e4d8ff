//! The store server's Prometheus metrics: what this process counted since it started
//! ([`ServerMetrics`]: spans received, the LLM calls and tokens read from them as they arrive,
//! worker heartbeats, HTTP requests) and what the store holds, read at scrape time
//! ([`StoreState`]). Everything is encoded by prometheus-client in the text format 0.0.4; the
//! route is `routes/metrics.rs`. Counting uses atomics only on the span and heartbeat paths.

mod histogram;
mod http;
mod llm_call;
mod store_state;

pub(crate) use http::track_requests;
pub(crate) use llm_call::LlmCall;
pub(crate) use store_state::StoreState;

use agl_store::Span;
use histogram::{AtomicHistogram, LLM_CALL_SECONDS, REQUEST_SECONDS};
use http::{RequestLabels, RouteLabel};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

/// The prefix of every metric name.
pub(crate) const PREFIX: &str = "agl";

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApiLabel {
    api: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: &'static str,
}

/// The counters of one server, shared by its handlers. Label sets known in advance are resolved
/// once, here, so that counting them never touches the families' locks.
#[derive(Debug)]
pub(crate) struct ServerMetrics {
    registry: Registry,
    spans_agl: Counter,
    spans_otlp: Counter,
    otlp_spans_dropped: Counter,
    llm_calls_ok: Counter,
    llm_calls_failed: Counter,
    llm_prompt_tokens: Counter,
    llm_completion_tokens: Counter,
    llm_call_seconds: AtomicHistogram,
    worker_heartbeats: Counter,
    http_requests: Family<RequestLabels, Counter>,
    http_request_seconds: Family<RouteLabel, AtomicHistogram, fn() -> AtomicHistogram>,
}

impl ServerMetrics {
    pub(crate) fn new() -> Self {
        let mut registry = Registry::with_prefix(PREFIX);

        let spans = Family::<ApiLabel, Counter>::default();
        registry.register(
            "spans_received",
            "Spans this server stored, by the API they came in through (agl: POST /v1/agl/spans, a duplicate not counted; otlp: POST /v1/traces, every attributed span)",
            spans.clone(),
        );
        let otlp_spans_dropped = Counter::default();
        registry.register(
            "otlp_spans_dropped",
            "OTLP spans dropped for want of agentlightning.rollout_id / agentlightning.attempt_id",
            otlp_spans_dropped.clone(),
        );

        let llm_calls = Family::<OutcomeLabel, Counter>::default();
        registry.register(
            "llm_calls",
            "LLM call spans received, by outcome (error: the span's status is ERROR)",
            llm_calls.clone(),
        );
        let llm_prompt_tokens = Counter::default();
        registry.register(
            "llm_prompt_tokens",
            "Prompt (input) tokens of the LLM call spans received",
            llm_prompt_tokens.clone(),
        );
        let llm_completion_tokens = Counter::default();
        registry.register(
            "llm_completion_tokens",
            "Completion (output) tokens of the LLM call spans received",
            llm_completion_tokens.clone(),
        );
        let llm_call_seconds = AtomicHistogram::new(LLM_CALL_SECONDS);
        registry.register(
            "llm_call_duration_seconds",
            "How long the LLM calls received took (span end minus start)",
            llm_call_seconds.clone(),
        );

        let worker_heartbeats = Counter::default();
        registry.register(
            "worker_heartbeats",
            "Worker heartbeats received (POST /v1/agl/workers/{worker_id})",
            worker_heartbeats.clone(),
        );

        let http_requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests answered, by method, route (its pattern) and status class",
            http_requests.clone(),
        );
        let http_request_seconds: Family<RouteLabel, AtomicHistogram, fn() -> AtomicHistogram> =
            Family::new_with_constructor(|| AtomicHistogram::new(REQUEST_SECONDS));
        registry.register(
            "http_request_duration_seconds",
            "Time to answer an HTTP request (until its headers), by route",
            http_request_seconds.clone(),
        );

        let api = |api| spans.get_or_create_owned(&ApiLabel { api });
        let outcome = |outcome| llm_calls.get_or_create_owned(&OutcomeLabel { outcome });
        Self {
            spans_agl: api("agl"),
            spans_otlp: api("otlp"),
            otlp_spans_dropped,
            llm_calls_ok: outcome("ok"),
            llm_calls_failed: outcome("error"),
            llm_prompt_tokens,
            llm_completion_tokens,
            llm_call_seconds,
            worker_heartbeats,
            http_requests,
            http_request_seconds,
            registry,
        }
    }

    /// A span was stored through `POST /v1/agl/spans`.
    pub(crate) fn span_stored(&self, span: &Span) {
        self.spans_agl.inc();
        if let Some(call) = LlmCall::of(span) {
            self.llm_call(call);
        }
    }

    /// An OTLP request's spans were stored: `accepted` of them, `calls` the LLM calls among them;
    /// `dropped` had no rollout or attempt id.
    pub(crate) fn otlp_stored(&self, accepted: usize, dropped: usize, calls: &[LlmCall]) {
        self.spans_otlp.inc_by(as_u64(accepted));
        self.otlp_spans_dropped.inc_by(as_u64(dropped));
        for call in calls {
            self.llm_call(*call);
        }
    }

    /// A worker's heartbeat was recorded.
    pub(crate) fn worker_heartbeat(&self) {
        self.worker_heartbeats.inc();
    }

    fn llm_call(&self, call: LlmCall) {
        let calls = if call.failed {
            &self.llm_calls_failed
        } else {
            &self.llm_calls_ok
        };
        calls.inc();
        self.llm_prompt_tokens.inc_by(call.prompt_tokens);
        self.llm_completion_tokens.inc_by(call.completion_tokens);
        if let Some(seconds) = call.seconds {
            self.llm_call_seconds.observe(seconds);
        }
    }

    /// The whole exposition: this process's counters, then the store's state.
    pub(crate) fn encode(&self, store: &StoreState) -> Result<String, std::fmt::Error> {
        let mut text = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut text, &self.registry)?;
        prometheus_client::encoding::prometheus_text::encode(&mut text, &store.registry())?;
        Ok(text)
    }
}

fn as_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use llm_call::tests::llm_span;

    #[test]
    fn counters_start_at_zero_and_count_what_they_are_told() {
        let metrics = ServerMetrics::new();
        metrics.span_stored(&llm_span(12, 3, 0.0, 0.5));
        metrics.otlp_stored(4, 1, &[LlmCall::of(&llm_span(1, 2, 0.0, 20.0)).expect("a call")]);
        metrics.worker_heartbeat();
        let text = metrics.encode(&StoreState::unread()).expect("encodes");
        for line in [
            "agl_spans_received_total{api=\"agl\"} 1",
            "agl_spans_received_total{api=\"otlp\"} 4",
            "agl_otlp_spans_dropped_total 1",
            "agl_llm_calls_total{outcome=\"ok\"} 2",
            "agl_llm_calls_total{outcome=\"error\"} 0",
            "agl_llm_prompt_tokens_total 13",
            "agl_llm_completion_tokens_total 5",
            "agl_llm_call_duration_seconds_bucket{le=\"0.5\"} 1",
            "agl_llm_call_duration_seconds_bucket{le=\"30\"} 2",
            "agl_llm_call_duration_seconds_count 2",
            "agl_worker_heartbeats_total 1",
        ] {
            assert!(text.lines().any(|l| l == line), "no line {line:?} in:\n{text}");
        }
    }
}
