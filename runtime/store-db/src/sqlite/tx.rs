//! [`SqliteTx`]: the store's [`Storage`] primitives as SQL on one SQLite transaction (see
//! `migrations/sqlite/` for the tables). Records are kept as their wire JSON; what the writer
//! wrote or read before is taken from its [`Recall`] instead of read again.

use super::recall::{Recall, RecalledRollout};
use crate::sql::{Arg, Dialect, SqlExec, from_json, sql_rows, status_name, to_json, writes};
use agl_store::model::*;
use agl_store::{AttemptRef, Storage, StorageCounts, StoreError, StoreResult};
use rusqlite::types::{ToSqlOutput, Value};
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};
use std::sync::Arc;

/// A database error, as the store reports it.
pub(crate) fn db_error(error: rusqlite::Error) -> StoreError {
    StoreError::Backend(format!("SQLite: {error}"))
}

/// One job's view of the database, inside the writer's transaction.
pub struct SqliteTx<'c> {
    conn: &'c Connection,
    recall: &'c mut Recall,
    /// Rollouts that finished in this job: their waiters are woken after the commit.
    pub(crate) finished: Vec<String>,
    /// Rollouts this job took off the queue whose rows still hold their place: the next write of
    /// the row clears it in the same statement (a dequeue writes the rollout's new status right
    /// after), and [`SqliteTx::finish`] clears the rest.
    popped: Vec<String>,
}

impl<'c> SqliteTx<'c> {
    pub(crate) fn new(conn: &'c Connection, recall: &'c mut Recall) -> Self {
        recall.start_job();
        Self {
            conn,
            recall,
            finished: Vec::new(),
            popped: Vec::new(),
        }
    }

    /// The job is done: the rollouts it took off the queue and did not write leave it now.
    pub(crate) fn finish(&mut self) -> StoreResult<()> {
        for rollout_id in std::mem::take(&mut self.popped) {
            self.leave_queue(&rollout_id)?;
        }
        Ok(())
    }

    fn leave_queue(&self, rollout_id: &str) -> StoreResult<()> {
        self.exec(
            "UPDATE rollouts SET queue_seq = NULL WHERE rollout_id = ?1",
            [rollout_id],
        )?;
        Ok(())
    }

    /// Whether the rollout was taken off the queue in this job and its row not written since
    /// (and from now on, it counts as written).
    fn take_popped(&mut self, rollout_id: &str) -> bool {
        match self.popped.iter().position(|popped| popped == rollout_id) {
            Some(at) => {
                self.popped.swap_remove(at);
                true
            }
            None => false,
        }
    }

    /// Runs a statement; how many rows it changed.
    fn exec(&self, sql: &str, params: impl rusqlite::Params) -> StoreResult<usize> {
        self.conn
            .prepare_cached(sql)
            .and_then(|mut statement| statement.execute(params))
            .map_err(db_error)
    }

    /// The first row of a query, if any, mapped by `map`.
    fn first<T>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        map: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> StoreResult<Option<T>> {
        self.conn
            .prepare_cached(sql)
            .and_then(|mut statement| statement.query_row(params, map).optional())
            .map_err(db_error)
    }

    /// The rollout (with its attempt count, where known), remembered or read.
    fn cached_rollout(&mut self, rollout_id: &str) -> StoreResult<Option<&mut RecalledRollout>> {
        if self.recall.rollout(rollout_id).is_none() {
            let record: Option<String> = self.first(
                "SELECT record FROM rollouts WHERE rollout_id = ?1",
                [rollout_id],
                |row| row.get(0),
            )?;
            let Some(record) = record else {
                return Ok(None);
            };
            return Ok(Some(self.recall.read_rollout(from_json(&record)?, None, record.len())));
        }
        Ok(self.recall.rollout(rollout_id))
    }

    /// Overwrites the stored rollout, and remembers it.
    fn write_rollout(&mut self, rollout: &Rollout) -> StoreResult<()> {
        let (status, record) = (status_name(&rollout.status)?, to_json(rollout)?);
        let sql = if self.take_popped(&rollout.rollout_id) {
            "UPDATE rollouts SET status = ?2, record = ?3, queue_seq = NULL WHERE rollout_id = ?1"
        } else {
            "UPDATE rollouts SET status = ?2, record = ?3 WHERE rollout_id = ?1"
        };
        self.exec(sql, params![rollout.rollout_id, status, record])?;
        self.recall.wrote_rollout(rollout, record.len());
        Ok(())
    }

    /// The attempt `which` of the rollout, as stored.
    /// Writes a changed attempt's record back.
    fn save_attempt_record(&mut self, attempt: &Attempt) -> StoreResult<()> {
        writes::update_attempt(self, attempt)
    }

    fn load_attempt(&self, rollout_id: &str, which: AttemptRef<'_>) -> StoreResult<Option<Attempt>> {
        let record: Option<String> = match which {
            AttemptRef::Latest => self.first(
                "SELECT record FROM attempts WHERE rollout_id = ?1 ORDER BY sequence_id DESC LIMIT 1",
                [rollout_id],
                |row| row.get(0),
            )?,
            AttemptRef::Id(attempt_id) => self.first(
                "SELECT record FROM attempts WHERE rollout_id = ?1 AND attempt_id = ?2",
                [rollout_id, attempt_id],
                |row| row.get(0),
            )?,
        };
        record.map(|text| from_json(&text)).transpose()
    }
}

impl Storage for SqliteTx<'_> {
    fn rollout(&mut self, rollout_id: &str) -> StoreResult<Option<Rollout>> {
        Ok(self.cached_rollout(rollout_id)?.map(|cached| cached.rollout.clone()))
    }

    fn read_rollout<T>(&mut self, rollout_id: &str, read: impl FnOnce(&Rollout) -> T) -> StoreResult<Option<T>> {
        Ok(self.cached_rollout(rollout_id)?.map(|cached| read(&cached.rollout)))
    }

    fn insert_rollout(&mut self, rollout: &Rollout) -> StoreResult<bool> {
        let (status, record) = (status_name(&rollout.status)?, to_json(rollout)?);
        let inserted = self.exec(
            "INSERT OR IGNORE INTO rollouts (rollout_id, status, record, last_span_sequence)
             VALUES (?1, ?2, ?3, COALESCE((SELECT last FROM orphan_span_counters WHERE rollout_id = ?1), 0))",
            params![rollout.rollout_id, status, record],
        )?;
        if inserted == 0 {
            return Ok(false);
        }
        self.exec(
            "DELETE FROM orphan_span_counters WHERE rollout_id = ?1",
            [&rollout.rollout_id],
        )?;
        self.recall.touch_rollout(&rollout.rollout_id);
        self.recall.read_rollout(rollout.clone(), Some(0), record.len());
        Ok(true)
    }

    fn save_rollout(&mut self, rollout: &Rollout) -> StoreResult<()> {
        self.write_rollout(rollout)
    }

    fn save_rollout_status(
        &mut self,
        rollout_id: &str,
        status: RolloutStatus,
        end_time: Option<f64>,
    ) -> StoreResult<()> {
        let Some(cached) = self.cached_rollout(rollout_id)? else {
            return Ok(());
        };
        let mut rollout = cached.rollout.clone();
        rollout.status = status;
        rollout.end_time = end_time;
        self.write_rollout(&rollout)
    }

    fn push_queue(&mut self, rollout_id: &str) -> StoreResult<()> {
        if self.take_popped(rollout_id) {
            self.leave_queue(rollout_id)?;
        }
        self.exec(
            // `queue_seq IS NOT NULL` lets MAX read the queue's (partial) index instead of every
            // rollout: without it each enqueue scanned the table.
            "UPDATE rollouts SET queue_seq =
                 (SELECT COALESCE(MAX(queue_seq), 0) + 1 FROM rollouts WHERE queue_seq IS NOT NULL)
             WHERE rollout_id = ?1 AND queue_seq IS NULL",
            [rollout_id],
        )?;
        Ok(())
    }

    fn pop_queue(&mut self, limit: usize) -> StoreResult<Vec<Rollout>> {
        let mut out = Vec::new();
        // The queue's place of the last rollout taken in this call: the rows keep their places
        // until written (see `popped`), so the next head is looked for after it.
        let mut after = 0i64;
        while out.len() < limit {
            let head: Option<(i64, String)> = self.first(
                "SELECT queue_seq, rollout_id FROM rollouts
                 WHERE queue_seq IS NOT NULL AND queue_seq > ?1 ORDER BY queue_seq LIMIT 1",
                [after],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )?;
            let Some((place, rollout_id)) = head else {
                break;
            };
            after = place;
            self.popped.push(rollout_id.clone());
            let known = self
                .recall
                .rollout(&rollout_id)
                .is_some_and(|cached| cached.attempts.is_some());
            if !known {
                let read: Option<(String, u32)> = self.first(
                    "SELECT record,
                         (SELECT COALESCE(MAX(sequence_id), 0) FROM attempts WHERE attempts.rollout_id = ?1)
                     FROM rollouts WHERE rollout_id = ?1",
                    [&rollout_id],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )?;
                let Some((record, attempts)) = read else {
                    continue;
                };
                self.recall
                    .read_rollout(from_json(&record)?, Some(attempts), record.len());
            }
            if let Some(cached) = self.recall.rollout(&rollout_id)
                && cached.rollout.status.is_queuing()
            {
                out.push(cached.rollout.clone());
            }
        }
        Ok(out)
    }

    fn rollout_finished(&mut self, rollout_id: &str) {
        self.finished.push(rollout_id.to_owned());
    }

    fn attempt_count(&mut self, rollout_id: &str) -> StoreResult<u32> {
        if let Some(count) = self.recall.rollout(rollout_id).and_then(|cached| cached.attempts) {
            return Ok(count);
        }
        let count = self
            .first(
                "SELECT COALESCE(MAX(sequence_id), 0) FROM attempts WHERE rollout_id = ?1",
                [rollout_id],
                |row| row.get(0),
            )?
            .unwrap_or(0);
        if let Some(cached) = self.recall.rollout(rollout_id) {
            cached.attempts = Some(count);
        }
        Ok(count)
    }

    crate::sql::attempt_primitives!();

    fn insert_attempt(&mut self, attempt: &Attempt) -> StoreResult<()> {
        writes::insert_attempt(self, attempt)?;
        self.recall.touch_rollout(&attempt.rollout_id);
        if let Some(cached) = self.recall.rollout(&attempt.rollout_id) {
            cached.attempts = cached.attempts.map(|count| count.max(attempt.sequence_id));
        }
        Ok(())
    }

    fn schedule_watchdog(&mut self, attempt: &Attempt, at: f64) -> StoreResult<()> {
        self.exec(
            "UPDATE attempts SET watchdog_at = ?3 WHERE rollout_id = ?1 AND sequence_id = ?2",
            params![attempt.rollout_id, attempt.sequence_id, at],
        )?;
        self.recall.scheduled(at);
        Ok(())
    }

    fn watchdog_due(&mut self, now: f64) -> StoreResult<bool> {
        if self.recall.nothing_due_before(now) {
            return Ok(false);
        }
        let earliest: Option<f64> = self
            .first(
                "SELECT MIN(watchdog_at) FROM attempts WHERE watchdog_at IS NOT NULL",
                [],
                |row| row.get(0),
            )?
            .flatten();
        self.recall.set_watchdog_floor(earliest);
        Ok(earliest.is_some_and(|at| at < now))
    }

    fn pop_watchdog(&mut self, now: f64) -> StoreResult<Option<(String, u32)>> {
        let due: Option<(String, u32)> = self.first(
            "SELECT rollout_id, sequence_id FROM attempts WHERE watchdog_at < ?1 ORDER BY watchdog_at LIMIT 1",
            [now],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
        if let Some((rollout_id, sequence_id)) = &due {
            self.exec(
                "UPDATE attempts SET watchdog_at = NULL WHERE rollout_id = ?1 AND sequence_id = ?2",
                params![rollout_id, sequence_id],
            )?;
        }
        Ok(due)
    }

    fn insert_span(&mut self, span: Span, attempt_sequence: u32) -> StoreResult<Option<Arc<Span>>> {
        let inserted = self.exec(
            "INSERT OR IGNORE INTO spans (rollout_id, attempt_sequence, span_id, record) VALUES (?1, ?2, ?3, ?4)",
            params![span.rollout_id, attempt_sequence, span.span_id, to_json(&span)?],
        )?;
        if inserted == 0 {
            return Ok(None);
        }
        self.exec(
            "UPDATE rollouts SET last_span_sequence = MAX(last_span_sequence, ?2) WHERE rollout_id = ?1",
            params![span.rollout_id, i64::try_from(span.sequence_id).unwrap_or(i64::MAX)],
        )?;
        Ok(Some(Arc::new(span)))
    }

    fn next_span_sequence(&mut self, rollout_id: &str) -> StoreResult<u64> {
        let counted: Option<i64> = self.first(
            "UPDATE rollouts SET last_span_sequence = last_span_sequence + 1 WHERE rollout_id = ?1
             RETURNING last_span_sequence",
            [rollout_id],
            |row| row.get(0),
        )?;
        let issued = match counted {
            Some(issued) => Some(issued),
            None => self.first(
                "INSERT INTO orphan_span_counters (rollout_id, last) VALUES (?1, 1)
                 ON CONFLICT (rollout_id) DO UPDATE SET last = last + 1 RETURNING last",
                [rollout_id],
                |row| row.get(0),
            )?,
        };
        Ok(issued.and_then(|n| u64::try_from(n).ok()).unwrap_or(0))
    }

    fn resources(&mut self, resources_id: &str) -> StoreResult<Option<ResourcesUpdate>> {
        let record: Option<String> = self.first(
            "SELECT record FROM resources WHERE resources_id = ?1",
            [resources_id],
            |row| row.get(0),
        )?;
        record.map(|text| from_json(&text)).transpose()
    }

    fn save_resources(&mut self, update: &ResourcesUpdate) -> StoreResult<()> {
        self.exec(
            "INSERT INTO resources (resources_id, record) VALUES (?1, ?2)
             ON CONFLICT (resources_id) DO UPDATE SET record = excluded.record",
            params![update.resources_id, to_json(update)?],
        )?;
        self.exec(
            "INSERT INTO store_values (key, value) VALUES ('latest_resources', ?1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [&update.resources_id],
        )?;
        self.recall.set_latest_resources(Some(update.resources_id.clone()));
        Ok(())
    }

    fn latest_resources_id(&mut self) -> StoreResult<Option<String>> {
        if let Some(known) = self.recall.latest_resources() {
            return Ok(known);
        }
        let latest = self.first(
            "SELECT value FROM store_values WHERE key = 'latest_resources'",
            [],
            |row| row.get(0),
        )?;
        self.recall.set_latest_resources(latest.clone());
        Ok(latest)
    }

    fn modify_worker<T>(&mut self, worker_id: &str, modify: impl FnOnce(&mut Worker) -> T) -> StoreResult<T> {
        // A remembered worker has its row (the writer wrote or read it).
        let (mut worker, stored) = match self.recall.worker(worker_id) {
            Some(known) => (known.clone(), true),
            None => {
                let record: Option<String> =
                    self.first("SELECT record FROM workers WHERE worker_id = ?1", [worker_id], |row| {
                        row.get(0)
                    })?;
                match record {
                    Some(text) => (from_json(&text)?, true),
                    None => (Worker::new(worker_id), false),
                }
            }
        };
        let out = modify(&mut worker);
        let sql = if stored {
            "UPDATE workers SET record = ?2 WHERE worker_id = ?1"
        } else {
            "INSERT INTO workers (worker_id, record) VALUES (?1, ?2)"
        };
        self.exec(sql, params![worker_id, to_json(&worker)?])?;
        self.recall.wrote_worker(worker);
        Ok(out)
    }

    crate::sql::recording_primitives!();

    fn counts(&mut self) -> StoreResult<StorageCounts> {
        let count = |table: &str| -> StoreResult<u64> {
            let n: Option<i64> = self.first(&format!("SELECT count(*) FROM {table}"), [], |row| row.get(0))?;
            Ok(n.and_then(|n| u64::try_from(n).ok()).unwrap_or(0))
        };
        Ok(StorageCounts {
            rollouts: count("rollouts")?,
            attempts: count("attempts")?,
            spans: count("spans")?,
            resources: count("resources")?,
            workers: count("workers")?,
        })
    }
}

impl rusqlite::ToSql for Arg {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        match self {
            Arg::Text(text) => text.to_sql(),
            Arg::Int(n) => n.to_sql(),
            // Read by `json_each` (see `Dialect::in_list`).
            Arg::Texts(list) => serde_json::to_string(list)
                .map(|json| ToSqlOutput::Owned(Value::Text(json)))
                .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e))),
        }
    }
}

impl SqlExec for SqliteTx<'_> {
    const DIALECT: Dialect = Dialect::Sqlite;

    fn texts(&mut self, sql: &str, args: &[Arg]) -> StoreResult<Vec<String>> {
        let mut statement = self.conn.prepare_cached(sql).map_err(db_error)?;
        statement
            .query_map(params_from_iter(args), |row| row.get::<_, String>(0))
            .map_err(db_error)?
            .collect::<Result<Vec<String>, _>>()
            .map_err(db_error)
    }

    fn number(&mut self, sql: &str, args: &[Arg]) -> StoreResult<Option<i64>> {
        let found = self.first(sql, params_from_iter(args), |row| row.get::<_, Option<i64>>(0))?;
        Ok(found.flatten())
    }

    fn execute(&mut self, sql: &str, args: &[Arg]) -> StoreResult<()> {
        self.exec(sql, params_from_iter(args)).map(|_| ())
    }
}

sql_rows!(SqliteTx<'_>);
