//! `--otlp-endpoint` and `OTEL_EXPORTER_OTLP_*`: the real `agl-host` runs the real math agent
//! and sends its spans over OTLP/HTTP to a collector on another port. One test's collector is a
//! real `agl-host store` whose `/v1/traces` stores them: it serves the run's own SQLite file, for a
//! store takes spans only for rollouts it holds (as Agent-lightning 0.3.0's does); it must take
//! every span sent (`/metrics`), drop none, and serve each once. The other tests' collector decodes
//! with the same OTLP ingest (agl-otlp: protobuf, attribution by `agentlightning.*` ids) and keeps
//! what it decoded, so that it can check what arrived against the run's store span by span: the
//! same trace and span ids, parents, names, rollouts and attempts, for runs of every strategy and
//! for `store --llm-proxy`'s calls. A collector that is down costs no rollout and the drops are
//! reported; a bad endpoint is one line and exit code 2.

use crate::agents;
use crate::support;

use agents::{cache_dir, repo, scratch, text};
use agl_store::{RolloutQuery, SpanQuery, StoreBackend};
use agl_testkit::prometheus::Scrape;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::Value;
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::ServerProcess;

/// A scripted LLM that answers "say X" with X.
const ECHO_RULES: &str =
    r#"{"model": "m", "rules": [{"when": [{"role": "user", "matches": "^say (.*)$"}], "reply": "{1}"}]}"#;

/// What identifies a span in both places: trace id, span id, parent id, name, rollout, attempt.
type SpanKey = (String, String, Option<String>, String, String, String);

fn key(span: &agl_store::Span) -> SpanKey {
    (
        span.trace_id.clone(),
        span.span_id.clone(),
        span.parent_id.clone(),
        span.name.clone(),
        span.rollout_id.clone(),
        span.attempt_id.clone(),
    )
}

/// The headers of one request the collector took.
#[derive(Debug, Clone)]
struct Request {
    content_type: Option<String>,
    authorization: Option<String>,
}

/// What the collector received.
#[derive(Clone, Default)]
struct Received {
    spans: Arc<Mutex<Vec<agl_store::Span>>>,
    requests: Arc<Mutex<Vec<Request>>>,
}

/// An OTLP/HTTP collector on a free loopback port.
struct Collector {
    runtime: tokio::runtime::Runtime,
    /// `http://127.0.0.1:PORT`
    url: String,
    received: Received,
}

impl Collector {
    fn start() -> Self {
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        let received = Received::default();
        let router = Router::new()
            .route("/v1/traces", post(traces))
            .with_state(received.clone());
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        runtime.spawn(async move { axum::serve(listener, router).await });
        Self { runtime, url, received }
    }

    fn spans(&self) -> Vec<agl_store::Span> {
        self.received.spans.lock().expect("spans").clone()
    }

    fn requests(&self) -> Vec<Request> {
        self.received.requests.lock().expect("requests").clone()
    }

    /// Every span a run kept in the SQLite database at `db`.
    fn spans_kept_in(&self, db: &Path) -> Vec<agl_store::Span> {
        let store = open_kept(db);
        self.runtime.block_on(async {
            let rollouts = store.query_rollouts(&RolloutQuery::default()).await.expect("rollouts");
            let mut spans = Vec::new();
            for view in rollouts.items {
                let page = store
                    .query_spans(&SpanQuery::for_rollout(view.rollout.rollout_id))
                    .await
                    .expect("spans");
                spans.extend(page.items.iter().map(|span| span.as_ref().clone()));
            }
            spans
        })
    }

    /// The rollout an algorithm's own LLM calls are kept under (input `{"agl.algorithm": ...}`).
    fn algorithm_rollout_in(&self, db: &Path) -> String {
        let rollouts = self
            .runtime
            .block_on(open_kept(db).query_rollouts(&RolloutQuery::default()))
            .expect("rollouts");
        rollouts
            .items
            .into_iter()
            .find(|view| view.rollout.input.get("agl.algorithm").is_some())
            .map(|view| view.rollout.rollout_id)
            .expect("the algorithm's rollout")
    }
}

/// The store a run was kept in (the SQLite database at `db`).
fn open_kept(db: &Path) -> Arc<dyn StoreBackend> {
    let url: agl_store_db::DbUrl = format!("sqlite:{}", db.display()).parse().expect("a db URL");
    agl_store_db::open(&url, agl_store::StoreOptions::default()).expect("the run's store opens")
}

/// `/v1/traces`: decoded and attributed as the store's own route does, kept, answered.
async fn traces(State(received): State<Received>, headers: HeaderMap, body: Bytes) -> Response {
    let text = |name| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let content_type = text(header::CONTENT_TYPE);
    received.requests.lock().expect("requests").push(Request {
        content_type: content_type.clone(),
        authorization: text(header::AUTHORIZATION),
    });
    match agl_otlp::decode(
        content_type.as_deref(),
        text(header::CONTENT_ENCODING).as_deref(),
        &body,
    ) {
        Ok(decoded) => {
            let spans = decoded.spans.into_iter().map(|d| d.span);
            received.spans.lock().expect("spans").extend(spans);
            let (media, answer) = agl_otlp::success_response(content_type.as_deref());
            (StatusCode::OK, [(header::CONTENT_TYPE, media)], answer).into_response()
        }
        Err(error) => (StatusCode::BAD_REQUEST, error.to_string()).into_response(),
    }
}

/// `agl-host ARGS` with `env` set and no OTEL_* variable inherited from the test's environment.
fn agl_host(args: &[OsString], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agl-host"));
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("OTEL_") {
            command.env_remove(name);
        }
    }
    command
        .env("AGL_CACHE_DIR", cache_dir())
        .env_remove("AGL_DB")
        .envs(env.iter().copied())
        .args(args)
        .output()
        .expect("agl-host runs")
}

/// `agl-host dev` of the math agent on its 8 validation tasks, kept in `dir/run.db`, results in
/// `dir/results.json`, plus `extra`.
fn dev_args(dir: &Path, extra: &[&str]) -> Vec<OsString> {
    math_agent_args(&["dev"], dir, extra)
}

/// `agl-host COMMAND...` (`dev`, `run --algo baseline`) of the math agent as [`dev_args`] has it.
fn math_agent_args(command: &[&str], dir: &Path, extra: &[&str]) -> Vec<OsString> {
    let math = repo().join("examples/math-agent");
    let mut args: Vec<OsString> = command.iter().map(OsString::from).collect();
    args.extend(["--agent".into(), math.clone().into()]);
    for (flag, path) in [
        ("--train", math.join("data/val.jsonl")),
        ("--resources", math.join("initial-resources.json")),
        ("--llm-script", math.join("rules.json")),
        ("--output", dir.join("results.json")),
    ] {
        args.extend([flag.into(), path.into()]);
    }
    args.extend(["--db".into(), format!("sqlite:{}", dir.join("run.db").display()).into()]);
    args.extend(extra.iter().map(OsString::from));
    args
}

fn results(dir: &Path) -> Value {
    agents::read_results(&dir.join("results.json"))
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The collector got exactly the spans the run kept, each once, every one from service agl-host.
fn assert_same_spans(collector: &Collector, db: &Path) -> usize {
    let kept = collector.spans_kept_in(db);
    let received = collector.spans();
    assert!(!kept.is_empty(), "the run kept spans");
    assert_eq!(received.len(), kept.len(), "each span sent once");
    let kept_keys: BTreeSet<SpanKey> = kept.iter().map(key).collect();
    let received_keys: BTreeSet<SpanKey> = received.iter().map(key).collect();
    assert_eq!(received_keys, kept_keys, "same ids, parents, names, rollouts, attempts");
    for span in &received {
        assert_eq!(
            span.resource.attributes.get("service.name"),
            Some(&Value::from("agl-host")),
            "{span:?}"
        );
    }
    kept.len()
}

#[test]
fn an_apo_run_sends_the_collector_every_span_it_keeps_with_the_same_ids_names_and_rollouts() {
    let dir = scratch("otlp", "apo");
    let collector = Collector::start();
    let mut args = agents::apo_args(&repo().join("examples/math-agent"), &dir.join("results.json"));
    args.extend(["--db".into(), format!("sqlite:{}", dir.join("run.db").display()).into()]);
    args.extend(["--otlp-endpoint".into(), collector.url.clone().into()]);
    let run = agl_host(&args, &[]);
    assert!(run.status.success(), "{}", text(&run));

    let spans = assert_same_spans(&collector, &dir.join("run.db"));
    let names: BTreeSet<String> = collector.spans().into_iter().map(|s| s.name).collect();
    for name in [
        "agentlightning.rollout",
        "openai.chat.completion",
        "agentlightning.annotation",
    ] {
        assert!(names.contains(name), "{name} among {names:?}");
    }
    // APO's own LLM calls (critiques, edits) are recorded under the algorithm's rollout: sent too.
    let algorithm = collector.algorithm_rollout_in(&dir.join("run.db"));
    assert!(
        collector
            .spans()
            .iter()
            .any(|s| s.rollout_id == algorithm && s.name == "openai.chat.completion"),
        "the algorithm's LLM calls reach the collector"
    );
    let requests = collector.requests();
    assert!(
        requests
            .iter()
            .all(|r| r.content_type.as_deref() == Some("application/x-protobuf")),
        "{requests:?}"
    );
    let report = &results(&dir)["otlp_export"];
    assert_eq!(report["endpoint"], format!("{}/v1/traces", collector.url), "{report}");
    assert_eq!(report["spans"].as_u64(), Some(spans as u64), "{report}");
    assert_eq!(report["exported"].as_u64(), Some(spans as u64), "{report}");
    assert_eq!(report["dropped"].as_u64(), Some(0), "{report}");
    assert!(
        stderr(&run).contains(&format!(
            "OTLP export: {spans} span(s) sent to {}/v1/traces",
            collector.url
        )),
        "{}",
        text(&run)
    );
}

/// Our own store as the collector: `agl-host store` on another port over the run's SQLite file,
/// so that it holds the run's rollouts and attempts (committed before their spans leave) and its
/// `/v1/traces` takes every span; a span the run stored first is skipped as a duplicate, and one
/// the collector stored first is skipped by the run's own insert.
#[test]
fn a_store_on_another_port_over_the_runs_sqlite_file_takes_every_span_the_run_sends() {
    let dir = scratch("otlp", "store");
    let db = dir.join("run.db");
    let collector = ServerProcess::agl_host_store(&["--db", &format!("sqlite:{}", db.display())]);
    let args = math_agent_args(
        &["run", "--algo", "baseline"],
        &dir,
        &["--otlp-endpoint", &collector.url],
    );
    // Batches leave every millisecond: the collector writes to the file while the run does.
    let run = agl_host(&args, &[("OTEL_BSP_SCHEDULE_DELAY", "1")]);
    assert!(run.status.success(), "{}\ncollector:\n{}", text(&run), collector.log());

    let report = &results(&dir)["otlp_export"];
    let sent = report["spans"].as_u64().expect("spans sent");
    assert!(sent > 0, "{report}");
    assert_eq!(report["exported"].as_u64(), Some(sent), "{report}");
    assert_eq!(report["dropped"].as_u64(), Some(0), "{report}");
    let line = format!("OTLP export: {sent} span(s) sent to {}/v1/traces", collector.url);
    assert!(stderr(&run).contains(&line), "{line}\n{}", text(&run));

    let get = |path: &str| -> String {
        let response = reqwest::blocking::get(format!("{}{path}", collector.url)).expect("the collector answers");
        assert!(response.status().is_success(), "{path}: {}", response.status());
        response.text().expect("a body")
    };
    let metrics = Scrape::parse(&get("/metrics"));
    assert_eq!(
        metrics.value("agl_spans_received_total{api=\"otlp\"}"),
        sent as f64,
        "every span sent was taken: {}",
        collector.log()
    );
    assert_eq!(metrics.value("agl_otlp_spans_dropped_total"), 0.0);

    // What the collector serves: each span once (none stored twice, none missing), and for a
    // rollout that called the LLM, the spans the run's store holds (read without the server).
    let json = |path: &str| -> Value { serde_json::from_str(&get(path)).expect("JSON") };
    let rollouts = json("/v1/agl/rollouts");
    let mut served = BTreeSet::new();
    let mut names_of_a_call = None;
    for rollout in rollouts["items"].as_array().expect("rollouts") {
        let id = rollout["rollout_id"].as_str().expect("a rollout id");
        let spans = json(&format!("/v1/agl/spans?rollout_id={id}"));
        let mut names: Vec<String> = Vec::new();
        for span in spans["items"].as_array().expect("spans") {
            let field = |name: &str| span[name].as_str().unwrap_or_default().to_owned();
            assert!(
                served.insert((id.to_owned(), field("attempt_id"), field("span_id"))),
                "served twice: {span}"
            );
            names.push(field("name"));
        }
        if names_of_a_call.is_none() && names.iter().any(|n| n == "openai.chat.completion") {
            names.sort();
            names_of_a_call = Some((id.to_owned(), names));
        }
    }
    assert_eq!(served.len() as u64, sent, "the collector serves each span sent once");
    let (rollout, served_names) = names_of_a_call.expect("a rollout with an LLM call");
    let mut recorded: Vec<String> = Collector::start()
        .spans_kept_in(&db)
        .into_iter()
        .filter(|span| span.rollout_id == rollout)
        .map(|span| span.name)
        .collect();
    recorded.sort();
    assert_eq!(served_names, recorded, "rollout {rollout}");
    for name in ["agentlightning.rollout", "agentlightning.annotation"] {
        assert!(served_names.iter().any(|n| n == name), "{name} among {served_names:?}");
    }
}

#[test]
fn the_standard_variables_turn_the_export_on_for_runner_processes_too_with_their_headers() {
    let dir = scratch("otlp", "env");
    let collector = Collector::start();
    let args = dev_args(&dir, &["--strategy", "client-server", "--runners", "2"]);
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url.as_str()),
        ("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20collector-token"),
    ];
    let run = agl_host(&args, &env);
    assert!(run.status.success(), "{}", text(&run));

    assert_eq!(results(&dir)["splits"]["train"]["succeeded"].as_u64(), Some(8));
    assert_same_spans(&collector, &dir.join("run.db"));
    let requests = collector.requests();
    assert!(!requests.is_empty());
    assert!(
        requests
            .iter()
            .all(|r| r.authorization.as_deref() == Some("Bearer collector-token")),
        "{requests:?}"
    );
    // Each runner process exported its own spans and said so.
    let log = stderr(&run);
    for runner in ["runner 1: OTLP export: ", "runner 2: OTLP export: "] {
        assert!(log.contains(runner), "{runner}: {}", text(&run));
    }
}

#[test]
fn a_collector_that_is_down_costs_no_rollout_and_the_dropped_spans_are_reported() {
    let dir = scratch("otlp", "down");
    // A port nothing listens on: bound, then let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let args = dev_args(&dir, &["--otlp-endpoint", &endpoint]);
    let run = agl_host(&args, &[("OTEL_EXPORTER_OTLP_TIMEOUT", "500")]);
    assert!(run.status.success(), "{}", text(&run));

    let results = results(&dir);
    assert_eq!(results["splits"]["train"]["succeeded"].as_u64(), Some(8), "{results:#}");
    let kept = Collector::start().spans_kept_in(&dir.join("run.db")).len() as u64;
    let report = &results["otlp_export"];
    assert_eq!(report["spans"].as_u64(), Some(kept), "{report}");
    assert_eq!(report["dropped"].as_u64(), Some(kept), "{report}");
    assert_eq!(report["exported"].as_u64(), Some(0), "{report}");
    let warning = format!(
        "warning: OTLP export: {kept} of {kept} span(s) could not be sent to {endpoint}/v1/traces and were dropped"
    );
    assert!(stderr(&run).contains(&warning), "{warning}\n{}", text(&run));
}

#[test]
fn the_llm_proxy_of_a_store_exports_the_span_of_each_call_as_it_keeps_it() {
    let dir = scratch("otlp", "proxy");
    let rules = dir.join("rules.json");
    std::fs::write(&rules, ECHO_RULES).expect("rules");
    let collector = Collector::start();
    let rules = rules.display().to_string();
    let args = ["--llm-proxy", "--llm-script", &rules, "--otlp-endpoint", &collector.url];
    // Batches leave every 50 ms: the span arrives while the store serves.
    let store = ServerProcess::agl_host_store_with_env(&args, &[("OTEL_BSP_SCHEDULE_DELAY", "50")]);
    let client = reqwest::blocking::Client::new();
    let post = |path: &str, body: Value| -> Value {
        let response = client
            .post(format!("{}{path}", store.url))
            .json(&body)
            .send()
            .expect("the store answers");
        assert!(response.status().is_success(), "{path}: {}", response.status());
        response.json().expect("JSON")
    };
    let started = post(
        "/v1/agl/rollouts",
        serde_json::json!({"input": {"task": 1}, "mode": "train"}),
    );
    let (rollout, attempt) = (&started["rollout_id"], &started["attempt"]["attempt_id"]);
    let path = format!(
        "/rollout/{}/attempt/{}/v1/chat/completions",
        rollout.as_str().expect("rollout id"),
        attempt.as_str().expect("attempt id")
    );
    let answer = post(
        &path,
        serde_json::json!({"messages": [{"role": "user", "content": "say hi"}]}),
    );
    assert_eq!(answer["choices"][0]["message"]["content"], "hi");

    let spans: Value = client
        .get(format!(
            "{}/v1/agl/spans?rollout_id={}",
            store.url,
            rollout.as_str().unwrap_or_default()
        ))
        .send()
        .and_then(|r| r.json())
        .expect("the store's spans");
    let kept = &spans["items"][0];
    let deadline = Instant::now() + Duration::from_secs(30);
    while collector.spans().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let received = collector.spans();
    assert_eq!(received.len(), 1, "one call, one span: {}", store.log());
    let span = &received[0];
    assert_eq!(
        (span.trace_id.as_str(), span.span_id.as_str(), span.name.as_str()),
        (
            kept["trace_id"].as_str().unwrap_or_default(),
            kept["span_id"].as_str().unwrap_or_default(),
            "openai.chat.completion"
        )
    );
    assert_eq!(
        (
            &Value::from(span.rollout_id.clone()),
            &Value::from(span.attempt_id.clone())
        ),
        (rollout, attempt)
    );
    for key in [
        "gen_ai.completion.0.content",
        "agl.llm.proxy.upstream",
        "gen_ai.usage.output_tokens",
    ] {
        assert_eq!(span.attributes.get(key), kept["attributes"].get(key), "{key}");
    }
    assert_eq!(span.attributes["gen_ai.completion.0.content"], "hi");
}

/// `run --llm-proxy`: a sandboxed agent calls the LLM over HTTP through the run's proxy; the
/// proxy's spans go out beside the host's own, all as the store keeps them.
#[test]
fn the_spans_of_run_llm_proxy_go_out_beside_the_agents_own() {
    let agent = agl_guest_build::build_guest("tests/guests/proxy-agent").expect("the proxy agent builds");
    let dir = scratch("otlp", "run-proxy");
    let (rules, train) = (dir.join("rules.json"), dir.join("train.jsonl"));
    std::fs::write(&rules, ECHO_RULES).expect("rules");
    std::fs::write(&train, "{\"question\": \"say 1\", \"answer\": \"1\"}\n").expect("tasks");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
        .to_string();
    let collector = Collector::start();
    let db = format!("sqlite:{}", dir.join("run.db").display());
    let mut args: Vec<OsString> = vec!["run".into(), "--agent".into(), agent.into()];
    args.extend(["--train".into(), train.into(), "--llm-script".into(), rules.into()]);
    let proxy = format!("http://127.0.0.1:{port}");
    for arg in [
        "--algo",
        "baseline",
        "--llm-proxy",
        "--port",
        &port,
        "--agent-http",
        &proxy,
        "--db",
        &db,
    ] {
        args.push(arg.into());
    }
    args.extend(["--otlp-endpoint".into(), collector.url.clone().into()]);
    let run = agl_host(&args, &[]);
    assert!(run.status.success(), "{}", text(&run));

    assert_same_spans(&collector, &dir.join("run.db"));
    let through_proxy = collector
        .spans()
        .into_iter()
        .filter(|s| s.attributes.contains_key("agl.llm.proxy.upstream"))
        .count();
    assert_eq!(through_proxy, 1, "the agent's one call, recorded by the proxy");
}

#[test]
fn a_bad_endpoint_or_protocol_is_one_clear_line_and_exit_code_2() {
    let dir = scratch("otlp", "bad");
    // (command line, environment, the start of the one line expected)
    type Case<'a> = (Vec<OsString>, Vec<(&'a str, &'a str)>, &'a str);
    let cases: [Case; 5] = [
        (
            dev_args(&dir, &["--otlp-endpoint", "collector:4318"]),
            vec![],
            "agl-host: --otlp-endpoint: 'collector:4318' is not an http:// or https:// URL with a host (e.g. http://127.0.0.1:4318)",
        ),
        (
            dev_args(&dir, &[]),
            vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "http://")],
            "agl-host: OTEL_EXPORTER_OTLP_ENDPOINT: 'http://' is not an http:// or https:// URL with a host",
        ),
        (
            dev_args(&dir, &["--otlp-endpoint", "http://127.0.0.1:4317"]),
            vec![("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")],
            "agl-host: OTEL_EXPORTER_OTLP_PROTOCOL=grpc: agl-host exports over OTLP/HTTP only",
        ),
        (
            [
                "runner",
                "--store",
                "http://127.0.0.1:9",
                "--agent",
                "agent.wasm",
                "--otlp-endpoint",
                "ftp://h",
            ]
            .map(OsString::from)
            .to_vec(),
            vec![],
            "agl-host: --otlp-endpoint: 'ftp://h' is not an http:// or https:// URL with a host",
        ),
        (
            ["store", "--port", "0", "--otlp-endpoint", "http://127.0.0.1:4318"]
                .map(OsString::from)
                .to_vec(),
            vec![],
            "agl-host: --otlp-endpoint exports the spans this process records, the LLM proxy's: add --llm-proxy",
        ),
    ];
    for (args, env, expected) in cases {
        let run = agl_host(&args, &env);
        assert_eq!(run.status.code(), Some(2), "{expected}: {}", text(&run));
        let log = stderr(&run);
        assert_eq!(log.lines().count(), 1, "one line: {}", text(&run));
        assert!(log.starts_with(expected), "{expected}: {}", text(&run));
    }
}
