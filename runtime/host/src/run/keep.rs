//! The store the run works in and keeps its record in: the remote store's (`--store URL`), the
//! stopped run's going on (`--resume`), or a new one (`--db`, or a file of its own); and the
//! dashboard over it (`--dashboard`).

use crate::args::CommonArgs;
use crate::inputs::InputError;
use crate::output::stderr_line;
use agl_client::HttpStoreClient;
use agl_runner::ReplayStore;
use agl_runs::record::{self, KeptRun, RunStart};
use agl_store::LightningStore;
use agl_store_db::DbUrl;
use anyhow::Context;
use std::sync::Arc;

/// The run's store and its record.
pub(super) struct Kept {
    pub store: Arc<dyn LightningStore>,
    pub kept: KeptRun,
    /// The earlier run handed to the algorithm again (`--resume`).
    pub replay: Option<Arc<ReplayStore>>,
}

/// Opens the run's store and writes its record as `running`, saying where it is kept.
pub(super) async fn open(
    common: &CommonArgs,
    db: Option<DbUrl>,
    remote_store: Option<HttpStoreClient>,
    agent_name: &str,
    algo_name: &str,
) -> anyhow::Result<Kept> {
    match remote_store {
        // The remote store keeps the run record too (`agl-host show --db`, its dashboard, `runs`).
        Some(client) => {
            let kept = record::open_remote(client.clone(), run_start(common, agent_name, algo_name)).await?;
            stderr_line(&format!(
                "run {} · kept in the store at {}",
                kept.run_id,
                client.base_url()
            ));
            Ok(Kept {
                store: Arc::new(client),
                kept,
                replay: None,
            })
        }
        None if common.resume.is_some() => {
            let url = db.ok_or_else(|| InputError("--resume needs the run's store".into()))?;
            let (kept, replaying) = crate::resume::reopen(url).await?;
            Ok(Kept {
                store: replaying.clone(),
                kept,
                replay: Some(replaying),
            })
        }
        None => {
            let kept = record::open(db, run_start(common, agent_name, algo_name)).await?;
            stderr_line(&match kept.place() {
                Some(place) => format!("run {} · kept in {place}", kept.run_id),
                None => format!("run {} · kept in memory only (--db memory)", kept.run_id),
            });
            let store: Arc<dyn LightningStore> = kept
                .local_store()
                .context("a run kept by this process has its store here")?
                .clone();
            Ok(Kept {
                store,
                kept,
                replay: None,
            })
        }
    }
}

/// The run record's description of this run: what ran, and the command line with its secrets
/// hidden (`redact`).
fn run_start<'a>(common: &'a CommonArgs, agent: &'a str, algorithm: &'a str) -> RunStart<'a> {
    RunStart {
        name: common.name.as_deref(),
        agent,
        algorithm,
        command: crate::redact::command_line(std::env::args_os().skip(1)),
    }
}

/// The web dashboard on its own address (`--dashboard`): the run's store, as kept, with the page
/// at /. None for a run in a remote store.
pub(super) async fn serve_dashboard(
    common: &CommonArgs,
    kept: &KeptRun,
) -> anyhow::Result<Option<agl_server::ServerHandle>> {
    let (Some(addr), Some(kept_store)) = (common.dashboard, kept.local_store()) else {
        return Ok(None);
    };
    let handle = crate::dashboard_cmd::serve_run(kept_store.clone(), addr, &common.edge).await?;
    stderr_line(&format!("dashboard at {}", crate::dashboard_cmd::url(&handle, None)));
    Ok(Some(handle))
}
