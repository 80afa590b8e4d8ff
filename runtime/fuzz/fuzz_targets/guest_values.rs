//! What an algorithm guest hands the host across the WIT boundary, parsed the way the host's
//! `agl:agent/store` import does it (`runtime/wasm/src/algorithm/store_import.rs`) with the
//! `agl-store` types, then run through the in-memory store. The first byte picks the call, the
//! rest is split at NUL bytes into its string arguments:
//! - `enqueue`: `input-json`, `config-json` and `metadata-json` of a new rollout (`RolloutConfig`
//!   parsed and validated, metadata a JSON object); the rollout is enqueued, dequeued, its
//!   attempt fails or succeeds, and the watchdog runs past every deadline;
//! - `add-resources` / `update-resources`: `resources-json` as `NamedResources`;
//! - a rollout input as the agent sees it (`input_json` is the stored input re-serialised).
//!
//! Invariants: no panic; what the host serialises back to a guest (rollout input, resources)
//! parses again to the same value; the store's invariants hold after every step.

#![no_main]

use agl_fuzz::{assert_invariants, fields, memory_store_with_clock, runtime};
use agl_store::{
    AttemptRef, AttemptStatus, AttemptUpdate, EnqueueRolloutRequest, JsonMap, LightningStore, Mode, NamedResources,
    Resource, RolloutConfig,
};
use libfuzzer_sys::fuzz_target;

fn optional(field: Option<&String>) -> Option<&str> {
    field.map(String::as_str).filter(|text| !text.is_empty())
}

/// The host's `enqueue_request`: `None` where the host answers the guest `err(...)`.
fn enqueue_request(selector: u8, args: &[String]) -> Option<EnqueueRolloutRequest> {
    let input: serde_json::Value = serde_json::from_str(args.first()?).ok()?;
    let config = match optional(args.get(1)) {
        Some(text) => {
            let config: RolloutConfig = serde_json::from_str(text).ok()?;
            config.validate().ok()?;
            Some(config)
        }
        None => None,
    };
    let metadata = match optional(args.get(2)) {
        Some(text) => Some(serde_json::from_str::<JsonMap>(text).ok()?),
        None => None,
    };
    let mode = match selector % 4 {
        0 => None,
        1 => Some(Mode::Train),
        2 => Some(Mode::Val),
        _ => Some(Mode::Test),
    };
    Some(EnqueueRolloutRequest {
        input,
        mode,
        resources_id: None,
        config,
        metadata,
        rollout_id: None,
    })
}

/// Resources as an algorithm sees them back: API keys removed, then JSON.
fn shown_to_guest(mut resources: NamedResources) -> NamedResources {
    for resource in resources.values_mut() {
        if let Resource::Llm(llm) | Resource::ProxyLlm(llm) = resource {
            llm.api_key = None;
        }
    }
    resources
}

async fn enqueue(selector: u8, args: &[String]) {
    let Some(request) = enqueue_request(selector, args) else {
        return;
    };
    let (store, clock) = memory_store_with_clock();
    let enqueued = store
        .enqueue_rollouts(vec![request])
        .await
        .expect("a valid rollout enqueues");
    let rollout = &enqueued[0];
    let input_json = rollout.input.to_string();
    let again: serde_json::Value = serde_json::from_str(&input_json).expect("input-json parses again");
    assert_eq!(again, rollout.input, "input-json changed on its way back");
    assert_invariants(&store);

    let outcome = if selector & 0x10 == 0 {
        AttemptStatus::Failed
    } else {
        AttemptStatus::Succeeded
    };
    for _ in 0..3 {
        let Some(dequeued) = store.dequeue_rollout(Some("w")).await.expect("dequeue") else {
            break;
        };
        assert_invariants(&store);
        if selector & 0x20 == 0 {
            store
                .update_attempt(
                    &dequeued.rollout.rollout_id,
                    AttemptRef::Latest,
                    AttemptUpdate::status(outcome),
                )
                .await
                .expect("end the attempt");
        } else {
            clock.advance(1e12);
            store.run_watchdog();
        }
        assert_invariants(&store);
    }
    let _ = store.statistics().await;
}

async fn resources(args: &[String]) {
    let Some(first) = args.first() else {
        return;
    };
    let Ok(parsed) = serde_json::from_str::<NamedResources>(first) else {
        return;
    };
    let (store, _clock) = memory_store_with_clock();
    let added = store.add_resources(parsed.clone()).await.expect("add resources");
    let shown = serde_json::to_string(&shown_to_guest(added.resources)).expect("resources serialise");
    let back: NamedResources = serde_json::from_str(&shown).expect("resources-json parses again");
    assert_eq!(back, shown_to_guest(parsed), "resources changed on their way back");
    if let Some(Ok(update)) = args.get(1).map(|text| serde_json::from_str::<NamedResources>(text)) {
        let updated = store
            .update_resources(&added.resources_id, update)
            .await
            .expect("update existing resources");
        assert_eq!(updated.version, 2);
    }
    let _ = store.get_latest_resources().await.expect("latest resources");
    assert_invariants(&store);
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let args = fields(rest, 3);
    let rt = runtime();
    rt.block_on(async {
        match selector % 2 {
            0 => enqueue(selector >> 1, &args).await,
            _ => resources(&args).await,
        }
    });
});
