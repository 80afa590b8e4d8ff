//! What the SQL backends share: records kept as their wire JSON ([`to_json`], [`from_json`]),
//! the arguments a statement binds ([`Arg`]), the few places SQLite's and PostgreSQL's SQL
//! differ ([`Dialect`]), and the one trait each backend's transaction runs statements through
//! ([`SqlExec`]), over which [`reads`] writes the store's reads once for both, [`writes`] the
//! writes whose statement is the same, and [`recordings`] both for recordings.

pub(crate) mod reads;
pub(crate) mod recordings;
pub(crate) mod writes;

use agl_store::{StoreError, StoreResult};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub(crate) fn to_json<T: Serialize>(value: &T) -> StoreResult<String> {
    serde_json::to_string(value).map_err(|e| StoreError::Backend(format!("cannot encode a record: {e}")))
}

pub(crate) fn from_json<T: DeserializeOwned>(text: &str) -> StoreResult<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Backend(format!("a stored record does not decode: {e}")))
}

/// A status as its wire name (`"queuing"`), the form kept in the `status` column.
pub(crate) fn status_name<T: Serialize>(status: &T) -> StoreResult<String> {
    match serde_json::to_value(status) {
        Ok(serde_json::Value::String(name)) => Ok(name),
        _ => Err(StoreError::Backend("a status has no wire name".into())),
    }
}

/// A value a statement binds, at `$1`, `$2`... in the order the arguments are given (the
/// statements name them in that order: SQLite numbers `$N` by first appearance).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Arg {
    Text(String),
    Int(i64),
    /// A list of texts, tested with [`Dialect::in_list`].
    Texts(Vec<String>),
}

impl Arg {
    pub fn text(value: &str) -> Self {
        Self::Text(value.to_owned())
    }
}

/// Where the SQL of SQLite and PostgreSQL differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// `column` is one of the list bound at `$n` ([`Arg::Texts`]: a JSON array for SQLite, an
    /// array for PostgreSQL).
    pub fn in_list(self, column: &str, n: usize) -> String {
        match self {
            Self::Sqlite => format!("{column} IN (SELECT value FROM json_each(${n}))"),
            Self::Postgres => format!("{column} = ANY(${n})"),
        }
    }

    /// `column` contains the text bound at `$n` (case-sensitive, as Rust's `str::contains`).
    pub fn contains(self, column: &str, n: usize) -> String {
        match self {
            Self::Sqlite => format!("instr({column}, ${n}) > 0"),
            Self::Postgres => format!("strpos({column}, ${n}) > 0"),
        }
    }
}

/// Statements run in one of a backend's transactions.
pub(crate) trait SqlExec {
    const DIALECT: Dialect;

    /// Column 0 (text) of every row.
    fn texts(&mut self, sql: &str, args: &[Arg]) -> StoreResult<Vec<String>>;

    /// Column 0 (an integer, or NULL) of the first row, if any.
    fn number(&mut self, sql: &str, args: &[Arg]) -> StoreResult<Option<i64>>;

    /// A statement that changes things.
    fn execute(&mut self, sql: &str, args: &[Arg]) -> StoreResult<()>;
}

/// Implements `agl_store::Rows` for a transaction type that implements [`SqlExec`]: each loader
/// is the one in [`reads`].
macro_rules! sql_rows {
    ($tx:ty) => {
        impl agl_store::Rows for $tx {
            fn find_rollout(&mut self, rollout_id: &str) -> agl_store::StoreResult<Option<agl_store::Rollout>> {
                $crate::sql::reads::find_rollout(self, rollout_id)
            }
            fn find_latest_attempt(&mut self, rollout_id: &str) -> agl_store::StoreResult<Option<agl_store::Attempt>> {
                $crate::sql::reads::find_latest_attempt(self, rollout_id)
            }
            fn select_rollouts(
                &mut self,
                query: &agl_store::RolloutQuery,
                window: Option<agl_store::rows::Window>,
            ) -> agl_store::StoreResult<(Vec<agl_store::Rollout>, u64)> {
                $crate::sql::reads::select_rollouts(self, query, window)
            }
            fn latest_attempts(&mut self, rollout_ids: &[&str]) -> agl_store::StoreResult<Vec<agl_store::Attempt>> {
                $crate::sql::reads::latest_attempts(self, rollout_ids)
            }
            fn attempts(&mut self, rollout_id: &str) -> agl_store::StoreResult<Vec<agl_store::Attempt>> {
                $crate::sql::reads::attempts(self, rollout_id)
            }
            fn attempt_sequence(
                &mut self,
                rollout_id: &str,
                which: agl_store::AttemptRef<'_>,
            ) -> agl_store::StoreResult<Option<u32>> {
                $crate::sql::reads::attempt_sequence(self, rollout_id, which)
            }
            fn spans<T>(
                &mut self,
                rollout_id: &str,
                attempt_sequence: Option<u32>,
                read: impl FnOnce(agl_store::rows::SpanRows<'_>) -> T,
            ) -> agl_store::StoreResult<T> {
                $crate::sql::reads::spans(self, rollout_id, attempt_sequence, read)
            }
            fn all_resources(&mut self) -> agl_store::StoreResult<Vec<agl_store::ResourcesUpdate>> {
                $crate::sql::reads::all_resources(self)
            }
            fn find_resources(
                &mut self,
                resources_id: &str,
            ) -> agl_store::StoreResult<Option<agl_store::ResourcesUpdate>> {
                $crate::sql::reads::find_resources(self, resources_id)
            }
            fn latest_resources(&mut self) -> agl_store::StoreResult<Option<agl_store::ResourcesUpdate>> {
                $crate::sql::reads::latest_resources(self)
            }
            fn all_workers(&mut self) -> agl_store::StoreResult<Vec<agl_store::Worker>> {
                $crate::sql::reads::all_workers(self)
            }
            fn find_worker(&mut self, worker_id: &str) -> agl_store::StoreResult<Option<agl_store::Worker>> {
                $crate::sql::reads::find_worker(self, worker_id)
            }
            fn unfinished_rollouts(
                &mut self,
                rollout_ids: &[String],
            ) -> agl_store::StoreResult<std::collections::HashSet<String>> {
                $crate::sql::reads::unfinished_rollouts(self, rollout_ids)
            }
            fn finished_rollouts(&mut self, rollout_ids: &[String]) -> agl_store::StoreResult<Vec<agl_store::Rollout>> {
                $crate::sql::reads::finished_rollouts(self, rollout_ids)
            }
            fn queue_len(&mut self) -> agl_store::StoreResult<usize> {
                $crate::sql::reads::queue_len(self)
            }
            fn recording(
                &mut self,
                rollout_id: &str,
                attempt_id: &str,
            ) -> agl_store::StoreResult<Option<(String, Vec<String>)>> {
                $crate::sql::recordings::recording(self, rollout_id, attempt_id)
            }
            fn blob(&mut self, address: &str) -> agl_store::StoreResult<Option<String>> {
                $crate::sql::recordings::blob(self, address)
            }
            fn run_record(&mut self) -> agl_store::StoreResult<Option<agl_store::RunRecord>> {
                $crate::sql::reads::run_record(self)
            }
            fn save_run_record(&mut self, record: &agl_store::RunRecord) -> agl_store::StoreResult<()> {
                $crate::sql::reads::save_run_record(self, record)
            }
        }
    };
}
pub(crate) use sql_rows;

/// The attempt primitives of `agl_store::Storage`, inside the `impl Storage` of a transaction
/// type that loads an attempt (`load_attempt`) and writes a changed one back
/// (`save_attempt_record`).
macro_rules! attempt_primitives {
    () => {
        fn latest_attempt(&mut self, rollout_id: &str) -> agl_store::StoreResult<Option<agl_store::Attempt>> {
            self.load_attempt(rollout_id, agl_store::AttemptRef::Latest)
        }

        fn read_attempt<T>(
            &mut self,
            rollout_id: &str,
            which: agl_store::AttemptRef<'_>,
            read: impl FnOnce(&agl_store::Attempt) -> T,
        ) -> agl_store::StoreResult<Option<T>> {
            Ok(self
                .load_attempt(rollout_id, which)?
                .map(|attempt| read(&attempt)))
        }

        fn modify_attempt<T>(
            &mut self,
            rollout_id: &str,
            which: agl_store::AttemptRef<'_>,
            modify: impl FnOnce(&mut agl_store::Attempt) -> T,
        ) -> agl_store::StoreResult<Option<T>> {
            let Some(mut attempt) = self.load_attempt(rollout_id, which)? else {
                return Ok(None);
            };
            let out = modify(&mut attempt);
            self.save_attempt_record(&attempt)?;
            Ok(Some(out))
        }
    };
}
pub(crate) use attempt_primitives;

/// The recording primitives of `agl_store::Storage`, inside the `impl Storage` of a transaction
/// type that implements [`SqlExec`]: each the one in [`recordings`].
macro_rules! recording_primitives {
    () => {
        fn insert_blob(&mut self, address: &str, text: &str) -> agl_store::StoreResult<bool> {
            $crate::sql::recordings::insert_blob(self, address, text)
        }

        fn save_recording(
            &mut self,
            rollout_id: &str,
            attempt_id: &str,
            tape: &str,
            blobs: &[String],
        ) -> agl_store::StoreResult<()> {
            $crate::sql::recordings::save_recording(self, rollout_id, attempt_id, tape, blobs)
        }
    };
}
pub(crate) use recording_primitives;
