//! The WASM host's costs, measured on the probe guest (a Rust component built with the SDK):
//! compile cold vs load from the cache, a fresh instance + trivial rollout (spans included),
//! one host call including its span, and a rollout with one LLM call (scripted backend); what
//! recording (`capabilities/tape`) costs: a trivial rollout recorded against one not recorded,
//! and the bytes a recording keeps per LLM call beyond the call's span.
//!
//! Run: `cargo bench -p agl-wasm --bench host_bench` (`-- --quick` for a smoke run).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark: a failed step panics and ends it"
)]

use agl_llm::{LlmBackend, ScriptedBackend};
use agl_store::*;
use agl_wasm::tape;
use agl_wasm::*;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn scripted() -> Arc<dyn LlmBackend> {
    let rules = r#"{"model": "scripted", "rules": [], "fallback": {"reply": "ok", "usage": {"input_tokens": 5, "output_tokens": 1}}}"#;
    Arc::new(ScriptedBackend::from_json_str(rules).expect("rules"))
}

/// Mean wall time of `n` attempts of `task`, each in a fresh instance on one in-memory store,
/// recorded (as a runner does by default) and the recordings kept in the store.
async fn attempts(agent: &AgentComponent, task: serde_json::Value, n: usize) -> Duration {
    attempts_taped(agent, task, n, true).await
}

/// [`attempts`], recorded or not.
async fn attempts_taped(agent: &AgentComponent, task: serde_json::Value, n: usize, record: bool) -> Duration {
    let store = Arc::new(InMemoryLightningStore::new());
    let recorder = SpanRecorder::new(store.clone() as Arc<dyn LightningStore>, Duration::from_millis(100));
    let llm = scripted();
    let mut rollouts = Vec::with_capacity(n);
    for _ in 0..n {
        let request = StartRolloutRequest {
            rollout: EnqueueRolloutRequest::new(task.clone()),
            worker_id: None,
        };
        rollouts.push(store.start_rollout(request).await.expect("rollout"));
    }
    let started = Instant::now();
    for rollout in &rollouts {
        let outcome = agent
            .run_attempt(AttemptRequest {
                rollout: &rollout.rollout,
                attempt: &rollout.attempt,
                resources: None,
                llm: llm.clone(),
                llm_allowance: None,
                recorder: &recorder,
                trace_observer: None,
                tape: if record {
                    tape::TapeMode::Record
                } else {
                    tape::TapeMode::Off
                },
            })
            .await;
        assert_eq!(outcome.status, AttemptStatus::Succeeded, "{:?}", outcome.failure);
        if let Some(recording) = outcome.recording {
            store.add_recording(recording).await.expect("the recording is kept");
        }
    }
    started.elapsed() / n as u32
}

/// The bytes a recording of one attempt of `task` keeps (its tape and blobs), and the bytes of
/// its LLM spans as stored (JSON).
async fn recorded_bytes(agent: &AgentComponent, task: serde_json::Value) -> (usize, usize) {
    let store = Arc::new(InMemoryLightningStore::new());
    let recorder = SpanRecorder::new(store.clone() as Arc<dyn LightningStore>, Duration::from_millis(100));
    let request = StartRolloutRequest {
        rollout: EnqueueRolloutRequest::new(task),
        worker_id: None,
    };
    let rollout = store.start_rollout(request).await.expect("rollout");
    let outcome = agent
        .run_attempt(AttemptRequest {
            rollout: &rollout.rollout,
            attempt: &rollout.attempt,
            resources: None,
            llm: scripted(),
            llm_allowance: None,
            recorder: &recorder,
            trace_observer: None,
            tape: tape::TapeMode::Record,
        })
        .await;
    let recording = outcome.recording.expect("recorded");
    let recording_bytes = recording.tape.len() + recording.blobs.values().map(String::len).sum::<usize>();
    let query = SpanQuery::for_rollout(&rollout.rollout.rollout_id);
    let spans = store.query_spans(&query).await.expect("spans").items;
    let llm_span_bytes = spans
        .iter()
        .filter(|span| span.name == agl_trace::names::LLM)
        .map(|span| serde_json::to_string(&**span).expect("a span is JSON").len())
        .sum();
    (recording_bytes, llm_span_bytes)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let scale = |n: usize| if quick { (n / 50).max(2) } else { n };
    let probe = agl_guest_build::build_guest("tests/guests/probe").expect("probe builds");
    let bytes = std::fs::read(&probe).expect("probe component");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");

    let cache_dir = std::env::temp_dir().join(format!("agl-bench-cache-{}", std::process::id()));
    let cold_host = WasmHost::new(EngineOptions {
        cache_dir: None,
        ..EngineOptions::default()
    })
    .expect("engine");
    let cached_host = WasmHost::new(EngineOptions {
        cache_dir: Some(cache_dir.clone()),
        ..EngineOptions::default()
    })
    .expect("engine");
    println!("pooling allocator: {}", cached_host.uses_pooling());
    // `--attempts-only` skips the compile measurements (handy under a profiler).
    let runs = if std::env::args().any(|a| a == "--attempts-only" || a == "--host-calls-only") {
        1
    } else {
        scale(20)
    };
    let cold = (0..runs)
        .map(|_| {
            cold_host
                .load_agent_bytes(&bytes, "probe.wasm", SandboxPolicy::default())
                .expect("load")
                .load_info()
                .1
        })
        .sum::<Duration>()
        / runs as u32;
    cached_host
        .load_agent_bytes(&bytes, "probe.wasm", SandboxPolicy::default())
        .expect("warm the cache");
    let cached = (0..runs)
        .map(|_| {
            let agent = cached_host
                .load_agent_bytes(&bytes, "probe.wasm", SandboxPolicy::default())
                .expect("load");
            assert_eq!(agent.load_info().0, Compiled::Cached);
            agent.load_info().1
        })
        .sum::<Duration>()
        / runs as u32;

    let agent = cached_host
        .load_agent_bytes(&bytes, "probe.wasm", SandboxPolicy::default())
        .expect("load");
    let calls = 1000;
    // `--host-calls-only`: just the host-call rollouts, many of them (for a profiler).
    if std::env::args().any(|a| a == "--host-calls-only") {
        let mean = runtime.block_on(attempts(&agent, json!({"do": "host_calls", "n": calls}), 300));
        println!("rollout of {calls} host calls: {:.1} µs", mean.as_secs_f64() * 1e6);
        let _ = std::fs::remove_dir_all(&cache_dir);
        return;
    }
    let (noop, per_call_rounds, llm_once) = runtime.block_on(async {
        attempts(&agent, json!({"do": "noop"}), scale(200)).await; // warm-up
        let noop = attempts(&agent, json!({"do": "noop"}), scale(5000)).await;
        // The host-call cost is a difference of two rollouts, so it is measured in rounds that
        // time both back to back (a slow spell of a shared machine then hits both sides of one
        // round) and the median round is reported.
        let mut rounds = Vec::new();
        for _ in 0..scale(15).max(3) {
            let noop = attempts(&agent, json!({"do": "noop"}), scale(300)).await;
            let host_calls = attempts(&agent, json!({"do": "host_calls", "n": calls}), scale(15)).await;
            rounds.push(host_calls.saturating_sub(noop) / calls);
        }
        rounds.sort();
        let llm_once = attempts(&agent, json!({"do": "llm_once"}), scale(5000)).await;
        (noop, rounds, llm_once)
    });
    // Recording's cost: rounds timing trivial rollouts recorded and not, back to back; the median
    // round's ratio.
    let mut ratios: Vec<f64> = runtime.block_on(async {
        let mut ratios = Vec::new();
        for _ in 0..scale(15).max(3) {
            let off = attempts_taped(&agent, json!({"do": "noop"}), scale(1000), false).await;
            let on = attempts_taped(&agent, json!({"do": "noop"}), scale(1000), true).await;
            ratios.push(on.as_secs_f64() / off.as_secs_f64());
        }
        ratios
    });
    ratios.sort_by(f64::total_cmp);
    let llm_calls = 10;
    let (per_llm_call, llm_span) = runtime.block_on(async {
        let (none, _) = recorded_bytes(&agent, json!({"do": "llm_flood", "calls": 0})).await;
        let (ten, spans) = recorded_bytes(&agent, json!({"do": "llm_flood", "calls": llm_calls})).await;
        ((ten - none) / llm_calls, spans / llm_calls)
    });
    let per_call = per_call_rounds[per_call_rounds.len() / 2];
    let _ = std::fs::remove_dir_all(&cache_dir);

    println!("| measure | time |");
    println!("|---|---:|");
    println!(
        "| compile the probe component (cold, {} KiB) | {:.1} ms |",
        bytes.len() >> 10,
        cold.as_secs_f64() * 1e3
    );
    println!(
        "| load it from the compile cache | {:.2} ms |",
        cached.as_secs_f64() * 1e3
    );
    println!(
        "| fresh instance + trivial rollout (noop; root and reward spans stored) | {:.1} µs |",
        noop.as_secs_f64() * 1e6
    );
    println!(
        "| one host call including its span (trace.log, {calls} per rollout; median of {} rounds, range {:.2}–{:.2}) | {:.2} µs |",
        per_call_rounds.len(),
        per_call_rounds[0].as_secs_f64() * 1e6,
        per_call_rounds[per_call_rounds.len() - 1].as_secs_f64() * 1e6,
        per_call.as_secs_f64() * 1e6
    );
    println!(
        "| rollout with one LLM call (scripted backend), spans stored | {:.1} µs |",
        llm_once.as_secs_f64() * 1e6
    );
    println!(
        "| trivial rollout recorded ÷ not recorded (median of {} rounds, range {:.3}–{:.3}) | {:.3} |",
        ratios.len(),
        ratios[0],
        ratios[ratios.len() - 1],
        ratios[ratios.len() / 2]
    );
    println!("| recording bytes per LLM call (beyond the call's span of {llm_span} bytes) | {per_llm_call} B |");
}
