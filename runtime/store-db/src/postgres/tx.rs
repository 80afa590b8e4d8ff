//! [`PgTx`]: the store's [`Storage`] primitives as SQL on one PostgreSQL transaction (see
//! `migrations/postgres/` for the tables), safe when several replicas share the database: every
//! rollout, attempt and worker row a transition reads is locked (`FOR UPDATE`) until the commit,
//! in the transitions' order (rollout, then attempt, then worker); the queue and the watchdog's
//! agenda are popped with `FOR UPDATE SKIP LOCKED`, so two replicas never take the same entry;
//! counters move with `UPDATE ... RETURNING`. It does not begin, commit or retry: `pool.rs` does.

use super::conn::{Conn, db_error, describe, is_broken, is_retryable};
use ::postgres::types::{FromSql, ToSql};
use ::postgres::{Row, SimpleQueryMessage};
use agl_store::model::*;
use agl_store::{AttemptRef, Storage, StorageCounts, StoreError, StoreResult};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::HashMap;
use std::sync::Arc;

/// Parameters of a statement.
pub(crate) type Params<'p> = [&'p (dyn ToSql + Sync)];

pub(crate) fn to_json<T: Serialize>(value: &T) -> StoreResult<String> {
    serde_json::to_string(value).map_err(|e| StoreError::Backend(format!("cannot encode a record: {e}")))
}

pub(crate) fn from_json<T: DeserializeOwned>(text: &str) -> StoreResult<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Backend(format!("a stored record does not decode: {e}")))
}

/// Column `index` of a row.
pub(crate) fn column<'r, T: FromSql<'r>>(row: &'r Row, index: usize) -> StoreResult<T> {
    row.try_get(index)
        .map_err(|e| StoreError::Backend(format!("PostgreSQL: an unexpected column: {}", describe(&e))))
}

/// A status as its wire name (`"queuing"`), the form kept in the `status` column.
pub(crate) fn status_name<T: Serialize>(status: &T) -> StoreResult<String> {
    match serde_json::to_value(status) {
        Ok(serde_json::Value::String(name)) => Ok(name),
        _ => Err(StoreError::Backend("a status has no wire name".into())),
    }
}

/// A stored sequence number as the model's `u32`.
fn sequence(value: i64) -> StoreResult<u32> {
    u32::try_from(value).map_err(|_| StoreError::Backend(format!("a stored sequence id is out of range: {value}")))
}

/// One call's view of the database, inside its transaction.
pub(crate) struct PgTx<'c> {
    conn: &'c mut Conn,
    /// The rollouts this transaction has locked (read or written), as stored.
    rollouts: HashMap<String, Rollout>,
    /// How many attempts each locked rollout has, once known: attempts are only added under
    /// the rollout's lock, so the number holds until the commit (this transaction's own
    /// additions kept in it).
    attempt_counts: HashMap<String, u32>,
    /// The latest resources id, once read (this transaction's own changes kept in it).
    latest_resources: Option<Option<String>>,
    /// A rollout finished in this transaction: waiters are told after the commit.
    pub finished: bool,
    /// A statement failed with a serialization failure or a deadlock: run the call again.
    pub retryable: bool,
    /// A statement found the connection gone (see [`is_broken`]).
    pub broken: bool,
    /// Whether the watchdog was due at this time, asked together with `BEGIN` (every call
    /// starts with that question: one round trip fewer); used once.
    due: Option<(f64, bool)>,
}

impl<'c> PgTx<'c> {
    /// Begins a transaction with `begin` (`BEGIN ...`), asking in the same round trip whether
    /// the watchdog is due at `now`.
    pub fn begin(conn: &'c mut Conn, begin: &str, now: f64) -> Result<Self, ::postgres::Error> {
        let mut due = None;
        if now.is_finite() {
            // `{:?}` writes the shortest text that reads back as the same f64, as float8 does.
            let messages = conn.client.simple_query(&format!(
                "{begin}; SELECT EXISTS (SELECT 1 FROM attempts WHERE watchdog_at < '{now:?}'::float8)"
            ))?;
            due = messages.iter().find_map(|message| match message {
                SimpleQueryMessage::Row(row) => row.get(0).map(|value| (now, value == "t")),
                _ => None,
            });
        } else {
            conn.client.batch_execute(begin)?;
        }
        Ok(Self {
            conn,
            rollouts: HashMap::new(),
            attempt_counts: HashMap::new(),
            latest_resources: None,
            finished: false,
            retryable: false,
            broken: false,
            due,
        })
    }

    fn fail(&mut self, error: ::postgres::Error) -> StoreError {
        self.retryable |= is_retryable(&error);
        self.broken |= is_broken(&error);
        db_error(error)
    }

    /// Runs a statement; how many rows it changed.
    pub fn exec(&mut self, sql: &'static str, params: &Params<'_>) -> StoreResult<u64> {
        let done = match self.conn.statement(sql) {
            Ok(statement) => self.conn.client.execute(&statement, params),
            Err(error) => Err(error),
        };
        done.map_err(|e| self.fail(e))
    }

    /// Every row of a query.
    pub fn rows(&mut self, sql: &'static str, params: &Params<'_>) -> StoreResult<Vec<Row>> {
        let done = match self.conn.statement(sql) {
            Ok(statement) => self.conn.client.query(&statement, params),
            Err(error) => Err(error),
        };
        done.map_err(|e| self.fail(e))
    }

    /// The first row of a query, if any.
    pub fn row(&mut self, sql: &'static str, params: &Params<'_>) -> StoreResult<Option<Row>> {
        Ok(self.rows(sql, params)?.into_iter().next())
    }

    /// Column 0 of the first row, if any.
    pub fn value<T: for<'r> FromSql<'r>>(&mut self, sql: &'static str, params: &Params<'_>) -> StoreResult<Option<T>> {
        self.row(sql, params)?.map(|row| column(&row, 0)).transpose()
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
        self.exec(
            "UPDATE rollouts SET status = $2, record = $3 WHERE rollout_id = $1",
            &[&rollout.rollout_id, &status, &record],
        )?;
        Ok(())
    }

    /// Queue heads just popped (queue place, record), in queue order: each is locked and kept;
    /// those whose rollout still queues go to `out`, stale ones are dropped.
    fn take_heads(&mut self, rows: &[Row], out: &mut Vec<Rollout>) -> StoreResult<()> {
        let mut heads = rows
            .iter()
            .map(|row| Ok((column::<i64>(row, 0)?, column::<&str>(row, 1)?)))
            .collect::<StoreResult<Vec<_>>>()?;
        heads.sort_unstable_by_key(|(place, _)| *place);
        for (_, record) in heads {
            let rollout: Rollout = from_json(record)?;
            if rollout.status.is_queuing() {
                out.push(rollout.clone());
            }
            self.rollouts.insert(rollout.rollout_id.clone(), rollout);
        }
        Ok(())
    }

    /// The attempt `which` of the rollout, locked. The same statement counts the rollout's
    /// attempts, kept for [`Storage::attempt_count`] when the rollout is locked (then the
    /// statement saw every attempt there is).
    fn load_attempt(&mut self, rollout_id: &str, which: AttemptRef<'_>) -> StoreResult<Option<Attempt>> {
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
        record.map(|text| from_json(&text)).transpose()
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
        self.exec(
            "UPDATE rollouts SET queue_seq = nextval('rollout_queue_seq') WHERE rollout_id = $1 AND queue_seq IS NULL",
            &[&rollout_id],
        )?;
        Ok(())
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
                 RETURNING head.queue_seq, r.record",
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
                 RETURNING head.queue_seq, r.record",
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

    fn latest_attempt(&mut self, rollout_id: &str) -> StoreResult<Option<Attempt>> {
        self.load_attempt(rollout_id, AttemptRef::Latest)
    }

    fn read_attempt<T>(
        &mut self,
        rollout_id: &str,
        which: AttemptRef<'_>,
        read: impl FnOnce(&Attempt) -> T,
    ) -> StoreResult<Option<T>> {
        Ok(self.load_attempt(rollout_id, which)?.map(|attempt| read(&attempt)))
    }

    fn modify_attempt<T>(
        &mut self,
        rollout_id: &str,
        which: AttemptRef<'_>,
        modify: impl FnOnce(&mut Attempt) -> T,
    ) -> StoreResult<Option<T>> {
        let Some(mut attempt) = self.load_attempt(rollout_id, which)? else {
            return Ok(None);
        };
        let out = modify(&mut attempt);
        self.exec(
            "UPDATE attempts SET record = $3 WHERE rollout_id = $1 AND sequence_id = $2",
            &[
                &attempt.rollout_id,
                &i64::from(attempt.sequence_id),
                &to_json(&attempt)?,
            ],
        )?;
        Ok(Some(out))
    }

    fn insert_attempt(&mut self, attempt: &Attempt) -> StoreResult<()> {
        self.exec(
            "INSERT INTO attempts (rollout_id, sequence_id, attempt_id, record) VALUES ($1, $2, $3, $4)",
            &[
                &attempt.rollout_id,
                &i64::from(attempt.sequence_id),
                &attempt.attempt_id,
                &to_json(attempt)?,
            ],
        )?;
        if let Some(count) = self.attempt_counts.get_mut(&attempt.rollout_id) {
            *count = (*count).max(attempt.sequence_id);
        }
        Ok(())
    }

    fn schedule_watchdog(&mut self, attempt: &Attempt, at: f64) -> StoreResult<()> {
        self.exec(
            "UPDATE attempts SET watchdog_at = $3 WHERE rollout_id = $1 AND sequence_id = $2",
            &[&attempt.rollout_id, &i64::from(attempt.sequence_id), &at],
        )?;
        Ok(())
    }

    fn watchdog_due(&mut self, now: f64) -> StoreResult<bool> {
        if let Some((asked, due)) = self.due.take()
            && asked == now
        {
            return Ok(due);
        }
        Ok(self
            .value("SELECT EXISTS (SELECT 1 FROM attempts WHERE watchdog_at < $1)", &[&now])?
            .unwrap_or(false))
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
        self.exec(
            "SELECT pg_advisory_xact_lock(hashtextextended('agl_resources:' || $1::text, 0))",
            &[&update.resources_id],
        )?;
        self.exec(
            "INSERT INTO resources (resources_id, record) VALUES ($1, $2)
             ON CONFLICT (resources_id) DO UPDATE SET record = excluded.record",
            &[&update.resources_id, &to_json(update)?],
        )?;
        self.exec(
            "INSERT INTO store_values (key, value) VALUES ('latest_resources', $1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[&update.resources_id],
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
            self.exec(
                "INSERT INTO workers (worker_id, record) VALUES ($1, $2) ON CONFLICT (worker_id) DO NOTHING",
                &[&worker_id, &to_json(&Worker::new(worker_id))?],
            )?;
            record = self.value(LOCK, &[&worker_id])?;
        }
        let mut worker = match record {
            Some(text) => from_json(&text)?,
            None => Worker::new(worker_id),
        };
        let out = modify(&mut worker);
        self.exec(
            "UPDATE workers SET record = $2 WHERE worker_id = $1",
            &[&worker_id, &to_json(&worker)?],
        )?;
        Ok(out)
    }

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
