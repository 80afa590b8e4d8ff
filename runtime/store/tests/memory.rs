//! The store's conformance suite (`tests/conformance/`: the status machine, behaviour, property
//! tests) on the in-memory backend. Other backends run the same files (see `agl-store-db`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test: a failed step panics and fails it"
)]

mod common;

use agl_store::*;
use std::sync::Arc;
use std::time::Duration;

/// Random operation sequences the property test tries.
pub const PROPERTY_CASES: u32 = 512;

/// A store whose time moves only when the test says so, with no background tick.
pub fn manual_store() -> (Arc<dyn StoreBackend>, ManualClock) {
    let clock = ManualClock::new(common::T0);
    let store = InMemoryLightningStore::with_options(StoreOptions {
        watchdog_interval: None,
        clock: Arc::new(clock.clone()),
    });
    (Arc::new(store), clock)
}

/// A store on the system clock, with this background watchdog tick (needs a Tokio runtime).
pub fn live_store(watchdog_interval: Option<Duration>) -> Arc<dyn StoreBackend> {
    Arc::new(InMemoryLightningStore::with_options(StoreOptions {
        watchdog_interval,
        ..StoreOptions::default()
    }))
}

mod transitions {
    include!("conformance/transitions.rs");
}

mod behaviour {
    include!("conformance/behaviour.rs");
}

mod properties {
    include!("conformance/properties.rs");
}
