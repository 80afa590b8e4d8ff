//! HTTP throughput of `agl-host store` on each of its backends (`--db memory`, `sqlite:PATH`,
//! `postgres://...`) against Agent-lightning 0.3.0's own store server (`agl store`:
//! `LightningStoreServer` over its `InMemoryLightningStore`, from the venv that
//! `tests/python/prepare_venv.py` keeps in `target/py/agl-0.3`). One load generator (this binary:
//! threads, each with one keep-alive HTTP/1.1 connection and one request in flight, through a
//! minimal HTTP client) sends the same request bodies to every server, at 1 and 16 connections:
//!
//! - `enqueue`: `POST /v1/agl/queues/rollouts/enqueue` with one rollout (what `enqueue_rollout` sends);
//! - `dequeue`: `POST /v1/agl/queues/rollouts/dequeue` `{limit: 1, worker_id}`, draining what the
//!   enqueue phase before it queued (only non-empty answers count; the phase ends when the queue
//!   is empty or the time is up);
//! - `add_span`: `POST /v1/agl/spans`, a fresh span (new span_id and sequence_id) per request into
//!   the task's own attempt (made by `POST /v1/agl/rollouts` before the clock starts);
//! - `query_spans`: `POST /v1/agl/spans/search` for all 20 spans of one rollout, sorted by
//!   sequence_id (what `query_spans(rollout_id)` sends).
//!
//! The SQLite store is a new file in a scratch folder under `target/tmp`; the PostgreSQL store a
//! new database on a throwaway server (`agl_testkit::postgres`, skipped with a note where
//! PostgreSQL is not installed), whose durability settings the bench turns back on (`fsync`,
//! `synchronous_commit`, `full_page_writes`: the testkit turns them off for tests), so every
//! acknowledged write is on disk as a production server would keep it (`-- --pg-no-sync` keeps
//! them off).
//!
//! Then the same generator runs against a no-work server in this process (reads each request,
//! writes a fixed answer as long as ours to an enqueue, then as long as our span query answer):
//! the most any server can reach here, so the ceiling on the ratio. PostgreSQL's own ceilings
//! are `pgbench` in each round, with the same durability settings, against our in-memory
//! store's rate in that round: one single-row UPDATE per transaction (1 and 16 clients), and
//! each call's statements ([`CALL_SHAPES`]) in one transaction sent in one round trip (16
//! clients), what a perfect client would reach. Last, the size of a store
//! holding N of the bench's spans (in rollouts of 20): the SQLite file after `agl-host store` has
//! stopped on SIGTERM (which folds the write-ahead log into it), and PostgreSQL's
//! `pg_total_relation_size` of the spans table.
//!
//! Every server serves from one thread: theirs is one asyncio event loop (its CLI's default, and
//! the only way to run its in-memory store), ours runs with `--threads 1` (`-- --ours-threads N`
//! gives it N, `0` its default of one per core); SQLite's writer thread and PostgreSQL's pool
//! threads (and its server processes) come on top, as they do in production.
//!
//! One request at a time leaves a core idle and makes every answer a cross-core wake-up, which
//! on this VM costs more than most requests; so 1-connection phases run with the server's and the
//! generator's threads on one core (the same for every server; PostgreSQL's own processes stay
//! free; see [`OneCore`]).
//!
//! The servers run side by side and every phase runs on each in turn, in rounds (three by
//! default): the table gives median rates and the median of the rounds' ratios with their range,
//! so a ratio never compares figures taken minutes apart on a machine whose speed drifts.
//!
//! Run: `cargo bench -p agl-host --bench store_load` (`-- --quick` for a smoke run: memory and
//! SQLite only, `-- --secs N` per phase, `-- --rounds N`, `-- --ours-only` to skip the Python
//! server, `-- --no-postgres` to skip PostgreSQL, `-- --size-spans N` for the size measurement,
//! `-- --no-pin` to leave 1-connection phases unpinned, `-- --agl-host PATH` to measure another
//! build of agl-host). The machine's cores are shared by the
//! generator and the server under test; the figures are for this box only.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark: a failed step panics and ends it"
)]

#[path = "../tests/cli/support.rs"]
mod support;

use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use support::{ServerProcess, prepare_venv};

const CONNECTIONS: [usize; 2] = [1, 16];
const SPANS_PER_QUERIED_ROLLOUT: usize = 20;
const OPERATIONS: [&str; 4] = ["enqueue", "dequeue", "add_span", "query_spans"];

// ------------------------------------------------------------------ servers

/// Agent-lightning 0.3.0's `agl store` (in-memory backend, one asyncio worker: its CLI's defaults)
/// on a free port; returns once `/v1/agl/health` answers.
fn start_theirs(python: &Path) -> ServerProcess {
    let port = TcpListener::bind("127.0.0.1:0")
        .expect("a free port")
        .local_addr()
        .expect("addr")
        .port();
    let agl = python.with_file_name("agl");
    let child = Command::new(agl)
        .args([
            "store",
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--log-level",
            "WARNING",
        ])
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the venv's `agl store` starts");
    let server = ServerProcess::adopt(child, format!("http://127.0.0.1:{port}"));
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        if let Ok(mut conn) = Conn::open(server.host())
            && conn.request("GET", "/v1/agl/health", b"").0 == 200
        {
            return server;
        }
        assert!(
            Instant::now() < deadline,
            "Agent-lightning's server did not become healthy in 180 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

// ------------------------------------------------------------------ request bodies

fn enqueue_body() -> String {
    json!({"rollouts": [{"input": {"question": "What is 6 * 7?", "answer": 42}, "mode": "train",
        "resources_id": null, "config": null, "metadata": null}]})
    .to_string()
}

fn dequeue_body(task: usize) -> String {
    json!({"limit": 1, "worker_id": format!("bench-worker-{task}")}).to_string()
}

fn start_rollout_body() -> String {
    json!({"input": {"question": "spans"}, "mode": "train", "resources_id": null, "config": null,
        "metadata": null, "worker_id": null})
    .to_string()
}

/// A span as Agent-lightning's tracer stores it: an LLM call with a short prompt. Built from a
/// template (the generator's cost per request stays small next to the server's).
fn span_body(rollout_id: &str, attempt_id: &str, task: usize, n: usize) -> String {
    let (sequence_id, start) = (n + 1, 1_790_000_000 + n);
    format!(
        concat!(
            r#"{{"rollout_id":"{}","attempt_id":"{}","sequence_id":{},"trace_id":"{:032x}","#,
            r#""span_id":"{:04x}{:012x}","parent_id":null,"name":"openai.chat.completion","#,
            r#""status":{{"status_code":"OK","description":null}},"attributes":{{"gen_ai.system":"openai","#,
            r#""gen_ai.request.model":"bench-model","gen_ai.prompt.0.role":"user","#,
            r#""gen_ai.prompt.0.content":"Solve this problem. Give the final answer as a number on the last line. Problem: What is 6 * 7?","#,
            r#""gen_ai.completion.0.content":"6 * 7 = 42\n42","gen_ai.usage.prompt_tokens":31,"#,
            r#""gen_ai.usage.completion_tokens":7}},"events":[],"links":[],"start_time":{}.0,"#,
            r#""end_time":{}.5,"context":null,"parent":null,"#,
            r#""resource":{{"attributes":{{"service.name":"bench"}},"schema_url":""}}}}"#
        ),
        rollout_id,
        attempt_id,
        sequence_id,
        0xbe7c_0000_u64 + task as u64,
        task,
        n,
        start,
        start
    )
}

fn query_spans_body(rollout_id: &str) -> String {
    json!({"rollout_id": rollout_id, "limit": -1, "offset": 0, "filter_logic": "and",
        "sort_by": "sequence_id", "sort_order": "asc"})
    .to_string()
}

// ------------------------------------------------------------------ HTTP/1.1 client

/// One keep-alive HTTP/1.1 connection sending one request at a time, on blocking sockets (a write
/// and, mostly, one read per request: no readiness polling): just enough HTTP for these servers
/// (responses with Content-Length), so the generator's cost per request stays far below a general
/// client's and the server's.
struct Conn {
    stream: TcpStream,
    host: String,
    out: Vec<u8>,
    /// Read buffer: the response being read is `buf[..filled]`.
    buf: Vec<u8>,
    filled: usize,
}

impl Conn {
    fn open(host: &str) -> std::io::Result<Conn> {
        let stream = TcpStream::connect(host)?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            host: host.to_string(),
            out: Vec::with_capacity(4096),
            buf: vec![0; 64 * 1024],
            filled: 0,
        })
    }

    /// Sends a request and reads the whole response: (status, body).
    fn request(&mut self, method: &str, path: &str, body: &[u8]) -> (u16, &[u8]) {
        self.out.clear();
        write!(
            self.out,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            self.host,
            body.len()
        )
        .expect("write to a Vec");
        self.out.extend_from_slice(body);
        self.stream.write_all(&self.out).expect("send the request");
        self.filled = 0;
        let head_len = loop {
            self.fill(path);
            if let Some(end) = self.buf[..self.filled].windows(4).position(|w| w == b"\r\n\r\n") {
                break end + 4;
            }
        };
        let head = std::str::from_utf8(&self.buf[..head_len]).expect("ASCII response head");
        let status: u16 = head.get(9..12).and_then(|s| s.parse().ok()).expect("HTTP status line");
        let length = content_length(head).unwrap_or_else(|| panic!("{path}: no Content-Length in\n{head}"));
        while self.filled < head_len + length {
            self.fill(path);
        }
        assert_eq!(self.filled, head_len + length, "{path}: bytes after the response");
        (status, &self.buf[head_len..self.filled])
    }

    /// Reads what has arrived into the buffer (growing it when full).
    fn fill(&mut self, path: &str) {
        if self.filled == self.buf.len() {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        let read = self
            .stream
            .read(&mut self.buf[self.filled..])
            .expect("read the response");
        assert!(read > 0, "{path}: the server closed the connection");
        self.filled += read;
    }

    fn post_json(&mut self, path: &str, body: &str, want: u16) -> Value {
        let (status, bytes) = self.request("POST", path, body.as_bytes());
        assert_eq!(status, want, "POST {path}: {}", String::from_utf8_lossy(bytes));
        serde_json::from_slice(bytes).expect("JSON answer")
    }
}

fn content_length(head: &str) -> Option<usize> {
    head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        assert!(
            !(name.eq_ignore_ascii_case("transfer-encoding") && value.trim().eq_ignore_ascii_case("chunked")),
            "chunked responses are not supported by this generator"
        );
        name.eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse().ok())?
    })
}

/// `POST /v1/agl/rollouts` (start_rollout): a rollout with a running-to-be attempt, untimed.
fn start_rollout(conn: &mut Conn) -> (String, String) {
    let started = conn.post_json("/v1/agl/rollouts", &start_rollout_body(), 201);
    let rollout_id = started["rollout_id"].as_str().expect("rollout_id").to_string();
    let attempt_id = started["attempt"]["attempt_id"]
        .as_str()
        .expect("attempt_id")
        .to_string();
    (rollout_id, attempt_id)
}

// ------------------------------------------------------------------ load generation

/// What each request of a phase does.
#[derive(Clone)]
enum Work {
    Enqueue,
    Dequeue,
    AddSpan,
    QuerySpans {
        rollout_id: String,
    },
    /// The enqueue request, to the no-work server (see [`start_floor_server`]).
    Floor,
}

/// One phase's result: operations per second, and the CPU the server and this generator used
/// meanwhile (1.0 = one core busy all the time; None where /proc is not readable).
struct Phase {
    rate: f64,
    server_cpu: Option<f64>,
    generator_cpu: Option<f64>,
}

/// CPU seconds (user + system, all threads) a process has used so far, from /proc (Linux).
fn cpu_seconds(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may contain spaces): state is field 3, utime 14, stime 15.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0) // USER_HZ, 100 on Linux
}

/// Runs `conns` connections for up to `secs`.
fn measure(host: &str, server_pid: u32, work: &Work, conns: usize, secs: f64) -> Phase {
    let server_pid = server_pid.to_string();
    let barrier = Barrier::new(conns + 1);
    let (ops, started, cpu_before, last_end) = std::thread::scope(|scope| {
        let tasks: Vec<_> = (0..conns)
            .map(|task| {
                let barrier = &barrier;
                scope.spawn(move || run_connection(host, work, task, barrier, secs))
            })
            .collect();
        barrier.wait();
        let started = Instant::now();
        let cpu_before = (cpu_seconds(&server_pid), cpu_seconds("self"));
        let mut ops = 0u64;
        let mut last_end = started;
        for task in tasks {
            let (count, ended) = task.join().expect("load thread");
            ops += count;
            last_end = last_end.max(ended);
        }
        (ops, started, cpu_before, last_end)
    });
    let wall = (last_end - started).as_secs_f64();
    let share = |before: Option<f64>, after: Option<f64>| Some((after? - before?) / wall);
    Phase {
        rate: ops as f64 / wall,
        server_cpu: share(cpu_before.0, cpu_seconds(&server_pid)),
        generator_cpu: share(cpu_before.1, cpu_seconds("self")),
    }
}

// ------------------------------------------------------------------ CPU placement

/// Where a phase runs. One request at a time keeps one core idle and makes every answer a
/// wake-up on the other core, which on this VM costs more than most requests do; so (unless
/// `--no-pin`) a 1-connection phase puts every thread of the server and of this generator on one
/// core — alike for both servers and the no-work one — and 16-connection phases run unpinned.
/// Dropping it gives the threads their CPUs back.
struct OneCore {
    pids: Vec<u32>,
    all: CpuSet,
}

impl OneCore {
    /// Pins `pids` to the first CPU this process may use; None where affinity cannot be read.
    fn pin(pids: &[u32]) -> Option<OneCore> {
        let all = sched_getaffinity(Pid::from_raw(0)).ok()?;
        let first = (0..CpuSet::count()).find(|&cpu| all.is_set(cpu).unwrap_or(false))?;
        let mut one = CpuSet::new();
        one.set(first).ok()?;
        place(pids, &one);
        Some(OneCore {
            pids: pids.to_vec(),
            all,
        })
    }

    /// Pins for a phase of `conns` connections when pinning is on and there is one connection.
    fn for_phase(pin: bool, conns: usize, pids: &[u32]) -> Option<OneCore> {
        if pin && conns == 1 { OneCore::pin(pids) } else { None }
    }
}

impl Drop for OneCore {
    fn drop(&mut self) {
        place(&self.pids, &self.all);
    }
}

/// Sets the CPUs of every thread of each process (threads started later inherit their parent's).
fn place(pids: &[u32], cpus: &CpuSet) {
    for pid in pids {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for tid in tasks
            .flatten()
            .filter_map(|task| task.file_name().to_str()?.parse::<i32>().ok())
        {
            let _ = sched_setaffinity(Pid::from_raw(tid), cpus);
        }
    }
}

/// One keep-alive connection: set-up (its own attempt for add_span), then the start barrier,
/// then requests until the deadline.
fn run_connection(host: &str, work: &Work, task: usize, barrier: &Barrier, secs: f64) -> (u64, Instant) {
    let mut conn = Conn::open(host).expect("connect");
    let attempt = match work {
        Work::AddSpan => Some(start_rollout(&mut conn)),
        _ => None,
    };
    // Fixed bodies are serialised once; a span body is built per request (new ids).
    let (path, fixed_body, want) = match work {
        Work::Enqueue => ("/v1/agl/queues/rollouts/enqueue", enqueue_body(), 201),
        Work::Dequeue => ("/v1/agl/queues/rollouts/dequeue", dequeue_body(task), 200),
        Work::AddSpan => ("/v1/agl/spans", String::new(), 201),
        Work::QuerySpans { rollout_id } => ("/v1/agl/spans/search", query_spans_body(rollout_id), 200),
        Work::Floor => ("/floor", enqueue_body(), 200),
    };
    barrier.wait();
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let mut count = 0u64;
    while Instant::now() < deadline {
        let span;
        let body = match &attempt {
            Some((rollout_id, attempt_id)) => {
                span = span_body(rollout_id, attempt_id, task, count as usize);
                &span
            }
            None => &fixed_body,
        };
        let (status, answer) = conn.request("POST", path, body.as_bytes());
        assert_eq!(status, want, "POST {path}: {}", String::from_utf8_lossy(answer));
        if matches!(work, Work::Dequeue) && answer.starts_with(b"[]") {
            break; // the queue is drained
        }
        count += 1;
    }
    (count, Instant::now())
}

/// One rollout with SPANS_PER_QUERIED_ROLLOUT spans, for the query phase.
fn rollout_with_spans(host: &str) -> String {
    let mut conn = Conn::open(host).expect("connect");
    let (rollout_id, attempt_id) = start_rollout(&mut conn);
    for n in 0..SPANS_PER_QUERIED_ROLLOUT {
        let body = span_body(&rollout_id, &attempt_id, 9999, n);
        let parsed: Value = serde_json::from_str(&body).expect("the span template is JSON");
        assert_eq!(parsed["sequence_id"], n + 1);
        conn.post_json("/v1/agl/spans", &body, 201);
    }
    let found = conn.post_json("/v1/agl/spans/search", &query_spans_body(&rollout_id), 200);
    assert_eq!(
        found["total"], SPANS_PER_QUERIED_ROLLOUT,
        "spans of the queried rollout: {found}"
    );
    rollout_id
}

/// The sizes of this server's answers to one enqueue and to the span query: [small, large].
fn answer_sizes(host: &str, queried: &str) -> [usize; 2] {
    let mut conn = Conn::open(host).expect("connect");
    let mut size = |path: &str, body: String| conn.request("POST", path, body.as_bytes()).1.len();
    let enqueued = size("/v1/agl/queues/rollouts/enqueue", enqueue_body());
    let queried = size("/v1/agl/spans/search", query_spans_body(queried));
    [enqueued, queried]
}

// ------------------------------------------------------------------ the floor

/// A server that does no work, on one blocking thread per connection in this process: it reads
/// each request (head, then Content-Length bytes) and writes one fixed 200 answer with a
/// `body_len`-byte body. What the generator reaches against it is the most any HTTP server can
/// reach on this box with these connections: the loopback round trip and the generator's own
/// cost, nothing else. Returns `127.0.0.1:PORT`.
fn start_floor_server(body_len: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    let host = listener.local_addr().expect("addr").to_string();
    let mut answer =
        format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {body_len}\r\n\r\n").into_bytes();
    answer.resize(answer.len() + body_len, b' ');
    let answer: Arc<[u8]> = answer.into();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let answer = Arc::clone(&answer);
            std::thread::spawn(move || answer_requests(stream, &answer));
        }
    });
    host
}

/// Answers every request on `stream` with `answer` until the peer closes it.
fn answer_requests(stream: std::net::TcpStream, answer: &[u8]) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let (mut line, mut body) = (String::new(), Vec::new());
    loop {
        let mut length = 0;
        loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                return Ok(());
            }
            if line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        body.resize(length, 0);
        reader.read_exact(&mut body)?;
        writer.write_all(answer)?;
    }
}

/// The no-work server's rate for each (answer size, connections), in table order.
fn run_floor(answer_sizes: &[usize], secs: f64, pin: bool) -> Vec<f64> {
    let mut figures = Vec::new();
    for &size in answer_sizes {
        let host = start_floor_server(size);
        for &conns in &CONNECTIONS {
            let placement = OneCore::for_phase(pin, conns, &[std::process::id()]);
            let phase = measure(&host, std::process::id(), &Work::Floor, conns, secs);
            drop(placement);
            eprintln!(
                "  floor  {size:>6}-byte answer {conns:>2} connection(s){}: {:>9.0} ops/s  (CPU: this process {})",
                if pin && conns == 1 { ", 1 core" } else { "" },
                phase.rate,
                phase
                    .generator_cpu
                    .map_or("?".to_string(), |cpu| format!("{:.0}%", cpu * 100.0))
            );
            figures.push(phase.rate);
        }
    }
    figures
}

/// A server under test and the rollout whose spans its query phases read.
struct Target<'a> {
    name: &'static str,
    process: &'a ServerProcess,
    queried: String,
}

impl Target<'_> {
    fn new<'a>(name: &'static str, process: &'a ServerProcess) -> Target<'a> {
        let queried = rollout_with_spans(process.host());
        Target { name, process, queried }
    }
}

/// One round: every (operation, connections) figure for each target, in table order. Each phase
/// runs on every target back to back, so a ratio compares figures taken under the same machine
/// conditions (this VM's speed drifts by tens of percent over minutes).
fn run_round(targets: &[Target<'_>], secs: f64, pin: bool) -> Vec<Vec<f64>> {
    let mut figures = vec![vec![0.0; OPERATIONS.len() * CONNECTIONS.len()]; targets.len()];
    for (c, &conns) in CONNECTIONS.iter().enumerate() {
        for (o, operation) in OPERATIONS.iter().enumerate() {
            for (t, target) in targets.iter().enumerate() {
                let (host, pid) = (target.process.host(), target.process.pid());
                let work = match *operation {
                    "enqueue" => Work::Enqueue,
                    "dequeue" => Work::Dequeue,
                    "add_span" => Work::AddSpan,
                    "query_spans" => Work::QuerySpans {
                        rollout_id: target.queried.clone(),
                    },
                    other => unreachable!("OPERATIONS names {other} but no work for it"),
                };
                let placement = OneCore::for_phase(pin, conns, &[pid, std::process::id()]);
                let phase = measure(host, pid, &work, conns, secs);
                drop(placement);
                let percent = |cpu: Option<f64>| cpu.map_or("?".to_string(), |cpu| format!("{:.0}%", cpu * 100.0));
                eprintln!(
                    "  {:<8} {operation:<12} {conns:>2} connection(s){}: {:>9.0} ops/s  (CPU: server {}, generator {})",
                    target.name,
                    if pin && conns == 1 { ", 1 core" } else { "" },
                    phase.rate,
                    percent(phase.server_cpu),
                    percent(phase.generator_cpu)
                );
                figures[t][o * CONNECTIONS.len() + c] = phase.rate;
            }
        }
        for target in targets {
            drain_queue(target.process.host());
        }
    }
    figures
}

/// Dequeues until the queue is empty (when a dequeue phase ran out of time before the queue did),
/// so every enqueue/dequeue pair starts from an empty queue.
fn drain_queue(host: &str) {
    let mut conn = Conn::open(host).expect("connect");
    let body = json!({"limit": 1000, "worker_id": "bench-drain"}).to_string();
    loop {
        let drained = conn.post_json("/v1/agl/queues/rollouts/dequeue", &body, 200);
        if drained.as_array().is_none_or(|items| items.is_empty()) {
            return;
        }
    }
}

/// The median of some figures (the mean of the middle two for an even count), and their range.
fn median(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let middle = if n.is_multiple_of(2) {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    } else {
        values[n / 2]
    };
    (middle, values[0], values[n - 1])
}

/// One target's median rate over the rounds for every cell (`rounds[r][target][cell]`).
fn median_rates(rounds: &[Vec<Vec<f64>>], target: usize) -> Vec<f64> {
    (0..OPERATIONS.len() * CONNECTIONS.len())
        .map(|cell| median(rounds.iter().map(|round| round[target][cell]).collect()).0)
        .collect()
}

/// A ratio the table shows: target `over` / target `under`, as a percentage or as a multiple.
struct Ratio {
    over: usize,
    under: usize,
    percent: bool,
}

/// The rates (`rounds[r][target][cell]`, medians over the rounds), then the ratios (the median of
/// the rounds' ratios, with their range).
fn print_table(names: &[&str], rounds: &[Vec<Vec<f64>>], ratios: &[Ratio]) {
    let medians: Vec<Vec<f64>> = (0..names.len()).map(|t| median_rates(rounds, t)).collect();
    print!("{:<12} {:>5}", "operation", "conns");
    for name in names {
        print!(" {:>15}", format!("ops/s {name}"));
    }
    println!();
    for (o, op) in OPERATIONS.iter().enumerate() {
        for (c, conns) in CONNECTIONS.iter().enumerate() {
            let cell = o * CONNECTIONS.len() + c;
            print!("{op:<12} {conns:>5}");
            for rates in &medians {
                print!(" {:>15.0}", rates[cell]);
            }
            println!();
        }
    }
    if ratios.is_empty() {
        return;
    }
    print!("\n{:<12} {:>5}", "operation", "conns");
    for ratio in ratios {
        print!(" {:>22}", format!("{}/{}", names[ratio.over], names[ratio.under]));
    }
    println!();
    for (o, op) in OPERATIONS.iter().enumerate() {
        for (c, conns) in CONNECTIONS.iter().enumerate() {
            let cell = o * CONNECTIONS.len() + c;
            print!("{op:<12} {conns:>5}");
            for ratio in ratios {
                let each = rounds
                    .iter()
                    .map(|round| round[ratio.over][cell] / round[ratio.under][cell])
                    .collect();
                let (middle, low, high) = median(each);
                let shown = if ratio.percent {
                    format!("{:.0}% [{:.0}-{:.0}]", middle * 100.0, low * 100.0, high * 100.0)
                } else {
                    format!("{middle:.1}x [{low:.0}-{high:.0}]")
                };
                print!(" {shown:>22}");
            }
            println!();
        }
    }
}

/// The no-work server's rates; with their figures, the highest ratio any server could reach
/// here: the small answer against their enqueue, the large one against their query_spans.
fn print_floor(sizes: &[usize], floor: &[f64], theirs: Option<&[f64]>) {
    println!(
        "\nno-work server (the ceiling here):\n{:<12} {:>11} {:>14} {:>24}",
        "answer", "connections", "ops/s", "ceiling on the ratio"
    );
    for (s, (size, compared_op)) in sizes.iter().zip(["enqueue", "query_spans"]).enumerate() {
        for (c, conns) in CONNECTIONS.iter().enumerate() {
            let rate = floor[s * CONNECTIONS.len() + c];
            let ceiling = theirs.map_or("-".to_string(), |theirs| {
                let o = OPERATIONS
                    .iter()
                    .position(|op| *op == compared_op)
                    .expect("a named operation");
                format!("{:.1}x ({compared_op})", rate / theirs[o * CONNECTIONS.len() + c])
            });
            println!("{:<12} {conns:>11} {rate:>14.0} {ceiling:>24}", format!("{size} bytes"));
        }
    }
}

/// PostgreSQL's own rates (`pg_floors[round]`) and, against our in-memory store's rate in the
/// same round, the highest postgres/memory ratio a store could reach here that takes one
/// transaction per call, and one that runs each call's statements in one round trip.
fn print_postgres_floor(rounds: &[Vec<Vec<f64>>], pg_floors: &[PgCeilings]) {
    let ceiling = |cell: usize, rate: &dyn Fn(&PgCeilings) -> f64| -> (f64, String) {
        let (tx, _, _) = median(pg_floors.iter().map(rate).collect());
        let ratios = rounds
            .iter()
            .zip(pg_floors)
            .map(|(round, floor)| rate(floor) / round[0][cell])
            .collect();
        let (middle, low, high) = median(ratios);
        (
            tx,
            format!("{:.0}% [{:.0}-{:.0}]", middle * 100.0, low * 100.0, high * 100.0),
        )
    };
    println!(
        "\nPostgreSQL itself (pgbench, one single-row UPDATE per transaction; the ceiling for postgres):\n{:<12} {:>5} {:>12} {:>28}",
        "operation", "conns", "tx/s", "ceiling on postgres/memory"
    );
    for (c, conns) in CONNECTIONS.iter().enumerate() {
        for (o, op) in OPERATIONS.iter().enumerate().take(3) {
            let (tx, cell) = ceiling(o * CONNECTIONS.len() + c, &|floor| floor.single[c]);
            println!("{op:<12} {conns:>5} {tx:>12.0} {cell:>28}");
        }
    }
    println!(
        "\nPostgreSQL with a perfect client (pgbench: each call's statements, single-row, in one transaction sent in one round trip):\n{:<12} {:>5} {:>12} {:>28}",
        "operation", "conns", "tx/s", "ceiling on postgres/memory"
    );
    let c = CONNECTIONS.len() - 1;
    for (o, (op, shape)) in CALL_SHAPES.iter().enumerate() {
        let (tx, cell) = ceiling(o * CONNECTIONS.len() + c, &|floor| floor.shapes[o]);
        println!(
            "{op:<12} {:>5} {tx:>12.0} {cell:>28}   ({} statements)",
            CONNECTIONS[c],
            shape.len()
        );
    }
}

// ------------------------------------------------------------------ the persistent backends

/// The throwaway PostgreSQL server (started on first use), with the durability settings the
/// testkit turns off for tests turned back on (unless `no_sync`), so a commit is acknowledged
/// once it is flushed to disk, as on a production server. A server named by
/// `AGL_TEST_POSTGRES_URL` is used as it is configured. None, after a note, where PostgreSQL is
/// not installed (`agl_test_tools`, through the testkit, says so; the bench is not a test).
fn postgres(no_sync: bool) -> Option<&'static agl_testkit::postgres::PgServer> {
    if !agl_testkit::Tool::Postgres.present() {
        eprintln!(
            "PostgreSQL phases skipped: the bench {}",
            agl_testkit::Tool::Postgres.ignore_reason()
        );
        return None;
    }
    let pg = agl_testkit::postgres::server();
    if pg.dir().is_some() && !no_sync {
        for sql in [
            "ALTER SYSTEM SET fsync = on",
            "ALTER SYSTEM SET synchronous_commit = on",
            "ALTER SYSTEM SET full_page_writes = on",
            "SELECT pg_reload_conf()",
        ] {
            pg.psql(pg.url(), sql);
        }
        // The reload is asynchronous: wait until a new session sees it.
        let deadline = Instant::now() + Duration::from_secs(10);
        while pg.psql(pg.url(), "SHOW fsync").trim() != "on" {
            assert!(Instant::now() < deadline, "PostgreSQL did not turn fsync on");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let settings = pg.psql(
        pg.url(),
        "SELECT string_agg(name || '=' || setting, ', ' ORDER BY name) FROM pg_settings \
         WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes', 'wal_sync_method', 'shared_buffers')",
    );
    eprintln!("PostgreSQL {}: {}", pg.url(), settings.trim());
    Some(pg)
}

/// PostgreSQL's own rates in one round (transactions per second), measured with `pgbench`.
struct PgCeilings {
    /// One single-row UPDATE per transaction, at 1 and 16 clients.
    single: [f64; 2],
    /// Each of the first three operations' statements ([`CALL_SHAPES`]) in one transaction,
    /// pipelined in one round trip, at 16 clients.
    shapes: [f64; 3],
}

/// The statements `agl-host store` runs on PostgreSQL for one enqueue, dequeue and add_span (at
/// this commit; besides `BEGIN` and `COMMIT`): `r` a read, `l` a row read and locked, `w` a
/// write. Enqueue: the watchdog's question, the latest resources id, the rollout's insert, its
/// place in the queue. Dequeue: the question, the queue's head taken, the attempt's insert, the
/// rollout's update, the worker locked and updated. add_span: the question, the rollout and the
/// attempt locked, the span's insert, the attempt's heartbeat.
const CALL_SHAPES: [(&str, &str); 3] = [("enqueue", "rrww"), ("dequeue", "rwwwlw"), ("add_span", "rllww")];

/// A pgbench script: one transaction of the statements `shape` names (see [`CALL_SHAPES`]), each
/// on the client's own row, sent in one pipeline (one round trip, one sync: what no client
/// sending them one by one can beat).
fn pipelined_script(shape: &str) -> String {
    let mut script = String::from("\\startpipeline\nBEGIN;\n");
    for statement in shape.chars() {
        script.push_str(match statement {
            'r' => "SELECT n FROM counters WHERE id = :client_id;\n",
            'l' => "SELECT n FROM counters WHERE id = :client_id FOR UPDATE;\n",
            _ => "UPDATE counters SET n = n + 1 WHERE id = :client_id;\n",
        });
    }
    script.push_str("COMMIT;\n\\endpipeline\n");
    script
}

/// PostgreSQL's own rates here, the most its store could reach: `pgbench` (libpq, prepared
/// statements), each client on its own row, for `secs` each: transactions of one single-row
/// UPDATE — one statement and one commit, where each store call takes a few statements and one
/// commit — at 1 and 16 clients; and, at 16 clients, transactions of each call's statements
/// (single-row ones standing in for the store's) sent in one round trip. None where `pgbench`
/// is not installed.
fn postgres_floor(pg: &agl_testkit::postgres::PgServer, secs: f64) -> Option<PgCeilings> {
    let pgbench = pg.tool("pgbench")?;
    let url = pg.fresh_database();
    pg.psql(
        &url,
        "CREATE TABLE counters (id int PRIMARY KEY, n bigint NOT NULL); \
         INSERT INTO counters SELECT id, 0 FROM generate_series(0, 15) AS id",
    );
    let scratch = support::Scratch::new("pgbench");
    let seconds = secs.ceil().max(1.0).to_string();
    let rate = |name: &str, script: &str, clients: &str| -> f64 {
        let path = scratch.path(&format!("{name}.sql"));
        std::fs::write(&path, script).expect("write the pgbench script");
        let output = Command::new(&pgbench)
            .args(["-n", "-M", "prepared", "-c", clients, "-j", "2", "-T", &seconds, "-f"])
            .arg(&path)
            .arg(&url)
            .output()
            .expect("run pgbench");
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "pgbench failed: {text}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        // "tps = 1234.567890 (without initial connection time)"
        text.lines()
            .find_map(|line| line.strip_prefix("tps = ")?.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no tps in pgbench's output: {text}"))
    };
    let update = "UPDATE counters SET n = n + 1 WHERE id = :client_id;\n";
    let single = [rate("update", update, "1"), rate("update", update, "16")];
    let shapes = CALL_SHAPES.map(|(name, shape)| rate(name, &pipelined_script(shape), "16"));
    eprintln!(
        "  postgres itself (pgbench, one single-row UPDATE per transaction): {:.0} tx/s at 1 client, {:.0} at 16; \
         each call's statements pipelined, 16 clients: {:.0} / {:.0} / {:.0} tx/s (enqueue / dequeue / add_span)",
        single[0], single[1], shapes[0], shapes[1], shapes[2]
    );
    Some(PgCeilings { single, shapes })
}

/// Stops a server with SIGTERM and waits until it has exited (`agl-host store` checkpoints a
/// SQLite store as it stops); the process is reaped when `server` is dropped.
fn stop_gracefully(server: &ServerProcess) {
    let pid = server.pid();
    nix::sys::signal::kill(Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGTERM).expect("SIGTERM the server");
    let deadline = Instant::now() + Duration::from_secs(60);
    // Exited: a zombie until reaped (its state, after the command name, is `Z`).
    while std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| Some(stat.rsplit_once(')')?.1.trim_start().starts_with('Z')))
        == Some(false)
    {
        assert!(
            Instant::now() < deadline,
            "agl-host store did not stop in 60 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Writes `spans` of the bench's spans, in rollouts of SPANS_PER_QUERIED_ROLLOUT (each with its
/// attempt), over 4 connections.
fn write_spans(host: &str, spans: usize) {
    const WRITERS: usize = 4;
    let rollouts = spans.div_ceil(SPANS_PER_QUERIED_ROLLOUT);
    std::thread::scope(|scope| {
        for writer in 0..WRITERS {
            scope.spawn(move || {
                let mut conn = Conn::open(host).expect("connect");
                for _ in (writer..rollouts).step_by(WRITERS) {
                    let (rollout_id, attempt_id) = start_rollout(&mut conn);
                    for n in 0..SPANS_PER_QUERIED_ROLLOUT {
                        let body = span_body(&rollout_id, &attempt_id, writer, n);
                        let (status, answer) = conn.request("POST", "/v1/agl/spans", body.as_bytes());
                        assert_eq!(status, 201, "POST /v1/agl/spans: {}", String::from_utf8_lossy(answer));
                    }
                }
            });
        }
    });
}

/// The size of a store holding `spans` of the bench's spans: a fresh SQLite file after the
/// server stopped, and (with `pg`) the spans table of a fresh PostgreSQL database.
fn measure_sizes(binary: &Path, spans: usize, pg: Option<&agl_testkit::postgres::PgServer>) {
    let spans = spans.div_ceil(SPANS_PER_QUERIED_ROLLOUT) * SPANS_PER_QUERIED_ROLLOUT;
    let span_json = span_body("ro-0123456789ab", "at-0123456789ab", 0, 0).len();
    let per_thousand = |bytes: u64| bytes as f64 * 1000.0 / spans as f64 / (1024.0 * 1024.0);
    println!(
        "\nstore size with {spans} spans (in rollouts of {SPANS_PER_QUERIED_ROLLOUT}; a span's JSON is about {span_json} bytes):"
    );
    let scratch = support::Scratch::new("store-size");
    let file = scratch.path("store.db");
    let server = ServerProcess::store_of(binary, &["--db", &format!("sqlite:{}", file.display())]);
    write_spans(server.host(), spans);
    stop_gracefully(&server);
    drop(server);
    let size = |path: &Path| std::fs::metadata(path).map_or(0, |m| m.len());
    let (db, wal) = (size(&file), size(&file.with_extension("db-wal")));
    println!(
        "  sqlite    file {:>8.2} MiB (write-ahead log left: {wal} bytes)   {:>6.2} MiB per 1,000 spans",
        db as f64 / (1024.0 * 1024.0),
        per_thousand(db + wal)
    );
    if let Some(pg) = pg {
        let url = pg.fresh_database();
        let server = ServerProcess::store_of(binary, &["--db", &url]);
        let empty: u64 = pg
            .psql(&url, "SELECT pg_database_size(current_database())")
            .trim()
            .parse()
            .expect("a size");
        write_spans(server.host(), spans);
        drop(server);
        let sizes = pg.psql(
            &url,
            "SELECT pg_total_relation_size('spans') || ' ' || pg_database_size(current_database())",
        );
        let [table, database]: [u64; 2] = sizes
            .split_whitespace()
            .map(|n| n.parse().expect("a size"))
            .collect::<Vec<_>>()
            .try_into()
            .expect("two sizes");
        println!(
            "  postgres  spans table (with its indexes and TOAST) {:>8.2} MiB   {:>6.2} MiB per 1,000 spans; \
             the database grew {:.2} MiB ({:.2} MiB per 1,000 spans)",
            table as f64 / (1024.0 * 1024.0),
            per_thousand(table),
            (database - empty) as f64 / (1024.0 * 1024.0),
            per_thousand(database - empty)
        );
    }
}

/// The value after `flag` on the command line, parsed; None when the flag is absent. A missing or
/// unparsable value stops the bench with "`flag` takes `what`".
fn flag_value<T: std::str::FromStr>(args: &[String], flag: &str, what: &str) -> Option<T> {
    let at = args.iter().position(|a| a == flag)?;
    Some(
        args.get(at + 1)
            .and_then(|value| value.parse().ok())
            .unwrap_or_else(|| panic!("{flag} takes {what}")),
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    let quick = has("--quick");
    let ours_only = has("--ours-only");
    let pin = !has("--no-pin");
    // The quick (smoke) run skips PostgreSQL: starting a server takes seconds.
    let with_postgres = !quick && !has("--no-postgres");
    let secs = flag_value(&args, "--secs", "a number").unwrap_or(if quick { 0.3 } else { 3.0 });
    let rounds: usize = flag_value(&args, "--rounds", "a positive number").unwrap_or(if quick { 1 } else { 3 });
    assert!(rounds > 0, "--rounds takes a positive number");
    let size_spans: usize =
        flag_value(&args, "--size-spans", "a number of spans").unwrap_or(if quick { 1_000 } else { 20_000 });
    // One thread serving requests, as theirs has one event loop (`--ours-threads 0`: our default).
    let ours_threads: u16 = flag_value(&args, "--ours-threads", "a number of threads (0: the default)").unwrap_or(1);
    let threads = ours_threads.to_string();
    // `--agl-host PATH`: measure another build (to compare two builds in pairs of runs).
    let binary = flag_value::<String>(&args, "--agl-host", "the path of an agl-host binary")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_agl-host")), PathBuf::from);
    let start_ours = |db: &str| {
        if ours_threads == 0 {
            ServerProcess::store_of(&binary, &["--db", db])
        } else {
            ServerProcess::store_of(&binary, &["--db", db, "--threads", &threads])
        }
    };
    let python = (!ours_only).then(prepare_venv);
    let pg = if with_postgres {
        let pg = postgres(has("--pg-no-sync"));
        if pg.is_none() {
            eprintln!("note: PostgreSQL is not installed here: its store is not measured");
        }
        pg
    } else {
        None
    };

    let memory = start_ours("memory");
    let scratch = support::Scratch::new("store-load");
    let sqlite = start_ours(&format!("sqlite:{}", scratch.path("store.db").display()));
    let postgres = pg.map(|pg| start_ours(&pg.fresh_database()));
    eprintln!(
        "agl-host store (threads: {}; {secs} s per phase, {rounds} round(s)): memory at {}, SQLite at {}{}",
        if ours_threads == 0 {
            "default".to_string()
        } else {
            ours_threads.to_string()
        },
        memory.url,
        sqlite.url,
        postgres
            .as_ref()
            .map_or(String::new(), |server| format!(", PostgreSQL at {}", server.url))
    );
    let theirs = python.as_deref().map(|python| {
        let theirs = start_theirs(python);
        eprintln!("Agent-lightning 0.3.0 `agl store` at {}", theirs.url);
        theirs
    });

    let mut targets = vec![Target::new("memory", &memory), Target::new("sqlite", &sqlite)];
    if let Some(postgres) = &postgres {
        targets.push(Target::new("postgres", postgres));
    }
    let ours = targets.len();
    if let Some(theirs) = &theirs {
        targets.push(Target::new("theirs", theirs));
    }
    let names: Vec<&str> = targets.iter().map(|target| target.name).collect();
    let mut results = Vec::new();
    let mut pg_floors = Vec::new();
    for round in 1..=rounds {
        eprintln!("round {round} of {rounds}");
        results.push(run_round(&targets, secs, pin));
        if postgres.is_some() {
            pg_floors.extend(pg.and_then(|pg| postgres_floor(pg, secs)));
        }
    }
    let sizes = answer_sizes(memory.host(), &targets[0].queried);
    drop(targets);
    drop((memory, sqlite, postgres, theirs));
    let floor_figures = run_floor(&sizes, secs, pin);

    // Each persistent store against memory; each of ours against theirs.
    let mut ratios: Vec<Ratio> = (1..ours)
        .map(|over| Ratio {
            over,
            under: 0,
            percent: true,
        })
        .collect();
    let theirs_index = (names.len() > ours).then_some(ours);
    if let Some(under) = theirs_index {
        ratios.extend((0..ours).map(|over| Ratio {
            over,
            under,
            percent: false,
        }));
    }
    print_table(&names, &results, &ratios);
    let theirs_medians = theirs_index.map(|t| median_rates(&results, t));
    print_floor(&sizes, &floor_figures, theirs_medians.as_deref());
    if !pg_floors.is_empty() {
        print_postgres_floor(&results, &pg_floors);
    }
    measure_sizes(&binary, size_spans, pg);
}
