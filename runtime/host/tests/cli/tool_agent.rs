//! `examples/tool-agent` end to end: the real lookup service (`service.py`) on a free loopback
//! port, the agent run by `agl-host dev` with the scripted model answering with tool calls, the
//! run kept in an SQLite file and read back with `agl-host show --json`. Granted, every lookup
//! is an HTTP request nested in its tool operation, between the two LLM calls and before the
//! reward; not granted, every lookup fails inside the agent with the sandbox's reason and is
//! recorded as a refused request. Exported (`agl-host export`), an attempt is one chat transcript
//! joining its two LLM calls around the tool call, or two triplets.

use serde_json::Value;
use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::agents;
use agents::*;

/// `examples/tool-agent/service.py` on a free port of 127.0.0.1, stopped when dropped.
struct LookupService {
    child: Child,
    url: String,
}

impl LookupService {
    fn start() -> LookupService {
        let mut child = Command::new("python3")
            .arg(repo().join("examples/tool-agent/service.py"))
            .args(["--port", "0"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the lookup service");
        let mut first = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut first)
            .expect("the service says where it listens");
        let url = first
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
            .to_owned();
        LookupService { child, url }
    }
}

impl Drop for LookupService {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the example in `dir` with `extra` flags, kept in `dir/run.db`; returns the results.
fn run_example(dir: &Path, service: &LookupService, extra: &[String]) -> Value {
    let example = repo().join("examples/tool-agent");
    let out = dir.join("results.json");
    let mut args: Vec<OsString> = vec!["dev".into(), "--agent".into(), example.clone().into()];
    args = with_files(
        args,
        &example,
        &[
            ("--train", "data/train.jsonl"),
            ("--resources", "initial-resources.json"),
            ("--llm-script", "rules.json"),
        ],
    );
    args.extend([
        "--agent-env".into(),
        format!("LOOKUP_URL={}", service.url).into(),
        "--db".into(),
        format!("sqlite:{}", dir.join("run.db").display()).into(),
        "--output".into(),
        out.clone().into(),
    ]);
    args.extend(extra.iter().map(OsString::from));
    let run = agl_host(&args);
    assert!(run.status.success(), "{}", text(&run));
    read_results(&out)
}

/// `agl-host show --db FILE ARGS --json`, parsed.
fn show(dir: &Path, args: &[&str]) -> Value {
    let db = format!("sqlite:{}", dir.join("run.db").display());
    let mut all = vec!["show", "--db", &db];
    all.extend_from_slice(args);
    all.push("--json");
    let shown = agl_host(&all);
    assert!(shown.status.success(), "{}", text(&shown));
    serde_json::from_slice(&shown.stdout).expect("show --json prints JSON")
}

/// The spans of the rollout whose question names `country`.
fn spans_of_question(dir: &Path, results: &Value, country: &str) -> Vec<Value> {
    let run_id = results["run_id"].as_str().expect("run id");
    let rollouts = show(dir, &[run_id]);
    let rollout = rollouts["rollouts"]
        .as_array()
        .expect("rollouts")
        .iter()
        .map(|r| &r["rollout"])
        .find(|r| r["input"]["question"].as_str().is_some_and(|q| q.contains(country)))
        .unwrap_or_else(|| panic!("no rollout about {country}: {rollouts:#}"));
    let rollout_id = rollout["rollout_id"].as_str().expect("rollout id");
    let record = show(dir, &[run_id, rollout_id]);
    record["spans"].as_array().expect("spans").clone()
}

fn children<'a>(spans: &'a [Value], parent: &Value) -> Vec<&'a Value> {
    let mut found: Vec<&Value> = spans.iter().filter(|s| s["parent_id"] == parent["span_id"]).collect();
    found.sort_by(|a, b| a["sequence_id"].as_u64().cmp(&b["sequence_id"].as_u64()));
    found
}

fn http_spans(spans: &[Value]) -> Vec<&Value> {
    spans.iter().filter(|s| s["name"] == "agl.http.request").collect()
}

#[test]
fn granted_the_agent_looks_capitals_up_and_its_trace_nests_llm_http_llm_reward() {
    let service = LookupService::start();
    let dir = scratch("agl-tool-agent", "granted");
    let results = run_example(&dir, &service, &["--agent-http".into(), service.url.clone()]);
    let train = &results["splits"]["train"];
    assert_eq!(train["rollouts"], 5, "{results:#}");
    assert_eq!(train["failed"], 0, "{results:#}");
    // Four capitals found; the fifth country is unknown to the service (a 404 the model hears).
    assert_eq!(train["mean_reward"].as_f64(), Some(0.8), "{results:#}");

    let spans = spans_of_question(&dir, &results, "Australia");
    let root = spans
        .iter()
        .find(|s| s["parent_id"].is_null())
        .unwrap_or_else(|| panic!("no root span: {spans:#?}"));
    let llm = "openai.chat.completion";
    let operation = "agentlightning.operation";
    let reward = "agentlightning.annotation";
    // The attempt's steps, without its reads of resources and its log lines.
    let steps: Vec<&str> = children(&spans, root)
        .iter()
        .filter_map(|s| s["name"].as_str())
        .filter(|name| [llm, operation, reward].contains(name))
        .collect();
    assert_eq!(steps, [llm, operation, llm, reward], "under the attempt, in order");

    let http = http_spans(&spans);
    assert_eq!(http.len(), 1, "one lookup: {spans:#?}");
    let request = http[0];
    let tool = spans
        .iter()
        .find(|s| s["span_id"] == request["parent_id"])
        .expect("the request's parent");
    assert_eq!(tool["name"], operation, "{tool:#}");
    assert_eq!(
        tool["attributes"]["agentlightning.operation.name"],
        "tool:lookup_capital"
    );
    assert_eq!(tool["parent_id"], root["span_id"]);
    let attributes = &request["attributes"];
    assert_eq!(attributes["http.request.method"], "GET", "{request:#}");
    assert_eq!(attributes["url.scheme"], "http", "{request:#}");
    assert_eq!(attributes["server.address"], "127.0.0.1", "{request:#}");
    assert_eq!(attributes["url.path"], "/capital", "{request:#}");
    assert_eq!(attributes["http.response.status_code"], 200, "{request:#}");
    assert!(
        attributes["http.response.body.size"].as_u64().is_some_and(|n| n > 20),
        "{request:#}"
    );

    // In the span tree, the request is one line: method, URL and status (and its duration).
    let db = format!("sqlite:{}", dir.join("run.db").display());
    let rollout_id = request["rollout_id"].as_str().expect("rollout id");
    let tree = agl_host(["show", "--db", &db, rollout_id]);
    assert!(tree.status.success(), "{}", text(&tree));
    let tree = String::from_utf8_lossy(&tree.stdout);
    let line = tree
        .lines()
        .find(|l| l.trim_start().starts_with("agl.http.request"))
        .unwrap_or_else(|| panic!("no request in the tree:\n{tree}"));
    assert!(
        line.contains(&format!("  GET {}/capital → 200", service.url.trim_end_matches('/'))),
        "{line}"
    );
    assert!(!line.contains("http.request.method"), "no attribute dump: {line}");

    let unknown = spans_of_question(&dir, &results, "Atlantis");
    let refused = http_spans(&unknown);
    assert_eq!(refused.len(), 1, "{unknown:#?}");
    assert_eq!(refused[0]["attributes"]["http.response.status_code"], 404);

    // With the service gone, every attempt replays identically from its recording: each lookup
    // (the 404 too) is answered from the record, and nothing reaches the network.
    let lookup = format!("LOOKUP_URL={}", service.url);
    drop(service);
    let db = format!("sqlite:{}", dir.join("run.db").display());
    let replayed = agl_host(["replay", "--db", &db, "--agent-env", &lookup]);
    let said = text(&replayed);
    assert_eq!(replayed.status.code(), Some(0), "{said}");
    assert!(said.contains("5 attempt(s) replayed: 5 identical"), "{said}");
}

#[test]
fn not_granted_every_lookup_fails_inside_the_agent_and_is_recorded() {
    let service = LookupService::start();
    let dir = scratch("agl-tool-agent", "denied");
    let results = run_example(&dir, &service, &[]);
    let train = &results["splits"]["train"];
    assert_eq!(train["failed"], 0, "the agent handles the refusal: {results:#}");
    assert_eq!(train["mean_reward"].as_f64(), Some(0.0), "{results:#}");

    let spans = spans_of_question(&dir, &results, "Japan");
    let http = http_spans(&spans);
    assert_eq!(http.len(), 1, "{spans:#?}");
    assert!(
        http[0]["status"]["status_code"] == "ERROR" || http[0]["status"]["status_code"] == 2,
        "a refused request is an error span: {:#}",
        http[0]
    );
    let said = serde_json::to_string(&spans).expect("JSON");
    assert!(
        said.contains("denied by the sandbox"),
        "the agent logged the sandbox's reason: {said}"
    );
}

#[test]
fn exported_as_training_data_each_attempt_is_one_transcript_with_its_tool_call() {
    let service = LookupService::start();
    let dir = scratch("agl-tool-agent", "export");
    run_example(&dir, &service, &["--agent-http".into(), service.url.clone()]);
    let db = format!("sqlite:{}", dir.join("run.db").display());
    let lines = |format: &str| -> Vec<Value> {
        let exported = agl_host(["export", "--db", db.as_str(), "--format", format]);
        assert!(exported.status.success(), "{}", text(&exported));
        String::from_utf8_lossy(&exported.stdout)
            .lines()
            .map(|line| serde_json::from_str(line).expect("a JSON line"))
            .collect()
    };
    let about_australia = |line: &&Value| {
        line["input"]["question"]
            .as_str()
            .is_some_and(|q| q.contains("Australia"))
    };

    let transcripts = lines("messages");
    assert_eq!(transcripts.len(), 5, "one per attempt: {transcripts:#?}");
    let transcript = transcripts.iter().find(about_australia).expect("Australia's");
    assert_eq!(transcript["llm_calls"], 2, "{transcript:#}");
    assert_eq!(transcript["reward"], 1.0, "{transcript:#}");
    let messages = transcript["messages"].as_array().expect("messages");
    let roles: Vec<&str> = messages.iter().filter_map(|m| m["role"].as_str()).collect();
    // The second call's prompt continues the first: the two calls join into one conversation.
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"], "{transcript:#}");
    let call = &messages[1]["tool_calls"][0];
    assert_eq!(call["type"], "function", "{transcript:#}");
    assert_eq!(call["function"]["name"], "lookup_capital", "{transcript:#}");
    assert_eq!(messages[2]["tool_call_id"], call["id"], "{transcript:#}");
    assert!(messages[2]["content"].as_str().is_some_and(|c| c.contains("Canberra")));
    assert!(messages[3]["content"].as_str().is_some_and(|c| c.contains("Canberra")));

    let triplets = lines("triplets");
    let calls: Vec<&Value> = triplets.iter().filter(about_australia).collect();
    assert_eq!(calls.len(), 2, "{calls:#?}");
    assert_eq!((&calls[0]["index"], &calls[1]["index"]), (&0.into(), &1.into()));
    assert_eq!(calls[0]["tool_calls"][0]["function"]["name"], "lookup_capital");
    assert_eq!(calls[0]["reward"], Value::Null, "the reward goes on the last call");
    assert_eq!(calls[1]["reward"], 1.0);
    assert_eq!(calls[0]["final_reward"], 1.0);
}
