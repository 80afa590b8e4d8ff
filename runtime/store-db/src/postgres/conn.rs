//! One connection of a PostgreSQL store: opening it, the statements prepared on it, and what
//! its errors mean (one line of text; whether the connection is gone; whether the transaction
//! should run again). What runs on it is `tx.rs`'s and `queries.rs`'s; when, `pool.rs`'s.

use ::postgres::{Client, Config, NoTls, Statement};
use agl_store::StoreError;
use std::collections::HashMap;

/// Opens a connection (plain TCP or a Unix socket: TLS is not built in).
pub(crate) fn connect(config: &Config) -> Result<Client, ::postgres::Error> {
    config.connect(NoTls)
}

/// One connection and the statements prepared on it (each SQL text is parsed once per
/// connection, then only bound and run).
pub(crate) struct Conn {
    pub client: Client,
    statements: HashMap<&'static str, Statement>,
}

impl Conn {
    pub fn new(client: Client) -> Self {
        Self {
            client,
            statements: HashMap::new(),
        }
    }

    pub fn statement(&mut self, sql: &'static str) -> Result<Statement, ::postgres::Error> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql)?;
        self.statements.insert(sql, statement.clone());
        Ok(statement)
    }
}

/// A client error on one line, with its causes: the client's own text names only the kind
/// ("db error", "error connecting to server"), the server's message and the I/O error are its
/// sources.
pub(crate) fn describe(error: &::postgres::Error) -> String {
    let mut text = error.to_string();
    if let Some(db) = error.as_db_error() {
        text = format!("{}: {}", db.severity(), db.message());
        if let Some(detail) = db.detail() {
            text.push_str(&format!(" ({detail})"));
        }
        if let Some(hint) = db.hint() {
            text.push_str(&format!("; hint: {hint}"));
        }
    } else {
        let mut source = std::error::Error::source(error);
        while let Some(cause) = source {
            text.push_str(&format!(": {cause}"));
            source = cause.source();
        }
    }
    text.replace('\n', " ")
}

/// A database error, as the store reports it.
pub(crate) fn db_error(error: ::postgres::Error) -> StoreError {
    StoreError::Backend(format!("PostgreSQL: {}", describe(&error)))
}

/// Whether the connection is gone: closed, ended by the server (shutdown, an administrator),
/// or an I/O error. What was sent on it since the last commit is rolled back, unless it was a
/// `COMMIT` whose answer was lost.
pub(crate) fn is_broken(error: &::postgres::Error) -> bool {
    use ::postgres::error::SqlState;
    error.is_closed()
        || matches!(
            error.code(),
            Some(code) if *code == SqlState::ADMIN_SHUTDOWN || *code == SqlState::CRASH_SHUTDOWN
                || *code == SqlState::CANNOT_CONNECT_NOW
        )
        || std::error::Error::source(error).is_some_and(|cause| cause.is::<std::io::Error>())
}

/// Whether the whole transaction should run again: a serialization failure or a deadlock.
pub(crate) fn is_retryable(error: &::postgres::Error) -> bool {
    use ::postgres::error::SqlState;
    matches!(
        error.code(),
        Some(code) if *code == SqlState::T_R_SERIALIZATION_FAILURE || *code == SqlState::T_R_DEADLOCK_DETECTED
    )
}
