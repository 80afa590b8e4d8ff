//! The store's conformance suite (`runtime/store/tests/conformance/`: the status machine,
//! behaviour, property tests) on the SQLite backend, each test on a fresh database file.

#[path = "../../store/tests/common/mod.rs"]
mod common;

use agl_store::*;
use agl_store_db::SqliteLightningStore;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A fresh database file under the build's `target/tmp`.
fn fresh_path() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("agl-sqlite-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir.join(format!("store-{}.db", NEXT.fetch_add(1, Ordering::Relaxed)))
}

/// Random operation sequences the property test tries.
pub const PROPERTY_CASES: u32 = 64;

/// A store whose time moves only when the test says so, with no background tick.
pub fn manual_store() -> (Arc<dyn StoreBackend>, ManualClock) {
    let clock = ManualClock::new(common::T0);
    let store = SqliteLightningStore::open(
        &fresh_path(),
        StoreOptions {
            watchdog_interval: None,
            clock: Arc::new(clock.clone()),
        },
    )
    .expect("SQLite store");
    (Arc::new(store), clock)
}

/// A store on the system clock, with this background watchdog tick (needs a Tokio runtime).
pub fn live_store(watchdog_interval: Option<Duration>) -> Arc<dyn StoreBackend> {
    Arc::new(
        SqliteLightningStore::open(
            &fresh_path(),
            StoreOptions {
                watchdog_interval,
                ..StoreOptions::default()
            },
        )
        .expect("SQLite store"),
    )
}

mod transitions {
    include!("../../store/tests/conformance/transitions.rs");
}

mod behaviour {
    include!("../../store/tests/conformance/behaviour.rs");
}

mod properties {
    include!("../../store/tests/conformance/properties.rs");
}
