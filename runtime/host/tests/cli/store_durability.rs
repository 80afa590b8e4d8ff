//! `agl-host store --db sqlite:FILE` and `--db postgres://...` keep every write they acknowledged,
//! once: several HTTP clients enqueue rollouts and add spans until the store is killed with
//! SIGKILL mid-load; restarted on the same file or database, it holds every acknowledged write
//! exactly once, and nothing else but the writes that were in flight (sent, never answered) when
//! it died. A file that is not a database, or a place where no file can be made, is refused at
//! start: exit status 2 and one line naming the file.

use crate::support;

use agl_client::{ClientOptions, HttpStoreClient};
use agl_store::model::*;
use agl_store::{LightningStore, StoreError};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};
use support::{Backend, BackendDb as _, Scratch, ServerProcess};
use tokio::sync::watch;

/// Clients writing at once, each over its own connection.
const CLIENTS: usize = 4;

/// The store is killed once this many writes (enqueues and spans, all clients) were acknowledged;
/// the clients are still writing then.
const KILL_AFTER: usize = 1000;

/// A start that should be refused but serves instead is killed after this long (a hang guard).
const REFUSAL_LIMIT: Duration = Duration::from_secs(60);

/// One write of the load: client `client`'s `seq`-th enqueue or span.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Write {
    Enqueue { client: usize, seq: u64 },
    Span { client: usize, seq: u64 },
}

/// What one client wrote before the store died.
#[derive(Debug, Default)]
struct ClientLog {
    /// Acknowledged enqueues: seq → the rollout id the store answered.
    enqueued: HashMap<u64, String>,
    /// Acknowledged spans, by span id.
    spans: HashSet<String>,
    /// The write sent but never answered, the store having died under it.
    in_flight: Option<Write>,
}

/// A client that neither retries nor waits: an answer is final, a dead store an error at once.
fn client(url: &str) -> HttpStoreClient {
    let options = ClientOptions {
        retry_delays: Vec::new(),
        ..ClientOptions::default()
    };
    HttpStoreClient::new(url, options).expect("HTTP store client")
}

/// The input of client `client`'s `seq`-th enqueued rollout.
fn enqueued_input(client: usize, seq: u64) -> Value {
    json!({"client": client, "seq": seq})
}

/// The 16-hex-digit id of client `client`'s `seq`-th span.
fn span_id(client: usize, seq: u64) -> String {
    format!("{client:04x}{seq:012x}")
}

fn span(own: &AttemptedRollout, client: usize, seq: u64) -> Span {
    serde_json::from_value(json!({
        "rollout_id": own.rollout.rollout_id,
        "attempt_id": own.attempt.attempt_id,
        "sequence_id": seq + 1,
        "trace_id": format!("{client:032x}"),
        "span_id": span_id(client, seq),
        "parent_id": null,
        "name": "durability.write",
        "status": {"status_code": "OK"},
        "attributes": {"client": client, "seq": seq},
        "events": [], "links": [],
        "resource": {"attributes": {}, "schema_url": ""}
    }))
    .expect("span")
}

/// Client `client`: enqueue, add a span, enqueue... until a request fails. A failure once the
/// store is being killed ends the load (that write is in flight); before, it fails the test.
async fn write_until_the_store_dies(
    store: HttpStoreClient,
    client: usize,
    own: AttemptedRollout,
    acknowledged: Arc<watch::Sender<usize>>,
    killing: Arc<AtomicBool>,
) -> Result<ClientLog, String> {
    let mut log = ClientLog::default();
    let ended = |write: Write, error: StoreError, log: &mut ClientLog| {
        if killing.load(Ordering::SeqCst) {
            log.in_flight = Some(write);
            Ok(())
        } else {
            Err(format!("client {client}: {write:?} failed before the kill: {error}"))
        }
    };
    for seq in 0.. {
        let write = Write::Enqueue { client, seq };
        match store
            .enqueue_rollout(EnqueueRolloutRequest::new(enqueued_input(client, seq)))
            .await
        {
            Ok(rollout) => {
                log.enqueued.insert(seq, rollout.rollout_id);
                acknowledged.send_modify(|n| *n += 1);
            }
            Err(error) => {
                ended(write, error, &mut log)?;
                break;
            }
        }
        let write = Write::Span { client, seq };
        match store.add_span(span(&own, client, seq)).await {
            Ok(Some(stored)) => {
                log.spans.insert(stored.span_id.clone());
                acknowledged.send_modify(|n| *n += 1);
            }
            Ok(None) => return Err(format!("client {client}: {write:?} was taken for a duplicate")),
            Err(error) => {
                ended(write, error, &mut log)?;
                break;
            }
        }
    }
    Ok(log)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_sqlite_store_keeps_every_acknowledged_write_once() {
    a_killed_store_keeps_every_acknowledged_write_once(Backend::Sqlite).await;
}

#[agl_testkit::needs(postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_postgres_store_keeps_every_acknowledged_write_once() {
    a_killed_store_keeps_every_acknowledged_write_once(Backend::Postgres).await;
}

/// The load, the kill and the checks after a restart on the same store (`backend`'s fresh one;
/// not memory's, which a kill empties).
async fn a_killed_store_keeps_every_acknowledged_write_once(backend: Backend) {
    let fresh = backend.fresh_db();
    let db = fresh.url.as_str();
    let mut server = ServerProcess::agl_host_store(&["--db", db]);

    // Each client adds its spans to a rollout of its own, started before the load.
    let mut own = Vec::new();
    for client in 0..CLIENTS {
        let request = StartRolloutRequest {
            rollout: EnqueueRolloutRequest::new(json!({"client": client, "spans": true})),
            worker_id: None,
        };
        own.push(
            self::client(&server.url)
                .start_rollout(request)
                .await
                .expect("start a rollout"),
        );
    }

    let (acknowledged, mut acknowledged_so_far) = watch::channel(0usize);
    let acknowledged = Arc::new(acknowledged);
    let killing = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = own
        .iter()
        .enumerate()
        .map(|(client, own)| {
            tokio::spawn(write_until_the_store_dies(
                self::client(&server.url),
                client,
                own.clone(),
                Arc::clone(&acknowledged),
                Arc::clone(&killing),
            ))
        })
        .collect();
    drop(acknowledged);
    // Errs only when every client stopped first: their errors say why.
    let loaded = acknowledged_so_far.wait_for(|n| *n >= KILL_AFTER).await.is_ok();
    killing.store(true, Ordering::SeqCst);
    let status = server.kill();
    let mut logs = Vec::new();
    for task in tasks {
        logs.push(task.await.expect("a client task").unwrap_or_else(|e| panic!("{e}")));
    }
    assert!(
        loaded,
        "the clients stopped before {KILL_AFTER} writes were acknowledged"
    );
    assert!(!status.success(), "the store was killed, not stopped: {status}");
    drop(server);

    let acknowledged_enqueues: usize = logs.iter().map(|log| log.enqueued.len()).sum();
    let acknowledged_spans: usize = logs.iter().map(|log| log.spans.len()).sum();
    let in_flight: Vec<Write> = logs.iter().filter_map(|log| log.in_flight).collect();

    // The same file or database, a new process.
    let server = ServerProcess::agl_host_store(&["--db", db]);
    let store = self::client(&server.url);

    // Rollouts: the clients' own, each acknowledged enqueue once, and at most the in-flight ones.
    let rollouts = store.query_rollouts(&RolloutQuery::default()).await.expect("rollouts");
    assert_eq!(rollouts.total, rollouts.items.len() as u64, "one page holds them all");
    let mut found: HashMap<Write, Vec<&RolloutView>> = HashMap::new();
    for rollout in &rollouts.items {
        let input = &rollout.rollout.input;
        let client = input["client"].as_u64().expect("a client's rollout") as usize;
        if input.get("spans").is_some() {
            assert_eq!(rollout.rollout.rollout_id, own[client].rollout.rollout_id, "{input}");
            continue;
        }
        let seq = input["seq"].as_u64().expect("an enqueued rollout's seq");
        found.entry(Write::Enqueue { client, seq }).or_default().push(rollout);
    }
    let mut in_flight_found = 0;
    for (write, copies) in &found {
        assert_eq!(copies.len(), 1, "{write:?} is kept {} times", copies.len());
        let &Write::Enqueue { client, seq } = write else {
            unreachable!()
        };
        match logs[client].enqueued.get(&seq) {
            Some(rollout_id) => {
                assert_eq!(&copies[0].rollout.rollout_id, rollout_id, "{write:?}");
                assert_eq!(copies[0].rollout.status, RolloutStatus::Queuing, "{write:?}");
            }
            None => {
                assert_eq!(logs[client].in_flight, Some(*write), "{write:?} was never acknowledged");
                in_flight_found += 1;
            }
        }
    }
    for (client, log) in logs.iter().enumerate() {
        for seq in log.enqueued.keys() {
            let write = Write::Enqueue { client, seq: *seq };
            assert!(found.contains_key(&write), "acknowledged {write:?} is lost");
        }
    }
    assert_eq!(rollouts.items.len(), CLIENTS + acknowledged_enqueues + in_flight_found);

    // Spans: each acknowledged one once, and at most the in-flight ones.
    let mut spans_found = 0;
    for (client, log) in logs.iter().enumerate() {
        let query = SpanQuery::for_rollout(own[client].rollout.rollout_id.clone());
        let spans = store.query_spans(&query).await.expect("spans");
        let mut copies: HashMap<&str, usize> = HashMap::new();
        for span in &spans.items {
            *copies.entry(span.span_id.as_str()).or_default() += 1;
        }
        spans_found += spans.items.len();
        for (id, count) in &copies {
            assert_eq!(*count, 1, "client {client}'s span {id} is kept {count} times");
            if !log.spans.contains(*id) {
                let Some(Write::Span { seq, .. }) = log.in_flight else {
                    panic!("client {client}'s span {id} was never sent")
                };
                assert_eq!(
                    *id,
                    span_id(client, seq),
                    "client {client}'s span {id} was never acknowledged"
                );
                in_flight_found += 1;
            }
        }
        for id in &log.spans {
            assert!(
                copies.contains_key(id.as_str()),
                "client {client}'s acknowledged span {id} is lost"
            );
        }
    }

    // And the restarted store takes writes.
    let more = store
        .enqueue_rollout(EnqueueRolloutRequest::new(json!({"after": "restart"})))
        .await
        .expect("an enqueue after the restart");
    let again = store.get_rollout_by_id(&more.rollout_id).await.expect("read back");
    assert_eq!(again.map(|r| r.rollout.input), Some(json!({"after": "restart"})));

    println!(
        "{backend:?}: killed after {} acknowledged writes ({acknowledged_enqueues} enqueues, {acknowledged_spans} spans) from \
         {CLIENTS} clients, {} in flight; after the restart: {} enqueued rollouts and {spans_found} spans, \
         {in_flight_found} of them in-flight writes",
        acknowledged_enqueues + acknowledged_spans,
        in_flight.len(),
        rollouts.items.len() - CLIENTS,
    );
}

/// Starts `agl-host store --port 0 --db DB`, which should refuse to start; returns its exit
/// status and what it wrote to stderr.
fn refused_start(db: &str) -> (ExitStatus, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agl-host"))
        .args(["store", "--port", "0", "--db", db])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agl-host store starts");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let reader = thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll agl-host") {
            break status;
        }
        if started.elapsed() > REFUSAL_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "agl-host store --db {db} still runs after {REFUSAL_LIMIT:?}:\n{}",
                reader.join().unwrap_or_default()
            );
        }
        thread::sleep(Duration::from_millis(20));
    };
    (status, reader.join().expect("stderr reader"))
}

/// Exit status 2 and one line, naming `path`, no panic.
fn assert_refused(db: &str, path: &std::path::Path) {
    let (status, stderr) = refused_start(db);
    assert_eq!(status.code(), Some(2), "agl-host store --db {db}: {status}\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|line| !line.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line:\n{stderr}");
    assert!(
        lines[0].contains(&path.display().to_string()),
        "the line names {}: {}",
        path.display(),
        lines[0]
    );
}

#[test]
fn a_corrupt_database_file_is_refused_with_one_line() {
    let scratch = Scratch::new("corrupt");
    let path = scratch.path("corrupt.db");
    std::fs::write(&path, "this is not an SQLite database\n".repeat(256)).expect("write the file");
    assert_refused(&format!("sqlite:{}", path.display()), &path);
}

#[test]
fn an_unwritable_location_is_refused_with_one_line() {
    let scratch = Scratch::new("unwritable");
    // A folder that is a regular file: no one, root included, can create anything under it.
    let not_a_folder = scratch.path("not-a-folder");
    std::fs::write(&not_a_folder, "a file").expect("write the file");
    let path = not_a_folder.join("store.db");
    assert_refused(&format!("sqlite:{}", path.display()), &path);
}
