//! A loaded agent component and the running of one attempt: a fresh `Store` and instance per
//! attempt (nothing leaks between rollouts), the policy's limits applied, the `rollout` export
//! called, and the result — a reward, an agent error, a trap, a timeout — turned into an
//! outcome. The attempt's spans are in the store when this returns.

use crate::bindings::AgentPre;
use crate::bindings::types::RolloutContext;
use crate::bindings::wit_mode;
use crate::capabilities::reward::{final_reward, invalid_reward, record_feedback_alone, record_final_reward};
use crate::capabilities::tape::dirs::{DirSnapshot, replay_grants};
use crate::capabilities::tape::{Diverged, Header, RecordedOutcome, ReplayReport, TapeHandle, TapeMode};
use crate::capabilities::wasi::clocks::attempt_seed;
use crate::capabilities::wasi::output::{self, CapturedOutput};
use crate::capabilities::{InstanceContext, Sandbox, new_store};
use crate::failure::{self, Failure, MAX_REASON_BYTES, one_line};
use crate::loaded::Loaded;
use crate::state::{AttemptState, HostState, InstanceState};
use agl_llm::LlmBackend;
use agl_store::{Attempt, AttemptStatus, Recording, ResourcesUpdate, Rollout};
use agl_trace::LlmAllowance;
use agl_trace::{SpanRecorder, names};
use opentelemetry::KeyValue;
use opentelemetry::trace::Status;
use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::Store;

/// Everything one attempt needs besides the component.
pub struct AttemptRequest<'a> {
    pub rollout: &'a Rollout,
    pub attempt: &'a Attempt,
    /// The resources version the rollout runs with (`None`: it has none).
    pub resources: Option<Arc<ResourcesUpdate>>,
    pub llm: Arc<dyn LlmBackend>,
    /// The attempt's LLM allowance when something else spends it too (the LLM proxy's
    /// per-attempt capability); `None`: a fresh one from the agent's policy.
    pub llm_allowance: Option<Arc<LlmAllowance>>,
    pub recorder: &'a SpanRecorder,
    /// Told when the attempt's trace opens and just before it closes (the runner's hooks).
    pub trace_observer: Option<&'a dyn TraceObserver>,
    /// Whether the attempt is recorded, or replayed from a tape (`capabilities/tape`). A replay
    /// hands the guest what the tape's header holds (task, context, resources, seed, clock
    /// start), not the rollout's; its spans go to `rollout` and `attempt` all the same.
    pub tape: TapeMode,
}

/// Hears an attempt's trace open (before the agent runs) and close (after it returned, before
/// the trace is written out): `on_trace_start` / `on_trace_end` of Agent-lightning's hooks.
pub trait TraceObserver: Send + Sync {
    fn trace_started(&self, rollout: &Rollout, attempt: &Attempt);
    fn trace_ending(&self, rollout: &Rollout, attempt: &Attempt);
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptOutcome {
    /// `Succeeded` or `Failed`.
    pub status: AttemptStatus,
    /// Why it failed: a trap, the deadline, the memory limit, the agent's own error...
    pub failure: Option<String>,
    /// The final reward: the returned one, else the last primary reward the agent emitted.
    pub reward: Option<f64>,
    pub llm_calls: u32,
    pub llm_tokens: u64,
    pub stdout: CapturedOutput,
    pub stderr: CapturedOutput,
    pub elapsed: Duration,
    /// Host-call spans not kept because the attempt went past its span budget.
    pub spans_dropped: u32,
    /// Linear memory the agent's instance was given, all its memories at their largest (0 when it
    /// never started).
    pub memory_bytes: u64,
    /// Spans could not be written to the store (the reason), e.g. the rollout is unknown there.
    pub trace_error: Option<String>,
    /// What entered the guest, for the attempt (unless the tape was off); the caller keeps it
    /// (`LightningStore::add_recording`).
    pub recording: Option<Recording>,
    /// What a replay did (only when the attempt was replayed).
    pub replay: Option<ReplayReport>,
}

impl AttemptOutcome {
    /// An attempt that could not start (e.g. its resources are missing): failed with `reason`.
    pub fn failed_before_start(reason: String) -> Self {
        Self::failed_to_start(reason, Duration::ZERO, None)
    }

    /// An attempt that failed before the agent ran: nothing spent, nothing printed.
    fn failed_to_start(reason: String, elapsed: Duration, trace_error: Option<String>) -> Self {
        Self {
            status: AttemptStatus::Failed,
            failure: Some(reason),
            reward: None,
            llm_calls: 0,
            llm_tokens: 0,
            stdout: CapturedOutput::default(),
            stderr: CapturedOutput::default(),
            elapsed,
            spans_dropped: 0,
            memory_bytes: 0,
            trace_error,
            recording: None,
            replay: None,
        }
    }
}

/// A compiled and linked agent, ready to run attempts (shareable across tasks). Its name,
/// policy and load info are [`Loaded`]'s (it derefs to it).
pub struct AgentComponent {
    pre: AgentPre<HostState>,
    loaded: Loaded,
}

impl std::ops::Deref for AgentComponent {
    type Target = Loaded;
    fn deref(&self) -> &Loaded {
        &self.loaded
    }
}

/// Extra time beyond the deadline before an attempt waiting in a host call (an LLM call, an HTTP
/// response, a sleep) is abandoned and that call cancelled. Guest code running at the deadline is
/// stopped by epoch interruption first (within a tick); this bounds every other wait, so an
/// attempt ends within its deadline plus this, whatever it waits on.
const HOST_CALL_GRACE: Duration = Duration::from_millis(250);

impl AgentComponent {
    pub(crate) fn new(pre: AgentPre<HostState>, loaded: Loaded) -> Self {
        Self { pre, loaded }
    }

    async fn instantiate_and_call(
        &self,
        store: &mut Store<HostState>,
        ctx: &RolloutContext,
        task_json: &str,
    ) -> wasmtime::Result<Result<Option<f64>, String>> {
        let agent = self.pre.instantiate_async(&mut *store).await?;
        agent.call_rollout(&mut *store, ctx, task_json).await
    }

    /// The tape header of an attempt: what its guest is handed. Recording (or off), the
    /// rollout's; replaying, the recorded one's, as this component.
    fn tape_for(
        &self,
        rollout: &Rollout,
        attempt: &Attempt,
        resources: Option<&ResourcesUpdate>,
        default_model: &str,
        tape: TapeMode,
    ) -> Result<(Header, TapeMode), String> {
        let header = match &tape {
            TapeMode::Replay(plan) => {
                let granted = self.granted_env();
                if plan.tape.header.env != granted {
                    let names = |env: &[(String, String)]| env.iter().map(|(name, _)| name.clone()).collect::<Vec<_>>();
                    return Err(format!(
                        "the environment granted now ({:?}) is not the one the recorded attempt was granted ({:?}): grant the same values",
                        names(&granted),
                        names(&plan.tape.header.env)
                    ));
                }
                Header {
                    agent: self.name.clone(),
                    component: self.digest().to_owned(),
                    ..plan.tape.header.clone()
                }
            }
            _ => Header {
                agent: self.name.clone(),
                component: self.digest().to_owned(),
                rollout_id: rollout.rollout_id.clone(),
                attempt_id: attempt.attempt_id.clone(),
                attempt_number: attempt.sequence_id,
                mode: rollout.mode,
                resources_id: rollout.resources_id.clone(),
                task: rollout.input.to_string(),
                resources: match (&tape, resources) {
                    (TapeMode::Record, Some(resources)) => {
                        Some(serde_json::to_value(resources).map_err(|e| format!("cannot record the resources: {e}"))?)
                    }
                    _ => None,
                },
                seed: attempt_seed(&rollout.rollout_id, attempt.sequence_id),
                clock_start: attempt.start_time,
                clock: if self.policy.clock.real { "real" } else { "virtual" }.to_owned(),
                default_model: Some(default_model.to_owned()),
                env: match tape {
                    TapeMode::Off => Vec::new(),
                    _ => self.granted_env(),
                },
                dirs: match tape {
                    TapeMode::Off => Vec::new(),
                    _ => self.policy.grants.dirs.iter().map(DirSnapshot::of).collect(),
                },
            },
        };
        Ok((header, tape))
    }

    /// The environment the policy grants, as a tape keeps it: each name with the SHA-256 of its
    /// value (values may be secrets, and a replay needs only to know they are the same).
    fn granted_env(&self) -> Vec<(String, String)> {
        self.policy
            .grants
            .env
            .iter()
            .map(|grant| (grant.name.clone(), agl_store::blob_address(&grant.value)))
            .collect()
    }

    /// Runs one attempt in a fresh instance and records its spans into the recorder's store.
    pub async fn run_attempt(&self, request: AttemptRequest<'_>) -> AttemptOutcome {
        let started = Instant::now();
        let (rollout, attempt) = (request.rollout, request.attempt);
        let (header, tape) = match self.tape_for(
            rollout,
            attempt,
            request.resources.as_deref(),
            request.llm.default_model(),
            request.tape,
        ) {
            Ok(made) => made,
            Err(reason) => return AttemptOutcome::failed_before_start(reason),
        };
        // A replay's guest is handed what the tape's was: these come from its header.
        let resources = match &tape {
            TapeMode::Replay(_) => match header.resources.clone().map(serde_json::from_value::<ResourcesUpdate>) {
                None => None,
                Some(Ok(resources)) => Some(Arc::new(resources)),
                Some(Err(e)) => {
                    return AttemptOutcome::failed_before_start(format!(
                        "the recording's resources cannot be read: {e}"
                    ));
                }
            },
            _ => request.resources,
        };
        let seed = header.seed;
        let trace = request
            .recorder
            .begin_attempt(&rollout.rollout_id, &attempt.attempt_id, self.policy.spans);
        trace.annotate_root(vec![
            KeyValue::new(names::AGENT, self.name.clone()),
            KeyValue::new(names::ATTEMPT_SEQUENCE_ID, i64::from(attempt.sequence_id)),
            KeyValue::new(names::RANDOM_SEED, seed.to_string()),
            KeyValue::new(names::CLOCK, if self.policy.clock.real { "real" } else { "virtual" }),
            KeyValue::new(names::CLOCK_START, header.clock_start),
        ]);
        if let Some(observer) = request.trace_observer {
            observer.trace_started(rollout, attempt);
        }
        let ctx = RolloutContext {
            rollout_id: header.rollout_id.clone(),
            attempt_id: header.attempt_id.clone(),
            attempt_number: header.attempt_number,
            mode: header.mode.map(wit_mode),
            resources_id: header.resources_id.clone(),
        };
        let task_json = header.task.clone();
        let clock_start = header.clock_start;
        // A replay grants the recorded copies of the directories the attempt was granted.
        let scratch = ScratchDir::new();
        let policy = match (&tape, header.dirs.is_empty()) {
            (TapeMode::Replay(_), false) => {
                let grants = scratch
                    .path()
                    .map_err(|e| format!("cannot make a scratch directory: {e}"))
                    .and_then(|path| replay_grants(&header.dirs, &self.policy.grants.dirs, &path));
                match grants {
                    Ok(dirs) => {
                        let mut policy = self.policy.clone();
                        policy.grants.dirs = dirs;
                        Cow::Owned(policy)
                    }
                    Err(reason) => return AttemptOutcome::failed_before_start(reason),
                }
            }
            _ => Cow::Borrowed(&self.policy),
        };
        let policy = policy.as_ref();
        let handle = match tape {
            TapeMode::Off => TapeHandle::default(),
            TapeMode::Record => TapeHandle::recording(header),
            TapeMode::Replay(plan) => TapeHandle::replaying(header, *plan),
        };
        let instance = InstanceContext {
            start: Duration::try_from_secs_f64(clock_start).unwrap_or_default(),
            seed,
            llm: request.llm,
            llm_allowance: request.llm_allowance,
            resources,
            tape: handle.clone(),
        };
        let sandbox = match Sandbox::prepare(policy, &instance) {
            Ok(sandbox) => sandbox,
            Err(e) => {
                trace.set_outcome(Status::error(e.to_string()));
                if let Some(observer) = request.trace_observer {
                    observer.trace_ending(rollout, attempt);
                }
                let trace_error = request
                    .recorder
                    .finish_attempt(trace)
                    .await
                    .err()
                    .map(|e| e.to_string());
                return AttemptOutcome::failed_to_start(
                    format!("cannot prepare the sandbox: {e}"),
                    started.elapsed(),
                    trace_error,
                );
            }
        };
        let (stdout_pipe, stderr_pipe) = (sandbox.wasi.stdout.clone(), sandbox.wasi.stderr.clone());
        let world = AttemptState::new(trace);
        // Measured from before the store exists: its epoch deadline starts there too.
        let now = tokio::time::Instant::now();
        let abandon_at = now
            .checked_add(self.policy.limits.deadline.saturating_add(HOST_CALL_GRACE))
            .unwrap_or_else(|| now + Duration::from_secs(86_400 * 365));
        let (mut store, attached) = new_store(self.pre.engine(), policy, sandbox, world);

        let result: Result<Option<f64>, Failure> = match attached {
            Err(e) => Err(plain_failure(format!("{e:#}"))),
            Ok(()) => {
                match tokio::time::timeout_at(abandon_at, self.instantiate_and_call(&mut store, &ctx, &task_json)).await
                {
                    Err(_) => Err(plain_failure(failure::host_call_deadline(
                        "agent",
                        self.policy.limits.deadline,
                    ))),
                    Ok(Err(trap)) => match trap.downcast_ref::<Diverged>() {
                        Some(diverged) => Err(plain_failure(diverged.to_string())),
                        None => Err(self.describe_trap("agent", &trap, &stderr_pipe.peek())),
                    },
                    Ok(Ok(Err(reason))) => Err(plain_failure(failure::guest_error("agent", &reason))),
                    Ok(Ok(Ok(Some(reward)))) => match invalid_reward(reward) {
                        Some(why) => Err(plain_failure(failure::bad_reward("agent", &why))),
                        None => Ok(Some(reward)),
                    },
                    Ok(Ok(Ok(None))) => Ok(None),
                }
            }
        };

        let mut state = store.into_data();
        state.sandbox.finish();
        let stdout = stdout_pipe.take();
        let stderr = stderr_pipe.take();
        output::record(&state.world.trace, &stdout, &stderr);
        let reward = match &result {
            Ok(returned) => final_reward(*returned, &state.sandbox.reward).inspect(|&value| {
                record_final_reward(&mut state, *returned, value);
            }),
            Err(_) => None,
        };
        if reward.is_none() {
            record_feedback_alone(&mut state);
        }
        let InstanceState {
            sandbox: Sandbox { llm, limits, .. },
            world: AttemptState { trace, .. },
        } = state;
        let memory_bytes = limits.granted_bytes();
        trace.annotate_root(vec![
            KeyValue::new(names::LLM_CALLS, i64::from(llm.calls())),
            KeyValue::new(names::LLM_TOKENS, i64::try_from(llm.tokens()).unwrap_or(i64::MAX)),
            KeyValue::new(names::MEMORY_BYTES, i64::try_from(memory_bytes).unwrap_or(i64::MAX)),
        ]);
        let spans_dropped = trace.dropped().spans;
        let (status, failure) = match result {
            Ok(_) => {
                trace.set_outcome(Status::Ok);
                (AttemptStatus::Succeeded, None)
            }
            Err(Failure { reason, detail }) => {
                trace.set_outcome(Status::error(reason.clone()));
                trace.annotate_root(vec![
                    KeyValue::new(names::FAILURE, reason.clone()),
                    KeyValue::new(names::FAILURE_DETAIL, detail),
                ]);
                (AttemptStatus::Failed, Some(reason))
            }
        };
        if let Some(observer) = request.trace_observer {
            observer.trace_ending(rollout, attempt);
        }
        let trace_error = request
            .recorder
            .finish_attempt(trace)
            .await
            .err()
            .map(|e| e.to_string());
        let ended = RecordedOutcome {
            status: if status == AttemptStatus::Succeeded {
                "succeeded"
            } else {
                "failed"
            }
            .to_owned(),
            reward,
            failure: failure.clone(),
        };
        let (recording, replay) = match handle.finish(ended) {
            Some((tape, replay)) => (
                Some(tape.to_recording(&rollout.rollout_id, &attempt.attempt_id)),
                replay,
            ),
            None => (None, None),
        };
        AttemptOutcome {
            status,
            failure,
            reward,
            llm_calls: llm.calls(),
            llm_tokens: llm.tokens(),
            stdout,
            stderr,
            elapsed: started.elapsed(),
            spans_dropped,
            memory_bytes,
            trace_error,
            recording,
            replay,
        }
    }
}

/// A scratch directory for one replay's copies of its granted directories, made on first use and
/// removed with it.
struct ScratchDir(std::sync::OnceLock<PathBuf>);

impl ScratchDir {
    fn new() -> Self {
        Self(std::sync::OnceLock::new())
    }

    fn path(&self) -> std::io::Result<PathBuf> {
        if let Some(path) = self.0.get() {
            return Ok(path.clone());
        }
        let unique = format!("agl-replay-{}-{:x}", std::process::id(), rand::random::<u64>());
        let path = std::env::temp_dir().join(unique);
        std::fs::create_dir_all(&path)?;
        Ok(self.0.get_or_init(|| path).clone())
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if let Some(path) = self.0.get() {
            let _ = std::fs::remove_dir_all(path);
        }
    }
}

/// A failure with nothing more to say than its reason (bounded, on one line).
fn plain_failure(reason: String) -> Failure {
    let reason = one_line(&reason, MAX_REASON_BYTES);
    Failure {
        detail: reason.clone(),
        reason,
    }
}
