//! `agl-host best RUN [--version V]`: a kept run's best resources (the version its results name as
//! best), or another version of it, printed as Agent-lightning's NamedResources JSON, which
//! `--resources` reads back (`agl-host best RUN > best.json`). API keys are left out, as in the
//! results file. `eval --run RUN` evaluates the same resources ([`kept_resources`]).

use crate::args::BestArgs;
use crate::inputs::InputError;
use crate::output::{one_line, print};
use crate::results::without_keys;
use agl_store::NamedResources;
use anyhow::Context;
use std::path::Path;
use std::process::ExitCode;

pub async fn run(args: BestArgs) -> anyhow::Result<ExitCode> {
    let (resources, _) = kept_resources(
        args.kept.db.as_deref(),
        args.kept.run.as_deref(),
        &args.kept.dir,
        args.version.as_deref(),
    )
    .await?;
    print(&format!("{}\n", serde_json::to_string_pretty(&resources)?));
    Ok(ExitCode::SUCCESS)
}

/// The resources of the run `run` (or the one `db` keeps): its best version, or `version`.
/// Returns them, without API keys, and the id of their version.
pub async fn kept_resources(
    db: Option<&str>,
    run: Option<&str>,
    dir: &Path,
    version: Option<&str>,
) -> anyhow::Result<(NamedResources, String)> {
    let (url, _) = agl_runs::find::resolve_named(db, run, dir).await?;
    let agl_runs::open::OpenedKept { store, record, place } = agl_runs::open::open_kept(&url).await?;
    let Some(record) = record else {
        return Err(InputError(format!(
            "{place} keeps no run record: not a store `agl-host run` kept a run in"
        ))
        .into());
    };
    let run_id = one_line(&record.run_id);
    let id = match version {
        Some(version) => version.to_owned(),
        None => best_version(&record).ok_or_else(|| {
            let why = match (record.finished_at, record.status.as_str()) {
                (None, _) => {
                    "it has not ended (still running, or killed before it could record its results)".to_owned()
                }
                (Some(_), status) => format!(
                    "it ended ({}) with no best score reported, or none with a resources version",
                    one_line(status)
                ),
            };
            InputError(format!(
                "run {run_id} has no best resources yet: {why}; `agl-host show {run_id}` shows the run, and --version \
                 VERSION prints one of its resources versions"
            ))
        })?,
    };
    let update = store
        .get_resources_by_id(&id)
        .await
        .with_context(|| format!("reading resources {} from {place}", one_line(&id)))?
        .ok_or_else(|| {
            InputError(format!(
                "run {run_id} ({place}) has no resources version {}",
                one_line(&id)
            ))
        })?;
    Ok((without_keys(update.resources), update.resources_id))
}

/// The resources version the run's results name as best.
fn best_version(record: &agl_store::RunRecord) -> Option<String> {
    record
        .results
        .as_ref()?
        .pointer("/best/resources_id")?
        .as_str()
        .map(str::to_owned)
}
