//! The run's end: the results read from the store, recorded in the run record, written to the
//! results file (`--output`) and printed as the summary, and the exit code they give.

use super::{EXIT_ALL_FAILED, EXIT_INTERRUPTED};
use crate::args::CommonArgs;
use crate::output::{self, stderr_line};
use crate::progress::Progress;
use crate::results::{Results, ResultsInput};
use agl_runner::{FitReport, ReplayStore, RunReport};
use agl_runs::record::KeptRun;
use agl_store::LightningStore;
use anyhow::Context;
use std::process::ExitCode;
use std::sync::Arc;

/// What the run did, as the trainer and the process saw it.
pub(super) struct Ended {
    pub fit: FitReport,
    pub otlp_report: Option<crate::otlp_export::OtlpReport>,
    pub agent_name: String,
    pub algo_name: String,
    /// How many runners ran rollouts here (0 with a remote store's runners).
    pub runners: u16,
}

/// The results of the run in `store`, read back and labelled.
pub(super) async fn results(
    common: &CommonArgs,
    store: &dyn LightningStore,
    progress: &Progress,
    ended: Ended,
) -> anyhow::Result<Results> {
    let report = RunReport::collect(store)
        .await
        .context("reading the results from the store")?;
    let statistics = store.statistics().await?;
    let best = progress.best();
    let best_resources = match best.as_ref().and_then(|b| b.resources_id.as_deref()) {
        Some(id) => store.get_resources_by_id(id).await?.map(|r| r.resources),
        None => None,
    };
    if let Some(outcome) = &ended.fit.algorithm
        && outcome.result.is_err()
        && !outcome.stderr.text.is_empty()
    {
        stderr_line(&format!("algorithm stderr:\n{}", outcome.stderr.text.trim_end()));
    }
    let mut results = Results::new(ResultsInput {
        agent: ended.agent_name,
        algorithm: ended.algo_name,
        fit: ended.fit,
        report,
        best,
        best_resources,
        runners: ended.runners,
        statistics,
    });
    results.otlp_export = ended.otlp_report;
    results.name = common.name.clone();
    if let Some(eval) = &common.eval {
        results.label_split(crate::eval_cmd::MODE, &eval.split);
    }
    Ok(results)
}

/// Records the results in the run record, writes the results file and prints the summary.
pub(super) async fn report(
    common: &CommonArgs,
    results: &mut Results,
    kept: &mut KeptRun,
    replay: Option<&Arc<ReplayStore>>,
) -> anyhow::Result<()> {
    results.run_id = Some(kept.run_id.clone());
    results.db = kept.place();
    let value = serde_json::to_value(&*results)?;
    kept.finish(results.status, value).await?;
    // The file first: a reader that closes stdout early (`| head`) must not cost the results.
    if let Some(path) = &common.output {
        let json = serde_json::to_string_pretty(&*results)?;
        std::fs::write(path, json + "\n").with_context(|| format!("writing the results to {}", path.display()))?;
    }
    output::print(&results.summary());
    if let Some(path) = &common.output {
        output::print(&format!("  results written to {}\n", path.display()));
    }
    if let Some(counts) = replay.map(|r| r.counts()) {
        output::print(&format!(
            "  resumed: {} rollout(s) and {} resources version(s) of the earlier run handed to the algorithm again\n",
            counts.rollouts, counts.resources
        ));
    }
    if kept.place().is_some() {
        output::print(&format!(
            "  run {id} kept: agl-host show {id} (or in a browser: agl-host dashboard {id})\n",
            id = kept.run_id
        ));
    }
    if let Some(url) = kept.remote_url() {
        output::print(&format!(
            "  run {} kept in the store at {url}: agl-host show --db <that store's --db> (or in a browser: {url}/)\n",
            kept.run_id
        ));
    }
    Ok(())
}

/// The exit code of a run that ended with `results`.
pub(super) fn exit_code(results: &Results) -> ExitCode {
    match results.status {
        "completed" if results.every_rollout_failed() => ExitCode::from(EXIT_ALL_FAILED),
        "completed" => ExitCode::SUCCESS,
        "interrupted" => ExitCode::from(EXIT_INTERRUPTED),
        _ => ExitCode::FAILURE,
    }
}
