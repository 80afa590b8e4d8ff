//! Where kept runs are and which store a RUN argument names: a run id (or the start of one) in
//! `.agl/runs/`, a `.db` file, a store URL (`--db`), or a run's name (`--name`).

use crate::RunsError;
use crate::list;
use agl_store_db::DbUrl;
use std::path::{Path, PathBuf};

/// The folder kept runs go to, relative to the working directory.
pub const RUNS_DIR: &str = ".agl/runs";

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

/// The kept store a command reads: `db` (a store URL; never `memory`, which would be a new,
/// empty store) or else `run` (see [`find_run`]). Returns its URL and, for a run, its name.
pub fn resolve(db: Option<&str>, run: Option<&str>, dir: &Path) -> Result<(DbUrl, Option<String>), RunsError> {
    match (db, run) {
        (Some(db), _) => match db.parse::<DbUrl>()? {
            DbUrl::Memory => Err(RunsError::Input(
                "--db memory is a new, empty store: name the store a run was kept in (sqlite:PATH, postgres://...)"
                    .into(),
            )),
            url => Ok((url, None)),
        },
        (None, Some(run)) => {
            let (path, name) = find_run(run, dir)?;
            Ok((DbUrl::Sqlite(path), Some(name)))
        }
        (None, None) => Err(RunsError::Input(
            "give RUN (a run id or a .db file), or --db URL".into(),
        )),
    }
}

/// The database of run `run`: a `.db` file, else `DIR/RUN.db`, else the one run of `dir` whose
/// id starts with `run`. Returns its path and how to name it.
fn find_run(run: &str, dir: &Path) -> Result<(PathBuf, String), RunsError> {
    let as_path = Path::new(run);
    if as_path.is_file() {
        return Ok((as_path.to_owned(), run.to_owned()));
    }
    if run.ends_with(".db") || run.contains(['/', '\\']) {
        return Err(RunsError::Input(format!("{run}: no such file")));
    }
    let exact = dir.join(format!("{run}.db"));
    if exact.is_file() {
        return Ok((exact, run.to_owned()));
    }
    let files = run_files(dir).map_err(|e| RunsError::Input(format!("cannot list {}: {e}", dir.display())))?;
    let matching: Vec<(PathBuf, String)> = files
        .into_iter()
        .filter_map(|path| {
            let stem = path.file_stem()?.to_string_lossy().into_owned();
            stem.starts_with(run).then_some((path, stem))
        })
        .collect();
    match matching.len() {
        1 => Ok(matching.into_iter().next().unwrap_or_default()),
        0 => Err(RunsError::Input(format!(
            "no kept run {run} in {} (`agl-host runs` lists them; a .db file or --db URL opens another store)",
            dir.display()
        ))),
        n => Err(RunsError::Input(format!(
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

/// The kept store a command reads, as [`resolve`] finds it, or else (no run id or file matches
/// RUN) the one run of `dir` whose record is named RUN (`--name`). Returns its URL and how to
/// name it.
pub async fn resolve_named(
    db: Option<&str>,
    run: Option<&str>,
    dir: &Path,
) -> Result<(DbUrl, Option<String>), RunsError> {
    let error = match resolve(db, run, dir) {
        Ok(found) => return Ok(found),
        Err(error) => error,
    };
    let Some(run) = run.filter(|_| db.is_none()) else {
        return Err(error);
    };
    let named: Vec<list::Listed> = list::list(dir)
        .await
        .unwrap_or_default()
        .into_iter()
        .filter(|listed| listed.run.as_ref().and_then(|r| r.name.as_deref()) == Some(run))
        .collect();
    match named.as_slice() {
        [] => Err(error),
        [one] => Ok((DbUrl::Sqlite(PathBuf::from(&one.file)), Some(run.to_owned()))),
        several => Err(RunsError::Input(format!(
            "{} runs in {} are named {run} ({}): give a run id",
            several.len(),
            dir.display(),
            several
                .iter()
                .filter_map(|listed| listed.run.as_ref().map(|r| r.run_id.as_str()))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}
