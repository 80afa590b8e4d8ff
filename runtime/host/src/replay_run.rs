//! What `agl-host replay` and `agl-host fork` share: the kept run opened and a rollout of it found
//! (as `show` finds them), an attempt's recording read back as a tape, the run's agent loaded as
//! the run loaded it (its recorded command line parsed again, as `--resume` reads it: the same
//! agent, manifest and sandbox flags, from the run's working directory), and one attempt run from
//! a tape as a new rollout of a store (a scratch one to replay, the run's own to fork), its spans
//! and outcome read back.

use crate::args::{Cli, Command, RecordedAttemptArgs};
use crate::components;
use crate::inputs::{self, InputError};
use crate::show_cmd::{self, Opened};
use agl_llm::LlmBackend;
use agl_runs::read::spans_of;
use agl_store::{
    Attempt, AttemptRef, AttemptUpdate, EnqueueRolloutRequest, JsonMap, LightningStore, Rollout, RunRecord, Span,
    StartRolloutRequest,
};
use agl_store_db::DbUrl;
use agl_wasm::algorithm::ATTEMPT_FAILURE_KEY;
use agl_wasm::tape::{ReplayPlan, Tape, TapeMode};
use agl_wasm::{AgentComponent, AttemptOutcome, AttemptRequest, SandboxOptions, SpanRecorder, WasmHost};
use anyhow::Context;
use clap::Parser;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What an attempt without a recording says.
pub const NO_RECORDING: &str =
    "this attempt has no recording (the run was made with --no-record or before recordings existed)";

/// The kept run RUN (or --db) names, opened to read, and the rollout asked for, if any. The
/// store's URL is absolute: the run's agent is loaded from the run's own working directory.
pub async fn open_run(
    args: &RecordedAttemptArgs,
    rollout: Option<String>,
) -> anyhow::Result<(Opened, DbUrl, Option<String>)> {
    let (url, name) =
        agl_runs::find::resolve_named(args.kept.db.as_deref(), args.kept.run.as_deref(), &args.kept.dir).await?;
    let url = match url {
        DbUrl::Sqlite(path) => DbUrl::Sqlite(std::path::absolute(&path).unwrap_or(path)),
        other => other,
    };
    let kept = agl_runs::open::open_kept(&url).await?;
    let (opened, rollout) = show_cmd::name_run(kept, name, args.kept.run.as_deref(), rollout)?;
    Ok((opened, url, rollout))
}

/// How to name the run: `run ID`, or its store.
pub fn run_label(opened: &Opened) -> String {
    opened
        .record
        .as_ref()
        .map_or_else(|| opened.place.clone(), |r| format!("run {}", r.run_id))
}

/// The rollout ROLLOUT names and its attempt `number` (the latest by default).
pub async fn rollout_attempt(opened: &Opened, prefix: &str, number: Option<u32>) -> anyhow::Result<(Rollout, Attempt)> {
    let rollout = show_cmd::find_rollout(opened, prefix).await?;
    let attempts = opened
        .store
        .query_attempts(&rollout.rollout_id, &agl_store::AttemptQuery::default())
        .await
        .with_context(|| format!("reading the attempts of rollout {}", rollout.rollout_id))?
        .items;
    let attempt = show_cmd::pick_attempt(&rollout.rollout_id, &attempts, number)?
        .cloned()
        .ok_or_else(|| InputError(format!("rollout {} has no attempt to replay", rollout.rollout_id)))?;
    Ok((rollout, attempt))
}

/// The tape of `attempt` of `rollout`, if it was recorded.
pub async fn tape_of(store: &dyn LightningStore, rollout: &Rollout, attempt: &Attempt) -> anyhow::Result<Option<Tape>> {
    let recording = store
        .get_recording(&rollout.rollout_id, &attempt.attempt_id)
        .await
        .with_context(|| format!("reading the recording of attempt {}", attempt.attempt_id))?;
    recording
        .map(|recording| {
            Tape::from_recording(&recording).map_err(|e| {
                InputError(format!(
                    "the recording of attempt {} cannot be read: {e}",
                    attempt.attempt_id
                ))
            })
        })
        .transpose()
        .map_err(Into::into)
}

/// The agent a replay or a fork runs, loaded, and the engine it runs in (kept alive with it).
pub struct LoadedAgent {
    pub agent: Arc<AgentComponent>,
    /// Where it was loaded from (its `.wasm`; a guest folder's is in the cache).
    pub path: PathBuf,
    /// Whether it is the run's own agent (not `--agent`).
    pub own: bool,
    _host: WasmHost,
}

impl LoadedAgent {
    /// Refuses to run the run's own agent against a tape of another component: the agent changed
    /// (was rebuilt) since the run.
    pub fn check_against(&self, tape: &Tape) -> Result<(), InputError> {
        if self.own && self.agent.digest() != tape.header.component {
            return Err(InputError(format!(
                "the agent changed since the run: pass --agent PATH to check a new build against the record \
                 ({} is sha256 {}, the recorded attempt's agent was {})",
                self.path.display(),
                short(self.agent.digest()),
                short(&tape.header.component)
            )));
        }
        Ok(())
    }
}

fn short(digest: &str) -> String {
    agl_runs::text::one_line(&digest.chars().take(12).collect::<String>())
}

/// The agent and the sandbox flags the run's command line gave (`None` for the agent: a run whose
/// runners were elsewhere, `--store URL`).
fn run_agent_flags(record: &RunRecord) -> anyhow::Result<(Option<PathBuf>, SandboxOptions)> {
    let words = crate::resume::recorded_command(record);
    let argv = std::iter::once("agl-host".to_owned()).chain(words);
    let cli = Cli::try_parse_from(argv).map_err(|e| {
        let said = e.to_string();
        InputError(format!(
            "the command line run {} keeps cannot be read again ({}): pass --agent PATH",
            record.run_id,
            said.lines().next().unwrap_or("").trim()
        ))
    })?;
    match cli.command {
        Command::Run(run) => Ok((run.agent, run.common.sandbox)),
        Command::Dev(dev) => Ok((Some(dev.agent), dev.common.sandbox)),
        Command::Eval(eval) => Ok((Some(eval.agent), eval.common.sandbox)),
        _ => Err(InputError(format!(
            "run {} was not made by `agl-host run`, `dev` or `eval`: pass --agent PATH",
            record.run_id
        ))
        .into()),
    }
}

/// `sandbox` with the values the run's record hides (`--agent-env NAME=***`) given again.
fn restore_hidden_env(run_id: &str, sandbox: &mut SandboxOptions, given: &[String]) -> Result<(), InputError> {
    let mut offered: Vec<(String, String)> = Vec::new();
    for value in given {
        let Some((name, value)) = value.split_once('=') else {
            return Err(InputError(format!("--agent-env {value}: expected NAME=VALUE")));
        };
        offered.push((name.to_owned(), value.to_owned()));
    }
    let mut missing = Vec::new();
    for grant in &mut sandbox.grants.env {
        if grant.value != crate::redact::MARK {
            continue;
        }
        match offered.iter().position(|(name, _)| *name == grant.name) {
            Some(at) => grant.value = offered.remove(at).1,
            None => missing.push(format!("--agent-env {}=VALUE", grant.name)),
        }
    }
    if let Some((name, _)) = offered.first() {
        return Err(InputError(format!(
            "--agent-env {name}: run {run_id} hides no value of that name (give only the values its record hides)"
        )));
    }
    if !missing.is_empty() {
        return Err(InputError(format!(
            "run {run_id} granted its agent environment values its record hides; give them again: {}",
            missing.join(" ")
        )));
    }
    Ok(())
}

/// Loads the agent: `agent` when given (a path as the user wrote it), else the run's own, as the
/// run loaded it; with the run's sandbox flags either way (the environment must be granted the
/// same), from the run's working directory (where its relative paths point), in an engine for
/// `instances` instances at once.
pub fn load_agent(
    record: Option<&RunRecord>,
    agent: Option<&Path>,
    hidden_env: &[String],
    instances: u32,
) -> anyhow::Result<LoadedAgent> {
    let given = agent.map(|path| std::path::absolute(path).unwrap_or_else(|_| path.to_owned()));
    let (own, mut sandbox) = match record {
        Some(record) => {
            let (own, mut sandbox) = run_agent_flags(record)?;
            restore_hidden_env(&record.run_id, &mut sandbox, hidden_env)?;
            (own, sandbox)
        }
        None => (None, SandboxOptions::default()),
    };
    if record.is_none() && !hidden_env.is_empty() {
        sandbox.grants.env = hidden_env
            .iter()
            .map(|value| agl_wasm::EnvGrant::from_flag(value).map_err(|e| InputError(e.to_string())))
            .collect::<Result<_, _>>()?;
    }
    if let Some(directory) = record.and_then(|r| r.directory.as_deref())
        && Path::new(directory).is_dir()
    {
        std::env::set_current_dir(directory)
            .with_context(|| format!("moving to the run's working directory {directory}"))?;
    }
    let (path, is_own) = match (given, own) {
        (Some(path), _) => (path, false),
        (None, Some(path)) => (path, true),
        (None, None) => {
            let why = match record {
                Some(record) => format!("run {}'s agent ran in runners elsewhere (--store)", record.run_id),
                None => "the store keeps no run record".to_owned(),
            };
            return Err(InputError(format!("{why}: pass --agent PATH")).into());
        }
    };
    let source = inputs::agent_source(&path)?;
    let plan = components::plan_agent(&source, &sandbox)?;
    let host = components::engine(plan.policy.limits.fuel.is_some(), instances, plan.shape)?;
    let agent = components::load_agent(&host, &plan)?;
    Ok(LoadedAgent {
        agent: Arc::new(agent),
        path: plan.path,
        own: is_own,
        _host: host,
    })
}

/// One attempt run from a tape, as a new rollout of a store.
pub struct Ran {
    pub rollout: Rollout,
    pub attempt: Attempt,
    pub outcome: AttemptOutcome,
    pub spans: Vec<Arc<Span>>,
}

/// Where an attempt run from a tape goes, and what runs it.
pub struct FromTape {
    pub store: Arc<dyn LightningStore>,
    pub recorder: Arc<SpanRecorder>,
    pub agent: Arc<AgentComponent>,
    pub llm: Arc<dyn LlmBackend>,
}

impl FromTape {
    /// Starts a rollout of `parent`'s task (its split; `resources_id` and `metadata` as given) in
    /// the store, runs its attempt as `plan` says, keeps its recording (when `keep_recording`),
    /// finalizes the attempt as a runner does (succeeded, or failed with the reason in its
    /// metadata), and reads its spans back.
    pub async fn run(
        &self,
        parent: &Rollout,
        resources_id: Option<String>,
        metadata: Option<JsonMap>,
        plan: ReplayPlan,
        keep_recording: bool,
    ) -> anyhow::Result<Ran> {
        let mut request = EnqueueRolloutRequest::new(parent.input.clone());
        request.mode = parent.mode;
        request.resources_id = resources_id;
        request.metadata = metadata;
        let started = self
            .store
            .start_rollout(StartRolloutRequest {
                rollout: request,
                worker_id: None,
            })
            .await
            .context("starting a rollout for the recorded attempt")?;
        let (rollout, attempt) = (&started.rollout, &started.attempt);
        let mut outcome = self
            .agent
            .run_attempt(AttemptRequest {
                rollout,
                attempt,
                resources: None,
                llm: self.llm.clone(),
                llm_allowance: None,
                recorder: &self.recorder,
                trace_observer: None,
                tape: TapeMode::Replay(Box::new(plan)),
            })
            .await;
        self.recorder.flush().await.context("writing the attempt's spans")?;
        if let Some(recording) = outcome.recording.take().filter(|_| keep_recording) {
            self.store
                .add_recording(recording)
                .await
                .with_context(|| format!("keeping the recording of attempt {}", attempt.attempt_id))?;
        }
        let mut update = AttemptUpdate::status(outcome.status);
        if let Some(reason) = &outcome.failure {
            let mut metadata = JsonMap::new();
            metadata.insert(ATTEMPT_FAILURE_KEY.to_owned(), reason.clone().into());
            update.metadata = Some(Some(metadata));
        }
        self.store
            .update_attempt(&rollout.rollout_id, AttemptRef::Id(&attempt.attempt_id), update)
            .await
            .with_context(|| format!("finalizing attempt {}", attempt.attempt_id))?;
        let spans = spans_of(self.store.as_ref(), rollout, Some(&attempt.attempt_id)).await?;
        Ok(Ran {
            rollout: rollout.clone(),
            attempt: attempt.clone(),
            outcome,
            spans,
        })
    }
}

/// `succeeded` or `failed`, as a tape's outcome says it.
pub fn status_word(outcome: &AttemptOutcome) -> &'static str {
    if outcome.status == agl_store::AttemptStatus::Succeeded {
        "succeeded"
    } else {
        "failed"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agl_wasm::EnvGrant;

    #[test]
    fn hidden_environment_values_are_given_again_by_name() {
        let mut sandbox = SandboxOptions::default();
        sandbox.grants.env = vec![EnvGrant::new("KEY", crate::redact::MARK), EnvGrant::new("MODE", "test")];
        let error = restore_hidden_env("run-1", &mut sandbox.clone(), &[]).unwrap_err().0;
        assert!(error.contains("--agent-env KEY=VALUE"), "{error}");
        let error = restore_hidden_env("run-1", &mut sandbox.clone(), &["MODE=x".into(), "KEY=s".into()])
            .unwrap_err()
            .0;
        assert!(error.contains("--agent-env MODE"), "{error}");
        restore_hidden_env("run-1", &mut sandbox, &["KEY=secret".into()]).expect("restored");
        assert_eq!(sandbox.grants.env[0].value, "secret");
    }
}
