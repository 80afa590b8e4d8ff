//! [`PgTx`]: the store's [`Storage`] primitives as SQL on one PostgreSQL transaction (see
//! `migrations/postgres/` for the tables), safe when several replicas share the database: every
//! rollout, attempt and worker row a transition reads is locked (`FOR UPDATE`) until the commit,
//! in the transitions' order (rollout, then attempt, then worker); the queue and the watchdog's
//! agenda are popped with `FOR UPDATE SKIP LOCKED`, so two replicas never take the same entry;
//! counters move with `UPDATE ... RETURNING`. `pool.rs` decides when a transaction runs again.
//!
//! # Round trips
//!
//! A statement whose answer the transition does not read (`BEGIN`, a write) is not sent at once:
//! it goes, pipelined, with the next statement whose answer is read, or with `COMMIT`. Where an
//! answer is nearly always the same, a *speculative* transaction assumes it and lets the
//! statement go with the next ones: the watchdog's question at the start of each call ("nothing
//! is due"), and the insert of a new rollout or span ("the id is new": the insert has no `ON
//! CONFLICT`, so a duplicate fails it). An assumption found wrong when its answer comes back
//! fails the transaction before it commits ([`PgTx::mispredicted`]), and `pool.rs` runs the call
//! again without assuming. An enqueue is then two round trips, a dequeue or an add_span three.

use super::conn::{Answer, Conn, Request, db_error, describe, is_broken, is_retryable, is_unique_violation};
use crate::sql::{Arg, Dialect, SqlExec, from_json, sql_rows, status_name, to_json, writes};
use ::postgres::Statement;
use ::postgres::types::{FromSql, ToSql};
use ::postgres::{Row, SimpleQueryMessage};
use agl_store::model::*;
use agl_store::{AttemptRef, Storage, StorageCounts, StoreError, StoreResult};
use std::collections::HashMap;
use std::sync::Arc;

pub(crate) use super::conn::Params;

/// A parameter a statement keeps until it is sent.
pub(crate) type Param = Box<dyn ToSql + Sync + Send>;

/// Column `index` of a row.
pub(crate) fn column<'r, T: FromSql<'r>>(row: &'r Row, index: usize) -> StoreResult<T> {
    row.try_get(index)
        .map_err(|e| StoreError::Backend(format!("PostgreSQL: an unexpected column: {}", describe(&e))))
}

/// A stored sequence number as the model's `u32`.
fn sequence(value: i64) -> StoreResult<u32> {
    u32::try_from(value).map_err(|_| StoreError::Backend(format!("a stored sequence id is out of range: {value}")))
}

/// The watchdog's question with `$time` in its place (a literal), for one text.
macro_rules! watchdog_question {
    ($time:literal) => {
        concat!(
            "SELECT COALESCE((SELECT min(watchdog_at) FROM attempts) < ",
            $time,
            ", false)"
        )
    };
}

/// Whether the watchdog has anything due before `$1`. Asked as the earliest deadline, which
/// PostgreSQL reads from the end of the `attempts_watchdog` index whatever `$1` is; the plan of
/// `EXISTS (... WHERE watchdog_at < $1)`, prepared without knowing `$1`, scanned the whole
/// table whenever nothing was due.
const WATCHDOG_QUESTION: &str = watchdog_question!("$1");

/// A statement waiting to go with the next one whose answer is read.
struct Pending {
    statement: Deferred,
    params: Vec<Param>,
    /// What its answer is assumed to be, if anything.
    assumed: Assumed,
}

enum Deferred {
    Simple(&'static str),
    /// `BEGIN` and the watchdog's question in one simple-protocol message.
    BeginAndAsk(String),
    Prepared(Statement),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Assumed {
    /// Nothing: only a failure matters.
    Nothing,
    /// The watchdog's question, assumed answered "nothing due".
    NothingDue,
    /// An insert, assumed to meet no row with its key.
    NewKey,
}

/// One call's view of the database, inside its transaction.
pub struct PgTx<'c> {
    conn: &'c mut Conn,
    /// Statements not sent yet (the first is `BEGIN`, until something is sent).
    pending: Vec<Pending>,
    /// Whether `BEGIN` has been sent (so there is a transaction to roll back).
    begun: bool,
    /// Whether answers may be assumed (see the module's doc).
    speculative: bool,
    /// The time the watchdog's question was asked for, its answer "nothing due" assumed (until it
    /// comes back) or known.
    nothing_due_at: Option<f64>,
    /// The rollouts this transaction has locked (read or written), as stored.
    rollouts: HashMap<String, Rollout>,
    /// How many attempts each locked rollout has, once known: attempts are only added under
    /// the rollout's lock, so the number holds until the commit (this transaction's own
    /// additions kept in it).
    attempt_counts: HashMap<String, u32>,
    /// The attempts this transaction has locked (read or written), as stored, by rollout.
    attempts: HashMap<String, Vec<Attempt>>,
    /// The latest resources id, once read (this transaction's own changes kept in it).
    latest_resources: Option<Option<String>>,
    /// A rollout finished in this transaction: waiters are told after the commit.
    pub(crate) finished: bool,
    /// A statement failed with a serialization failure or a deadlock, or an assumption was
    /// wrong: run the call again.
    pub(crate) retryable: bool,
    /// An assumption was wrong: run the call again without assuming.
    pub(crate) mispredicted: bool,
    /// A statement found the connection gone (see [`is_broken`]).
    pub(crate) broken: bool,
    /// A statement failed (or an assumption was wrong): the transaction must not commit.
    failed: bool,
    /// `COMMIT` was sent (whether it committed is unknown if its answer was lost).
    pub(crate) commit_sent: bool,
}

impl<'c> PgTx<'c> {
    /// A transaction that `begin` (`BEGIN ...`) will open, sent with its first statement;
    /// `speculative` lets it assume answers (see the module's doc).
    pub(crate) fn begin(conn: &'c mut Conn, begin: &'static str, speculative: bool) -> Self {
        Self {
            conn,
            pending: vec![Pending {
                statement: Deferred::Simple(begin),
                params: Vec::new(),
                assumed: Assumed::Nothing,
            }],
            begun: false,
            speculative,
            nothing_due_at: None,
            rollouts: HashMap::new(),
            attempt_counts: HashMap::new(),
            attempts: HashMap::new(),
            latest_resources: None,
            finished: false,
            retryable: false,
            mispredicted: false,
            broken: false,
            failed: false,
            commit_sent: false,
        }
    }

    fn fail(&mut self, error: ::postgres::Error) -> StoreError {
        self.failed = true;
        self.retryable |= is_retryable(&error);
        self.broken |= is_broken(&error);
        db_error(error)
    }

    /// Nothing more is sent in a transaction that failed: PostgreSQL would refuse it, and a
    /// `COMMIT` would only roll it back.
    fn refuse_if_failed(&self) -> StoreResult<()> {
        if self.failed {
            return Err(StoreError::Backend("PostgreSQL: the transaction failed already".into()));
        }
        Ok(())
    }

    fn mispredict(&mut self, what: &str) -> StoreError {
        self.failed = true;
        self.retryable = true;
        self.mispredicted = true;
        StoreError::Backend(format!("PostgreSQL: {what}; the call runs again"))
    }

    fn prepared(&mut self, sql: &str) -> StoreResult<Statement> {
        self.conn.statement(sql).map_err(|e| self.fail(e))
    }

    /// Sends what is pending and then `last` (if any) in one round trip; `last`'s answer, once
    /// every pending statement succeeded and every assumption held.
    fn send(&mut self, last: Option<Request<'_>>) -> StoreResult<Option<Answer>> {
        self.refuse_if_failed()?;
        let pending = std::mem::take(&mut self.pending);
        let params: Vec<Vec<&(dyn ToSql + Sync)>> = pending
            .iter()
            .map(|item| {
                item.params
                    .iter()
                    .map(|param| &**param as &(dyn ToSql + Sync))
                    .collect()
            })
            .collect();
        let mut requests: Vec<Request<'_>> = pending
            .iter()
            .zip(&params)
            .map(|(item, params)| match &item.statement {
                Deferred::Simple(sql) => Request::Simple(sql),
                Deferred::BeginAndAsk(sql) => Request::SimpleRows(sql),
                Deferred::Prepared(statement) => Request::Count(statement, params),
            })
            .collect();
        requests.extend(last);
        let mut answers = self.conn.pipeline(&requests).into_iter();
        self.begun = true;
        for item in &pending {
            let Some(answer) = answers.next() else {
                return Err(StoreError::Backend(
                    "PostgreSQL: a pipelined statement had no answer".into(),
                ));
            };
            match (answer, item.assumed) {
                (Err(error), Assumed::NewKey) if is_unique_violation(&error) => {
                    return Err(self.mispredict("an id assumed new was there already"));
                }
                (Err(error), _) => return Err(self.fail(error)),
                (Ok(Answer::Text(messages)), Assumed::NothingDue) => {
                    let due = messages.iter().any(|message| match message {
                        SimpleQueryMessage::Row(row) => row.get(0) != Some("f"),
                        _ => false,
                    });
                    if due {
                        return Err(self.mispredict("the watchdog had work due"));
                    }
                }
                (Ok(_), _) => {}
            }
        }
        match answers.next() {
            Some(Ok(answer)) => Ok(Some(answer)),
            Some(Err(error)) => Err(self.fail(error)),
            None => Ok(None),
        }
    }

    /// Sends `sql` now (with whatever is pending); how many rows it changed.
    pub(crate) fn exec(&mut self, sql: &str, params: &Params<'_>) -> StoreResult<u64> {
        let statement = self.prepared(sql)?;
        match self.send(Some(Request::Count(&statement, params)))? {
            Some(Answer::Count(count)) => Ok(count),
            _ => Err(StoreError::Backend(
                "PostgreSQL: a statement had an unexpected answer".into(),
            )),
        }
    }

    /// Every row of a query (sent now, with whatever is pending).
    pub(crate) fn rows(&mut self, sql: &str, params: &Params<'_>) -> StoreResult<Vec<Row>> {
        let statement = self.prepared(sql)?;
        match self.send(Some(Request::Rows(&statement, params)))? {
            Some(Answer::Rows(rows)) => Ok(rows),
            _ => Err(StoreError::Backend(
                "PostgreSQL: a query had an unexpected answer".into(),
            )),
        }
    }

    /// The first row of a query, if any.
    pub(crate) fn row(&mut self, sql: &str, params: &Params<'_>) -> StoreResult<Option<Row>> {
        Ok(self.rows(sql, params)?.into_iter().next())
    }

    /// Column 0 of the first row, if any.
    pub(crate) fn value<T: for<'r> FromSql<'r>>(&mut self, sql: &str, params: &Params<'_>) -> StoreResult<Option<T>> {
        self.row(sql, params)?.map(|row| column(&row, 0)).transpose()
    }

    /// A statement whose answer is not read: sent with the next one that is, or with `COMMIT`
    /// (its failure fails that one).
    pub(crate) fn write(&mut self, sql: &str, params: Vec<Param>) -> StoreResult<()> {
        self.defer(sql, params, Assumed::Nothing)
    }

    fn defer(&mut self, sql: &str, params: Vec<Param>, assumed: Assumed) -> StoreResult<()> {
        self.refuse_if_failed()?;
        let statement = self.prepared(sql)?;
        self.pending.push(Pending {
            statement: Deferred::Prepared(statement),
            params,
            assumed,
        });
        Ok(())
    }

    /// Commits: what is pending, then `COMMIT` (after `NOTIFY` when `notify`), in one round trip,
    /// unless the watchdog's assumed answer is still out: then that comes back first. The transaction is
    /// over, committed or not, whatever this answers.
    pub(crate) fn commit(&mut self, notify: bool) -> StoreResult<()> {
        self.refuse_if_failed()?;
        if self.pending.iter().any(|item| item.assumed == Assumed::NothingDue) {
            // An answer that does not fail the transaction is checked before COMMIT goes, so a
            // wrong assumption never commits. (A duplicate key fails it: COMMIT then rolls back.)
            self.send(None)?;
        }
        let commit = if notify {
            "NOTIFY agl_rollouts_finished; COMMIT"
        } else {
            "COMMIT"
        };
        self.commit_sent = true;
        let sent = self.send(Some(Request::Simple(commit)));
        // A COMMIT that ran ended the transaction, even after a failed statement (PostgreSQL
        // answers it with a rollback then).
        self.begun = false;
        sent.map(|_| ())
    }

    /// Whether the connection is gone.
    pub(crate) fn is_closed(&self) -> bool {
        self.conn.is_closed()
    }

    /// Rolls back whatever was sent (nothing pending is sent).
    pub(crate) fn rollback(&mut self) {
        self.pending.clear();
        if !self.begun || self.broken || self.conn.is_closed() {
            return;
        }
        self.begun = false;
        if let Err(error) = self.conn.simple("ROLLBACK")
            && !self.conn.is_closed()
        {
            tracing::warn!("PostgreSQL store: ROLLBACK failed: {}", describe(&error));
        }
    }

    /// The rollout, locked, from the transaction's cache or the database.
    fn cached_rollout(&mut self, rollout_id: &str) -> StoreResult<Option<&mut Rollout>> {
        if !self.rollouts.contains_key(rollout_id) {
            let record: Option<String> = self.value(
                "SELECT record FROM rollouts WHERE rollout_id = $1 FOR UPDATE",
                &[&rollout_id],
            )?;
            let Some(record) = record else {
                return Ok(None);
            };
            self.rollouts.insert(rollout_id.to_owned(), from_json(&record)?);
        }
        Ok(self.rollouts.get_mut(rollout_id))
    }

    fn write_rollout(&mut self, rollout: &Rollout) -> StoreResult<()> {
        let (status, record) = (status_name(&rollout.status)?, to_json(rollout)?);
        self.write(
            "UPDATE rollouts SET status = $2, record = $3 WHERE rollout_id = $1",
            vec![Box::new(rollout.rollout_id.clone()), Box::new(status), Box::new(record)],
        )
    }

    /// Queue heads just popped (queue place, record, attempt count), in queue order: each is
    /// locked and kept with its attempt count; those whose rollout still queues go to `out`,
    /// stale ones are dropped.
    fn take_heads(&mut self, rows: &[Row], out: &mut Vec<Rollout>) -> StoreResult<()> {
        let mut heads = rows
            .iter()
            .map(|row| Ok((column::<i64>(row, 0)?, column::<&str>(row, 1)?, column::<i64>(row, 2)?)))
            .collect::<StoreResult<Vec<_>>>()?;
        heads.sort_unstable_by_key(|(place, _, _)| *place);
        for (_, record, attempts) in heads {
            let rollout: Rollout = from_json(record)?;
            if rollout.status.is_queuing() {
                out.push(rollout.clone());
            }
            self.attempt_counts
                .insert(rollout.rollout_id.clone(), sequence(attempts)?);
            self.rollouts.insert(rollout.rollout_id.clone(), rollout);
        }
        Ok(())
    }

    /// The attempt of a locked rollout this transaction holds already, if any.
    fn cached_attempt(&self, rollout_id: &str, which: AttemptRef<'_>) -> Option<Option<Attempt>> {
        let held = self.attempts.get(rollout_id);
        match which {
            AttemptRef::Latest => {
                let count = *self.attempt_counts.get(rollout_id)?;
                if count == 0 {
                    return Some(None);
                }
                held?
                    .iter()
                    .find(|attempt| attempt.sequence_id == count)
                    .cloned()
                    .map(Some)
            }
            AttemptRef::Id(attempt_id) => held?
                .iter()
                .find(|attempt| attempt.attempt_id == attempt_id)
                .cloned()
                .map(Some),
        }
    }

    /// Keeps an attempt this transaction holds (locked or inserted), as it now is.
    fn hold_attempt(&mut self, attempt: &Attempt) {
        let held = self.attempts.entry(attempt.rollout_id.clone()).or_default();
        match held.iter_mut().find(|a| a.sequence_id == attempt.sequence_id) {
            Some(slot) => *slot = attempt.clone(),
            None => held.push(attempt.clone()),
        }
    }

    /// The attempt `which` of the rollout, locked. The same statement counts the rollout's
    /// attempts, kept for [`Storage::attempt_count`] when the rollout is locked (then the
    /// statement saw every attempt there is).
    /// Writes a changed attempt's record back.
    fn save_attempt_record(&mut self, attempt: &Attempt) -> StoreResult<()> {
        writes::update_attempt(self, attempt)?;
        self.hold_attempt(attempt);
        Ok(())
    }

    fn load_attempt(&mut self, rollout_id: &str, which: AttemptRef<'_>) -> StoreResult<Option<Attempt>> {
        if let Some(held) = self.cached_attempt(rollout_id, which) {
            return Ok(held);
        }
        let (record, count): (Option<String>, i64) = match which {
            AttemptRef::Latest => {
                let row = self.row(
                    "SELECT record, sequence_id FROM attempts WHERE rollout_id = $1
                     ORDER BY sequence_id DESC LIMIT 1 FOR UPDATE",
                    &[&rollout_id],
                )?;
                match row {
                    Some(row) => (Some(column(&row, 0)?), column(&row, 1)?),
                    None => (None, 0),
                }
            }
            AttemptRef::Id(attempt_id) => {
                let row = self
                    .row(
                        "SELECT (SELECT record FROM attempts WHERE rollout_id = $1 AND attempt_id = $2 FOR UPDATE),
                                (SELECT COALESCE(MAX(sequence_id), 0) FROM attempts WHERE rollout_id = $1)",
                        &[&rollout_id, &attempt_id],
                    )?
                    .ok_or_else(|| StoreError::Backend("PostgreSQL: an attempt lookup came back empty".into()))?;
                (column(&row, 0)?, column(&row, 1)?)
            }
        };
        if self.rollouts.contains_key(rollout_id) {
            self.attempt_counts.insert(rollout_id.to_owned(), sequence(count)?);
        }
        let attempt: Option<Attempt> = record.map(|text| from_json(&text)).transpose()?;
        if let Some(attempt) = &attempt {
            self.hold_attempt(attempt);
        }
        Ok(attempt)
    }
}

/// How many times `pop_queue` finds nothing free before it answers with nothing, though the
/// queue is not empty (all of it held by other transactions, each a moment).
const QUEUE_LOOKS: usize = 4;

/// How many entries `pop_watchdog` passes over (taken by a concurrent transaction between its
/// look and its lock) before it leaves the rest to the next run.
const WATCHDOG_RACES: usize = 8;

impl Storage for PgTx<'_> {
    fn rollout(&mut self, rollout_id: &str) -> StoreResult<Option<Rollout>> {
        Ok(self.cached_rollout(rollout_id)?.map(|rollout| rollout.clone()))
    }

    fn read_rollout<T>(&mut self, rollout_id: &str, read: impl FnOnce(&Rollout) -> T) -> StoreResult<Option<T>> {
        Ok(self.cached_rollout(rollout_id)?.map(|rollout| read(rollout)))
    }

    fn insert_rollout(&mut self, rollout: &Rollout) -> StoreResult<bool> {
        let (status, record) = (status_name(&rollout.status)?, to_json(rollout)?);
        // One statement: take over the counter an unknown id was issued (if any), and insert.
        if self.speculative {
            // Assumed new; a duplicate fails the insert, and the call runs again.
            self.defer(
                "WITH orphan AS (DELETE FROM orphan_span_counters WHERE rollout_id = $1 RETURNING last)
                 INSERT INTO rollouts (rollout_id, status, record, last_span_sequence)
                 VALUES ($1, $2, $3, COALESCE((SELECT last FROM orphan), 0))",
                vec![Box::new(rollout.rollout_id.clone()), Box::new(status), Box::new(record)],
                Assumed::NewKey,
            )?;
        } else {
            let inserted = self.exec(
                "WITH orphan AS (DELETE FROM orphan_span_counters WHERE rollout_id = $1 RETURNING last)
                 INSERT INTO rollouts (rollout_id, status, record, last_span_sequence)
                 VALUES ($1, $2, $3, COALESCE((SELECT last FROM orphan), 0))
                 ON CONFLICT (rollout_id) DO NOTHING",
                &[&rollout.rollout_id, &status, &record],
            )?;
            if inserted == 0 {
                return Ok(false);
            }
        }
        self.rollouts.insert(rollout.rollout_id.clone(), rollout.clone());
        self.attempt_counts.insert(rollout.rollout_id.clone(), 0);
        Ok(true)
    }

    fn save_rollout(&mut self, rollout: &Rollout) -> StoreResult<()> {
        self.write_rollout(rollout)?;
        self.rollouts.insert(rollout.rollout_id.clone(), rollout.clone());
        Ok(())
    }

    fn save_rollout_status(
        &mut self,
        rollout_id: &str,
        status: RolloutStatus,
        end_time: Option<f64>,
    ) -> StoreResult<()> {
        let Some(rollout) = self.cached_rollout(rollout_id)? else {
            return Ok(());
        };
        rollout.status = status;
        rollout.end_time = end_time;
        let rollout = rollout.clone();
        self.write_rollout(&rollout)
    }

    fn push_queue(&mut self, rollout_id: &str) -> StoreResult<()> {
        self.write(
            "UPDATE rollouts SET queue_seq = nextval('rollout_queue_seq') WHERE rollout_id = $1 AND queue_seq IS NULL",
            vec![Box::new(rollout_id.to_owned())],
        )
    }

    fn pop_queue(&mut self, limit: usize) -> StoreResult<Vec<Rollout>> {
        let mut out = Vec::new();
        let mut empty_looks = 0;
        while out.len() < limit {
            let wanted = i64::try_from(limit - out.len()).unwrap_or(i64::MAX);
            // Heads another replica holds are skipped, not waited for; a head popped and
            // committed meanwhile fails the re-check of `queue_seq IS NOT NULL` under the lock.
            let rows = self.rows(
                "WITH head AS (
                     SELECT rollout_id, queue_seq FROM rollouts WHERE queue_seq IS NOT NULL
                     ORDER BY queue_seq LIMIT $1 FOR UPDATE SKIP LOCKED)
                 UPDATE rollouts r SET queue_seq = NULL FROM head WHERE r.rollout_id = head.rollout_id
                 RETURNING head.queue_seq, r.record,
                     (SELECT COALESCE(MAX(a.sequence_id), 0) FROM attempts a WHERE a.rollout_id = r.rollout_id)",
                &[&wanted],
            )?;
            if !rows.is_empty() {
                self.take_heads(&rows, &mut out)?;
                continue;
            }
            empty_looks += 1;
            if !out.is_empty() || empty_looks > QUEUE_LOOKS {
                break;
            }
            // Nothing free in what that statement saw, which is what was committed when it
            // began: heads queued since (possibly by this very caller) were not there, heads
            // held by others were skipped. If the queue, as of now, is empty, so is the answer;
            // else wait for the first head whose holder is busy with it, and take it if it is
            // still queued once they are done (a dequeue that took it is not), then look again.
            let queued: Option<bool> = self.value(
                "SELECT EXISTS (SELECT 1 FROM rollouts WHERE queue_seq IS NOT NULL)",
                &[],
            )?;
            if queued != Some(true) {
                break;
            }
            let rows = self.rows(
                "WITH head AS (
                     SELECT rollout_id, queue_seq FROM rollouts WHERE queue_seq IS NOT NULL
                     ORDER BY queue_seq LIMIT 1 FOR UPDATE)
                 UPDATE rollouts r SET queue_seq = NULL FROM head WHERE r.rollout_id = head.rollout_id
                 RETURNING head.queue_seq, r.record,
                     (SELECT COALESCE(MAX(a.sequence_id), 0) FROM attempts a WHERE a.rollout_id = r.rollout_id)",
                &[],
            )?;
            self.take_heads(&rows, &mut out)?;
        }
        Ok(out)
    }

    fn rollout_finished(&mut self, _rollout_id: &str) {
        self.finished = true;
    }

    fn attempt_count(&mut self, rollout_id: &str) -> StoreResult<u32> {
        if let Some(count) = self.attempt_counts.get(rollout_id) {
            return Ok(*count);
        }
        // No row lock needed: attempts are only added by transactions holding the rollout's.
        let count: Option<i64> = self.value(
            "SELECT COALESCE(MAX(sequence_id), 0) FROM attempts WHERE rollout_id = $1",
            &[&rollout_id],
        )?;
        let count = sequence(count.unwrap_or(0))?;
        if self.rollouts.contains_key(rollout_id) {
            self.attempt_counts.insert(rollout_id.to_owned(), count);
        }
        Ok(count)
    }

    crate::sql::attempt_primitives!();

    fn insert_attempt(&mut self, attempt: &Attempt) -> StoreResult<()> {
        writes::insert_attempt(self, attempt)?;
        self.hold_attempt(attempt);
        if let Some(count) = self.attempt_counts.get_mut(&attempt.rollout_id) {
            *count = (*count).max(attempt.sequence_id);
        }
        Ok(())
    }

    fn schedule_watchdog(&mut self, attempt: &Attempt, at: f64) -> StoreResult<()> {
        self.write(
            "UPDATE attempts SET watchdog_at = $3 WHERE rollout_id = $1 AND sequence_id = $2",
            vec![
                Box::new(attempt.rollout_id.clone()),
                Box::new(i64::from(attempt.sequence_id)),
                Box::new(at),
            ],
        )
    }

    fn watchdog_due(&mut self, now: f64) -> StoreResult<bool> {
        if self.nothing_due_at == Some(now) {
            return Ok(false);
        }
        if self.speculative
            && self.nothing_due_at.is_none()
            && !self.begun
            && let [first] = self.pending.as_mut_slice()
            && let Deferred::Simple(begin) = first.statement
            && now.is_finite()
        {
            // Asked in BEGIN's own message, sent with the call's first statements; the call runs
            // again if something was due. `{:?}` writes the shortest text that reads back as
            // the same f64, as float8 does.
            first.statement = Deferred::BeginAndAsk(format!(
                concat!("{}; ", watchdog_question!("'{:?}'::float8")),
                begin, now
            ));
            first.assumed = Assumed::NothingDue;
            self.nothing_due_at = Some(now);
            return Ok(false);
        }
        let due = self.value(WATCHDOG_QUESTION, &[&now])?.unwrap_or(false);
        if !due {
            self.nothing_due_at = Some(now);
        }
        Ok(due)
    }

    fn pop_watchdog(&mut self, now: f64) -> StoreResult<Option<(String, u32)>> {
        for _ in 0..WATCHDOG_RACES {
            // The rollout is locked, not the attempt, to keep the order rollout -> attempt;
            // a rollout another replica holds is skipped (its transaction may be the watchdog's).
            let due = self.row(
                "SELECT a.rollout_id, a.sequence_id FROM attempts a JOIN rollouts r ON r.rollout_id = a.rollout_id
                 WHERE a.watchdog_at < $1 ORDER BY a.watchdog_at LIMIT 1 FOR UPDATE OF r SKIP LOCKED",
                &[&now],
            )?;
            let Some(due) = due else {
                return Ok(None);
            };
            let (rollout_id, attempt_sequence): (String, i64) = (column(&due, 0)?, column(&due, 1)?);
            // Under the rollout's lock no one else moves the entry: if it is still due, it is ours.
            let taken = self.exec(
                "UPDATE attempts SET watchdog_at = NULL
                 WHERE rollout_id = $1 AND sequence_id = $2 AND watchdog_at < $3",
                &[&rollout_id, &attempt_sequence, &now],
            )?;
            if taken == 1 {
                return Ok(Some((rollout_id, sequence(attempt_sequence)?)));
            }
        }
        Ok(None)
    }

    fn insert_span(&mut self, span: Span, attempt_sequence: u32) -> StoreResult<Option<Arc<Span>>> {
        let sequence_id = i64::try_from(span.sequence_id).unwrap_or(i64::MAX);
        if self.speculative {
            // Assumed new; a duplicate fails the insert, and the call runs again.
            self.defer(
                "WITH stored AS (
                     INSERT INTO spans (rollout_id, attempt_sequence, span_id, record) VALUES ($1, $2, $3, $4)
                     RETURNING rollout_id)
                 UPDATE rollouts SET last_span_sequence = GREATEST(last_span_sequence, $5)
                 WHERE rollout_id IN (SELECT rollout_id FROM stored)",
                vec![
                    Box::new(span.rollout_id.clone()),
                    Box::new(i64::from(attempt_sequence)),
                    Box::new(span.span_id.clone()),
                    Box::new(to_json(&span)?),
                    Box::new(sequence_id),
                ],
                Assumed::NewKey,
            )?;
            return Ok(Some(Arc::new(span)));
        }
        let stored: Option<i64> = self.value(
            "WITH stored AS (
                 INSERT INTO spans (rollout_id, attempt_sequence, span_id, record) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (rollout_id, attempt_sequence, span_id) DO NOTHING RETURNING rollout_id),
             raised AS (
                 UPDATE rollouts SET last_span_sequence = GREATEST(last_span_sequence, $5)
                 WHERE rollout_id IN (SELECT rollout_id FROM stored))
             SELECT count(*) FROM stored",
            &[
                &span.rollout_id,
                &i64::from(attempt_sequence),
                &span.span_id,
                &to_json(&span)?,
                &sequence_id,
            ],
        )?;
        Ok((stored.unwrap_or(0) > 0).then(|| Arc::new(span)))
    }

    fn next_span_sequence(&mut self, rollout_id: &str) -> StoreResult<u64> {
        let counted: Option<i64> = self.value(
            "UPDATE rollouts SET last_span_sequence = last_span_sequence + 1 WHERE rollout_id = $1
             RETURNING last_span_sequence",
            &[&rollout_id],
        )?;
        let issued = match counted {
            Some(issued) => Some(issued),
            None => self.value(
                "INSERT INTO orphan_span_counters (rollout_id, last) VALUES ($1, 1)
                 ON CONFLICT (rollout_id) DO UPDATE SET last = orphan_span_counters.last + 1 RETURNING last",
                &[&rollout_id],
            )?,
        };
        issued
            .and_then(|n| u64::try_from(n).ok())
            .ok_or_else(|| StoreError::Backend(format!("no span sequence id was issued for {rollout_id}")))
    }

    fn resources(&mut self, resources_id: &str) -> StoreResult<Option<ResourcesUpdate>> {
        // A bundle may be missing, so no row can be locked: a shared advisory lock on its id
        // stands in (`save_resources` takes it exclusively), and two replicas updating one id
        // at once deadlock on the upgrade; one of them runs again and sees the other's version.
        let row = self.row(
            "SELECT pg_advisory_xact_lock_shared(hashtextextended('agl_resources:' || $1::text, 0))::text,
                    (SELECT record FROM resources WHERE resources_id = $1)",
            &[&resources_id],
        )?;
        let record: Option<String> = match row {
            Some(row) => column(&row, 1)?,
            None => None,
        };
        record.map(|text| from_json(&text)).transpose()
    }

    fn save_resources(&mut self, update: &ResourcesUpdate) -> StoreResult<()> {
        // Sent in this order with the next statement read, or COMMIT: the lock comes first.
        self.write(
            "SELECT pg_advisory_xact_lock(hashtextextended('agl_resources:' || $1::text, 0))",
            vec![Box::new(update.resources_id.clone())],
        )?;
        self.write(
            "INSERT INTO resources (resources_id, record) VALUES ($1, $2)
             ON CONFLICT (resources_id) DO UPDATE SET record = excluded.record",
            vec![Box::new(update.resources_id.clone()), Box::new(to_json(update)?)],
        )?;
        self.write(
            "INSERT INTO store_values (key, value) VALUES ('latest_resources', $1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            vec![Box::new(update.resources_id.clone())],
        )?;
        self.latest_resources = Some(Some(update.resources_id.clone()));
        Ok(())
    }

    fn latest_resources_id(&mut self) -> StoreResult<Option<String>> {
        if let Some(latest) = &self.latest_resources {
            return Ok(latest.clone());
        }
        let latest: Option<String> =
            self.value("SELECT value FROM store_values WHERE key = 'latest_resources'", &[])?;
        self.latest_resources = Some(latest.clone());
        Ok(latest)
    }

    fn modify_worker<T>(&mut self, worker_id: &str, modify: impl FnOnce(&mut Worker) -> T) -> StoreResult<T> {
        const LOCK: &str = "SELECT record FROM workers WHERE worker_id = $1 FOR UPDATE";
        let mut record: Option<String> = self.value(LOCK, &[&worker_id])?;
        if record.is_none() {
            // A new worker: its row is made first (another replica may make it at the same time),
            // then locked like any other.
            self.write(
                "INSERT INTO workers (worker_id, record) VALUES ($1, $2) ON CONFLICT (worker_id) DO NOTHING",
                vec![
                    Box::new(worker_id.to_owned()),
                    Box::new(to_json(&Worker::new(worker_id))?),
                ],
            )?;
            record = self.value(LOCK, &[&worker_id])?;
        }
        let mut worker = match record {
            Some(text) => from_json(&text)?,
            None => Worker::new(worker_id),
        };
        let out = modify(&mut worker);
        self.write(
            "UPDATE workers SET record = $2 WHERE worker_id = $1",
            vec![Box::new(worker_id.to_owned()), Box::new(to_json(&worker)?)],
        )?;
        Ok(out)
    }

    crate::sql::recording_primitives!();

    fn counts(&mut self) -> StoreResult<StorageCounts> {
        let row = self
            .row(
                "SELECT (SELECT count(*) FROM rollouts), (SELECT count(*) FROM attempts),
                        (SELECT count(*) FROM spans), (SELECT count(*) FROM resources),
                        (SELECT count(*) FROM workers)",
                &[],
            )?
            .ok_or_else(|| StoreError::Backend("PostgreSQL: the counts came back empty".into()))?;
        let count = |index: usize| -> StoreResult<u64> { Ok(u64::try_from(column::<i64>(&row, index)?).unwrap_or(0)) };
        Ok(StorageCounts {
            rollouts: count(0)?,
            attempts: count(1)?,
            spans: count(2)?,
            resources: count(3)?,
            workers: count(4)?,
        })
    }
}

impl Arg {
    /// The argument as PostgreSQL binds it.
    fn as_param(&self) -> &(dyn ToSql + Sync) {
        match self {
            Arg::Text(text) => text,
            Arg::Int(n) => n,
            Arg::Texts(list) => list,
        }
    }

    fn to_param(&self) -> Param {
        match self {
            Arg::Text(text) => Box::new(text.clone()),
            Arg::Int(n) => Box::new(*n),
            Arg::Texts(list) => Box::new(list.clone()),
        }
    }
}

impl SqlExec for PgTx<'_> {
    const DIALECT: Dialect = Dialect::Postgres;

    fn texts(&mut self, sql: &str, args: &[Arg]) -> StoreResult<Vec<String>> {
        let params: Vec<&(dyn ToSql + Sync)> = args.iter().map(Arg::as_param).collect();
        self.rows(sql, &params)?
            .iter()
            .map(|row| column::<String>(row, 0))
            .collect()
    }

    fn number(&mut self, sql: &str, args: &[Arg]) -> StoreResult<Option<i64>> {
        let params: Vec<&(dyn ToSql + Sync)> = args.iter().map(Arg::as_param).collect();
        Ok(self.value::<Option<i64>>(sql, &params)?.flatten())
    }

    /// Sent with the next statement whose answer is read, or with `COMMIT`.
    fn execute(&mut self, sql: &str, args: &[Arg]) -> StoreResult<()> {
        self.write(sql, args.iter().map(Arg::to_param).collect())
    }
}

sql_rows!(PgTx<'_>);
