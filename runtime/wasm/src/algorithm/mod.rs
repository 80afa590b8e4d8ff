//! Algorithm components: a loaded `algorithm` world (an `InstancePre`) and one run of it. The
//! algorithm drives the store through host imports while runners execute rollouts elsewhere;
//! its limits (memory, deadline, LLM budget) are per run. Its stdout/stderr are captured and its
//! log, status and best result go to an [`AlgorithmObserver`].

mod adapter_import;
pub mod bindings;
mod convert;
mod host_imports;
mod llm_trace;
pub mod observer;
mod state;
mod store_import;

pub use convert::{ATTEMPT_FAILURE_KEY, attempt_failure};
pub use observer::{AlgorithmObserver, BestResult, LogLevel, Recorded, RecordingObserver};
pub(crate) use state::{AlgorithmRun, AlgorithmState};

use crate::capabilities::wasi::output::CapturedOutput;
use crate::capabilities::{InstanceContext, Sandbox, new_store};
use crate::failure::{MAX_REASON_BYTES, one_line};
use crate::loaded::Loaded;
use agl_llm::LlmBackend;
use agl_store::LightningStore;
use agl_trace::SpanExport;
use bindings::{AlgorithmPre, Datasets};
use llm_trace::AlgorithmTrace;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Everything one run of an algorithm needs besides the component.
pub struct AlgorithmRequest {
    pub store: Arc<dyn LightningStore>,
    pub llm: Arc<dyn LlmBackend>,
    pub observer: Arc<dyn AlgorithmObserver>,
    /// The user's configuration, JSON text (`{}` when none).
    pub config_json: String,
    /// One JSON text per task.
    pub train: Vec<String>,
    pub val: Vec<String>,
    /// Seeds the algorithm's random source (its own `seed` config may override its choices).
    pub seed: u64,
    /// Where the algorithm's LLM spans also go (e.g. an OTLP exporter), besides the store.
    pub span_export: Option<SpanExport>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct AlgorithmOutcome {
    /// The algorithm's summary (JSON; a string when it returned text that is not JSON), or why it
    /// failed: its own error, a trap, the deadline.
    pub result: Result<serde_json::Value, String>,
    pub llm_calls: u32,
    pub llm_tokens: u64,
    pub stdout: CapturedOutput,
    pub stderr: CapturedOutput,
    pub elapsed: Duration,
}

/// A compiled and linked algorithm, ready to run. Its name, policy and load info are
/// [`Loaded`]'s (it derefs to it).
pub struct AlgorithmComponent {
    pre: AlgorithmPre<AlgorithmState>,
    loaded: Loaded,
}

impl std::ops::Deref for AlgorithmComponent {
    type Target = Loaded;
    fn deref(&self) -> &Loaded {
        &self.loaded
    }
}

impl AlgorithmComponent {
    pub(crate) fn new(pre: AlgorithmPre<AlgorithmState>, loaded: Loaded) -> Self {
        Self { pre, loaded }
    }

    /// Runs the algorithm to its end in a fresh instance. Dropping the future aborts the run.
    pub async fn run(&self, request: AlgorithmRequest) -> AlgorithmOutcome {
        let started = Instant::now();
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let instance = InstanceContext {
            start: now,
            seed: request.seed,
            llm: request.llm,
            llm_allowance: None,
            resources: None,
            tape: Default::default(),
        };
        let sandbox = match Sandbox::prepare(&self.policy, &instance) {
            Ok(sandbox) => sandbox,
            Err(e) => {
                return AlgorithmOutcome {
                    result: Err(format!("cannot prepare the sandbox: {e}")),
                    llm_calls: 0,
                    llm_tokens: 0,
                    stdout: CapturedOutput::default(),
                    stderr: CapturedOutput::default(),
                    elapsed: started.elapsed(),
                };
            }
        };
        let (stdout, stderr) = (sandbox.wasi.stdout.clone(), sandbox.wasi.stderr.clone());
        let llm_trace =
            AlgorithmTrace::new(request.store.clone(), &self.name, self.policy.spans).with_export(request.span_export);
        let world = AlgorithmRun::new(request.store, llm_trace, request.observer);
        let (mut store, attached) = new_store(self.pre.engine(), &self.policy, sandbox, world);
        let data = Datasets {
            train: request.train,
            val: request.val,
        };
        let call = async {
            attached?;
            let algorithm = self.pre.instantiate_async(&mut store).await?;
            algorithm.call_run(&mut store, &request.config_json, &data).await
        };
        let limit = self.policy.limits.deadline + self.policy.llm.timeout;
        let result = match tokio::time::timeout(limit, call).await {
            Err(_) => Err(crate::failure::host_call_deadline(
                "algorithm",
                self.policy.limits.deadline,
            )),
            Ok(Err(trap)) => Err(self.describe_trap("algorithm", &trap, &stderr.peek()).reason),
            Ok(Ok(Err(reason))) => Err(one_line(&reason, MAX_REASON_BYTES)),
            Ok(Ok(Ok(summary))) => Ok(serde_json::from_str(&summary).unwrap_or(serde_json::Value::String(summary))),
        };
        let mut state = store.into_data();
        state.sandbox.finish();
        state.world.llm_trace.finish(&result, &*state.world.observer).await;
        AlgorithmOutcome {
            result,
            llm_calls: state.sandbox.llm.calls(),
            llm_tokens: state.sandbox.llm.tokens(),
            stdout: stdout.take(),
            stderr: stderr.take(),
            elapsed: started.elapsed(),
        }
    }
}
