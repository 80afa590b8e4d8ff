//! A run's own record: each `agl-host run`/`dev` gets a run id and, by default, an SQLite
//! database of its own under `.agl/runs/` in the working directory (`--db`/`AGL_DB` name another
//! store, `--db memory` keeps nothing); the run record (what ran, when, how it ended, its
//! results) is written into that store at the start and at the end, its command line as the
//! caller gives it (with the secrets hidden). A run against a remote store (`run --store URL`)
//! keeps its record in that store, over HTTP (`PUT /v1/agl-host/run`), the same record at the
//! same moments. Also what a run id and a run name look like.

use crate::RunsError;
use crate::find::RUNS_DIR;
use crate::text::{Lines, terminal_safe};
use agl_client::HttpStoreClient;
use agl_store::{RunRecord, StoreBackend, StoreOptions};
use agl_store_db::DbUrl;
use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// What ran: the record's description of a run starting now.
pub struct RunStart<'a> {
    /// The run's name (`--name`).
    pub name: Option<&'a str>,
    pub agent: &'a str,
    pub algorithm: &'a str,
    /// The command line as kept (the secrets hidden).
    pub command: Vec<String>,
}

/// The store of one run, and how to name it to the user.
pub struct KeptRun {
    pub run_id: String,
    keeper: Keeper,
    record: RunRecord,
}

/// Where a run record is written.
enum Keeper {
    /// A store this process opened (`--db`, or a file of its own under `.agl/runs/`).
    Local { store: Arc<dyn StoreBackend>, url: DbUrl },
    /// A store served elsewhere (`run --store URL`), over HTTP.
    Remote { client: HttpStoreClient },
}

/// `run-YYYYMMDD-HHMMSS-xxxx` (UTC): sorts by start time, unique enough with the random tail.
fn new_run_id(now: SystemTime) -> String {
    // "2026-11-24T21:05:12Z" -> "20261124-210512"
    let stamp: String = humantime::format_rfc3339_seconds(now)
        .to_string()
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .map(|c| if c == 'T' { '-' } else { c })
        .collect();
    format!("run-{stamp}-{:04x}", fastrand::u16(..))
}

/// Seconds since the Unix epoch.
fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The store named by `db` (or a new SQLite database under `.agl/runs/`), with the run record
/// written as `running`.
pub async fn open(db: Option<DbUrl>, start: RunStart<'_>) -> Result<KeptRun, RunsError> {
    let run_id = new_run_id(SystemTime::now());
    let url = match db {
        Some(url) => url,
        None => DbUrl::Sqlite(Path::new(RUNS_DIR).join(format!("{run_id}.db"))),
    };
    let store = agl_store_db::open(&url, StoreOptions::default())?;
    if let Some(kept) = store
        .run_record()
        .await
        .map_err(RunsError::store(format!("reading {}", url.redacted())))?
    {
        return Err(RunsError::Input(format!(
            "{} already keeps run {} ({}, started by `agl-host {}`); a store keeps one run: give another --db",
            url.redacted(),
            kept.run_id,
            kept.status,
            kept.command.join(" ")
        )));
    }
    let kept = KeptRun {
        record: new_record(run_id.clone(), start),
        run_id,
        keeper: Keeper::Local { store, url },
    };
    kept.save().await?;
    Ok(kept)
}

/// The run record of the remote store `client` serves (`run --store URL`), written as `running`.
/// A store keeps one run: one that keeps another run's record refuses this one (the server
/// says which run it keeps), and the run does not start.
pub async fn open_remote(client: HttpStoreClient, start: RunStart<'_>) -> Result<KeptRun, RunsError> {
    let run_id = new_run_id(SystemTime::now());
    let record = new_record(run_id.clone(), start);
    match client.save_run_record(&record).await {
        Ok(_) => {}
        Err(agl_store::StoreError::InvalidArgument(reason)) => {
            return Err(RunsError::Input(format!("--store {}: {reason}", client.base_url())));
        }
        Err(error) => {
            return Err(RunsError::store(format!(
                "writing the run record into the store at {}",
                client.base_url()
            ))(error));
        }
    }
    Ok(KeptRun {
        run_id,
        keeper: Keeper::Remote { client },
        record,
    })
}

/// The record of a run starting now.
fn new_record(run_id: String, start: RunStart<'_>) -> RunRecord {
    RunRecord {
        run_id,
        name: start.name.map(str::to_owned),
        started_at: unix_now(),
        finished_at: None,
        status: "running".to_owned(),
        agent: start.agent.to_owned(),
        algorithm: start.algorithm.to_owned(),
        command: start.command,
        directory: std::env::current_dir().ok().map(|d| d.display().to_string()),
        resumed_at: Vec::new(),
        results: None,
    }
}

impl KeptRun {
    /// The kept run `record` of `store`, going on (`agl-host run --resume`).
    pub fn resumed(store: Arc<dyn StoreBackend>, url: DbUrl, mut record: RunRecord) -> Self {
        record.status = "running".to_owned();
        record.finished_at = None;
        record.resumed_at.push(unix_now());
        Self {
            run_id: record.run_id.clone(),
            keeper: Keeper::Local { store, url },
            record,
        }
    }

    /// The store this process opened for the run; `None` for a remote store's run.
    pub fn local_store(&self) -> Option<&Arc<dyn StoreBackend>> {
        match &self.keeper {
            Keeper::Local { store, .. } => Some(store),
            Keeper::Remote { .. } => None,
        }
    }

    /// The URL of the remote store keeping the run (`run --store URL`).
    pub fn remote_url(&self) -> Option<&str> {
        match &self.keeper {
            Keeper::Remote { client } => Some(client.base_url()),
            Keeper::Local { .. } => None,
        }
    }

    /// Writes the run record as it stands.
    pub async fn save(&self) -> Result<(), RunsError> {
        match &self.keeper {
            Keeper::Local { store, url } => store.save_run(&self.record).await.map_err(RunsError::store(format!(
                "writing the run record into {}",
                url.redacted()
            ))),
            Keeper::Remote { client } => {
                client
                    .save_run_record(&self.record)
                    .await
                    .map(drop)
                    .map_err(RunsError::store(format!(
                        "writing the run record into the store at {}",
                        client.base_url()
                    )))
            }
        }
    }

    /// Where the run is kept, for the user: the database file, or the URL; `None` in memory, or
    /// in a remote store (see [`Self::remote_url`]).
    pub fn place(&self) -> Option<String> {
        match &self.keeper {
            Keeper::Local { url: DbUrl::Memory, .. } | Keeper::Remote { .. } => None,
            Keeper::Local {
                url: DbUrl::Sqlite(path),
                ..
            } => Some(path.display().to_string()),
            Keeper::Local { url, .. } => Some(url.redacted()),
        }
    }

    /// Records how the run ended, with its results.
    pub async fn finish(&mut self, status: &str, results: serde_json::Value) -> Result<(), RunsError> {
        self.record.status = status.to_owned();
        self.record.finished_at = Some(unix_now());
        self.record.results = Some(results);
        self.save().await?;
        // Compact on disk for whoever opens it next; the run is kept either way.
        if let Keeper::Local { store, url } = &self.keeper
            && let Err(error) = store.checkpoint().await
        {
            tracing::warn!("could not compact {}: {error}", url.redacted());
        }
        Ok(())
    }
}

/// The longest run name (`--name`), in characters.
const MAX_NAME_CHARS: usize = 64;

/// A run name as `--name` takes it (a clap value parser): 1 to 64 printable
/// characters (no control character nor bidirectional override: what [`terminal_safe`] would
/// change), no blank at either end, and nothing a RUN argument would read as a file (`/`, `\\`,
/// a `.db` end).
pub fn run_name(text: &str) -> Result<String, String> {
    let printable = matches!(terminal_safe(text, Lines::One), std::borrow::Cow::Borrowed(_));
    let chars = text.chars().count();
    if chars == 0 || text.trim().is_empty() {
        Err("a name needs at least one printable character".to_owned())
    } else if chars > MAX_NAME_CHARS {
        Err(format!(
            "a name is at most {MAX_NAME_CHARS} characters, this one is {chars}"
        ))
    } else if !printable {
        Err("a name holds printable characters only (no control character, tab or line break)".to_owned())
    } else if text.trim() != text {
        Err("a name does not start or end with a blank".to_owned())
    } else if text.contains(['/', '\\']) || text.ends_with(".db") {
        Err("a name has no `/` or `\\` and does not end in .db (RUN arguments read those as files)".to_owned())
    } else {
        Ok(text.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn run_names_are_printable_short_and_not_paths() {
        assert_eq!(run_name("apo, new seed").as_deref(), Ok("apo, new seed"));
        assert_eq!(run_name("é×64").map(|n| n.chars().count()), Ok(4));
        for bad in [
            "",
            "   ",
            " lead",
            "trail ",
            "a\nb",
            "tab\there",
            "esc\u{1b}[31m",
            "rtl\u{202e}x",
            "a/b",
            "x.db",
        ] {
            assert!(run_name(bad).is_err(), "{bad:?} is refused");
        }
        assert!(run_name(&"n".repeat(MAX_NAME_CHARS)).is_ok());
        assert!(run_name(&"n".repeat(MAX_NAME_CHARS + 1)).is_err());
    }

    #[test]
    fn run_ids_sort_by_time_and_name_the_utc_moment() {
        let at = UNIX_EPOCH + Duration::from_secs(1_795_813_512); // 2026-11-27T21:05:12Z
        let id = new_run_id(at);
        assert!(id.starts_with("run-20261127-210512-"), "{id}");
        assert_eq!(id.len(), "run-20261127-210512-abcd".len());
        assert!(new_run_id(at + Duration::from_secs(1)) > id);
    }
}
