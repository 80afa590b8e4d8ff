//! The checkpointer: folds the write-ahead log into the database file on a thread and a
//! connection of its own, so that the writer keeps serving calls while pages are copied and both
//! files synced (done by the writer, a fold stopped every call for as long as the sync took).
//!
//! A fold has two passes. The writer's commit hook ([`Fold::heard_commit`]) nudges the
//! checkpointer once the log holds [`FOLD_PAGES`]; it copies every page committed so far (a
//! passive checkpoint: the writer goes on committing meanwhile). Then the writer, between two
//! transactions, copies what was committed during that pass ([`Fold::finish_if_due`]): the log is
//! then wholly in the file, so SQLite starts writing it from its beginning again at the next
//! commit, and the log stays within about [`FOLD_PAGES`] pages plus one pass's worth. (A
//! checkpoint alone on the other thread never catches up with a writer that never stops, and the
//! log would grow without end.) Should the checkpointer be stuck or gone, the writer folds the
//! whole log itself once it is [`FALLBACK_FACTOR`] times longer.

use rusqlite::Connection;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// Pages (4 KiB each) in the log that start a fold: 64 MiB. A fold syncs both files, and pages
/// written again meanwhile are copied once, so folds are few and large.
pub(crate) const FOLD_PAGES: i64 = 16_000;
/// How many times [`FOLD_PAGES`] the log may reach before the writer folds it itself (the
/// checkpointer has not kept up).
const FALLBACK_FACTOR: i64 = 4;

/// What the writer and the checkpointer share.
struct Shared {
    /// Pages in the log after the last commit.
    log_pages: AtomicI64,
    /// A fold has started and the writer has not finished it.
    folding: AtomicBool,
    /// The checkpointer's pass is over: the writer's is due.
    pass_done: AtomicBool,
    /// Held while a checkpoint runs, so two never run at once.
    running: Mutex<()>,
}

impl Shared {
    /// Runs a checkpoint of `mode` on `conn`, once no other is running.
    fn checkpoint(&self, conn: &Connection, mode: &str) -> rusqlite::Result<()> {
        let _running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |_| Ok(()))
    }
}

/// The writer's side of the fold.
pub(crate) struct Fold {
    shared: Arc<Shared>,
    /// Nudges the checkpointer; `None` without one (the writer folds alone).
    nudge: Option<SyncSender<()>>,
    fold_pages: i64,
}

impl Fold {
    /// Starts the checkpointer on its own connection to `path`, and hooks `writer`'s commits
    /// to it. Without a second connection the writer folds alone, as SQLite's automatic
    /// checkpoint would.
    pub fn start(writer: &mut Connection, path: &Path) -> Fold {
        Self::start_at(writer, path, FOLD_PAGES)
    }

    /// No fold at all: a read-only connection's (it writes no log, and may not fold another's).
    pub fn none() -> Fold {
        Fold {
            shared: Arc::new(Shared {
                log_pages: AtomicI64::new(0),
                folding: AtomicBool::new(false),
                pass_done: AtomicBool::new(false),
                running: Mutex::new(()),
            }),
            nudge: None,
            fold_pages: i64::MAX,
        }
    }

    /// [`Fold::start`] with another threshold (tests).
    pub(crate) fn start_at(writer: &mut Connection, path: &Path, fold_pages: i64) -> Fold {
        let shared = Arc::new(Shared {
            log_pages: AtomicI64::new(0),
            folding: AtomicBool::new(false),
            pass_done: AtomicBool::new(false),
            running: Mutex::new(()),
        });
        let nudge = match spawn_checkpointer(path, Arc::clone(&shared)) {
            Ok(nudge) => Some(nudge),
            Err(reason) => {
                tracing::warn!("SQLite store: no checkpointer ({reason}); the writer folds the log itself");
                None
            }
        };
        let hooked = Arc::clone(&shared);
        // Replaces SQLite's automatic checkpoint, which is a commit hook of the same kind.
        let hook = writer.wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, pages: std::ffi::c_int| {
            hooked.log_pages.store(i64::from(pages), Ordering::Relaxed);
            Ok(())
        }));
        if let Err(error) = hook {
            tracing::warn!("SQLite store: cannot hook commits ({error}); SQLite folds the log itself");
        }
        Fold {
            shared,
            nudge,
            fold_pages,
        }
    }

    /// After a commit: nudges the checkpointer when the log has grown past the threshold. A
    /// checkpointer found gone is dropped: from then on the writer folds at the threshold.
    pub fn heard_commit(&mut self) {
        let pages = self.shared.log_pages.load(Ordering::Relaxed);
        if pages < self.fold_pages {
            return;
        }
        let Some(nudge) = &self.nudge else {
            return;
        };
        if !self.shared.folding.swap(true, Ordering::AcqRel) {
            match nudge.try_send(()) {
                Ok(()) | Err(TrySendError::Full(())) => {}
                Err(TrySendError::Disconnected(())) => {
                    tracing::warn!("SQLite store: the checkpointer has stopped; the writer folds the log itself");
                    self.nudge = None;
                }
            }
        }
    }

    /// Between transactions: copies what the log gained during the checkpointer's pass, once that
    /// pass is over, or the whole log when it has grown [`FALLBACK_FACTOR`] times past the
    /// threshold (or past the threshold with no checkpointer).
    pub fn finish_if_due(&self, writer: &Connection) {
        let pages = self.shared.log_pages.load(Ordering::Relaxed);
        let fallback = if self.nudge.is_some() {
            pages >= FALLBACK_FACTOR * self.fold_pages
        } else {
            pages >= self.fold_pages
        };
        if !self.shared.pass_done.swap(false, Ordering::AcqRel) && !fallback {
            return;
        }
        if let Err(error) = self.checkpoint(writer, "PASSIVE") {
            tracing::warn!("SQLite store: cannot fold the write-ahead log: {error}");
        }
        self.shared.log_pages.store(0, Ordering::Relaxed);
        self.shared.folding.store(false, Ordering::Release);
    }

    /// Runs a checkpoint of `mode` on `conn`, once no other is running.
    pub fn checkpoint(&self, conn: &Connection, mode: &str) -> rusqlite::Result<()> {
        self.shared.checkpoint(conn, mode)
    }
}

/// Opens the checkpointer's connection and starts its thread; the sender nudges it, and
/// dropping it stops the thread.
fn spawn_checkpointer(path: &Path, shared: Arc<Shared>) -> Result<SyncSender<()>, String> {
    let conn = Connection::open(path).map_err(|e| e.to_string())?;
    conn.busy_timeout(Duration::from_secs(10)).map_err(|e| e.to_string())?;
    let (nudge, nudged) = mpsc::sync_channel::<()>(1);
    std::thread::Builder::new()
        .name("agl-sqlite-fold".into())
        .spawn(move || {
            for () in nudged {
                if let Err(error) = shared.checkpoint(&conn, "PASSIVE") {
                    tracing::warn!("SQLite store: the checkpointer could not fold the log: {error}");
                }
                shared.pass_done.store(true, Ordering::Release);
            }
        })
        .map_err(|e| format!("cannot start its thread: {e}"))?;
    Ok(nudge)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh folder under the system's temporary one, removed when dropped.
    struct Scratch(std::path::PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!("agl-fold-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }

        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A connection as the store's writer has it (WAL, commits hooked to a fold of `fold_pages`),
    /// on a fresh file with one table.
    fn writer(dir: &Path, fold_pages: i64) -> (Connection, Fold, std::path::PathBuf) {
        let path = dir.join("fold.db");
        let mut conn = Connection::open(&path).unwrap();
        conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(())).unwrap();
        conn.execute_batch("CREATE TABLE blobs (n INTEGER PRIMARY KEY, data BLOB NOT NULL)")
            .unwrap();
        let fold = Fold::start_at(&mut conn, &path, fold_pages);
        (conn, fold, path)
    }

    /// Commits `n` rows of 6 KiB (two pages each), doing after each what the writer does.
    fn commit_rows(conn: &Connection, fold: &mut Fold, from: i64, n: i64) {
        for row in from..from + n {
            conn.execute("INSERT INTO blobs (n, data) VALUES (?1, zeroblob(6000))", [row])
                .unwrap();
            fold.heard_commit();
            fold.finish_if_due(conn);
        }
    }

    fn wal_bytes(path: &Path) -> u64 {
        std::fs::metadata(path.with_extension("db-wal")).map_or(0, |m| m.len())
    }

    #[test]
    fn the_log_stays_short_under_commits_that_never_stop_and_nothing_is_lost() {
        let dir = Scratch::new("short");
        let (conn, mut fold, path) = writer(dir.path(), 50);
        commit_rows(&conn, &mut fold, 0, 3000);
        // 3,000 commits wrote over 6,000 pages; folded every 50, the log's file (which SQLite
        // writes again from its start after a whole fold, without shrinking it) stays within
        // the fallback's length.
        let limit = (FALLBACK_FACTOR * 50 + 10) as u64 * 4096;
        assert!(
            wal_bytes(&path) <= limit,
            "write-ahead log {} bytes, over {limit}",
            wal_bytes(&path)
        );
        drop(fold);
        drop(conn);
        let reopened = Connection::open(&path).unwrap();
        let count: i64 = reopened
            .query_row("SELECT COUNT(*) FROM blobs", [], |r| r.get(0))
            .unwrap();
        assert_eq!(count, 3000);
    }

    #[test]
    fn the_checkpointers_pass_is_not_taken_for_another_writer() {
        // The writer's recall trusts what it remembers while `data_version` stays the same.
        let dir = Scratch::new("version");
        let (conn, mut fold, _) = writer(dir.path(), 20);
        let version = |conn: &Connection| -> i64 { conn.query_row("PRAGMA data_version", [], |r| r.get(0)).unwrap() };
        let before = version(&conn);
        for row in 0..15 {
            conn.execute("INSERT INTO blobs (n, data) VALUES (?1, zeroblob(6000))", [row])
                .unwrap();
        }
        // Past the threshold: the checkpointer's pass runs; wait for it, then the writer's.
        fold.heard_commit();
        assert!(fold.shared.folding.load(Ordering::Acquire));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !fold.shared.pass_done.load(Ordering::Acquire) {
            assert!(std::time::Instant::now() < deadline, "the checkpointer never ran");
            std::thread::sleep(Duration::from_millis(5));
        }
        fold.finish_if_due(&conn);
        assert!(!fold.shared.folding.load(Ordering::Acquire));
        commit_rows(&conn, &mut fold, 100, 1);
        assert_eq!(version(&conn), before);
    }

    #[test]
    fn without_a_checkpointer_the_writer_folds_at_the_threshold() {
        let dir = Scratch::new("alone");
        let path = dir.path().join("alone.db");
        let mut conn = Connection::open(&path).unwrap();
        conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(())).unwrap();
        conn.execute_batch("CREATE TABLE blobs (n INTEGER PRIMARY KEY, data BLOB NOT NULL)")
            .unwrap();
        let mut fold = Fold::start_at(&mut conn, &path, 50);
        fold.nudge = None;
        commit_rows(&conn, &mut fold, 0, 1000);
        assert!(
            wal_bytes(&path) <= 60 * 4096,
            "write-ahead log {} bytes",
            wal_bytes(&path)
        );
    }

    #[test]
    fn a_checkpointer_found_gone_leaves_the_writer_folding_at_the_threshold() {
        let dir = Scratch::new("gone");
        let (conn, mut fold, path) = writer(dir.path(), 50);
        let (dead, receiver) = mpsc::sync_channel::<()>(1);
        drop(receiver);
        fold.nudge = Some(dead);
        commit_rows(&conn, &mut fold, 0, 1000);
        assert!(fold.nudge.is_none());
        assert!(
            wal_bytes(&path) <= 60 * 4096,
            "write-ahead log {} bytes",
            wal_bytes(&path)
        );
    }
}
