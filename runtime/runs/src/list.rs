//! Every run kept in a folder with its run record (or why it has none), newest first: what
//! `agl-host runs` prints and the dashboard's list of runs serves.

use crate::find::run_files;
use crate::open::open_to_read;
use agl_store::RunRecord;
use agl_store_db::{DbError, DbUrl};
use serde::Serialize;
use std::path::Path;
use std::time::UNIX_EPOCH;

/// One file of the folder: its run record, or why it could not be read.
#[derive(Serialize)]
pub struct Listed {
    pub file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<RunRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When it started: newest first (files that cannot be read last, newest first).
    #[serde(skip)]
    pub when: f64,
}

/// Every `.db` file of `dir` with its run record (or why it has none), newest first, files that
/// cannot be read last (`agl-host runs`, and the dashboard's list of runs).
pub async fn list(dir: &Path) -> std::io::Result<Vec<Listed>> {
    let files = run_files(dir)?;
    let mut listed = Vec::with_capacity(files.len());
    for path in &files {
        listed.push(match read_record(path).await {
            Ok(run) => Listed {
                file: path.display().to_string(),
                when: run.started_at,
                run: Some(run),
                error: None,
            },
            Err(reason) => Listed {
                file: path.display().to_string(),
                when: modified(path),
                run: None,
                error: Some(reason),
            },
        });
    }
    listed.sort_by(|a, b| {
        (a.run.is_none().cmp(&b.run.is_none()))
            .then(b.when.total_cmp(&a.when))
            .then_with(|| b.file.cmp(&a.file))
    });
    Ok(listed)
}

/// The run record of the database `path`, or why there is none.
async fn read_record(path: &Path) -> Result<RunRecord, String> {
    if std::fs::metadata(path).map(|m| m.len()).unwrap_or(0) == 0 {
        return Err("an empty file, not a database".to_owned());
    }
    let store = open_to_read(&DbUrl::Sqlite(path.to_owned())).map_err(|error| match error {
        DbError::Open { reason, .. } => reason,
        DbError::NoStore { .. } => "no agl-host store in it".to_owned(),
        other => other.to_string(),
    })?;
    match store.run_record().await {
        Ok(Some(record)) => Ok(record),
        Ok(None) => Err("no run record: a store that `agl-host run` did not keep".to_owned()),
        Err(error) => Err(format!("cannot read its run record: {error}")),
    }
}

/// When `path` last changed, in seconds since the epoch (0 when unknown).
fn modified(path: &Path) -> f64 {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0.0, |d| d.as_secs_f64())
}

/// A run's status, honest about a run with no end recorded.
pub fn status_label(run: &RunRecord) -> &str {
    if run.finished_at.is_none() && run.status == "running" {
        "running?"
    } else {
        &run.status
    }
}

/// The agent as a short name: its file name without `.wasm` and the build hash the cache adds
/// (`math_agent-058a92d78b82d5ff.wasm` -> `math_agent`).
pub fn short_agent(agent: &str) -> &str {
    let name = agent.rsplit(['/', '\\']).next().unwrap_or(agent);
    let name = name.strip_suffix(".wasm").unwrap_or(name);
    match name.rsplit_once('-') {
        Some((stem, hash)) if hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()) => stem,
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_is_named_without_its_build_hash() {
        assert_eq!(short_agent("math_agent-058a92d78b82d5ff.wasm"), "math_agent");
        assert_eq!(short_agent("/srv/agents/my-agent.wasm"), "my-agent");
        assert_eq!(short_agent("examples/calc-agent-py"), "calc-agent-py");
    }
}
