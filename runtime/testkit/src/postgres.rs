//! A throwaway PostgreSQL server for tests: one per test process, started on first use, and a
//! fresh database per test on it. This module owns finding the PostgreSQL binaries, the server's
//! life and making databases; it knows nothing of the store's schema.
//!
//! # How a test gets a database
//!
//! ```no_run
//! // The test carries #[agl_testkit::needs(postgres)]: ignored where PostgreSQL is not installed.
//! let pg = agl_testkit::postgres::server(); // panics, saying what is missing, if it is not there
//! let url = pg.fresh_database(); // postgres://postgres@127.0.0.1:PORT/agl_test_...
//! ```
//!
//! [`server`] starts the server on its first call; every test of the binary shares it. Each
//! [`PgServer::fresh_database`] is a new, empty database, so tests are isolated from each other
//! and run in parallel. Where the server comes from:
//!
//! - `AGL_TEST_POSTGRES_URL=postgres://USER[:PASSWORD]@HOST:PORT/DB` set: that server is used and
//!   nothing is started. Databases are created from `DB` (USER needs the CREATEDB privilege) and
//!   left there afterwards, named `agl_test_<time>_<pid>_<n>`. Needs `psql`.
//! - Otherwise the binaries (`initdb`, `pg_ctl`, `postgres`, `psql`) are looked for in
//!   `/usr/lib/postgresql/<newest>/bin` (Debian's `postgresql` package), then on `PATH`. A server
//!   is initialised (`initdb`: trust authentication, superuser `postgres`, UTF-8, no locale) into a
//!   fresh folder `target/tmp/agl-postgres-<pid>` and started with `pg_ctl start -w`, listening on
//!   127.0.0.1 only, on a free port, with fsync off. It has no Unix socket: a socket's path may
//!   not exceed 107 bytes, which a deep target folder can, and every client connects by URL over
//!   TCP anyway. Its log is `postgres.log` in that folder ([`PgServer::dir`]).
//!   (Finding them is `agl_test_tools::postgres`'s.)
//! - No binaries: [`server`] panics, saying what is missing. A test that needs PostgreSQL carries
//!   `#[agl_testkit::needs(postgres)]`, so it is ignored, with the reason, where the build found
//!   no PostgreSQL, and runs (and fails without it) under `CI=true`: never a silent skip, never
//!   another backend instead. Binaries that are there but fail to start a server panic too.
//!
//! # Root
//!
//! `initdb` and `postgres` refuse to run as root. When this process is root (CI is), they run as
//! the `postgres` user that Debian's package creates, else as `nobody`: spawned with that user's
//! uid and gid, in a folder chowned to it. When that user cannot write under `target/tmp` (a
//! checkout inside a `0700` home), the folder goes under the system's temp dir instead.
//!
//! # Cleanup
//!
//! A static is never dropped, and an exit hook is skipped when a test process aborts, is killed or
//! gets Ctrl-C. So before `initdb` runs, a watchdog is spawned: a `sh`, in a process group of its
//! own (a terminal's Ctrl-C does not reach it), whose stdin is a pipe that only this process
//! writes to. However this process ends, the kernel closes that pipe: the watchdog's `cat` reads
//! end of file, it sends the postmaster SIGQUIT (immediate shutdown: the data is thrown away),
//! waits for it to exit and removes the folder. A folder whose process is gone but which no
//! watchdog removed (the machine went down) is removed when the next server starts.

use std::fs;
use std::io::Write as _;
use std::net::TcpListener;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The variable naming an existing server to use instead of starting one.
pub const URL_VAR: &str = agl_test_tools::postgres::URL_VAR;

/// The superuser of a started server, and the user of its URLs.
const SUPERUSER: &str = "postgres";

/// The folder prefix under `target/tmp`; the process id follows.
const DIR_PREFIX: &str = "agl-postgres-";

/// Appended to the server's `postgresql.conf`. Durability is not wanted of a throwaway server;
/// enough connections for every test of a binary to hold a pool at once.
const SETTINGS: &str = "
# agl-testkit: a throwaway server for tests
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 300
";

/// The watchdog (see the module's doc); `$1` is the server's folder.
/// A postmaster that has exited is a zombie until its parent (init, or whatever reaper the
/// machine has) reaps it, which some containers' init never does: it counts as gone.
const WATCHDOG: &str = r#"cat >/dev/null
running() { kill -0 "$1" 2>/dev/null && ! grep -q ') Z' "/proc/$1/stat" 2>/dev/null; }
pidfile="$1/data/postmaster.pid"
if [ -f "$pidfile" ]; then
  pid=$(head -n 1 "$pidfile")
  if kill -QUIT "$pid" 2>/dev/null; then
    i=0
    while [ "$i" -lt 300 ] && running "$pid"; do sleep 0.1; i=$((i + 1)); done
  fi
fi
rm -rf "$1"
"#;

/// How many times a start is tried on a new port when another process took the free one first.
const PORT_TRIES: usize = 5;

/// A PostgreSQL server for this test process: started by [`server`], or the one
/// `AGL_TEST_POSTGRES_URL` names.
#[derive(Debug)]
pub struct PgServer {
    /// The maintenance database's URL: databases are created through it.
    url: String,
    psql: PathBuf,
    /// The started server's folder (data, log); `None` for an existing server.
    dir: Option<PathBuf>,
    /// Database names start with this (`agl_test_<time>_<pid>`): unique across processes and
    /// runs sharing an existing server.
    prefix: String,
    next: AtomicU64,
    /// The watchdog's stdin, kept open until this process ends.
    _watchdog: Option<ChildStdin>,
}

impl PgServer {
    /// The maintenance database's URL (database `postgres` of a started server).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The started server's folder: `data/` and `postgres.log`. `None` for an existing server.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Another of PostgreSQL's programs (`pgbench`, `pg_test_fsync`), from the folder `psql`
    /// came from; None where it is not there.
    pub fn tool(&self, name: &str) -> Option<PathBuf> {
        Some(self.psql.with_file_name(name)).filter(|path| path.is_file())
    }

    /// Creates a new, empty database and returns its URL,
    /// `postgres://postgres@127.0.0.1:PORT/agl_test_<time>_<pid>_<n>` for a started server.
    /// Panics if the server refuses.
    pub fn fresh_database(&self) -> String {
        let name = format!("{}_{}", self.prefix, self.next.fetch_add(1, Ordering::Relaxed));
        self.psql(&self.url, &format!("CREATE DATABASE {name}"));
        database_url(&self.url, &name).expect("the URL was checked when the server was chosen")
    }

    /// Runs `sql` with `psql` against the database at `url` and returns what it printed: rows
    /// unaligned, `|` between columns, one per line, no headers. Panics with psql's message on an
    /// error.
    pub fn psql(&self, url: &str, sql: &str) -> String {
        self.try_psql(url, sql).unwrap_or_else(|e| panic!("{e}"))
    }

    fn try_psql(&self, url: &str, sql: &str) -> Result<String, String> {
        let mut psql = Command::new(&self.psql);
        psql.args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql]);
        run(&mut psql).map_err(|e| format!("psql on {url}: {e}"))
    }
}

/// The server of this test process, started on the first call (see the module's doc).
///
/// # Panics
/// When PostgreSQL is not installed and `AGL_TEST_POSTGRES_URL` is not set (the test should
/// carry `#[agl_testkit::needs(postgres)]`, which ignores it on such a machine outside CI), and
/// whenever a server cannot be started or reached.
pub fn server() -> &'static PgServer {
    static SERVER: OnceLock<Result<PgServer, Unavailable>> = OnceLock::new();
    match SERVER.get_or_init(choose) {
        Ok(server) => server,
        Err(Unavailable::Absent(reason)) => panic!("{}", crate::missing(crate::Tool::Postgres, reason)),
        Err(Unavailable::Failed(reason)) => panic!("{reason}"),
    }
}

#[derive(Debug)]
enum Unavailable {
    /// Not installed.
    Absent(String),
    /// Installed or named, but no server.
    Failed(String),
}

fn choose() -> Result<PgServer, Unavailable> {
    if let Some(url) = std::env::var_os(URL_VAR) {
        return existing(url.to_string_lossy().into_owned()).map_err(Unavailable::Failed);
    }
    let bin = agl_test_tools::postgres::bin_dir().map_err(Unavailable::Absent)?;
    start(&bin).map_err(|e| Unavailable::Failed(format!("starting a PostgreSQL server from {}: {e}", bin.display())))
}

/// The server `AGL_TEST_POSTGRES_URL` names, checked with `select 1`.
fn existing(url: String) -> Result<PgServer, String> {
    database_url(&url, "x").map_err(|e| format!("{URL_VAR}: {e}"))?;
    let psql = agl_test_tools::postgres::dir_with(&["psql"])
        .ok_or_else(|| format!("{URL_VAR} is set, but `psql` is not installed (no psql on PATH)"))?;
    let server = PgServer::new(url, psql.join("psql"), None, None);
    server
        .try_psql(&server.url, "select 1")
        .map_err(|e| format!("{URL_VAR} names a server that cannot be used: {e}"))?;
    Ok(server)
}

impl PgServer {
    fn new(url: String, psql: PathBuf, dir: Option<PathBuf>, watchdog: Option<ChildStdin>) -> PgServer {
        let time = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |t| t.as_secs());
        PgServer {
            url,
            psql,
            dir,
            prefix: format!("agl_test_{time}_{}", std::process::id()),
            next: AtomicU64::new(1),
            _watchdog: watchdog,
        }
    }
}

/// Starts a server from the binaries in `bin`.
fn start(bin: &Path) -> Result<PgServer, String> {
    let (dir, owner) = scratch_dir()?;
    let watchdog = spawn_watchdog(&dir)?;
    let data = dir.join("data");
    let as_owner = |program: &str| {
        let mut command = Command::new(bin.join(program));
        command.current_dir(&dir);
        if let Some(owner) = &owner {
            command.uid(owner.uid).gid(owner.gid);
        }
        command
    };
    run(as_owner("initdb").arg("-D").arg(&data).args([
        "-U",
        SUPERUSER,
        "-A",
        "trust",
        "-E",
        "UTF8",
        "--no-locale",
        "--no-sync",
    ]))?;
    fs::OpenOptions::new()
        .append(true)
        .open(data.join("postgresql.conf"))
        .and_then(|mut conf| conf.write_all(SETTINGS.as_bytes()))
        .map_err(|e| format!("appending to {}: {e}", data.join("postgresql.conf").display()))?;
    let log = dir.join("postgres.log");
    for attempt in 1.. {
        // Free now; another process may take it before the server binds it, hence the retries.
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map_err(|e| format!("finding a free port on 127.0.0.1: {e}"))?
            .port();
        let _ = fs::remove_file(&log);
        let started = run(as_owner("pg_ctl")
            .args(["start", "-w", "-t", "120", "-D"])
            .arg(&data)
            .arg("-l")
            .arg(&log)
            .args(["-o", &format!("-p {port}")]));
        let url = format!("postgres://{SUPERUSER}@127.0.0.1:{port}/postgres");
        match started {
            Ok(_) => return Ok(PgServer::new(url, bin.join("psql"), Some(dir), Some(watchdog))),
            Err(e) => {
                let log_text = fs::read_to_string(&log).unwrap_or_default();
                if attempt < PORT_TRIES && log_text.contains("could not bind") {
                    continue;
                }
                return Err(format!("{e}\n{}:\n{log_text}", log.display()));
            }
        }
    }
    unreachable!("the loop returns")
}

/// The unprivileged user that runs `initdb` and `postgres` when this process is root.
struct Owner {
    uid: u32,
    gid: u32,
}

impl Owner {
    /// `None` unless this process is root; then `postgres`, else `nobody`.
    fn needed() -> Result<Option<Owner>, String> {
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return Ok(None);
        }
        let id = |flag: &str, user: &str| -> Option<u32> {
            let out = Command::new("id")
                .args([flag, user])
                .stderr(Stdio::null())
                .output()
                .ok()?;
            if !out.status.success() {
                return None;
            }
            String::from_utf8_lossy(&out.stdout).trim().parse().ok()
        };
        ["postgres", "nobody"]
            .into_iter()
            .find_map(|user| {
                Some(Owner {
                    uid: id("-u", user)?,
                    gid: id("-g", user)?,
                })
            })
            .map(Some)
            .ok_or_else(|| {
                "this process is root, which initdb refuses, and neither a `postgres` nor a `nobody` user \
                 exists to run it as"
                    .to_owned()
            })
    }
}

/// A fresh folder for the server, owned by the user that will run it: under the build's
/// `target/tmp`, else the system's temp dir.
fn scratch_dir() -> Result<(PathBuf, Option<Owner>), String> {
    let owner = Owner::needed()?;
    let name = format!("{DIR_PREFIX}{}", std::process::id());
    let mut why = Vec::new();
    for base in target_tmp().into_iter().chain([std::env::temp_dir()]) {
        remove_stale(&base);
        let dir = base.join(&name);
        let _ = fs::remove_dir_all(&dir);
        match make_dir(&dir, owner.as_ref()) {
            Ok(()) => return Ok((dir, owner)),
            Err(e) => {
                let _ = fs::remove_dir_all(&dir);
                why.push(e);
            }
        }
    }
    Err(format!("no folder for the server: {}", why.join("; ")))
}

fn make_dir(dir: &Path, owner: Option<&Owner>) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let Some(owner) = owner else { return Ok(()) };
    std::os::unix::fs::chown(dir, Some(owner.uid), Some(owner.gid))
        .map_err(|e| format!("chown {}: {e}", dir.display()))?;
    let writable = Command::new("test")
        .arg("-w")
        .arg(dir)
        .uid(owner.uid)
        .gid(owner.gid)
        .status()
        .is_ok_and(|status| status.success());
    if writable {
        Ok(())
    } else {
        Err(format!(
            "uid {} cannot write to {} (a parent folder is closed to it)",
            owner.uid,
            dir.display()
        ))
    }
}

/// `<target>/tmp` of the build that made this executable.
fn target_tmp() -> Option<PathBuf> {
    crate::target_dir().map(|target| target.join("tmp"))
}

/// Removes the server folders in `base` whose process is gone (the watchdog never ran).
fn remove_stale(base: &Path) {
    let Ok(entries) = fs::read_dir(base) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(DIR_PREFIX))
            .and_then(|p| p.parse().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !alive(pid) {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill with signal 0 only checks that the process exists.
    let found = unsafe { libc::kill(pid, 0) } == 0;
    found || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Spawns the watchdog of the server in `dir` (see the module's doc); its stdin must be kept.
fn spawn_watchdog(dir: &Path) -> Result<ChildStdin, String> {
    let mut child = Command::new("sh")
        .args(["-c", WATCHDOG, "agl-testkit-watchdog"])
        .arg(dir)
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("spawning the watchdog (sh): {e}"))?;
    Ok(child.stdin.take().expect("stdin is piped"))
}

/// Runs `command` with stdin closed; its stdout, or an error with what it printed.
fn run(command: &mut Command) -> Result<String, String> {
    let out = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running {:?}: {e}", command.get_program()))?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    Err(format!(
        "{command:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    ))
}

/// `url` with its database replaced by `name` (query parameters kept). Only URLs
/// (`postgres://` or `postgresql://`), not `key=value` connection strings.
fn database_url(url: &str, name: &str) -> Result<String, String> {
    let scheme_end = ["postgres://", "postgresql://"]
        .into_iter()
        .find(|scheme| url.starts_with(scheme))
        .ok_or_else(|| format!("`{url}` is not a postgres:// or postgresql:// URL"))?
        .len();
    let rest = &url[scheme_end..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let query = rest[authority_end..]
        .find('?')
        .map_or("", |at| &rest[authority_end + at..]);
    Ok(format!("{}/{name}{query}", &url[..scheme_end + authority_end]))
}

#[cfg(test)]
mod tests {
    use super::database_url;

    #[test]
    fn a_database_url_replaces_only_the_database() {
        let cases = [
            (
                "postgres://postgres@127.0.0.1:5/postgres",
                "postgres://postgres@127.0.0.1:5/db",
            ),
            (
                "postgresql://u:p@h/base?sslmode=disable",
                "postgresql://u:p@h/db?sslmode=disable",
            ),
            ("postgres://h", "postgres://h/db"),
            ("postgres://h?x=1", "postgres://h/db?x=1"),
            ("postgres://[::1]:5432/", "postgres://[::1]:5432/db"),
        ];
        for (url, expected) in cases {
            assert_eq!(database_url(url, "db").as_deref(), Ok(expected), "{url}");
        }
        assert!(database_url("host=localhost dbname=x", "db").is_err());
    }
}
