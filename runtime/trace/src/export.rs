//! A second destination for the spans the host records (an OTLP exporter, say): each finished
//! span, tagged with its rollout and attempt ids as Agent-lightning's collectors read them
//! (`agentlightning.rollout_id`, `agentlightning.attempt_id`), is handed to a span processor
//! besides going to the store; so are spans written to the store directly (the LLM proxy's).
//! The processor is shared by every recorder of the process (the runners', the algorithm's) and
//! belongs to whoever made it: recorders never flush or shut it down. How it sends, batches or
//! drops is its own business; it must not block.

use crate::names;
use opentelemetry::KeyValue;
use opentelemetry::trace::SpanKind;
use opentelemetry_sdk::trace::{SpanData, SpanProcessor};
use std::fmt;
use std::sync::Arc;

/// Where recorded spans also go. Cheap to clone.
#[derive(Clone)]
pub struct SpanExport {
    processor: Arc<dyn SpanProcessor>,
}

impl SpanExport {
    /// Hands every finished span to `processor` (its `on_end`), from the thread that ended it.
    pub fn new(processor: Arc<dyn SpanProcessor>) -> Self {
        Self { processor }
    }

    /// Passes on a span that was written to the store directly rather than recorded by a tracer
    /// (the LLM proxy's), as a span of `kind`. A span whose ids are not hex is left out.
    pub fn send_stored(&self, span: &agl_store::Span, kind: SpanKind) {
        if let Some(data) = super::stored::from_store_span(span, kind) {
            self.send(data, &span.rollout_id, &span.attempt_id);
        }
    }

    /// Tags `span` with the attempt it belongs to and passes it on.
    pub(super) fn send(&self, mut span: SpanData, rollout_id: &str, attempt_id: &str) {
        tag(&mut span.attributes, names::ROLLOUT_ID, rollout_id);
        tag(&mut span.attributes, names::ATTEMPT_ID, attempt_id);
        self.processor.on_end(span);
    }
}

impl fmt::Debug for SpanExport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpanExport")
            .field("processor", &self.processor)
            .finish()
    }
}

/// Sets `key` unless the span already carries it (the root span does).
fn tag(attributes: &mut Vec<KeyValue>, key: &'static str, value: &str) {
    if !attributes.iter().any(|kv| kv.key.as_str() == key) {
        attributes.push(KeyValue::new(key, value.to_owned()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SpanRecorder;
    use agl_policy::SpanBudget;
    use agl_store::{InMemoryLightningStore, LightningStore};
    use opentelemetry::trace::Status;
    use opentelemetry_sdk::error::OTelSdkResult;
    use parking_lot::Mutex;
    use std::time::Duration;

    /// Keeps what it is handed.
    #[derive(Debug, Default)]
    struct Kept(Mutex<Vec<SpanData>>);

    impl SpanProcessor for Kept {
        fn on_start(&self, _span: &mut opentelemetry_sdk::trace::Span, _cx: &opentelemetry::Context) {}
        fn on_end(&self, span: SpanData) {
            self.0.lock().push(span);
        }
        fn force_flush(&self) -> OTelSdkResult {
            Ok(())
        }
        fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
            Ok(())
        }
    }

    fn value(span: &SpanData, key: &str) -> Option<String> {
        span.attributes
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| kv.value.as_str().into_owned())
    }

    #[tokio::test]
    async fn every_span_the_store_gets_is_exported_with_the_same_ids_and_its_attempt() {
        let store: Arc<dyn LightningStore> = Arc::new(InMemoryLightningStore::new());
        let started = store
            .start_rollout(agl_store::StartRolloutRequest {
                rollout: agl_store::EnqueueRolloutRequest::new(serde_json::json!({"q": 1})),
                worker_id: None,
            })
            .await
            .expect("a rollout");
        let (rollout_id, attempt_id) = (started.rollout.rollout_id, started.attempt.attempt_id);
        let kept = Arc::new(Kept::default());
        let export = SpanExport::new(kept.clone());
        let recorder = SpanRecorder::with_export(store.clone(), Duration::from_secs(60), Some(export));
        let trace = recorder.begin_attempt(&rollout_id, &attempt_id, SpanBudget::default());
        trace.instant(names::LOG, vec![KeyValue::new("k", "v")], Status::Ok);
        trace
            .start(names::LLM, SpanKind::Client, Vec::new())
            .end_with(Status::Ok);
        recorder.finish_attempt(trace).await.expect("flushed");

        let exported = kept.0.lock().clone();
        let stored = store
            .query_spans(&agl_store::SpanQuery::for_rollout(rollout_id.clone()))
            .await
            .expect("spans")
            .items;
        assert_eq!(exported.len(), 3, "the log, the LLM call and the root");
        assert_eq!(stored.len(), exported.len());
        for span in &exported {
            let span_id = agl_store::hex_id(&span.span_context.span_id().to_bytes(), 0);
            let twin = stored
                .iter()
                .find(|s| s.span_id == span_id)
                .expect("the same span id in the store");
            assert_eq!(twin.name, span.name);
            assert_eq!(
                twin.trace_id,
                agl_store::hex_id(&span.span_context.trace_id().to_bytes(), 0)
            );
            assert_eq!(value(span, names::ROLLOUT_ID).as_deref(), Some(rollout_id.as_str()));
            assert_eq!(value(span, names::ATTEMPT_ID).as_deref(), Some(attempt_id.as_str()));
            let tags = span.attributes.iter().filter(|kv| kv.key.as_str() == names::ROLLOUT_ID);
            assert_eq!(tags.count(), 1, "the root's own id is not repeated");
        }
        assert!(
            stored
                .iter()
                .all(|s| !s.attributes.contains_key(names::ATTEMPT_ID) || s.name == names::ROOT),
            "the store's spans are not tagged"
        );
    }
}
