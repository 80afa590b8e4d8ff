//! Runs an example agent over its dataset in the WASM host, offline: builds the guest crate,
//! loads it with its sandbox policy, publishes its initial resources into an in-memory store,
//! runs every task as a rollout against the scripted LLM (`rules.json`), and prints the rewards
//! and what the automatic tracing recorded. (`agl-host run`, with runners and algorithms, comes
//! with the next milestone; this shows the host on its own.)
//!
//! Run: `cargo run --release -p agl-wasm --example run_agent -- examples/math-agent [train|val]`
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "an example: a failed step panics with its reason"
)]

use agl_llm::ScriptedBackend;
use agl_store::*;
use agl_wasm::*;
use anyhow::{Context, Result, bail};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[tokio::main]
async fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let agent_dir = args.next().unwrap_or_else(|| "examples/math-agent".into());
    let split = args.next().unwrap_or_else(|| "val".into());
    let root = agl_guest_build::repo_root();
    let dir = root.join(&agent_dir);
    if !dir.join("Cargo.toml").is_file() {
        bail!("{agent_dir} is not an agent crate (try examples/math-agent or examples/classifier-agent)");
    }

    println!("building {agent_dir} for wasm32-wasip2 ...");
    let component = agl_guest_build::build(&dir).context("building the agent")?;
    let host = WasmHost::new(EngineOptions::default())?;
    let policy = SandboxPolicy::for_component(&component)?;
    let agent = host.load_agent(&component, policy)?;
    let (compiled, took) = agent.load_info();
    println!(
        "loaded {} ({compiled:?}, {:.1} ms; pooling allocator: {})",
        agent.name(),
        took.as_secs_f64() * 1e3,
        host.uses_pooling()
    );

    let store = Arc::new(InMemoryLightningStore::new());
    let resources: NamedResources =
        serde_json::from_str(&std::fs::read_to_string(dir.join("initial-resources.json"))?)?;
    let resources = Arc::new(store.add_resources(resources).await?);
    let llm = Arc::new(ScriptedBackend::from_file(dir.join("rules.json"))?);
    let recorder = SpanRecorder::new(store.clone() as Arc<dyn LightningStore>, Duration::from_millis(100));

    let data = std::fs::read_to_string(dir.join("data").join(format!("{split}.jsonl")))
        .with_context(|| format!("no {split} split in {agent_dir}/data"))?;
    let started = Instant::now();
    let (mut total, mut count, mut failed) = (0.0, 0, 0);
    for line in data.lines().filter(|l| !l.trim().is_empty()) {
        let input: serde_json::Value = serde_json::from_str(line)?;
        let request = StartRolloutRequest {
            rollout: EnqueueRolloutRequest::new(input).mode(Mode::Val),
            worker_id: None,
        };
        let rollout = store.start_rollout(request).await?;
        let outcome = agent
            .run_attempt(AttemptRequest {
                rollout: &rollout.rollout,
                attempt: &rollout.attempt,
                resources: Some(resources.clone()),
                llm: llm.clone(),
                llm_allowance: None,
                recorder: &recorder,
                trace_observer: None,
                tape: agl_wasm::tape::TapeMode::Off,
            })
            .await;
        let update = AttemptUpdate::status(outcome.status);
        store
            .update_attempt(
                &rollout.rollout.rollout_id,
                AttemptRef::Id(&rollout.attempt.attempt_id),
                update,
            )
            .await?;
        count += 1;
        match (&outcome.failure, outcome.reward) {
            (Some(reason), _) => {
                failed += 1;
                println!("  {}  failed: {reason}", rollout.rollout.rollout_id);
            }
            (None, reward) => {
                total += reward.unwrap_or(0.0);
                println!(
                    "  {}  reward {:?}  ({} LLM call)",
                    rollout.rollout.rollout_id, reward, outcome.llm_calls
                );
            }
        }
    }
    let stats = store.statistics().await?;
    println!(
        "{count} rollouts on {split} in {:.0} ms: mean reward {:.3}, {failed} failed; {} spans recorded",
        started.elapsed().as_secs_f64() * 1e3,
        total / f64::from(count.max(1)),
        stats.total_spans
    );
    if failed > 0 {
        bail!("{failed} rollouts failed");
    }
    Ok(())
}
