//! Where runs are kept: each `agl-host run`/`dev` gets a run id and, by default, an SQLite
//! database of its own under `.agl/runs/` in the working directory (`--db`/`AGL_DB` name another
//! store, `--db memory` keeps nothing); the run record (what ran, when, how it ended, its
//! results) is written into that store at the start and at the end, its command line with the
//! secrets hidden (`redact`). A run against a remote store (`run --store URL`) keeps its record
//! in that store, over HTTP (`PUT /v1/agl-host/run`), the same record at the same moments.

use crate::inputs::InputError;
use agl_client::HttpStoreClient;
use agl_store::{RunRecord, StoreBackend, StoreOptions};
use agl_store_db::DbUrl;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// The folder kept runs go to, relative to the working directory.
pub const RUNS_DIR: &str = ".agl/runs";

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
pub fn new_run_id(now: SystemTime) -> String {
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
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The store named by `db` (or a new SQLite database under `.agl/runs/`), with the run record
/// written as `running`.
pub async fn open(db: Option<DbUrl>, name: Option<&str>, agent: &str, algorithm: &str) -> anyhow::Result<KeptRun> {
    let run_id = new_run_id(SystemTime::now());
    let url = match db {
        Some(url) => url,
        None => DbUrl::Sqlite(Path::new(RUNS_DIR).join(format!("{run_id}.db"))),
    };
    let store = agl_store_db::open(&url, StoreOptions::default())?;
    if let Some(kept) = store
        .run_record()
        .await
        .with_context(|| format!("reading {}", url.redacted()))?
    {
        return Err(InputError(format!(
            "{} already keeps run {} ({}, started by `agl-host {}`); a store keeps one run: give another --db",
            url.redacted(),
            kept.run_id,
            kept.status,
            kept.command.join(" ")
        ))
        .into());
    }
    let kept = KeptRun {
        record: new_record(run_id.clone(), name, agent, algorithm),
        run_id,
        keeper: Keeper::Local { store, url },
    };
    kept.save().await?;
    Ok(kept)
}

/// The run record of the remote store `client` serves (`run --store URL`), written as `running`.
/// A store keeps one run: one that keeps another run's record refuses this one (the server
/// says which run it keeps), and the run does not start.
pub async fn open_remote(
    client: HttpStoreClient,
    name: Option<&str>,
    agent: &str,
    algorithm: &str,
) -> anyhow::Result<KeptRun> {
    let run_id = new_run_id(SystemTime::now());
    let record = new_record(run_id.clone(), name, agent, algorithm);
    match client.save_run_record(&record).await {
        Ok(_) => {}
        Err(agl_store::StoreError::InvalidArgument(reason)) => {
            return Err(InputError(format!("--store {}: {reason}", client.base_url())).into());
        }
        Err(error) => {
            return Err(anyhow::Error::new(error).context(format!(
                "writing the run record into the store at {}",
                client.base_url()
            )));
        }
    }
    Ok(KeptRun {
        run_id,
        keeper: Keeper::Remote { client },
        record,
    })
}

/// The record of a run starting now, as `agl-host` was started (its command line redacted).
fn new_record(run_id: String, name: Option<&str>, agent: &str, algorithm: &str) -> RunRecord {
    RunRecord {
        run_id,
        name: name.map(str::to_owned),
        started_at: unix_now(),
        finished_at: None,
        status: "running".to_owned(),
        agent: agent.to_owned(),
        algorithm: algorithm.to_owned(),
        command: crate::redact::command_line(std::env::args_os().skip(1)),
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
    pub async fn save(&self) -> anyhow::Result<()> {
        match &self.keeper {
            Keeper::Local { store, url } => store
                .save_run(&self.record)
                .await
                .with_context(|| format!("writing the run record into {}", url.redacted())),
            Keeper::Remote { client } => client
                .save_run_record(&self.record)
                .await
                .map(drop)
                .with_context(|| format!("writing the run record into the store at {}", client.base_url())),
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
    pub async fn finish(&mut self, status: &str, results: serde_json::Value) -> anyhow::Result<()> {
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

/// The `.db` files in `dir` (kept runs, or whatever else was put there), sorted by name; none
/// when the folder does not exist.
pub fn run_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error),
    };
    let mut files = Vec::new();
    for entry in entries {
        let path = entry?.path();
        if path.extension().is_some_and(|ext| ext == "db") && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Opens a kept run's store to look at it (`agl-host runs`, `show`, `export`, `dashboard`): read
/// only (`agl_store_db::open_read_only`: nothing is created, migrated or written, not even a
/// schema into an empty file; a database with no store is refused), with no watchdog, so reading
/// never times out or requeues an attempt of a run that was killed, or of one that another
/// process is still running.
pub fn open_to_read(url: &DbUrl) -> Result<Arc<dyn StoreBackend>, agl_store_db::DbError> {
    let options = StoreOptions {
        watchdog_interval: None,
        clock: Arc::new(agl_store::ManualClock::new(0.0)),
    };
    agl_store_db::open_read_only(url, options)
}

/// A store that already exists, opened to read as [`open_to_read`] does; a SQLite file that is
/// not there is an error (`agl-host show`, `export`), not a new empty database.
pub fn open_existing(url: &DbUrl) -> anyhow::Result<Arc<dyn StoreBackend>> {
    if let DbUrl::Sqlite(path) = url
        && !path.is_file()
    {
        return Err(InputError(format!("{}: no such file", path.display())).into());
    }
    Ok(open_to_read(url)?)
}

/// How to name a store to the user: a SQLite database by its path, any other by its URL with
/// no password.
pub fn place(url: &DbUrl) -> String {
    match url {
        DbUrl::Sqlite(path) => path.display().to_string(),
        other => other.redacted(),
    }
}

/// The kept store a command reads: `db` (a store URL; never `memory`, which would be a new,
/// empty store) or else `run` (see [`find_run`]). Returns its URL and, for a run, its name.
pub fn resolve(db: Option<&str>, run: Option<&str>, dir: &Path) -> anyhow::Result<(DbUrl, Option<String>)> {
    match (db, run) {
        (Some(db), _) => match db.parse::<DbUrl>()? {
            DbUrl::Memory => Err(InputError(
                "--db memory is a new, empty store: name the store a run was kept in (sqlite:PATH, postgres://...)"
                    .into(),
            )
            .into()),
            url => Ok((url, None)),
        },
        (None, Some(run)) => {
            let (path, name) = find_run(run, dir)?;
            Ok((DbUrl::Sqlite(path), Some(name)))
        }
        (None, None) => Err(InputError("give RUN (a run id or a .db file), or --db URL".into()).into()),
    }
}

/// The database of run `run`: a `.db` file, else `DIR/RUN.db`, else the one run of `dir` whose
/// id starts with `run`. Returns its path and how to name it.
pub fn find_run(run: &str, dir: &Path) -> Result<(PathBuf, String), InputError> {
    let as_path = Path::new(run);
    if as_path.is_file() {
        return Ok((as_path.to_owned(), run.to_owned()));
    }
    if run.ends_with(".db") || run.contains(['/', '\\']) {
        return Err(InputError(format!("{run}: no such file")));
    }
    let exact = dir.join(format!("{run}.db"));
    if exact.is_file() {
        return Ok((exact, run.to_owned()));
    }
    let files = run_files(dir).map_err(|e| InputError(format!("cannot list {}: {e}", dir.display())))?;
    let matching: Vec<(PathBuf, String)> = files
        .into_iter()
        .filter_map(|path| {
            let stem = path.file_stem()?.to_string_lossy().into_owned();
            stem.starts_with(run).then_some((path, stem))
        })
        .collect();
    match matching.len() {
        1 => Ok(matching.into_iter().next().unwrap_or_default()),
        0 => Err(InputError(format!(
            "no kept run {run} in {} (`agl-host runs` lists them; a .db file or --db URL opens another store)",
            dir.display()
        ))),
        n => Err(InputError(format!(
            "{run} could be any of {n} runs in {} ({}): give more of its id",
            dir.display(),
            matching
                .iter()
                .map(|(_, id)| id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// The longest run name (`--name`), in characters.
pub const MAX_NAME_CHARS: usize = 64;

/// A run name as `--name` takes it (a clap value parser): 1 to [`MAX_NAME_CHARS`] printable
/// characters (no control character nor bidirectional override: what
/// [`crate::output::terminal_safe`] would change), no blank at either end, and nothing a RUN
/// argument would read as a file (`/`, `\\`, a `.db` end).
pub fn run_name(text: &str) -> Result<String, String> {
    let printable = matches!(
        crate::output::terminal_safe(text, crate::output::Lines::One),
        std::borrow::Cow::Borrowed(_)
    );
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

/// The kept store a command reads, as [`resolve`] finds it, or else (no run id or file matches
/// RUN) the one run of `dir` whose record is named RUN (`--name`). Returns its URL and how to
/// name it.
pub async fn resolve_named(db: Option<&str>, run: Option<&str>, dir: &Path) -> anyhow::Result<(DbUrl, Option<String>)> {
    let error = match resolve(db, run, dir) {
        Ok(found) => return Ok(found),
        Err(error) => error,
    };
    let Some(run) = run.filter(|_| db.is_none()) else {
        return Err(error);
    };
    let named: Vec<crate::runs_cmd::Listed> = crate::runs_cmd::list(dir)
        .await
        .unwrap_or_default()
        .into_iter()
        .filter(|listed| listed.run.as_ref().and_then(|r| r.name.as_deref()) == Some(run))
        .collect();
    match named.as_slice() {
        [] => Err(error),
        [one] => Ok((DbUrl::Sqlite(PathBuf::from(&one.file)), Some(run.to_owned()))),
        several => Err(InputError(format!(
            "{} runs in {} are named {run} ({}): give a run id",
            several.len(),
            dir.display(),
            several
                .iter()
                .filter_map(|listed| listed.run.as_ref().map(|r| r.run_id.as_str()))
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .into()),
    }
}

/// A kept store opened to read, with its run record and how to name it.
pub struct OpenedKept {
    pub store: Arc<dyn StoreBackend>,
    pub record: Option<RunRecord>,
    pub place: String,
}

/// Opens the kept store at `url` (it must exist) and reads its run record.
pub async fn open_kept(url: &DbUrl) -> anyhow::Result<OpenedKept> {
    let place = place(url);
    let store = open_existing(url)?;
    let record = store
        .run_record()
        .await
        .with_context(|| format!("reading the run record of {place}"))?;
    Ok(OpenedKept { store, record, place })
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
