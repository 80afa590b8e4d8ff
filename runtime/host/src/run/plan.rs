//! The run's plan: every input read and checked before anything is built or started (datasets,
//! resources, the algorithm's configuration, the flags that do not go together, the store, the
//! runners' timing, the LLM, where the components come from, the remote store connected).

use super::Target;
use crate::args::{CommonArgs, Strategy};
use crate::inputs::{self, ComponentSource, InputError};
use crate::llm;
use crate::otlp_export::OtlpExport;
use crate::remote;
use crate::runner_cmd::{self, DEFAULT_UNRESPONSIVE_AFTER, RunnerTiming};
use agl_client::HttpStoreClient;
use agl_llm::LlmBackend;
use agl_store::NamedResources;
use agl_store_db::DbUrl;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// What the run will do, every input checked.
pub(super) struct Plan {
    pub train: Vec<String>,
    pub val: Vec<String>,
    pub initial_resources: Option<NamedResources>,
    pub config_json: String,
    pub grace: Duration,
    /// The store the run keeps its record in (`--db`, `$AGL_DB`); `None`: a file of its own.
    pub db: Option<DbUrl>,
    /// The unresponsive limit runners give rollouts (a duration, as the flag takes it).
    pub unresponsive_after: Option<String>,
    pub timing: RunnerTiming,
    pub llm: Arc<dyn LlmBackend>,
    pub otlp: Option<OtlpExport>,
    /// The LLM proxy's upstreams (`--llm-proxy`).
    pub proxy_upstreams: Option<agl_proxy::Upstreams>,
    pub algo_source: ComponentSource,
    /// The agent (none with `--store URL`, whose runners have their own).
    pub agent_source: Option<ComponentSource>,
    /// The remote store (`--store URL`), connected.
    pub remote_store: Option<HttpStoreClient>,
}

pub(super) async fn plan(common: &mut CommonArgs, target: &Target<'_>, algo: &Path) -> anyhow::Result<Plan> {
    let train = inputs::read_dataset(&common.train)?;
    let val = match &common.val {
        Some(path) => inputs::read_dataset(path)?,
        None => Vec::new(),
    };
    // `agl-host eval`: the resources may come from a kept run, and the baseline runs the tasks as test.
    let initial_resources = match common.eval.as_mut().and_then(|eval| eval.resources.take()) {
        Some(resources) => Some(resources),
        None => common.resources.as_deref().map(inputs::read_resources).transpose()?,
    };
    let config_json = match &common.eval {
        Some(_) => crate::eval_cmd::ALGO_CONFIG.to_owned(),
        None => inputs::read_algorithm_config(common.algo_config.as_deref())?,
    };
    let grace = runner_cmd::duration("grace", &common.grace)?;
    let remote = matches!(target, Target::RemoteStore { .. });
    check_flags(common, remote)?;
    let db = store_url(common, remote)?;
    // Runner processes give rollouts a default unresponsive limit, and so do runners in this
    // process when the run is kept: a rollout whose attempt a dead process left behind is retried
    // (by another runner, or on resume). Runners of a run kept in memory share the store's fate,
    // so they give none unless asked.
    let kept_in_memory = remote || matches!(db, Some(DbUrl::Memory));
    let unresponsive_after = match (&common.unresponsive_after, common.strategy) {
        (Some(value), _) => Some(value.clone()),
        (None, Strategy::ClientServer) => Some(DEFAULT_UNRESPONSIVE_AFTER.to_owned()),
        (None, Strategy::SharedMemory) if !kept_in_memory => Some(DEFAULT_UNRESPONSIVE_AFTER.to_owned()),
        (None, Strategy::SharedMemory) => None,
    };
    let timing = RunnerTiming::parse(&common.heartbeat, unresponsive_after.as_deref())?;
    let llm = llm::backend(&common.llm)?;
    let otlp = OtlpExport::from_flags(&common.otlp)?;
    let proxy_upstreams = match (common.llm_proxy, remote) {
        (false, _) => None,
        (true, true) => {
            return Err(InputError(
                "--llm-proxy serves the proxy beside the store this run keeps; with --store, start it with the \
                 store: `agl-host store --llm-proxy ...`"
                    .into(),
            )
            .into());
        }
        (true, false) => Some(llm::proxy_upstreams(&common.llm, &common.proxy)?),
    };
    let algo_source = inputs::algorithm_source(algo)?;
    let (agent_source, remote_store) = match target {
        Target::Agent(path) => (Some(inputs::agent_source(path)?), None),
        Target::RemoteStore { url, token } => (None, Some(remote::connect(url, token.clone()).await?)),
    };
    Ok(Plan {
        train,
        val,
        initial_resources,
        config_json,
        grace,
        db,
        unresponsive_after,
        timing,
        llm,
        otlp,
        proxy_upstreams,
        algo_source,
        agent_source,
        remote_store,
    })
}

/// The flags that do not go together.
fn check_flags(common: &CommonArgs, remote: bool) -> Result<(), InputError> {
    if common.strategy == Strategy::ClientServer && common.runners > crate::args::MAX_RUNNER_PROCESSES {
        return Err(InputError(format!(
            "--strategy client-server starts one runner process per runner, at most {}; for {} agents in \
             flight use the default shared-memory strategy, or start `agl-host runner --runners N` processes \
             against `agl-host store`",
            crate::args::MAX_RUNNER_PROCESSES,
            common.runners
        )));
    }
    if remote && common.db.is_some() {
        return Err(InputError(
            "--db keeps a run in the store this process serves; with --store the remote store keeps it \
             (start it with `agl-host store --db ...`)"
                .into(),
        ));
    }
    if remote && common.dashboard.is_some() {
        return Err(InputError(
            "--dashboard serves the store this run keeps; with --store, open the remote store's own URL in a \
             browser (`agl-host store` serves the dashboard at /)"
                .into(),
        ));
    }
    Ok(())
}

/// The store a run that keeps its own is kept in: `--db`, else `$AGL_DB` (not for `--store` runs).
fn store_url(common: &CommonArgs, remote: bool) -> anyhow::Result<Option<DbUrl>> {
    Ok(match (&common.db, remote) {
        (Some(text), _) => Some(text.parse::<DbUrl>()?),
        (None, false) => std::env::var("AGL_DB")
            .ok()
            .filter(|v| !v.trim().is_empty())
            .map(|text| text.parse::<DbUrl>())
            .transpose()?,
        (None, true) => None,
    })
}
