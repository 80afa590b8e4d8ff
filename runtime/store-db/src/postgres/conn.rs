//! One connection of a PostgreSQL store: opening it, the statements prepared on it, sending
//! statements pipelined (written together, answered in order: one round trip for several), and
//! what its errors mean (one line of text; whether the connection is gone; whether the
//! transaction should run again). What runs on it is `tx.rs`'s (and `sql/`'s reads); when,
//! `pool.rs`'s.
//!
//! A pool connection is tokio-postgres's asynchronous client, driven by a current-thread runtime
//! that the pool thread owning it keeps to itself: only that client sends several requests
//! before reading their answers. The synchronous client ([`connect`]) serves the migrations and
//! the listening thread, which send one statement at a time anyway.

use ::postgres::types::ToSql;
use ::postgres::{Client, Config, NoTls, Row, SimpleQueryMessage, Statement};
use agl_store::StoreError;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

/// Opens a synchronous connection (plain TCP or a Unix socket: TLS is not built in).
pub(crate) fn connect(config: &Config) -> Result<Client, ::postgres::Error> {
    config.connect(NoTls)
}

/// Parameters of a statement.
pub(crate) type Params<'p> = [&'p (dyn ToSql + Sync)];

/// One request of a pipeline.
pub(crate) enum Request<'a> {
    /// Text run with the simple protocol, answered with nothing (`BEGIN`, `COMMIT`, `NOTIFY`).
    Simple(&'a str),
    /// Text run with the simple protocol (several statements in one message), answered with
    /// its rows as text.
    SimpleRows(&'a str),
    /// A prepared statement, answered with how many rows it changed.
    Count(&'a Statement, &'a Params<'a>),
    /// A prepared query, answered with its rows.
    Rows(&'a Statement, &'a Params<'a>),
}

/// What a request was answered with.
pub(crate) enum Answer {
    Done,
    Count(u64),
    Rows(Vec<Row>),
    Text(Vec<SimpleQueryMessage>),
}

/// One pool connection and the statements prepared on it (each SQL text is parsed once per
/// connection, then only bound and run).
pub(crate) struct Conn {
    /// Drives the client and its connection, only while this thread waits for answers.
    runtime: tokio::runtime::Runtime,
    client: tokio_postgres::Client,
    statements: HashMap<String, Statement>,
}

impl Conn {
    /// Opens a connection; why not, on one line.
    pub fn open(config: &tokio_postgres::Config) -> Result<Self, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start its connection's runtime: {e}"))?;
        let (client, connection) = runtime
            .block_on(config.connect(tokio_postgres::NoTls))
            .map_err(|e| describe(&e))?;
        // Runs whenever this thread waits for an answer; ends when the connection closes.
        runtime.spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!("PostgreSQL store: a connection ended: {}", describe(&error));
            }
        });
        Ok(Self {
            runtime,
            client,
            statements: HashMap::new(),
        })
    }

    /// Whether the connection is gone.
    pub fn is_closed(&self) -> bool {
        self.client.is_closed()
    }

    /// The statement prepared for `sql` on this connection (prepared now if it is new).
    pub fn statement(&mut self, sql: &str) -> Result<Statement, ::postgres::Error> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.runtime.block_on(self.client.prepare(sql))?;
        self.statements.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }

    /// Sends every request at once and waits for all their answers, in order. Inside a
    /// transaction, a request after one that failed fails too (the transaction is aborted).
    pub fn pipeline(&self, requests: &[Request<'_>]) -> Vec<Result<Answer, ::postgres::Error>> {
        let client = &self.client;
        self.runtime.block_on(in_order(
            requests.iter().map(|request| answer(client, request)).collect(),
        ))
    }

    /// Runs `sql` with the simple protocol.
    pub fn simple(&self, sql: &str) -> Result<(), ::postgres::Error> {
        self.runtime.block_on(self.client.batch_execute(sql))
    }
}

async fn answer(client: &tokio_postgres::Client, request: &Request<'_>) -> Result<Answer, ::postgres::Error> {
    match *request {
        Request::Simple(sql) => client.batch_execute(sql).await.map(|()| Answer::Done),
        Request::SimpleRows(sql) => client.simple_query(sql).await.map(Answer::Text),
        Request::Count(statement, params) => client.execute(statement, params).await.map(Answer::Count),
        Request::Rows(statement, params) => client.query(statement, params).await.map(Answer::Rows),
    }
}

/// Awaits every future, polling them strictly in the order given: a tokio-postgres request is
/// sent on its future's first poll, so the requests go out in this order, together.
async fn in_order<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|context| {
        let mut waiting = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(context) {
                    Poll::Ready(value) => *output = Some(value),
                    Poll::Pending => waiting = true,
                }
            }
        }
        if waiting { Poll::Pending } else { Poll::Ready(()) }
    })
    .await;
    outputs.into_iter().flatten().collect()
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

/// Whether a statement met a row with its key already there.
pub(crate) fn is_unique_violation(error: &::postgres::Error) -> bool {
    error.code() == Some(&::postgres::error::SqlState::UNIQUE_VIOLATION)
}
