//! `agl-host run --resume RUN` (and `dev --resume RUN`): going on with a kept run that stopped
//! (Ctrl-C, a crash, `kill -9`). RUN is a run id (`.agl/runs/RUN.db`), a `.db` file or a store
//! URL. The run's own command line and working directory, kept in its run record, are used
//! again, so nothing but RUN is given (and the secret values the record hides, which are asked
//! for: see `redact`); then the attempts it left running are ended as `unresponsive` (retried as
//! their rollouts' retry config says) and the algorithm starts again on a [`ReplayStore`]: it is
//! handed the rollouts and resources it made before, and goes on from where it stopped.

use crate::inputs::InputError;
use agl_runner::{ReplayStore, abandon_running_attempts};
use agl_runs::RUNS_DIR;
use agl_runs::record::KeptRun;
use agl_store::{LightningStore, RolloutQuery, RolloutStatus, StoreOptions};
use agl_store_db::DbUrl;
use anyhow::Context;
use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;

/// The store RUN names.
pub fn store_url(run: &str) -> anyhow::Result<DbUrl> {
    if run.contains(':') && !Path::new(run).exists() {
        return Ok(run.parse::<DbUrl>()?);
    }
    let path = Path::new(run);
    if path.extension().is_some_and(|ext| ext == "db") || path.components().count() > 1 {
        return Ok(DbUrl::Sqlite(path.to_owned()));
    }
    Ok(DbUrl::Sqlite(Path::new(RUNS_DIR).join(format!("{run}.db"))))
}

/// For `agl-host run|dev --resume RUN [-v...]`: the command line to run instead (the kept run's
/// own, with `--db` naming its store and `--resume` kept), after moving to the run's working
/// directory. `None` when `argv` is not such a command.
pub fn rewrite_command_line(argv: &[OsString]) -> anyhow::Result<Option<Vec<OsString>>> {
    let words: Vec<String> = argv.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    if !words.get(1).is_some_and(|c| c == "run" || c == "dev") {
        return Ok(None);
    }
    let Some(at) = words.iter().position(|w| w == "--resume" || w.starts_with("--resume=")) else {
        return Ok(None);
    };
    let run = match words[at].strip_prefix("--resume=") {
        Some(value) => value.to_owned(),
        None => words
            .get(at + 1)
            .cloned()
            .ok_or_else(|| InputError("--resume needs a run: its id, a .db file or a store URL".into()))?,
    };
    let others: Vec<&String> = words[2..]
        .iter()
        .enumerate()
        .filter(|(i, w)| {
            let i = i + 2;
            !(i == at || (i == at + 1 && !words[at].contains('=')) || w.starts_with("-v"))
        })
        .map(|(_, w)| w)
        .collect();
    let verbosity: Vec<String> = words[2..].iter().filter(|w| w.starts_with("-v")).cloned().collect();
    let url = store_url(&run)?;
    let record = read_record(&url)?;
    if record.status != "running" && record.status != "interrupted" {
        return Err(InputError(format!(
            "run {} has status {}: only a run that was stopped (interrupted, or killed while running) can be resumed",
            record.run_id, record.status
        ))
        .into());
    }
    // The store's URL as the run's own directory sees it.
    let url = match &url {
        DbUrl::Sqlite(path) => DbUrl::Sqlite(std::path::absolute(path).unwrap_or_else(|_| path.clone())),
        other => other.clone(),
    };
    if let Some(directory) = &record.directory {
        std::env::set_current_dir(directory)
            .with_context(|| format!("moving to the run's working directory {directory}"))?;
    }
    // The recorded command without its own --db (the store is the one being resumed), its
    // hidden values given again.
    let mut own = recorded_command(&record);
    let others: Vec<String> = others.into_iter().cloned().collect();
    crate::redact::restore(&record.run_id, &mut own, &others)?;
    let mut rewritten: Vec<OsString> = vec![argv[0].clone()];
    rewritten.extend(verbosity.into_iter().map(OsString::from));
    rewritten.extend(own.into_iter().map(OsString::from));
    rewritten.extend(["--db".into(), url.to_string().into(), "--resume".into(), run.into()]);
    Ok(Some(rewritten))
}

/// The command line a kept run was started with (the subcommand first), as its record keeps it
/// (its secrets hidden), without its own `--db`: the store it names is the one being read again
/// (`--resume`, and `agl-host replay` and `fork`, which load the run's agent from it).
pub fn recorded_command(record: &agl_store::RunRecord) -> Vec<String> {
    let mut own = Vec::with_capacity(record.command.len());
    let mut kept = record.command.iter();
    while let Some(word) = kept.next() {
        if word == "--db" {
            kept.next();
            continue;
        }
        if !word.starts_with("--db=") {
            own.push(word.clone());
        }
    }
    own
}

/// The run record of the store at `url`, read before the async runtime starts.
fn read_record(url: &DbUrl) -> anyhow::Result<agl_store::RunRecord> {
    if let DbUrl::Sqlite(path) = url
        && !path.is_file()
    {
        return Err(InputError(format!(
            "no kept run at {} (runs are kept under {RUNS_DIR}; `agl-host runs` lists them)",
            path.display()
        ))
        .into());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let store = agl_store_db::open(url, StoreOptions::default())?;
        store
            .run_record()
            .await?
            .ok_or_else(|| InputError(format!("{} keeps no run record: nothing to resume", url.redacted())).into())
    })
}

/// The kept run reopened, its abandoned attempts ended, and the store the trainer uses (a
/// replay of the earlier run over it).
pub async fn reopen(url: DbUrl) -> anyhow::Result<(KeptRun, Arc<ReplayStore>)> {
    let store = agl_store_db::open(&url, StoreOptions::default())?;
    let record = store
        .run_record()
        .await?
        .ok_or_else(|| InputError(format!("{} keeps no run record: nothing to resume", url.redacted())))?;
    let ended = abandon_running_attempts(store.as_ref())
        .await
        .context("ending the attempts the stopped run left running")?;
    let kept = KeptRun::resumed(store.clone(), url, record);
    kept.save().await?;
    let finished = store
        .query_rollouts(&RolloutQuery::default().status_in([
            RolloutStatus::Succeeded,
            RolloutStatus::Failed,
            RolloutStatus::Cancelled,
        ]))
        .await?
        .total;
    crate::output::stderr_line(&format!(
        "resuming run {}: {finished} finished rollout(s) kept, {ended} attempt(s) it left running ended as unresponsive",
        kept.run_id
    ));
    let inner: Arc<dyn LightningStore> = store;
    let replay = Arc::new(ReplayStore::new(inner).await?);
    Ok((kept, replay))
}
