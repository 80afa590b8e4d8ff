//! The one thread that owns the SQLite connection. Callers send it jobs (a closure over a
//! [`SqliteTx`]); it runs every job waiting in one transaction — each in a savepoint, so a job
//! that fails leaves no trace — commits, and only then answers each caller: a write is
//! acknowledged once it is in the database (group commit, WAL). Reads go through it too, so they
//! see every acknowledged write. Between transactions it keeps a [`Recall`] of what it wrote.
//! On a read-only connection its transactions are deferred (they take no write lock) and it
//! remembers nothing: another process may be writing the file.

use super::checkpointer::Fold;
use super::recall::Recall;
use super::tx::{SqliteTx, db_error};
use crate::Access;
use agl_store::StoreError;
use rusqlite::{Connection, TransactionBehavior};
use std::sync::mpsc;
use tokio::sync::oneshot;

/// How many jobs share one transaction at most. Small, so that the writer works on the next
/// group while the callers of the last one are answered and send their next calls: with every
/// waiting call in one group, the writer and the request threads took turns, each idle while
/// the other worked (measured at 16 connections: the writer busy 55-67 % of the time). Groups
/// of 4 or 8 served 15-20 % more calls per second than groups of up to 256, in spite of
/// committing more often (`cargo bench -p agl-host --bench store_load`).
const MAX_GROUP: usize = 8;

/// What a job leaves for after the commit: `true` if it succeeded (its savepoint is kept), and
/// the closure that answers its caller with the commit's outcome.
pub(crate) struct JobEnd {
    pub succeeded: bool,
    pub answer: Box<dyn FnOnce(Option<StoreError>) + Send>,
}

pub(crate) type Job = Box<dyn FnOnce(&mut SqliteTx<'_>) -> JobEnd + Send>;

/// What the writer is asked to do.
pub(crate) enum Message {
    Job(Job),
    /// Copy the write-ahead log into the database file and empty it (between transactions).
    Checkpoint(oneshot::Sender<Result<(), StoreError>>),
}

/// Runs jobs until every sender is gone; `on_finished` hears the rollouts that finished in each
/// committed group, and `fold` keeps the write-ahead log short.
pub(crate) fn run(
    mut conn: Connection,
    mut fold: Fold,
    access: Access,
    messages: mpsc::Receiver<Message>,
    on_finished: impl Fn(Vec<String>),
) {
    let mut recall = Recall::default();
    let mut next = messages.recv().ok();
    while let Some(message) = next.take() {
        let first = match message {
            Message::Job(job) => job,
            Message::Checkpoint(answer) => {
                let done = fold.checkpoint(&conn, "TRUNCATE").map_err(db_error);
                let _ = answer.send(done);
                next = messages.recv().ok();
                continue;
            }
        };
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match messages.try_recv() {
                Ok(Message::Job(job)) => group.push(job),
                // Handled after this group.
                Ok(checkpoint) => {
                    next = Some(checkpoint);
                    break;
                }
                Err(_) => break,
            }
        }
        let (answers, finished, failure) = run_group(&mut conn, &mut recall, access, group);
        fold.heard_commit();
        for answer in answers {
            answer(failure.clone());
        }
        fold.finish_if_due(&conn);
        if failure.is_none() && !finished.is_empty() {
            on_finished(finished);
        }
        if next.is_none() {
            next = messages.recv().ok();
        }
    }
}

type Answers = Vec<Box<dyn FnOnce(Option<StoreError>) + Send>>;

/// One transaction over the group: the answers to give, the rollouts that finished, and the
/// error that undid the whole group (the transaction could not begin or commit), if any.
fn run_group(
    conn: &mut Connection,
    recall: &mut Recall,
    access: Access,
    group: Vec<Job>,
) -> (Answers, Vec<String>, Option<StoreError>) {
    let mut answers: Answers = Vec::with_capacity(group.len());
    let mut finished = Vec::new();
    let behavior = match access {
        Access::ReadWrite => TransactionBehavior::Immediate,
        Access::ReadOnly => TransactionBehavior::Deferred,
    };
    let tx = match conn.transaction_with_behavior(behavior) {
        Ok(tx) => tx,
        Err(error) => {
            // Nothing runs: a job dropped unrun tells its caller the call failed.
            tracing::error!("SQLite store: cannot begin a transaction: {error}");
            return (answers, finished, Some(db_error(error)));
        }
    };
    match tx.query_row("PRAGMA data_version", [], |row| row.get::<_, i64>(0)) {
        Ok(_) if access == Access::ReadOnly => recall.forget_all(),
        Ok(version) => recall.begin(version),
        Err(error) => {
            tracing::warn!("SQLite store: cannot read the data version: {error}");
            recall.forget_all();
        }
    }
    for job in group {
        if let Err(error) = run_cached(&tx, "SAVEPOINT job") {
            tracing::error!("SQLite store: cannot open a savepoint: {error}");
            continue;
        }
        let mut view = SqliteTx::new(&tx, recall);
        let end = job(&mut view);
        // What the job left for its end (rows still to take off the queue); its failure undoes
        // the job as its own would.
        let ended = if end.succeeded { view.finish() } else { Ok(()) };
        let mut job_finished = std::mem::take(&mut view.finished);
        let closed = match ended {
            Ok(()) if end.succeeded => {
                finished.append(&mut job_finished);
                run_cached(&tx, "RELEASE job").map_err(db_error)
            }
            ended => {
                recall.job_failed();
                let undone = run_cached(&tx, "ROLLBACK TO job")
                    .and_then(|()| run_cached(&tx, "RELEASE job"))
                    .map_err(db_error);
                ended.and(undone)
            }
        };
        match closed {
            Ok(()) => answers.push(end.answer),
            Err(error) => {
                recall.forget_all();
                let answer = end.answer;
                answers.push(Box::new(move |_| answer(Some(error))));
            }
        }
    }
    let failure = tx.commit().err().map(db_error);
    if failure.is_some() {
        recall.forget_all();
    }
    (answers, finished, failure)
}

/// Runs one of the writer's own statements, compiled once per connection.
fn run_cached(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}
