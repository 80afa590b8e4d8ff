//! `agl-host store`'s `GET /metrics` after real work: a store with a token, one `agl-host runner`
//! of the probe guest on the scripted LLM, rollouts that each make one LLM call and get a reward.
//! The scrape (refused without the token) agrees with what the store holds: its rollouts,
//! attempts, workers and spans, and the LLM calls and tokens the adapter reads from those spans.

use crate::support;

use agl_client::{ClientOptions, HttpStoreClient};
use agl_store::{EnqueueRolloutRequest, LightningStore, SpanQuery, WorkerQuery};
use agl_testkit::prometheus::{Scrape, TEXT_FORMAT};
use std::process::{Command, Stdio};
use std::time::Duration;
use support::ServerProcess;

const TOKEN: &str = "s3cret";
const ROLLOUTS: usize = 3;

#[test]
fn a_runner_s_rollouts_show_in_the_store_s_metrics() {
    let store = ServerProcess::agl_host_store(&["--token", TOKEN, "--threads", "1"]);
    let probe = agl_guest_build::build_guest("tests/guests/probe").expect("the probe builds");
    let rules = agl_guest_build::repo_root().join("examples/math-agent/rules.json");
    let runner = Command::new(env!("CARGO_BIN_EXE_agl-host"))
        .env(
            "AGL_CACHE_DIR",
            agl_guest_build::repo_root().join("target/agl-cache-tests"),
        )
        .args(["runner", "--store", &store.url, "--token", TOKEN, "--agent"])
        .arg(&probe)
        .arg("--llm-script")
        .arg(&rules)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("agl-host runner starts");
    // Killed and reaped on drop, however the test ends.
    let _runner = ServerProcess::adopt(runner, String::new());

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let options = ClientOptions {
            token: Some(TOKEN.into()),
            ..ClientOptions::default()
        };
        let client = HttpStoreClient::new(&store.url, options).expect("client");
        let tasks = (0..ROLLOUTS)
            .map(|i| EnqueueRolloutRequest::new(serde_json::json!({"do": "llm_once", "prompt": format!("hello {i}")})))
            .collect();
        let ids: Vec<String> = client
            .enqueue_rollouts(tasks)
            .await
            .expect("enqueued")
            .into_iter()
            .map(|rollout| rollout.rollout_id)
            .collect();
        let finished = client
            .wait_for_rollouts(&ids, Some(Duration::from_secs(120)))
            .await
            .expect("wait");
        assert_eq!(finished.len(), ROLLOUTS, "every rollout finished: {finished:?}");

        // What the store holds, read through its API: the figures /metrics must agree with.
        let mut llm_calls = 0.0;
        let (mut prompt_tokens, mut completion_tokens) = (0.0, 0.0);
        for id in &ids {
            let query = SpanQuery {
                rollout_id: id.clone(),
                ..SpanQuery::default()
            };
            for span in client.query_spans(&query).await.expect("spans").items {
                if let Some(usage) = agl_adapter::llm_call_usage(&span) {
                    llm_calls += 1.0;
                    prompt_tokens += usage.input_tokens.unwrap_or(0) as f64;
                    completion_tokens += usage.output_tokens.unwrap_or(0) as f64;
                }
            }
        }
        assert_eq!(llm_calls, ROLLOUTS as f64, "one LLM call per rollout");
        assert!(prompt_tokens > 0.0, "the scripted LLM counts tokens");
        let spans = client.statistics().await.expect("statistics").total_spans as f64;
        let workers = client
            .query_workers(&WorkerQuery::default())
            .await
            .expect("workers")
            .items
            .len() as f64;

        let http = reqwest::Client::new();
        let metrics = format!("{}/metrics", store.url);
        let refused = http.get(&metrics).send().await.expect("answered");
        assert_eq!(refused.status().as_u16(), 401);
        let answer = http.get(&metrics).bearer_auth(TOKEN).send().await.expect("answered");
        assert_eq!(answer.status().as_u16(), 200);
        let content_type = answer
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        assert!(content_type.starts_with(TEXT_FORMAT), "{content_type}");
        let scrape = Scrape::parse(&answer.text().await.expect("body"));

        let all = ROLLOUTS as f64;
        for (series, wanted) in [
            ("agl_store_up", 1.0),
            ("agl_rollouts{status=\"succeeded\"}", all),
            ("agl_rollout_queue_depth", 0.0),
            ("agl_attempts{status=\"succeeded\"}", all),
            ("agl_spans_received_total{api=\"agl\"}", spans),
            ("agl_llm_calls_total{outcome=\"ok\"}", llm_calls),
            ("agl_llm_prompt_tokens_total", prompt_tokens),
            ("agl_llm_completion_tokens_total", completion_tokens),
            ("agl_llm_call_duration_seconds_count", llm_calls),
        ] {
            assert_eq!(scrape.value(series), wanted, "{series}");
        }
        let workers_by_status: f64 = ["idle", "busy", "unknown"]
            .iter()
            .map(|status| scrape.value(&format!("agl_workers{{status=\"{status}\"}}")))
            .sum();
        assert_eq!(workers_by_status, workers);
        assert!(workers >= 1.0, "the runner is a worker");
    });
}
