//! What a guest language costs the host, on the probe written in each (`tests/guests/probe`,
//! `probe-py`, `probe-js`): component size and shape, compile from scratch, load from the compile
//! cache, a fresh instance plus a trivial rollout (`noop`, spans included), and the linear memory
//! one instance takes.
//!
//! Run: `cargo bench -p agl-wasm --bench languages` (`-- --quick` for a smoke run: no cold
//! compile, few rollouts).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark: a failed step panics and ends it"
)]

use agl_llm::{LlmBackend, ScriptedBackend};
use agl_store::*;
use agl_wasm::pool::ComponentShape;
use agl_wasm::*;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const GUESTS: &[(&str, &str)] = &[
    ("Rust", "tests/guests/probe"),
    ("Python", "tests/guests/probe-py"),
    ("JavaScript", "tests/guests/probe-js"),
];

/// The cache the CLI's tests use too: guest folders built there are shared.
fn cache_dir() -> PathBuf {
    agl_guest_build::repo_root().join("target").join("agl-cache-tests")
}

fn scripted() -> Arc<dyn LlmBackend> {
    let rules = r#"{"model": "scripted", "rules": [], "fallback": {"reply": "ok"}}"#;
    Arc::new(ScriptedBackend::from_json_str(rules).expect("rules"))
}

/// Mean wall time of `n` noop attempts, each in a fresh instance, and the memory of the last.
async fn noop_attempts(agent: &AgentComponent, n: usize) -> (Duration, u64) {
    let store = Arc::new(InMemoryLightningStore::new());
    let recorder = SpanRecorder::new(store.clone() as Arc<dyn LightningStore>, Duration::from_millis(100));
    let llm = scripted();
    let mut rollouts = Vec::with_capacity(n);
    for _ in 0..n {
        let request = StartRolloutRequest {
            rollout: EnqueueRolloutRequest::new(json!({"do": "noop"})),
            worker_id: None,
        };
        rollouts.push(store.start_rollout(request).await.expect("rollout"));
    }
    let started = Instant::now();
    let mut memory = 0;
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
                // As a runner does by default.
                tape: agl_wasm::tape::TapeMode::Record,
            })
            .await;
        assert_eq!(outcome.status, AttemptStatus::Succeeded, "{:?}", outcome.failure);
        memory = outcome.memory_bytes;
    }
    (started.elapsed() / u32::try_from(n).unwrap_or(u32::MAX), memory)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let root = agl_guest_build::repo_root();
    let components: Vec<(&str, Vec<u8>, ComponentShape)> = GUESTS
        .iter()
        .map(|(language, folder)| {
            let path = agl_guest_build::build_folder(&root.join(folder), &cache_dir().join("guests"), false)
                .unwrap_or_else(|e| panic!("{folder}: {e}"));
            let bytes = std::fs::read(&path).expect("component");
            let shape = ComponentShape::of(&bytes, folder).expect("a component");
            (*language, bytes, shape)
        })
        .collect();
    let room = components
        .iter()
        .fold(ComponentShape::default(), |room, (_, _, shape)| room.max(*shape));
    let compile_cache = std::env::temp_dir().join(format!("agl-languages-bench-{}", std::process::id()));
    let host = |cache: Option<PathBuf>| {
        WasmHost::new(EngineOptions {
            cache_dir: cache,
            instance_shape: room,
            ..EngineOptions::default()
        })
        .expect("engine")
    };
    // A smoke run loads what the CLI's tests compiled into their cache (same engine settings, so
    // the same entries); a real run measures with a cache of its own.
    let cached_dir = if quick { cache_dir() } else { compile_cache.clone() };
    let (cold_host, cached_host) = (host(None), host(Some(cached_dir)));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    println!("pooling allocator: {}", cached_host.uses_pooling());
    println!(
        "| guest | size | core instances / memories | compile (cold) | load (cached) | instance + noop rollout | rollouts/s (one thread) | instance memory |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (language, bytes, shape) in &components {
        let name = format!("probe-{language}.wasm");
        let cold = if quick {
            "–".to_owned()
        } else {
            let agent = cold_host
                .load_agent_bytes(bytes, &name, SandboxPolicy::default())
                .expect("compiles");
            format!("{:.2} s", agent.load_info().1.as_secs_f64())
        };
        cached_host
            .load_agent_bytes(bytes, &name, SandboxPolicy::default())
            .expect("warm the cache");
        let loads = if quick { 2 } else { 10 };
        let cached: Duration = (0..loads)
            .map(|_| {
                let agent = cached_host
                    .load_agent_bytes(bytes, &name, SandboxPolicy::default())
                    .expect("load");
                assert_eq!(agent.load_info().0, Compiled::Cached);
                agent.load_info().1
            })
            .sum::<Duration>()
            / loads;
        let agent = cached_host
            .load_agent_bytes(bytes, &name, SandboxPolicy::default())
            .expect("load");
        let n = if quick { 20 } else { 2_000 };
        let (rollout, memory) = runtime.block_on(async {
            noop_attempts(&agent, n / 10).await; // warm-up
            noop_attempts(&agent, n).await
        });
        println!(
            "| {language} | {:.1} MB | {} / {} | {cold} | {:.1} ms | {:.0} µs | {:.0} | {:.1} MiB |",
            bytes.len() as f64 / 1e6,
            shape.core_instances,
            shape.memories,
            cached.as_secs_f64() * 1e3,
            rollout.as_secs_f64() * 1e6,
            1.0 / rollout.as_secs_f64(),
            memory as f64 / f64::from(1 << 20),
        );
    }
    let _ = std::fs::remove_dir_all(&compile_cache);
}
