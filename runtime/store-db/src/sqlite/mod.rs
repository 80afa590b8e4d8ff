//! `SqliteLightningStore`: the LightningStore kept in one SQLite file (WAL mode), for one process:
//! the generic [`BackedStore`] over [`SqliteBackend`]. Every transaction is a job for the writer
//! thread (`writer.rs`), which runs it over [`tx::SqliteTx`] and commits groups of jobs together;
//! a call returns once its change is committed, and the writer tells the store's waiters which
//! rollouts each commit finished. The write-ahead log is folded into the file mostly by a thread
//! of its own (`checkpointer.rs`).

mod checkpointer;
mod recall;
mod schema;
mod tx;
mod writer;

pub use schema::VERSION as SCHEMA_VERSION;

use crate::error::DbError;
use agl_store::notifier::Notifier;
use agl_store::storage_backend::{Access, OpenBackend, Opening, TxKind};
use agl_store::{BackedStore, StorageBackend, StoreError, StoreOptions, StoreResult};
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::sync::{Arc, mpsc};
use std::time::Duration;
use tokio::sync::oneshot;
pub use tx::SqliteTx;
use writer::{Job, JobEnd, Message};

/// The SQLite LightningStore. Cloning gives another handle to the same store.
pub type SqliteLightningStore = BackedStore<SqliteBackend>;

/// One SQLite file, written by its writer thread.
pub struct SqliteBackend {
    jobs: std::sync::Mutex<mpsc::Sender<Message>>,
    path: PathBuf,
}

impl<P: AsRef<Path> + ?Sized> OpenBackend<P> for SqliteBackend {
    type Error = DbError;

    /// Opens the database at `target`. To write: creating it and its folder if missing, and
    /// bringing its schema up to date. To read only (`agl-host show`, `runs`, `export`,
    /// `dashboard`): nothing is created, migrated or written, not even a schema into an empty
    /// file; a database with no store schema, or one this binary cannot read, is refused.
    fn open_backend(
        target: &P,
        opening: Opening,
        _options: &StoreOptions,
        notifier: Arc<Notifier>,
    ) -> Result<Self, DbError> {
        let path = target.as_ref();
        if opening.access == Access::ReadWrite {
            create_folder(path)?;
        }
        Self::open_file(path, opening.access, notifier)
    }
}

/// Creates the folder of the database at `path` if missing.
fn create_folder(path: &Path) -> Result<(), DbError> {
    let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) else {
        return Ok(());
    };
    std::fs::create_dir_all(parent).map_err(|e| DbError::Open {
        path: path.to_owned(),
        reason: match parent.ancestors().find(|a| a.is_file()) {
            Some(file) => format!("{} is a file, not a folder", file.display()),
            None => format!("cannot create its folder: {e}"),
        },
    })
}

impl SqliteBackend {
    fn open_file(path: &Path, access: Access, notifier: Arc<Notifier>) -> Result<Self, DbError> {
        let place = path.display().to_string();
        let open_error = |e: rusqlite::Error| DbError::Open {
            path: path.to_owned(),
            reason: e.to_string(),
        };
        let read_only = access == Access::ReadOnly;
        let mut conn = if read_only {
            let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
            Connection::open_with_flags(path, flags).map_err(open_error)?
        } else {
            Connection::open(path).map_err(open_error)?
        };
        conn.busy_timeout(Duration::from_secs(10)).map_err(open_error)?;
        if !read_only {
            // WAL: readers never block the writer, and a commit is one append; NORMAL: a commit
            // is durable once the process has written it (it survives the process being killed).
            let mode: String = conn
                .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
                .map_err(open_error)?;
            if !mode.eq_ignore_ascii_case("wal") {
                tracing::warn!(path = %place, mode, "SQLite would not use WAL mode");
            }
            conn.pragma_update(None, "synchronous", "NORMAL").map_err(open_error)?;
        }
        // Plans that do not depend on bound values: otherwise SQLite looks at a parameter while
        // planning some statements (an `=` beside ORDER BY or MAX), and every new binding of it
        // then compiles the cached statement again (each span's insert did so).
        conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
            .map_err(open_error)?;
        // Room for every statement the store runs (rusqlite keeps 16 by default; a run uses more,
        // and a statement pushed out is compiled again when next used).
        conn.set_prepared_statement_cache_capacity(128);
        // No memory map (SQLite's default): a map of the file counts in the process's resident
        // memory, and over an hour's soak it grew to the map's size (1 GiB) while the store's own
        // memory stayed flat; the bench's dequeue measured the same with and without it.
        let fold = if read_only {
            // A file that is not a database fails here, as opening to write fails on its mode.
            let found: i64 = conn
                .query_row("PRAGMA user_version", [], |row| row.get(0))
                .map_err(open_error)?;
            schema::check_readable(found, &place)?;
            checkpointer::Fold::none()
        } else {
            // SQLite's own fold of the write-ahead log, where the checkpointer cannot hook
            // commits: every 16,000 pages (64 MiB) rather than 1,000 (see `checkpointer.rs`).
            conn.pragma_update(None, "wal_autocheckpoint", checkpointer::FOLD_PAGES)
                .map_err(open_error)?;
            schema::migrate(&mut conn, &place)?;
            checkpointer::Fold::start(&mut conn, path)
        };

        let (sender, receiver) = mpsc::channel::<Message>();
        std::thread::Builder::new()
            .name("agl-sqlite-writer".into())
            .spawn(move || writer::run(conn, fold, access, receiver, |finished| notifier.finished(&finished)))
            .map_err(|e| DbError::Other {
                place,
                reason: format!("cannot start its writer thread: {e}"),
            })?;
        Ok(Self {
            jobs: std::sync::Mutex::new(sender),
            path: path.to_owned(),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn send(&self, message: Message) -> StoreResult<()> {
        self.jobs
            .lock()
            .map_err(|_| writer_stopped())?
            .send(message)
            .map_err(|_| writer_stopped())
    }
}

fn writer_stopped() -> StoreError {
    StoreError::Backend("the SQLite store's writer has stopped (see the log)".into())
}

impl StorageBackend for SqliteBackend {
    type Tx<'t> = SqliteTx<'t>;
    const NAME: &'static str = "SqliteLightningStore";
    const REPLAYS: bool = false;

    /// Reads go through the writer too, so that they see every acknowledged write.
    fn transact<T, F>(&self, _kind: TxKind, mut op: F) -> impl Future<Output = StoreResult<T>> + Send
    where
        T: Send + 'static,
        F: FnMut(&mut SqliteTx<'_>) -> StoreResult<T> + Send + 'static,
    {
        let (answer, answered) = oneshot::channel();
        let job: Job = Box::new(move |tx: &mut SqliteTx<'_>| {
            let result = op(tx);
            JobEnd {
                succeeded: result.is_ok(),
                answer: Box::new(move |failure: Option<StoreError>| {
                    let _ = answer.send(match failure {
                        Some(error) => Err(error),
                        None => result,
                    });
                }),
            }
        });
        let sent = self.send(Message::Job(job));
        async move {
            sent?;
            answered.await.map_err(|_| writer_stopped())?
        }
    }

    /// Copies the write-ahead log into the database file and empties it.
    fn checkpoint(&self) -> impl Future<Output = StoreResult<()>> + Send {
        let (answer, answered) = oneshot::channel();
        let sent = self.send(Message::Checkpoint(answer));
        async move {
            sent?;
            answered.await.map_err(|_| writer_stopped())?
        }
    }
}
