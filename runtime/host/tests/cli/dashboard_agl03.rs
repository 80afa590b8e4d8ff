//! `agl-host store --dashboard-dir`: Agent-lightning 0.3.0's own dashboard (the web app inside its
//! Python package, `agentlightning/dashboard/`, from the venv `tests/python/prepare_venv.py`
//! keeps in `target/py/agl-0.3`) served unchanged beside our store, in headless Chromium. A real
//! run (APO on the math agent, scripted LLM) is kept in SQLite; the store serves it, and the
//! dashboard's Rollouts, Traces, Resources and Runners pages must show its rollout ids, span
//! names, resources ids and worker, read back from our own API. Screenshots of each page go to
//! `target/browser-screenshots/dashboard_agl03/`. Skipped without Chromium, except under CI=true.

use crate::agents;
use crate::support;

use agl_testkit::browser::Browser;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;
use support::{Scratch, ServerProcess, prepare_venv};

/// The dashboard folder inside the venv's `agentlightning` package (found without importing it,
/// which takes seconds).
fn agl03_dashboard_dir() -> PathBuf {
    let python = prepare_venv();
    let output = Command::new(&python)
        .args([
            "-c",
            "import importlib.util, os; spec = importlib.util.find_spec('agentlightning'); \
             print(os.path.join(os.path.dirname(spec.origin), 'dashboard'))",
        ])
        .output()
        .unwrap_or_else(|e| panic!("{} does not run: {e}", python.display()));
    assert!(output.status.success(), "{}", agents::text(&output));
    let dir = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    assert!(
        dir.join("index.html").is_file(),
        "no dashboard in the wheel at {}",
        dir.display()
    );
    dir
}

/// `GET url` on the store; the JSON answer.
async fn get_json(url: &str) -> Value {
    let response = reqwest::get(url).await.unwrap_or_else(|e| panic!("GET {url}: {e}"));
    assert!(response.status().is_success(), "GET {url}: {}", response.status());
    response
        .json()
        .await
        .unwrap_or_else(|e| panic!("GET {url}: not JSON: {e}"))
}

fn strings<'a>(items: &'a Value, field: &str) -> Vec<&'a str> {
    items["items"]
        .as_array()
        .unwrap_or_else(|| panic!("a page of items: {items}"))
        .iter()
        .map(|item| item[field].as_str().unwrap_or_else(|| panic!("{field} in {item}")))
        .collect()
}

#[agl_testkit::needs(chromium)]
#[tokio::test(flavor = "multi_thread")]
async fn agent_lightning_03_dashboard_shows_a_kept_runs_rollouts_traces_resources_and_runners() {
    let browser = Browser::start("dashboard_agl03").await;
    let dashboard = agl03_dashboard_dir();

    // A real run, kept in SQLite.
    let scratch = Scratch::new("dashboard-agl03");
    let db = format!("sqlite:{}", scratch.path("run.db").display());
    let mut args = agents::apo_args(
        &agents::repo().join("examples/math-agent"),
        &scratch.path("results.json"),
    );
    args.extend(["--db".into(), db.clone().into()]);
    let run = agents::agl_host(&args);
    assert!(run.status.success(), "{}", agents::text(&run));

    let dashboard_arg = dashboard.display().to_string();
    let store = ServerProcess::agl_host_store(&["--db", &db, "--dashboard-dir", &dashboard_arg]);
    assert!(
        store.log().contains(&format!(
            "agl-host store: dashboard at {}/ (from {dashboard_arg})",
            store.url
        )),
        "{}",
        store.log()
    );

    // What the pages must show, read from our API as the dashboard asks for it.
    let base = &store.url;
    let rollouts = get_json(&format!(
        "{base}/v1/agl/rollouts?limit=50&offset=0&sort_by=start_time&sort_order=desc"
    ))
    .await;
    let rollout_ids = strings(&rollouts, "rollout_id");
    let latest = rollouts["items"][0].clone();
    let latest_id = latest["rollout_id"].as_str().expect("a rollout id");
    let attempt_id = latest["attempt"]["attempt_id"].as_str().expect("its attempt");
    let spans = get_json(&format!(
        "{base}/v1/agl/spans?rollout_id={latest_id}&attempt_id={attempt_id}"
    ))
    .await;
    let span_names = strings(&spans, "name");
    assert!(span_names.contains(&"openai.chat.completion"), "{span_names:?}");
    let resources = get_json(&format!("{base}/v1/agl/resources?limit=-1&offset=0")).await;
    let resources_ids = strings(&resources, "resources_id");
    assert!(resources_ids.len() >= 2, "APO adds versions: {resources_ids:?}");
    let workers = get_json(&format!("{base}/v1/agl/workers?limit=-1&offset=0")).await;
    let worker_ids = strings(&workers, "worker_id");
    assert!(!worker_ids.is_empty(), "{workers}");

    // Rollouts: the latest page of rollouts, each with its status.
    browser.open(&format!("{base}/rollouts")).await;
    browser.wait_for_text_in("tbody", rollout_ids[0]).await;
    let table = browser.text("tbody").await;
    for rollout_id in &rollout_ids[..10] {
        assert!(table.contains(rollout_id), "{rollout_id} is not shown:\n{table}");
    }
    assert!(table.contains("SUCCEEDED"), "{table}");
    browser.wait_for_text("ONLINE").await; // its health probe of our /v1/agl/health
    browser.screenshot("rollouts").await;

    // Traces (through the menu, as a user goes): the latest rollout's attempt and its spans.
    browser.click_text("Traces").await;
    for name in &span_names {
        browser.wait_for_text_in("tbody", name).await;
    }
    // The rollout and attempt it picked are in its pickers and in the URL.
    assert_eq!(
        browser.path().await,
        format!("/traces?rolloutId={latest_id}&attemptId={attempt_id}")
    );
    browser.screenshot("traces").await;

    // Resources: every version APO published.
    browser.click_text("Resources").await;
    for resources_id in &resources_ids {
        browser.wait_for_text_in("tbody", resources_id).await;
    }
    browser.screenshot("resources").await;

    // Runners, opened directly (the store answers /runners with the app's index.html).
    browser.open(&format!("{base}/runners")).await;
    for worker_id in &worker_ids {
        browser.wait_for_text_in("tbody", worker_id).await;
    }
    browser.wait_for_text_in("tbody", "IDLE").await;
    browser.screenshot("runners").await;
    browser.quit().await;
}

#[test]
fn a_dashboard_dir_without_index_html_is_refused_with_one_line_and_exit_code_2() {
    let scratch = Scratch::new("dashboard-empty");
    let empty = scratch.path("");
    let output = agents::agl_host(["store", "--port", "0", "--dashboard-dir", &empty.display().to_string()]);
    assert_eq!(output.status.code(), Some(2), "{}", agents::text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("--dashboard-dir ") && stderr.contains("has no index.html"),
        "{stderr}"
    );
}
