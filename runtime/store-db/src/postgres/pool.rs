//! The connections a PostgreSQL store works through, and how one call becomes one transaction.
//! [`Pool`]: up to `size` threads, each owning one connection (opened on its first job, opened
//! again after it breaks); a thread is started only when calls overlap and none is free, so a
//! store used by one task holds one connection. A call is a [`Job`] the next free thread takes.
//! [`Session::transact`]: `BEGIN`, the operation over a [`PgTx`], `COMMIT` (preceded by
//! `NOTIFY agl_rollouts_finished` when rollouts finished), the whole run again on a
//! serialization failure or a deadlock, and again without assuming answers when an assumed one
//! was wrong. What a call does is `mod.rs`'s and `tx.rs`'s.

use super::conn::{Conn, connect, describe};
use super::tx::PgTx;
use crate::error::DbError;
use ::postgres::Client;
use agl_store::{StoreError, StoreResult};
use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, mpsc};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio_postgres::Config;

/// The channel every commit that finished a rollout notifies.
pub(crate) const CHANNEL: &str = "agl_rollouts_finished";

/// How many times a transaction runs at most when it keeps meeting serialization failures or
/// deadlocks.
const MAX_TRIES: u32 = 8;

/// What one call runs on a pool thread.
pub(crate) type Job = Box<dyn FnOnce(&mut Session) + Send>;

/// How a transaction sees others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Isolation {
    /// A call that changes things: read committed, every row it decides on locked.
    Write,
    /// A read: one snapshot for all its statements (repeatable read).
    Read,
}

impl Isolation {
    fn begin(self) -> &'static str {
        match self {
            Isolation::Write => "BEGIN",
            Isolation::Read => "BEGIN ISOLATION LEVEL REPEATABLE READ",
        }
    }
}

/// One pool thread's connection, opened when first needed.
pub(crate) struct Session {
    config: Arc<Config>,
    place: Arc<str>,
    conn: Option<Conn>,
}

impl Session {
    /// The open connection, opening it (again) if there is none or it broke.
    fn conn(&mut self) -> StoreResult<&mut Conn> {
        let conn = match self.conn.take() {
            Some(conn) if !conn.is_closed() => conn,
            _ => Conn::open(&self.config).map_err(|reason| {
                StoreError::Backend(format!(
                    "cannot connect to the PostgreSQL store {}: {reason}",
                    self.place
                ))
            })?,
        };
        Ok(self.conn.insert(conn))
    }

    /// Runs `op` in a transaction and commits it: the value, and whether a rollout finished.
    /// `op` runs again from the start (a fresh transaction) after a serialization failure or a deadlock, a few times, and once more without
    /// assuming answers if an assumed one was wrong (see `tx.rs`).
    pub fn transact<T>(
        &mut self,
        isolation: Isolation,
        mut op: impl FnMut(&mut PgTx<'_>) -> StoreResult<T>,
    ) -> StoreResult<(T, bool)> {
        let mut tries = 0;
        let mut speculative = true;
        loop {
            tries += 1;
            let outcome = run_once(self.conn()?, isolation, speculative, &mut op);
            match outcome {
                Ok(done) => return Ok(done),
                Err(failed) => {
                    if failed.mispredicted {
                        speculative = false;
                        if tries < MAX_TRIES {
                            continue;
                        }
                    }
                    if failed.broken || self.conn.as_ref().is_some_and(Conn::is_closed) {
                        // Opened again by the next try, or the next call.
                        self.conn = None;
                    }
                    if !failed.again || tries >= MAX_TRIES {
                        return Err(failed.error);
                    }
                    if !failed.broken {
                        std::thread::sleep(backoff(tries));
                    }
                }
            }
        }
    }
}

/// Why a try failed.
struct Failed {
    error: StoreError,
    /// The call may run again: nothing of it was committed, and running it again may succeed.
    again: bool,
    /// The connection is gone.
    broken: bool,
    /// An assumed answer was wrong: run it again without assuming.
    mispredicted: bool,
}

/// One try: the value and whether a rollout finished, or why it failed.
fn run_once<T>(
    conn: &mut Conn,
    isolation: Isolation,
    speculative: bool,
    op: &mut impl FnMut(&mut PgTx<'_>) -> StoreResult<T>,
) -> Result<(T, bool), Failed> {
    // Until COMMIT is sent, a connection that broke committed nothing: the call may run again
    // on a new one. A COMMIT whose answer was lost may have committed: that is the caller's error.
    let mut tx = PgTx::begin(conn, isolation.begin(), speculative);
    let result = op(&mut tx);
    let finished = tx.finished;
    let result = result.and_then(|value| {
        // The notification is delivered at the commit, and only if it commits.
        tx.commit(finished).map(|()| value)
    });
    match result {
        Ok(value) => Ok((value, finished)),
        Err(error) => {
            tx.rollback();
            let broken = tx.broken || tx.is_closed();
            Err(Failed {
                error,
                // After COMMIT went out on a connection that broke, it may have committed.
                again: tx.retryable || (broken && !tx.commit_sent),
                broken,
                mispredicted: tx.mispredicted,
            })
        }
    }
}

/// The pause before try `tries + 1`: growing, with jitter so that two replicas that deadlocked
/// do not meet again at once.
fn backoff(tries: u32) -> Duration {
    let jitter = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |t| u64::from(t.subsec_nanos()) % 4_000);
    Duration::from_micros((500u64 << tries.min(6)) + jitter)
}

/// The store's threads and the calls waiting for one.
pub(crate) struct Pool {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    /// Signalled when a job arrives for an idle thread, and when the pool closes.
    ready: Condvar,
    size: usize,
    config: Arc<Config>,
    place: Arc<str>,
}

struct State {
    jobs: VecDeque<Job>,
    /// Threads waiting for a job.
    idle: usize,
    threads: usize,
    closed: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Pool {
    /// A pool of up to `size` connections. Its first connection is opened now, on its first
    /// thread, and `setup` (the migrations) runs on it before any call: an error of either is
    /// the pool's.
    pub fn open(
        config: Config,
        place: &str,
        size: usize,
        setup: impl FnOnce(&mut Client) -> Result<(), DbError> + Send + 'static,
    ) -> Result<Self, DbError> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                jobs: VecDeque::new(),
                idle: 0,
                threads: 1,
                closed: false,
            }),
            ready: Condvar::new(),
            size: size.max(1),
            config: Arc::new(config),
            place: Arc::from(place),
        });
        let (opened, first) = mpsc::channel::<Result<(), DbError>>();
        let thread_shared = Arc::clone(&shared);
        let spawned = std::thread::Builder::new().name("agl-postgres".into()).spawn(move || {
            let shared = thread_shared;
            let place = shared.place.to_string();
            let cannot_connect = |reason: String| DbError::Other {
                place: place.clone(),
                reason: format!("cannot connect: {reason}"),
            };
            // The setup runs on a synchronous connection of its own, closed after it.
            let client =
                connect(&::postgres::Config::from((*shared.config).clone())).map_err(|e| cannot_connect(describe(&e)));
            let ready = client
                .and_then(|mut client| setup(&mut client))
                .and_then(|()| Conn::open(&shared.config).map_err(cannot_connect));
            match ready {
                Ok(conn) => {
                    let _ = opened.send(Ok(()));
                    work(&shared, Some(conn));
                }
                Err(error) => {
                    shared.lock().threads -= 1;
                    let _ = opened.send(Err(error));
                }
            }
        });
        if let Err(error) = spawned {
            return Err(DbError::Other {
                place: place.to_owned(),
                reason: format!("cannot start a connection thread: {error}"),
            });
        }
        let pool = Pool { shared };
        match first.recv() {
            Ok(Ok(())) => Ok(pool),
            Ok(Err(error)) => Err(error),
            Err(_) => Err(DbError::Other {
                place: place.to_owned(),
                reason: "its first connection thread stopped (see the log)".to_owned(),
            }),
        }
    }

    /// Hands `job` to a free thread, starting one if none is free and the pool is not full
    /// (else it waits for the next thread to finish). `false` once the pool is closed.
    pub fn submit(&self, job: Job) -> bool {
        let mut state = self.shared.lock();
        if state.closed {
            return false;
        }
        state.jobs.push_back(job);
        if state.idle >= state.jobs.len() {
            self.shared.ready.notify_one();
            return true;
        }
        if state.threads >= self.shared.size {
            return true;
        }
        state.threads += 1;
        drop(state);
        let shared = Arc::clone(&self.shared);
        let spawned = std::thread::Builder::new()
            .name("agl-postgres".into())
            .spawn(move || work(&shared, None));
        if let Err(error) = spawned {
            tracing::error!("PostgreSQL store: cannot start a connection thread: {error}");
            let mut state = self.shared.lock();
            state.threads -= 1;
            if state.threads == 0 {
                // No thread would ever run them: dropping them tells their callers.
                state.jobs.clear();
            }
        }
        true
    }

    /// Lets the threads finish the jobs queued and end, closing their connections.
    pub fn close(&self) {
        self.shared.lock().closed = true;
        self.shared.ready.notify_all();
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.close();
    }
}

/// A pool thread: runs jobs on its connection until the pool closes.
fn work(shared: &Shared, conn: Option<Conn>) {
    let mut session = Session {
        config: Arc::clone(&shared.config),
        place: Arc::clone(&shared.place),
        conn,
    };
    let mut state = shared.lock();
    loop {
        if let Some(job) = state.jobs.pop_front() {
            drop(state);
            if catch_unwind(AssertUnwindSafe(|| job(&mut session))).is_err() {
                // A bug, not the database: the connection may be inside a transaction.
                tracing::error!("PostgreSQL store: a call panicked; its connection is closed");
                session.conn = None;
            }
            state = shared.lock();
            continue;
        }
        if state.closed {
            break;
        }
        state.idle += 1;
        state = shared.ready.wait(state).unwrap_or_else(PoisonError::into_inner);
        state.idle -= 1;
    }
    state.threads -= 1;
}
