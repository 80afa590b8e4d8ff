//! The web dashboard against a real run: one APO run of the math agent (scripted LLM) kept in
//! SQLite, served by `agl-host dashboard RUN`. Over plain HTTP: the embedded files with their
//! types, the SPA fallback, agl-host's own routes (run record, outcomes, LLM calls), the token.
//! In headless Chromium (agl-testkit's harness; ignored without it, except under CI=true): each
//! view shows the run's rows and values, a click opens a rollout's span tree, the diff shows the
//! changed prompt line; screenshots under target/browser-screenshots/dashboard_*/. And
//! `agl-host run --dashboard` serves the run while it goes, the rollouts view updating live.
//! Forks (`agl.fork` metadata): a rollout's branches, a fork's parent, the rollouts list's badge,
//! the store's texts shown as text.

use crate::agents;
use crate::support;

use agents::{agl_host, apo_args, read_results, repo, scratch, text};
use agl_testkit::browser::Browser;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::OnceLock;
use support::ServerProcess;

const LISTENING: &str = "agl-host dashboard: listening on ";

/// The kept APO run every test reads: its database and its results.
struct KeptRun {
    db: PathBuf,
    results: Value,
}

fn kept_run() -> &'static KeptRun {
    static RUN: OnceLock<KeptRun> = OnceLock::new();
    RUN.get_or_init(|| {
        let dir = scratch("agl-dashboard", "apo");
        let (db, out) = (dir.join("apo.db"), dir.join("results.json"));
        let mut args = apo_args(&repo().join("examples/math-agent"), &out);
        args.extend(["--db".into(), format!("sqlite:{}", db.display()).into()]);
        let output = agl_host(&args);
        assert!(output.status.success(), "{}", text(&output));
        KeptRun {
            db,
            results: read_results(&out),
        }
    })
}

fn serve(extra: &[&str]) -> ServerProcess {
    let db = kept_run().db.display().to_string();
    let mut args = vec!["dashboard", db.as_str(), "--port", "0"];
    args.extend_from_slice(extra);
    ServerProcess::agl_host_printing(&args, LISTENING)
}

/// The server's root, without the trailing `/`.
fn base(server: &ServerProcess) -> &str {
    server.url.trim_end_matches('/')
}

fn get(url: &str, token: Option<&str>) -> reqwest::blocking::Response {
    let client = reqwest::blocking::Client::new();
    let request = client.get(url);
    let request = match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    };
    request.send().expect("the dashboard answers")
}

fn content_type(response: &reqwest::blocking::Response) -> String {
    response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn the_embedded_files_are_served_with_their_types_and_every_page_falls_back_to_index_html() {
    let server = serve(&[]);
    let base = base(&server);
    let index = get(&format!("{base}/"), None);
    assert_eq!(index.status(), 200);
    assert_eq!(content_type(&index), "text/html; charset=utf-8");
    let html = index.text().expect("index.html");
    assert!(html.contains(r#"src="js/app.js""#), "{html}");
    for (path, kind) in [
        ("js/app.js", "text/javascript; charset=utf-8"),
        ("js/views/rollout.js", "text/javascript; charset=utf-8"),
        ("style.css", "text/css; charset=utf-8"),
        ("favicon.svg", "image/svg+xml"),
    ] {
        let response = get(&format!("{base}/{path}"), None);
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(content_type(&response), kind, "{path}");
        let body = response.bytes().expect("body");
        assert_eq!(
            Some(&body[..]),
            agl_dashboard::file(path),
            "{path} is the embedded file"
        );
    }
    let deep = get(&format!("{base}/rollouts/ro-1"), None);
    assert_eq!(deep.status(), 200);
    assert_eq!(deep.text().expect("index.html"), html);
    let unknown_api = get(&format!("{base}/v1/agl-host/nothing"), None);
    assert_eq!(unknown_api.status(), 404, "an unknown API path stays a JSON 404");
}

#[test]
fn the_run_record_outcomes_and_llm_calls_are_read_from_the_kept_run() {
    let run = kept_run();
    let server = serve(&[]);
    let record: Value = get(&format!("{}/v1/agl-host/run", base(&server)), None)
        .json()
        .expect("JSON");
    assert_eq!(record["run_id"], run.results["run_id"]);
    assert_eq!(record["status"], "completed");
    assert_eq!(record["algorithm"], "apo");

    let page: Value = get(&format!("{}/v1/agl-host/outcomes?limit=-1", base(&server)), None)
        .json()
        .expect("JSON");
    let outcomes = page["items"].as_array().expect("items");
    let tasks = run.results["total"]["rollouts"].as_u64().expect("rollouts");
    // The tasks, and the algorithm's own rollout (its LLM calls).
    assert_eq!(outcomes.len() as u64, tasks + 1);
    let rewarded: Vec<&Value> = outcomes.iter().filter(|o| o["final_reward"].is_number()).collect();
    assert_eq!(rewarded.len() as u64, tasks, "every task has its reward");
    let reward_sum: f64 = rewarded.iter().filter_map(|o| o["final_reward"].as_f64()).sum();
    let mean = run.results["total"]["mean_reward"].as_f64().expect("mean");
    assert!(
        (reward_sum / tasks as f64 - mean).abs() < 1e-9,
        "{reward_sum} / {tasks} vs {mean}"
    );
    let one = rewarded[0];
    assert_eq!(
        (one["llm_spans"].as_u64(), one["triplets"].as_u64()),
        (Some(1), Some(1))
    );
    assert!(one["input_tokens"].as_u64() > Some(0), "{one}");
    assert!(one["no_triplet_reason"].is_null(), "{one}");

    let calls: Value = get(
        &format!(
            "{}/v1/agl-host/rollouts/{}/attempts/{}/llm-calls",
            base(&server),
            one["rollout_id"].as_str().expect("id"),
            one["attempt_id"].as_str().expect("id")
        ),
        None,
    )
    .json()
    .expect("JSON");
    let calls = calls.as_array().expect("a list");
    assert_eq!(calls.len(), 1);
    let prompt = calls[0]["prompt"][0]["content"].as_str().expect("prompt text");
    assert!(prompt.contains("Problem:"), "{prompt}");
    assert_eq!(calls[0]["reward"], one["final_reward"]);
}

#[test]
fn with_a_token_the_api_needs_it_the_page_does_not_and_the_printed_url_carries_it() {
    let server = serve(&["--token", "s3 cret"]);
    let (base, fragment) = server.url.split_once("/#").expect("a fragment");
    assert_eq!(fragment, "token=s3%20cret");
    assert_eq!(get(&format!("{base}/v1/agl-host/run"), None).status(), 401);
    assert_eq!(get(&format!("{base}/v1/agl-host/run"), Some("s3 cret")).status(), 200);
    assert_eq!(get(&format!("{base}/v1/agl/rollouts"), Some("s3 cret")).status(), 200);
    assert_eq!(
        get(&format!("{base}/"), None).status(),
        200,
        "the page itself needs no token"
    );
}

#[test]
fn an_unknown_run_is_one_line_and_exit_code_2() {
    let dir = scratch("agl-dashboard", "empty");
    let output = agl_host(["dashboard", "run-nope", "--dir", &dir.display().to_string()]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no kept run run-nope"), "{stderr}");
}

#[agl_testkit::needs(chromium)]
#[tokio::test(flavor = "multi_thread")]
async fn each_view_shows_the_runs_data_in_a_browser() {
    let browser = Browser::start("dashboard_views").await;
    let run = tokio::task::spawn_blocking(kept_run).await.expect("the run");
    let server = tokio::task::spawn_blocking(|| serve(&[])).await.expect("served");
    let base = base(&server).to_owned();
    let results = &run.results;
    let fixed = |key: &str| format!("{:.4}", results["splits"][key]["mean_reward"].as_f64().expect("mean"));

    // The run: status, agent, rollouts, mean reward per split, best score; both charts.
    browser.open(&format!("{base}/#/")).await;
    browser.wait_for_text_in("[data-view=run] h1", "completed").await;
    assert!(
        browser
            .text("h1")
            .await
            .contains(results["run_id"].as_str().expect("id"))
    );
    let tasks = results["total"]["rollouts"].as_u64().expect("rollouts");
    assert_eq!(browser.text("[data-card=rollouts] .value").await, tasks.to_string());
    assert_eq!(browser.text("[data-card=mean-val] .value").await, fixed("val"));
    assert_eq!(browser.text("[data-card=mean-train] .value").await, fixed("train"));
    let best = format!("{:.4}", results["best"]["score"].as_f64().expect("best"));
    assert_eq!(browser.text("[data-card=best] .value").await, best);
    browser.wait_for("svg[data-chart=line] circle").await;
    browser.wait_for("svg[data-chart=bars] rect").await;
    browser.screenshot("run").await;

    // Rollouts: every one, then the val split only, lowest reward first.
    browser.open(&format!("{base}/#/rollouts")).await;
    browser.wait_for("[data-table=rollouts] tbody tr").await;
    assert!(
        browser
            .text("[data-view=rollouts] h1")
            .await
            .contains(&format!("{0} of {0}", tasks + 1))
    );
    browser
        .open(&format!("{base}/#/rollouts?mode=val&sort=reward-asc"))
        .await;
    let val = results["splits"]["val"]["rollouts"].as_u64().expect("val rollouts");
    browser
        .wait_for_text_in("[data-view=rollouts] h1", &format!("{val} of {}", tasks + 1))
        .await;
    assert_eq!(
        browser.text("[data-table=rollouts] tbody tr td[data-reward]").await,
        "0.0000"
    );
    browser.screenshot("rollouts").await;

    // One rollout, opened by a click: attempts, span tree, the LLM call as a chat, logs.
    browser.click("[data-table=rollouts] tbody tr").await;
    browser.wait_for("[data-view=rollout] [data-table=spans]").await;
    assert!(browser.text("[data-view=rollout] h1").await.starts_with("ro-"));
    browser.wait_for("[data-span='openai.chat.completion']").await;
    browser.wait_for("[data-span='agentlightning.annotation']").await;
    browser.wait_for_text_in("[data-table=attempts]", "succeeded").await;
    browser.wait_for_text_in("[data-llm-call] .msg.user", "Problem:").await;
    browser.wait_for_text_in("[data-table=logs]", "extracted answer").await;
    browser.click("[data-span='openai.chat.completion']").await;
    browser
        .wait_for_text_in("[data-span-detail]", "gen_ai.usage.input_tokens")
        .await;
    browser.screenshot("rollout").await;

    // Resources: the seed's prompt against the best one, the added line marked.
    browser.open(&format!("{base}/#/resources")).await;
    browser.wait_for("[data-diff=prompt] .line.added").await;
    assert_eq!(
        browser.text("[data-diff=prompt] .line.added").await,
        "Give the final answer as a number on the last line."
    );
    let best_id = results["best"]["resources_id"].as_str().expect("best id");
    browser
        .wait_for_text_in(&format!("[data-resources='{best_id}']"), "best")
        .await;
    browser.screenshot("resources").await;

    // Compare: the seed's version against the best on val, tasks that flipped.
    browser.open(&format!("{base}/#/compare")).await;
    browser.wait_for("[data-table=tasks] tbody tr").await;
    assert_eq!(browser.text("[data-side=B] .value").await, "1.0000");
    browser.wait_for("[data-table=tasks] tr[data-flipped=up]").await;
    browser.screenshot("compare").await;
    // Every split: all of v0's finished task rollouts on side A (not the algorithm's own).
    let rollouts_url = format!("{base}/v1/agl/rollouts?limit=-1");
    let rollouts: Value = tokio::task::spawn_blocking(move || get(&rollouts_url, None).json().expect("JSON"))
        .await
        .expect("rollouts");
    let under_v0 = rollouts["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|r| r["resources_id"] == "v0" && r["status"] == "succeeded")
        .filter(|r| r["metadata"]["agl.kind"] != "algorithm")
        .count();
    browser
        .open(&format!("{base}/#/compare?a=v0&b={best_id}&mode=all"))
        .await;
    browser
        .wait_for_text_in("[data-side=A]", &format!("{under_v0} rollouts"))
        .await;

    // Workers: the run's runner, idle once the run ended.
    browser.open(&format!("{base}/#/workers")).await;
    browser.wait_for_text_in("[data-table=workers] tbody tr", "idle").await;
    browser.screenshot("workers").await;
    browser.quit().await;
}

/// The math agent's scripted LLM behind an HTTP server that answers each call after `delay`, so
/// that a run lasts long enough to be looked at while it goes.
struct SlowLlm {
    runtime: tokio::runtime::Runtime,
    server: Option<agl_testkit::llm_server::ServerHandle>,
}

impl SlowLlm {
    fn serve(delay: std::time::Duration) -> SlowLlm {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let rules = agl_llm::ScriptedBackend::from_file(repo().join("examples/math-agent/rules.json")).expect("rules");
        let server = runtime
            .block_on(agl_testkit::llm_server::serve_with_faults(
                std::sync::Arc::new(rules),
                "127.0.0.1:0".parse().expect("address"),
                agl_testkit::llm_server::Faults::default().with_delay(delay),
            ))
            .expect("the LLM serves");
        SlowLlm {
            runtime,
            server: Some(server),
        }
    }
}

impl Drop for SlowLlm {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            self.runtime.block_on(server.shutdown());
        }
    }
}

#[agl_testkit::needs(chromium)]
#[test]
fn run_dashboard_serves_the_run_while_it_goes_and_the_rollouts_update_live() {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // The browser first (it takes a while to start), then the run.
    let browser = runtime.block_on(Browser::start("dashboard_live"));
    // Three tasks, one runner, each LLM call answered after two seconds: the run lasts six.
    let llm = SlowLlm::serve(std::time::Duration::from_secs(2));
    let llm_url = llm.server.as_ref().map(|s| s.base_url()).expect("served");
    let dir = scratch("agl-dashboard", "live");
    let math = repo().join("examples/math-agent");
    let train = dir.join("train.jsonl");
    let tasks: Vec<String> = std::fs::read_to_string(math.join("data/val.jsonl"))
        .expect("val tasks")
        .lines()
        .take(3)
        .map(str::to_owned)
        .collect();
    std::fs::write(&train, tasks.join("\n") + "\n").expect("tasks");
    let mut child = Command::new(env!("CARGO_BIN_EXE_agl-host"))
        .env("AGL_CACHE_DIR", agents::cache_dir())
        .args([
            "run",
            "--algo",
            "baseline",
            "--no-progress",
            "--dashboard",
            "127.0.0.1:0",
        ])
        .arg("--agent")
        .arg(&math)
        .arg("--train")
        .arg(&train)
        .arg("--resources")
        .arg(math.join("initial-resources.json"))
        .args(["--llm-endpoint", &llm_url, "--llm-model", "m"])
        .arg("--db")
        .arg(format!("sqlite:{}", dir.join("live.db").display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agl-host runs");
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let stderr = child.stderr.take().expect("stderr");
    let url = support::read_url(stderr, log.clone(), "dashboard at ");
    let Some(url) = url else {
        let _ = child.kill();
        panic!(
            "no dashboard URL printed:\n{}",
            log.lock().map(|l| l.clone()).unwrap_or_default()
        );
    };
    // Served while the run goes: its record says so, and the page is there.
    let record: Value = get(&format!("{url}v1/agl-host/run"), None).json().expect("JSON");
    assert_eq!(record["status"], "running", "{record}");
    assert_eq!(get(&url, None).status(), 200);

    runtime.block_on(async {
        browser.open(&format!("{url}#/rollouts")).await;
        browser.wait_for("[data-table=rollouts] tbody tr").await;
        // Opened while rollouts were unfinished, the view polls: they finish on the page as it
        // stands, without a reload (the run may end, and its dashboard with it, before the last).
        let shown = browser.text("[data-unfinished]").await;
        let unfinished = shown.split_whitespace().find_map(|word| word.parse::<usize>().ok());
        let Some(unfinished) = unfinished else {
            panic!("opened after the run's rollouts ended: {shown:?}");
        };
        browser.wait_for("#live:not([hidden])").await;
        let fewer = format!("[data-unfinished]:not([data-unfinished='{unfinished}'])");
        browser.wait_for(&fewer).await;
        assert!(browser.text("[data-view=rollouts] h1").await.contains("3 of 3"));
        browser.screenshot("rollouts_live").await;
    });

    let status = child.wait().expect("the run ends");
    // The run over, its dashboard is gone: the page says it is no longer updating.
    runtime.block_on(async {
        browser.wait_for_text_in("#live", "not updating").await;
        browser.quit().await;
    });
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut stdout)
        .expect("stdout");
    assert!(status.success(), "{status}\n{stdout}");
    assert!(stdout.contains("(or in a browser: agl-host dashboard run-"), "{stdout}");
    assert!(stdout.contains("dashboard stopped: the run has ended"), "{stdout}");
    drop(llm);
}

#[test]
fn run_dashboard_is_refused_with_a_remote_store() {
    let output = agl_host([
        "run",
        "--store",
        "http://127.0.0.1:9",
        "--algo",
        "baseline",
        "--train",
        &repo().join("examples/math-agent/data/val.jsonl").display().to_string(),
        "--dashboard",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--dashboard serves the store this run keeps"),
        "{stderr}"
    );
}

#[test]
fn agl_host_store_serves_the_dashboard_at_its_root_by_default() {
    let server = ServerProcess::agl_host_store(&[]);
    let index = get(&format!("{}/", server.url), None);
    assert_eq!(content_type(&index), "text/html; charset=utf-8");
    assert_eq!(
        Some(index.bytes().expect("body").as_ref()),
        agl_dashboard::file("index.html")
    );
    assert!(
        server.log().contains("agl-host store: dashboard at http://"),
        "{}",
        server.log()
    );
    // A store that keeps no run: no record, no outcome.
    let record: Value = get(&format!("{}/v1/agl-host/run", server.url), None)
        .json()
        .expect("JSON");
    assert!(record.is_null(), "{record}");
    let page: Value = get(&format!("{}/v1/agl-host/outcomes", server.url), None)
        .json()
        .expect("JSON");
    assert_eq!(page["total"], 0);
}

#[agl_testkit::needs(chromium)]
#[tokio::test(flavor = "multi_thread")]
async fn the_page_takes_the_token_from_the_printed_url() {
    let browser = Browser::start("dashboard_token").await;
    let server = tokio::task::spawn_blocking(|| serve(&["--token", "s3 cret"]))
        .await
        .expect("served");
    assert!(server.url.ends_with("/#token=s3%20cret"), "{}", server.url);
    browser.open(&server.url).await;
    browser.wait_for_text_in("[data-view=run] h1", "completed").await;
    // The token left the address bar; the tab keeps it for the next views.
    browser
        .open(&format!(
            "{}#/workers",
            server.url.split('#').next().unwrap_or_default()
        ))
        .await;
    browser.wait_for_text_in("[data-table=workers]", "idle").await;
    browser.quit().await;
}

#[agl_testkit::needs(chromium)]
#[tokio::test(flavor = "multi_thread")]
async fn without_the_token_in_the_url_the_page_asks_for_it_in_a_form() {
    let browser = Browser::start("dashboard_token_form").await;
    let server = tokio::task::spawn_blocking(|| serve(&["--token", "s3 cret"]))
        .await
        .expect("served");
    let root = server.url.split('#').next().unwrap_or_default().to_owned();
    browser.open(&root).await;
    browser.wait_for_text_in("[data-token-form]", "needs its token").await;
    browser.screenshot("token-form").await;
    // A wrong token is refused and asked for again.
    let input = browser.wait_for("[data-token-form] input").await;
    input.send_keys("wrong").await.expect("type the token");
    browser.click("[data-token-form] button").await;
    browser
        .wait_for_text_in("[data-token-form]", "refused this token")
        .await;
    let input = browser.wait_for("[data-token-form] input").await;
    input.send_keys("s3 cret").await.expect("type the token");
    browser.click("[data-token-form] button").await;
    browser.wait_for_text_in("[data-view=run] h1", "completed").await;
    browser.screenshot("run").await;
    browser.quit().await;
}

/// A span of `attempt` as the 0.3.0 API takes it.
fn span(rollout: &str, attempt: &str, id: &str, name: &str, status: &str, attributes: Value) -> Value {
    serde_json::json!({
        "rollout_id": rollout, "attempt_id": attempt, "sequence_id": 1,
        "trace_id": "ab".repeat(16), "span_id": id, "parent_id": null, "name": name,
        "status": {"status_code": status, "description": null}, "attributes": attributes,
        "events": [], "links": [], "start_time": 1.0, "end_time": 2.0,
        "context": null, "parent": null, "resource": {"attributes": {}, "schema_url": ""},
    })
}

#[agl_testkit::needs(chromium)]
#[tokio::test(flavor = "multi_thread")]
async fn rollouts_that_yield_no_triplet_are_flagged_with_the_reason() {
    let server = tokio::task::spawn_blocking(|| ServerProcess::agl_host_store(&[]))
        .await
        .expect("served");
    let url = server.url.clone();
    // Three ended attempts, written through the 0.3.0 API as any runner would: one with no LLM
    // span, one whose only LLM call failed, one with a good call.
    let ids = tokio::task::spawn_blocking(move || {
        let client = reqwest::blocking::Client::new();
        let cases = [
            (
                "no-llm",
                vec![(
                    "s1",
                    "agentlightning.annotation",
                    "OK",
                    serde_json::json!({"agentlightning.reward.0.value": 1.0}),
                )],
            ),
            (
                "llm-failed",
                vec![(
                    "s1",
                    "openai.chat.completion",
                    "ERROR",
                    serde_json::json!({"gen_ai.request.model": "m"}),
                )],
            ),
            (
                "llm-ok",
                vec![(
                    "s1",
                    "openai.chat.completion",
                    "OK",
                    serde_json::json!({
                        "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "hi",
                        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "hello",
                    }),
                )],
            ),
        ];
        let mut ids = Vec::new();
        for (task, spans) in cases {
            let started: Value = client
                .post(format!("{url}/v1/agl/rollouts"))
                .json(&serde_json::json!({"input": {"task": task}}))
                .send()
                .and_then(|r| r.error_for_status())
                .and_then(|r| r.json())
                .expect("rollout started");
            let rollout = started["rollout_id"].as_str().expect("rollout id").to_owned();
            let attempt = started["attempt"]["attempt_id"]
                .as_str()
                .expect("attempt id")
                .to_owned();
            for (id, name, status, attributes) in spans {
                client
                    .post(format!("{url}/v1/agl/spans"))
                    .json(&span(&rollout, &attempt, id, name, status, attributes))
                    .send()
                    .and_then(|r| r.error_for_status())
                    .expect("span added");
            }
            client
                .post(format!("{url}/v1/agl/rollouts/{rollout}/attempts/{attempt}"))
                .json(&serde_json::json!({"status": "succeeded"}))
                .send()
                .and_then(|r| r.error_for_status())
                .expect("attempt ended");
            ids.push(rollout);
        }
        let page: Value = client
            .get(format!("{url}/v1/agl-host/outcomes?limit=-1"))
            .send()
            .and_then(|r| r.json())
            .expect("outcomes");
        (ids, page)
    })
    .await
    .expect("written");
    let (ids, page) = ids;
    let reason = |id: &str| {
        page["items"]
            .as_array()
            .and_then(|items| items.iter().find(|o| o["rollout_id"] == id))
            .map(|o| o["no_triplet_reason"].clone())
            .expect("an outcome")
    };
    assert!(
        reason(&ids[0]).as_str().is_some_and(|r| r.starts_with("no LLM span")),
        "{page}"
    );
    assert!(
        reason(&ids[1])
            .as_str()
            .is_some_and(|r| r.starts_with("every LLM call failed")),
        "{page}"
    );
    assert!(reason(&ids[2]).is_null(), "{page}");

    // In the rollouts view: the two flagged, the filter keeps only them.
    let browser = Browser::start("dashboard_flags").await;
    browser.open(&format!("{}/#/rollouts?flagged=1", server.url)).await;
    browser.wait_for_text_in("[data-view=rollouts] h1", "2 of 3").await;
    browser
        .wait_for_text_in(&format!("tr[data-rollout='{}'] [data-flag]", ids[0]), "no LLM span")
        .await;
    browser
        .wait_for_text_in(
            &format!("tr[data-rollout='{}'] [data-flag]", ids[1]),
            "every LLM call failed",
        )
        .await;
    browser.screenshot("flagged").await;
    browser.quit().await;
}

#[agl_testkit::needs(chromium)]
#[tokio::test(flavor = "multi_thread")]
async fn a_rollouts_branches_and_a_forks_parent_are_shown_and_their_texts_stay_text() {
    use crate::export::{finished_rollout, fork_lineage};
    let server = tokio::task::spawn_blocking(|| ServerProcess::agl_host_store(&[]))
        .await
        .expect("served");
    let url = server.url.clone();
    // A parent and two forks at its first LLM call; the second's parent attempt id is hostile.
    let (parent, parent_attempt, first, second) = tokio::task::spawn_blocking(move || {
        let (parent, parent_attempt) = finished_rollout(&url, &serde_json::json!({}), "5", 0.0);
        let lineage = fork_lineage(&parent, &parent_attempt, 1, 1, 2);
        let (first, _) = finished_rollout(&url, &serde_json::json!({"agl.fork": lineage}), "4", 1.0);
        let mut hostile = fork_lineage(&parent, HOSTILE, 1, 2, 2);
        hostile["note"] = HOSTILE.into();
        let (second, _) = finished_rollout(&url, &serde_json::json!({"agl.fork": hostile}), "3", 0.5);
        (parent, parent_attempt, first, second)
    })
    .await
    .expect("written");
    let base = base(&server).to_owned();
    let browser = Browser::start("dashboard_forks").await;

    // The parent's page: its branches at LLM call 1, each with its branch, status and reward.
    browser.open(&format!("{base}/#/rollout/{parent}")).await;
    browser.wait_for_text_in("[data-branches] h2", "Branches (2)").await;
    browser
        .wait_for_text_in("[data-branch-call='1'] h3", "At LLM call 1")
        .await;
    let row = |id: &str| format!("[data-branch-rollout='{id}']");
    browser.wait_for_text_in(&row(&first), "1 of 2").await;
    browser.wait_for_text_in(&row(&first), "succeeded").await;
    browser.wait_for_text_in(&row(&first), "1.0000").await;
    browser.wait_for_text_in(&row(&second), "2 of 2").await;
    browser.wait_for_text_in(&row(&second), "0.5000").await;
    browser.screenshot("branches").await;

    // A branch's link opens the fork, which says what it branched from.
    browser.click(&format!("{} a", row(&second))).await;
    browser
        .wait_for_text_in("[data-forked-from]", &format!("Forked from {parent} (attempt"))
        .await;
    // The hostile attempt id is text, the whole of it.
    browser.wait_for_text_in("[data-forked-from]", HOSTILE.trim()).await;
    browser
        .wait_for_text_in("[data-forked-from]", "at LLM call 1, branch 2 of 2")
        .await;
    browser.screenshot("fork").await;
    assert!(!browser.page_text().await.contains("PWNED"), "the store's markup ran");
    // Its parent link leads back.
    browser.click("[data-forked-from] a").await;
    browser.wait_for_text_in("[data-branches] h2", "Branches (2)").await;
    browser.open(&format!("{base}/#/rollout/{first}")).await;
    browser
        .wait_for_text_in(
            "[data-forked-from]",
            &format!("Forked from {parent} (attempt {parent_attempt}) at LLM call 1, branch 1 of 2"),
        )
        .await;

    // The rollouts list: a badge on each fork, none on the parent.
    browser.open(&format!("{base}/#/rollouts")).await;
    browser.wait_for_text_in("[data-view=rollouts] h1", "3 of 3").await;
    for fork in [&first, &second] {
        browser
            .wait_for_text_in(&format!("tr[data-rollout='{fork}'] [data-fork-badge]"), "fork")
            .await;
    }
    let parent_cell = browser.text(&format!("tr[data-rollout='{parent}'] td")).await;
    assert_eq!(parent_cell, parent, "no badge on the parent");
    browser.screenshot("fork-badges").await;
    assert!(!browser.page_text().await.contains("PWNED"), "the store's markup ran");
    browser.quit().await;
}

#[test]
fn the_default_port_taken_a_free_one_is_used() {
    // Held here (or by someone else: taken either way).
    let _held = std::net::TcpListener::bind(("127.0.0.1", 4748));
    let db = kept_run().db.display().to_string();
    let server = ServerProcess::agl_host_printing(&["dashboard", db.as_str()], LISTENING);
    assert!(server.url.starts_with("http://127.0.0.1:"), "{}", server.url);
    assert!(!server.url.starts_with("http://127.0.0.1:4748/"), "{}", server.url);
    assert_eq!(get(&format!("{}v1/agl-host/run", server.url), None).status(), 200);
}

/// Two baseline runs of the math agent's val tasks (APO's scripted LLM) kept in one folder:
/// `seed.db` with APO's seed prompt, `better.db` with the prompt APO ends with (the final answer
/// as a number on the last line), so that some tasks flip from failed to passed.
struct TwoRuns {
    dir: PathBuf,
    seed: Value,
    better: Value,
}

fn two_runs() -> &'static TwoRuns {
    static RUNS: OnceLock<TwoRuns> = OnceLock::new();
    RUNS.get_or_init(|| {
        let dir = scratch("agl-dashboard", "two-runs");
        let math = repo().join("examples/math-agent");
        let seed_resources = math.join("apo/seed-resources.json");
        let mut better: Value =
            serde_json::from_str(&std::fs::read_to_string(&seed_resources).expect("seed resources")).expect("JSON");
        better["prompt"]["template"] =
            "Solve this problem.\nGive the final answer as a number on the last line.\nProblem: {question}".into();
        let better_resources = dir.join("better-resources.json");
        std::fs::write(&better_resources, better.to_string()).expect("resources written");
        let runs = dir.join("runs");
        let mut kept = Vec::new();
        for (name, resources) in [("seed", &seed_resources), ("better", &better_resources)] {
            let out = dir.join(format!("{name}.json"));
            let mut args: Vec<std::ffi::OsString> = vec!["run".into(), "--algo".into(), "baseline".into()];
            args = agents::with_files(
                args,
                &math,
                &[
                    ("--agent", "."),
                    ("--train", "data/val.jsonl"),
                    ("--llm-script", "apo/rules.json"),
                ],
            );
            args.extend([
                "--resources".into(),
                resources.into(),
                "--output".into(),
                out.clone().into(),
            ]);
            args.extend([
                "--db".into(),
                format!("sqlite:{}", runs.join(format!("{name}.db")).display()).into(),
            ]);
            let output = agl_host(&args);
            assert!(output.status.success(), "{}", text(&output));
            kept.push(read_results(&out));
        }
        let better = kept.pop().expect("two runs");
        let seed = kept.pop().expect("two runs");
        TwoRuns {
            dir: runs,
            seed,
            better,
        }
    })
}

/// `agl-host dashboard --dir` over the two runs' folder, with `extra` arguments.
fn serve_runs(extra: &[&str]) -> ServerProcess {
    let dir = two_runs().dir.display().to_string();
    let mut args = vec!["dashboard", "--dir", dir.as_str(), "--port", "0"];
    args.extend_from_slice(extra);
    ServerProcess::agl_host_printing(&args, LISTENING)
}

#[test]
fn with_no_run_every_kept_run_is_listed_and_served_under_its_own_prefix() {
    let runs = two_runs();
    let server = serve_runs(&[]);
    let base = base(&server);
    assert!(server.log().contains("(2 kept run(s) in "), "{}", server.log());
    let listed: Value = get(&format!("{base}/v1/agl-host/runs"), None).json().expect("JSON");
    let listed = listed.as_array().expect("a list");
    let entry = |id: &str| {
        listed
            .iter()
            .find(|e| e["id"] == id)
            .unwrap_or_else(|| panic!("{id} listed"))
    };
    assert_eq!(listed.len(), 2);
    for (id, results) in [("seed", &runs.seed), ("better", &runs.better)] {
        let run = &entry(id)["run"];
        assert_eq!(run["run_id"], results["run_id"], "{id}");
        assert_eq!(entry(id)["status"], "completed");
        assert_eq!(entry(id)["agent_name"], "math_agent");
        assert_eq!(run["results"]["total"]["mean_reward"], results["total"]["mean_reward"]);
        // The run's own routes under its prefix: its record, its rollouts, its page.
        let record: Value = get(&format!("{base}/runs/{id}/v1/agl-host/run"), None)
            .json()
            .expect("JSON");
        assert_eq!(record["run_id"], results["run_id"], "{id}");
        let rollouts: Value = get(&format!("{base}/runs/{id}/v1/agl/rollouts?limit=-1"), None)
            .json()
            .expect("JSON");
        assert_eq!(rollouts["total"], results["total"]["rollouts"], "{id}");
        // Routes with path parameters of their own: one rollout, its attempt's LLM calls.
        let first = &rollouts["items"][0];
        let rollout_id = first["rollout_id"].as_str().expect("rollout id");
        let attempt_id = first["attempt"]["attempt_id"].as_str().expect("attempt id");
        let one: Value = get(&format!("{base}/runs/{id}/v1/agl/rollouts/{rollout_id}"), None)
            .json()
            .expect("JSON");
        assert_eq!(one["rollout_id"], rollout_id, "{one}");
        let calls: Value = get(
            &format!("{base}/runs/{id}/v1/agl-host/rollouts/{rollout_id}/attempts/{attempt_id}/llm-calls"),
            None,
        )
        .json()
        .expect("JSON");
        assert_eq!(calls.as_array().map(Vec::len), Some(1), "{calls}");
    }
    assert!(
        runs.seed["total"]["mean_reward"].as_f64() < runs.better["total"]["mean_reward"].as_f64(),
        "the better prompt scores more: {} vs {}",
        runs.seed["total"],
        runs.better["total"]
    );
    let page = get(&format!("{base}/runs/seed/"), None);
    assert_eq!(content_type(&page), "text/html; charset=utf-8");
    assert_eq!(
        Some(page.bytes().expect("body").as_ref()),
        agl_dashboard::file("index.html")
    );
    // Without the trailing slash, the page's relative paths would miss the run: redirected.
    let redirected = get(&format!("{base}/runs/seed"), None);
    assert_eq!(redirected.url().path(), "/runs/seed/");
    assert_eq!(content_type(&redirected), "text/html; charset=utf-8");
    let module = get(&format!("{base}/runs/seed/js/views/runs.js"), None);
    assert_eq!(
        Some(module.bytes().expect("body").as_ref()),
        agl_dashboard::file("js/views/runs.js")
    );
    let unknown = get(&format!("{base}/runs/nope/v1/agl/rollouts"), None);
    assert_eq!(unknown.status(), 404);
    let detail: Value = unknown.json().expect("a JSON 404");
    assert!(
        detail["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("no kept run nope in ")),
        "{detail}"
    );
    let unknown_api = get(&format!("{base}/runs/seed/v1/agl-host/nothing"), None);
    assert_eq!(
        unknown_api.status(),
        404,
        "an unknown API path under a run stays a JSON 404"
    );
    assert!(unknown_api.json::<Value>().is_ok());
}

#[test]
fn a_dir_that_cannot_be_listed_is_one_line_and_exit_code_2() {
    let file = scratch("agl-dashboard", "not-a-dir").join("runs.txt");
    std::fs::write(&file, "not a folder").expect("file");
    let output = agl_host(["dashboard", "--dir", &file.display().to_string()]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("cannot list the runs in "), "{stderr}");
}

#[test]
fn every_kept_runs_api_needs_the_token_and_its_page_does_not() {
    let server = serve_runs(&["--token", "s3cret"]);
    let (base, fragment) = server.url.split_once("/#").expect("a fragment");
    assert_eq!(fragment, "token=s3cret");
    for path in ["/v1/agl-host/runs", "/runs/seed/v1/agl/rollouts", "/runs/seed/metrics"] {
        assert_eq!(get(&format!("{base}{path}"), None).status(), 401, "{path}");
        assert_eq!(get(&format!("{base}{path}"), Some("s3cret")).status(), 200, "{path}");
    }
    assert_eq!(get(&format!("{base}/runs/seed/"), None).status(), 200);
}

#[agl_testkit::needs(chromium)]
#[tokio::test(flavor = "multi_thread")]
async fn the_runs_view_lists_both_runs_and_compare_runs_shows_the_flipped_tasks() {
    let browser = Browser::start("dashboard_runs").await;
    let runs = tokio::task::spawn_blocking(two_runs).await.expect("the runs");
    let server = tokio::task::spawn_blocking(|| serve_runs(&[])).await.expect("served");
    let base = base(&server).to_owned();
    let fixed = |results: &Value| format!("{:.4}", results["total"]["mean_reward"].as_f64().expect("mean"));

    // Runs: both, with their rollouts, mean reward and best score; the run views' links hidden.
    browser.open(&format!("{base}/#/")).await;
    browser.wait_for("[data-table=runs] tr[data-run=seed]").await;
    browser.wait_for("[data-table=runs] tr[data-run=better]").await;
    for (id, results) in [("seed", &runs.seed), ("better", &runs.better)] {
        let cell = |name: &str| format!("tr[data-run={id}] [data-cell={name}]");
        assert_eq!(browser.text(&cell("mean")).await, fixed(results), "{id}");
        assert_eq!(browser.text(&cell("mean-train")).await, fixed(results), "{id}");
        assert_eq!(
            browser.text(&cell("rollouts")).await,
            results["total"]["rollouts"].to_string(),
            "{id}"
        );
        let best = format!("{:.4}", results["best"]["score"].as_f64().expect("best"));
        assert_eq!(browser.text(&cell("best")).await, best, "{id}");
        let run_id = results["run_id"].as_str().expect("run id");
        browser.wait_for_text_in(&format!("tr[data-run={id}]"), run_id).await;
    }
    browser.wait_for("#nav a[data-view=rollouts][hidden]").await;
    browser.screenshot("runs").await;

    // A click opens the run's own views, under its prefix.
    browser
        .click("[data-table=runs] tr[data-run=seed] td[data-cell=rollouts]")
        .await;
    browser.wait_for_text_in("[data-view=run] h1", "completed").await;
    assert!(
        browser
            .text("[data-view=run] h1")
            .await
            .contains(runs.seed["run_id"].as_str().expect("run id"))
    );
    assert_eq!(browser.path().await, "/runs/seed/");
    assert_eq!(browser.text("[data-card=mean-train] .value").await, fixed(&runs.seed));
    browser.wait_for("#nav a[data-view=runs]:not([hidden])").await;
    // Its rollouts, and one opened: the span tree and LLM call read under the run's prefix.
    browser.click("#nav a[data-view=rollouts]").await;
    browser.click("[data-table=rollouts] tbody tr").await;
    browser
        .wait_for("[data-view=rollout] [data-span='openai.chat.completion']")
        .await;
    browser.wait_for_text_in("[data-llm-call] .msg.user", "Problem:").await;
    assert_eq!(browser.path().await, "/runs/seed/");
    browser.screenshot("run_rollout").await;
    // From inside a run, Compare runs compares it (as B) with another.
    browser.click("#nav a[data-view=compare-runs]").await;
    browser
        .wait_for_text_in(
            "[data-view=compare-runs] [data-side=B]",
            runs.seed["run_id"].as_str().expect("run id"),
        )
        .await;
    assert_eq!(browser.path().await, "/");

    // Compare runs: the tasks the seed prompt failed and the better one passed flipped up.
    let outcomes_url = format!("{base}/runs/seed/v1/agl-host/outcomes?limit=-1");
    let outcomes: Value = tokio::task::spawn_blocking(move || get(&outcomes_url, None).json().expect("JSON"))
        .await
        .expect("outcomes");
    let failed_by_seed = outcomes["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|o| o["final_reward"].as_f64().is_some_and(|r| r < 0.5))
        .count();
    assert!(failed_by_seed > 0, "{outcomes}");
    assert_eq!(
        runs.better["total"]["mean_reward"].as_f64(),
        Some(1.0),
        "{}",
        runs.better
    );
    browser.open(&format!("{base}/#/compare-runs?a=seed&b=better")).await;
    browser
        .wait_for("[data-view=compare-runs] [data-table=tasks] tbody tr")
        .await;
    // The view may draw in steps: wait for each value rather than read the first one drawn.
    browser
        .wait_for_text_in("[data-card=flips] .value", &format!("{failed_by_seed} ↑ 0 ↓"))
        .await;
    browser
        .wait_for_text_in("[data-side=A] .value", &fixed(&runs.seed))
        .await;
    browser
        .wait_for_text_in("[data-side=B] .value", &fixed(&runs.better))
        .await;
    assert_eq!(
        browser.text("[data-card=flips] .value").await,
        format!("{failed_by_seed} ↑ 0 ↓")
    );
    browser
        .wait_for_text_in(
            "[data-table=splits] tr[data-split=train] [data-mean=A]",
            &fixed(&runs.seed),
        )
        .await;
    browser
        .wait_for_text_in("[data-side=A]", runs.seed["run_id"].as_str().expect("run id"))
        .await;
    browser.wait_for("[data-table=tasks] tr[data-flipped=up]").await;
    browser.wait_for_text_in("[data-side=B]", "tokens").await;
    browser.screenshot("compare_runs").await;
    browser.quit().await;
}

/// A kept GEPA run of examples/gepa-two-prompts (its rules, config and data) whose seed `system`
/// text carries markup that would run if the page put it in as HTML: every candidate that keeps
/// the seed's `system` (v0, v1) shows it.
struct GepaRun {
    db: PathBuf,
    results: Value,
}

/// Appended to the seed's `system` prompt: each would add "PWNED" to the page if it ran.
const HOSTILE: &str =
    r#" <script>document.body.append('PW'+'NED')</script><img src=x onerror="document.body.append('PW'+'NED')">"#;

fn gepa_run() -> &'static GepaRun {
    static RUN: OnceLock<GepaRun> = OnceLock::new();
    RUN.get_or_init(|| {
        let dir = scratch("agl-dashboard", "gepa");
        let example = repo().join("examples/gepa-two-prompts");
        let mut seed: Value = serde_json::from_str(
            &std::fs::read_to_string(example.join("seed-resources.json")).expect("seed resources"),
        )
        .expect("JSON");
        let system = seed["system"]["template"].as_str().expect("system").to_owned();
        seed["system"]["template"] = format!("{system}{HOSTILE}").into();
        let resources = dir.join("seed-resources.json");
        std::fs::write(&resources, seed.to_string()).expect("resources written");
        let (db, out) = (dir.join("gepa.db"), dir.join("results.json"));
        let mut args: Vec<std::ffi::OsString> = vec!["run".into(), "--algo".into(), "gepa".into()];
        args = agents::with_files(
            args,
            &example,
            &[
                ("--agent", "."),
                ("--train", "data/train.jsonl"),
                ("--val", "data/val.jsonl"),
                ("--llm-script", "rules.json"),
                ("--algo-config", "gepa-config.json"),
            ],
        );
        args.extend([
            "--resources".into(),
            resources.into(),
            "--output".into(),
            out.clone().into(),
            "--db".into(),
            format!("sqlite:{}", db.display()).into(),
        ]);
        let output = agl_host(&args);
        assert!(output.status.success(), "{}", text(&output));
        GepaRun {
            db,
            results: read_results(&out),
        }
    })
}

#[agl_testkit::needs(chromium)]
#[tokio::test(flavor = "multi_thread")]
async fn a_gepa_runs_candidate_tree_and_per_task_front_are_drawn_and_its_texts_stay_text() {
    let browser = Browser::start("dashboard_gepa").await;
    let run = tokio::task::spawn_blocking(gepa_run).await.expect("the run");
    let summary = &run.results["algorithm_summary"];
    let candidates = summary["candidates"].as_array().expect("candidates");
    let ids: Vec<&str> = candidates
        .iter()
        .map(|c| c["resources_id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, ["v0", "v1", "v2", "v3"], "{summary:#}");
    let db = run.db.display().to_string();
    let server = tokio::task::spawn_blocking(move || {
        ServerProcess::agl_host_printing(&["dashboard", db.as_str(), "--port", "0"], LISTENING)
    })
    .await
    .expect("served");
    let base = base(&server).to_owned();

    // The run view links to the candidates; the navigation shows them for a GEPA run.
    browser.open(&format!("{base}/#/")).await;
    browser.wait_for_text_in("[data-view=run] h1", "completed").await;
    browser.wait_for_text_in("[data-gepa]", "4 candidate(s)").await;
    browser.wait_for("#nav a[data-view=candidates]:not([hidden])").await;
    browser.click("[data-gepa] a").await;

    // The tree: v0..v3, each with its origin and mean val score; the merge under both parents.
    browser.wait_for("[data-view=candidates] svg[data-tree]").await;
    for candidate in candidates {
        let id = candidate["resources_id"].as_str().expect("id");
        let node = format!("[data-tree] [data-node={id}]");
        let mean = format!("{:.4}", candidate["val_score"].as_f64().expect("mean"));
        browser.wait_for_text_in(&format!("{node} [data-score]"), &mean).await;
        let kind = candidate["origin"]["kind"].as_str().expect("kind");
        browser.wait_for(&format!("{node}[data-origin={kind}]")).await;
    }
    for (node, origin) in [
        ("v0", "seed"),
        ("v1", "mutation of format"),
        ("v2", "mutation of system"),
        ("v3", "merge over v0"),
    ] {
        browser
            .wait_for_text_in(&format!("[data-node={node}] [data-origin-label]"), origin)
            .await;
    }
    for edge in ["v0>v1", "v0>v2", "v1>v3", "v2>v3"] {
        browser.wait_for(&format!("[data-tree] path[data-edge='{edge}']")).await;
    }
    browser.wait_for_text_in("[data-node=v3]", "★").await;
    assert_eq!(candidates[3]["parents"], serde_json::json!(["v1", "v2"]), "{summary:#}");

    // The front: per val task, ★ on exactly the candidates the results put on it.
    let front = summary["pareto_front"].as_array().expect("front");
    assert_eq!(front.len(), 6, "{summary:#}");
    for entry in front {
        let task = entry["val_task"].as_u64().expect("task");
        let best: Vec<&str> = entry["candidates"]
            .as_array()
            .expect("candidates")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let set = browser
            .text(&format!("[data-table=front] tr[data-task='{task}'] [data-front-set]"))
            .await;
        assert_eq!(set, best.join(", "), "task {task}");
        for id in &ids {
            let cell = browser
                .text(&format!(
                    "[data-table=front] tr[data-task='{task}'] td[data-candidate={id}]"
                ))
                .await;
            assert_eq!(cell.contains('★'), best.contains(id), "task {task}, {id}: {cell:?}");
        }
    }
    // The example's front: the format fix alone on the stray-number tasks (0, 3), the seed with
    // the unit fix on the two it converts (2, 5), the merge on every task.
    for (task, set) in [(0, "v1, v3"), (2, "v0, v2, v3")] {
        let shown = browser
            .text(&format!("[data-table=front] tr[data-task='{task}'] [data-front-set]"))
            .await;
        assert_eq!(shown, set, "task {task}");
    }
    assert_eq!(
        browser.text("[data-table=front] tfoot td[data-candidate=v3]").await,
        "6 task(s)"
    );
    // The val tasks' inputs, from the seed's val rollouts.
    browser
        .wait_for_text_in("[data-table=front] tr[data-task='0']", "96 cookies")
        .await;

    // The candidates' texts: the seed's markup shown as text, never run.
    browser
        .click("[data-table=candidates] tr[data-candidate=v0] details[data-component=system] summary")
        .await;
    browser
        .wait_for_text_in(
            "[data-table=candidates] tr[data-candidate=v0] [data-component=system] pre",
            "<script>document.body.append('PW'+'NED')</script>",
        )
        .await;
    browser
        .wait_for_text_in(
            "[data-table=candidates] tr[data-candidate=v1] [data-component=system] summary",
            "<script>",
        )
        .await;
    browser.screenshot("candidates").await;
    assert!(!browser.page_text().await.contains("PWNED"), "the seed's markup ran");

    // A node leads to its texts against its first parent's (the Resources diff).
    browser.click("[data-tree] [data-node=v1]").await;
    browser.wait_for("[data-diff=format] .line.added").await;
    assert_eq!(
        browser.text("[data-diff=format] .line.added").await,
        "Give the final answer as a number alone on the last line."
    );
    assert!(!browser.page_text().await.contains("PWNED"), "the seed's markup ran");
    browser.quit().await;
}

#[agl_testkit::needs(chromium)]
#[tokio::test(flavor = "multi_thread")]
async fn an_apo_run_has_no_candidates_view_in_its_navigation() {
    let browser = Browser::start("dashboard_no_candidates").await;
    tokio::task::spawn_blocking(kept_run).await.expect("the run");
    let server = tokio::task::spawn_blocking(|| serve(&[])).await.expect("served");
    let base = base(&server).to_owned();
    browser.open(&format!("{base}/#/")).await;
    browser.wait_for_text_in("[data-view=run] h1", "completed").await;
    browser.wait_for("#nav a[data-view=candidates][hidden]").await;
    browser.open(&format!("{base}/#/candidates")).await;
    browser
        .wait_for_text_in("[data-view=candidates] [data-empty]", "keeps no candidate tree")
        .await;
    browser.quit().await;
}
