//! The algorithm's own trace: its LLM calls recorded as LLM spans in the store, like an agent's.
//!
//! An algorithm's calls (APO's critiques and edits) belong to no rollout, and the store keeps
//! spans only under a rollout's attempt. So on its first LLM call a run starts a rollout of its
//! own with `start_rollout` — never queued, so no runner takes it — whose input names the
//! algorithm (`{"agl.algorithm": name}`) and whose metadata says what it is (`agl.kind =
//! "algorithm"`); each call is a span under that attempt's root, within the algorithm's span
//! budget. The run ends it: succeeded, or failed with the run's error. A run that calls no LLM
//! leaves no such rollout. If the store refuses to start it, the calls still go through untraced
//! and the observer is told once.

use super::convert::ATTEMPT_FAILURE_KEY;
use super::observer::{AlgorithmObserver, LogLevel};
use agl_policy::SpanBudget;
use agl_store::{
    AttemptRef, AttemptStatus, AttemptUpdate, EnqueueRolloutRequest, JsonMap, LightningStore, StartRolloutRequest,
};
use agl_trace::{AttemptTrace, SpanExport, SpanRecorder, names};
use opentelemetry::KeyValue;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// How often the algorithm's spans are flushed to the store.
const FLUSH_INTERVAL: Duration = Duration::from_millis(500);

struct Started {
    recorder: SpanRecorder,
    trace: AttemptTrace,
    rollout_id: String,
    attempt_id: String,
}

enum State {
    NotStarted,
    Started(Box<Started>),
    /// The store refused the rollout: calls go untraced.
    Unavailable,
}

/// The algorithm run's LLM trace, started on first use.
pub(crate) struct AlgorithmTrace {
    store: Arc<dyn LightningStore>,
    algorithm: String,
    budget: SpanBudget,
    export: Option<SpanExport>,
    state: State,
}

impl AlgorithmTrace {
    pub(crate) fn new(store: Arc<dyn LightningStore>, algorithm: &str, budget: SpanBudget) -> Self {
        Self {
            store,
            algorithm: algorithm.to_owned(),
            budget,
            export: None,
            state: State::NotStarted,
        }
    }

    /// Also hands the trace's spans to `export` (e.g. an OTLP exporter).
    pub(crate) fn with_export(self, export: Option<SpanExport>) -> Self {
        Self { export, ..self }
    }

    /// Longest attribute value kept.
    pub(crate) fn attribute_cap(&self) -> usize {
        self.budget.max_attribute_bytes
    }

    /// The trace LLM spans go to, starting the algorithm's rollout on first use; `None` when the
    /// store would not start it.
    pub(crate) async fn trace(&mut self, observer: &dyn AlgorithmObserver) -> Option<&AttemptTrace> {
        if matches!(self.state, State::NotStarted) {
            self.state = match self.start().await {
                Ok(started) => State::Started(Box::new(started)),
                Err(e) => {
                    observer.log(
                        LogLevel::Warn,
                        &format!("the algorithm's LLM calls go untraced: the store would not start its rollout: {e}"),
                    );
                    State::Unavailable
                }
            };
        }
        match &self.state {
            State::Started(started) => Some(&started.trace),
            _ => None,
        }
    }

    async fn start(&self) -> Result<Started, agl_store::StoreError> {
        let mut metadata = JsonMap::new();
        metadata.insert(names::ROLLOUT_KIND.to_owned(), Value::from(names::ALGORITHM_ROLLOUT));
        let request = StartRolloutRequest {
            rollout: EnqueueRolloutRequest {
                metadata: Some(metadata),
                ..EnqueueRolloutRequest::new(json!({ names::ALGORITHM: self.algorithm }))
            },
            worker_id: None,
        };
        let started = self.store.start_rollout(request).await?;
        let rollout_id = started.rollout.rollout_id;
        let attempt_id = started.attempt.attempt_id;
        let recorder = SpanRecorder::with_export(Arc::clone(&self.store), FLUSH_INTERVAL, self.export.clone());
        let trace = recorder.begin_attempt(&rollout_id, &attempt_id, self.budget);
        trace.annotate_root(vec![KeyValue::new(names::ALGORITHM, self.algorithm.clone())]);
        Ok(Started {
            recorder,
            trace,
            rollout_id,
            attempt_id,
        })
    }

    /// Ends the trace with the run: its spans flushed, its attempt succeeded or failed with
    /// `outcome`'s error. Nothing to do when no LLM call was made.
    pub(crate) async fn finish<T>(self, outcome: &Result<T, String>, observer: &dyn AlgorithmObserver) {
        let State::Started(started) = self.state else {
            return;
        };
        let Started {
            recorder,
            trace,
            rollout_id,
            attempt_id,
        } = *started;
        let (status, metadata) = match outcome {
            Ok(_) => (AttemptStatus::Succeeded, None),
            Err(reason) => {
                let mut metadata = JsonMap::new();
                metadata.insert(ATTEMPT_FAILURE_KEY.to_owned(), Value::from(reason.clone()));
                (AttemptStatus::Failed, Some(Some(metadata)))
            }
        };
        let flushed = recorder.finish_attempt(trace).await;
        let update = AttemptUpdate {
            status: Some(status),
            metadata,
            ..AttemptUpdate::default()
        };
        let updated = self
            .store
            .update_attempt(&rollout_id, AttemptRef::Id(&attempt_id), update)
            .await;
        if let Err(e) = flushed.and(updated.map(|_| ())) {
            observer.log(
                LogLevel::Warn,
                &format!("the algorithm's LLM trace (rollout {rollout_id}) could not be completed: {e}"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::observer::RecordingObserver;
    use crate::bindings::llm as wit;
    use crate::capabilities::llm::{LlmGate, traced_chat};
    use crate::policy::SandboxPolicy;
    use agl_llm::ScriptedBackend;
    use agl_store::{InMemoryLightningStore, RolloutQuery, RolloutStatus, SpanQuery};

    fn ask(text: &str) -> wit::ChatRequest {
        wit::ChatRequest {
            messages: vec![wit::Message {
                role: wit::Role::User,
                content: text.to_owned(),
                tool_call_id: None,
                tool_calls: Vec::new(),
            }],
            model: None,
            temperature: None,
            max_tokens: None,
            stop: Vec::new(),
            tools: Vec::new(),
        }
    }

    #[tokio::test]
    async fn an_algorithms_llm_calls_are_spans_of_a_rollout_of_its_own_never_queued() {
        let store: Arc<dyn LightningStore> = Arc::new(InMemoryLightningStore::new());
        let backend = ScriptedBackend::from_json_str(r#"{"model": "m", "rules": [], "fallback": {"reply": "ok"}}"#)
            .expect("rules parse");
        let policy = SandboxPolicy::algorithm_defaults();
        let mut gate = LlmGate::new(Arc::new(backend), &policy.llm);
        let observer = RecordingObserver::default();
        let mut algorithm = AlgorithmTrace::new(Arc::clone(&store), "apo", policy.spans);

        // No call, no rollout.
        assert!(
            store
                .query_rollouts(&RolloutQuery::default())
                .await
                .unwrap()
                .items
                .is_empty()
        );
        for text in ["critique this", "edit that"] {
            let trace = algorithm.trace(&observer).await;
            assert!(trace.is_some());
            let answer = traced_chat(&mut gate, ask(text), trace, 1024).await.expect("no tape");
            assert_eq!(answer.map(|a| a.content).ok().as_deref(), Some("ok"));
        }
        algorithm.finish(&Ok::<(), String>(()), &observer).await;

        assert!(
            store.dequeue_rollout(None).await.unwrap().is_none(),
            "no runner gets it"
        );
        let rollouts = store.query_rollouts(&RolloutQuery::default()).await.unwrap().items;
        assert_eq!(rollouts.len(), 1, "one rollout for the whole run");
        let rollout = &rollouts[0].rollout;
        assert_eq!(rollout.status, RolloutStatus::Succeeded);
        assert_eq!(rollout.input, json!({"agl.algorithm": "apo"}));
        let kind = rollout
            .metadata
            .as_ref()
            .and_then(|m| m.get(names::ROLLOUT_KIND))
            .and_then(Value::as_str);
        assert_eq!(kind, Some(names::ALGORITHM_ROLLOUT));
        let spans = store
            .query_spans(&SpanQuery::for_rollout(rollout.rollout_id.clone()))
            .await
            .unwrap()
            .items;
        let calls: Vec<_> = spans.iter().filter(|s| s.name == names::LLM_SPAN).collect();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1].attributes["gen_ai.prompt.0.content"], "edit that");
        assert_eq!(calls[1].attributes["gen_ai.completion.0.content"], "ok");
        let root = spans
            .iter()
            .find(|s| s.name == names::ROLLOUT_SPAN)
            .expect("a root span");
        assert_eq!(root.attributes[names::ALGORITHM], "apo");
        assert!(observer.recorded().logs.is_empty(), "{:?}", observer.recorded().logs);
    }

    #[tokio::test]
    async fn a_failed_run_fails_its_rollout_and_a_run_without_calls_leaves_none() {
        let store: Arc<dyn LightningStore> = Arc::new(InMemoryLightningStore::new());
        let observer = RecordingObserver::default();
        let quiet = AlgorithmTrace::new(Arc::clone(&store), "baseline", SpanBudget::default());
        quiet.finish(&Err::<(), _>("boom".to_owned()), &observer).await;
        assert!(
            store
                .query_rollouts(&RolloutQuery::default())
                .await
                .unwrap()
                .items
                .is_empty()
        );

        let mut failing = AlgorithmTrace::new(Arc::clone(&store), "apo", SpanBudget::default());
        assert!(failing.trace(&observer).await.is_some());
        failing.finish(&Err::<(), _>("boom".to_owned()), &observer).await;
        let rollouts = store.query_rollouts(&RolloutQuery::default()).await.unwrap().items;
        assert_eq!(rollouts[0].rollout.status, RolloutStatus::Failed);
        let attempt = rollouts[0].attempt.as_ref().expect("its attempt");
        assert_eq!(super::super::attempt_failure(attempt).as_deref(), Some("boom"));
    }
}
