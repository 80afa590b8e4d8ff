//! Helpers shared by the fuzz targets in `fuzz_targets/`: splitting one fuzzer input into
//! fields, and the small async world (a current-thread Tokio runtime with paused time, an
//! in-memory store with a manual clock) the store-facing targets run in.

use agl_store::{InMemoryLightningStore, InMemoryOptions, ManualClock};
use std::sync::Arc;

/// Splits `data` at NUL bytes into at most `n` fields (the last one keeps any further NULs), as
/// UTF-8 text with invalid sequences replaced: the parsers under test take `&str`.
pub fn fields(data: &[u8], n: usize) -> Vec<String> {
    data.splitn(n, |&b| b == 0)
        .map(|field| String::from_utf8_lossy(field).into_owned())
        .collect()
}

/// A current-thread runtime whose clock is paused: a wait with a long timeout ends as soon as
/// nothing else can run (Tokio advances paused time to the next timer), so no input can hang
/// the fuzzer on a `wait_for_rollouts`.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread Tokio runtime")
}

/// A fresh in-memory store with no background watchdog and a manual clock, so that every run
/// of an input sees the same store.
pub fn memory_store() -> Arc<InMemoryLightningStore> {
    memory_store_with_clock().0
}

/// [`memory_store`] with a handle on its clock, to let the watchdog's deadlines pass.
pub fn memory_store_with_clock() -> (Arc<InMemoryLightningStore>, ManualClock) {
    let clock = ManualClock::new(1_700_000_000.0);
    let store = InMemoryLightningStore::with_options(InMemoryOptions {
        watchdog_interval: None,
        clock: Arc::new(clock.clone()),
    });
    (Arc::new(store), clock)
}

/// Fails the run when the store's internal invariants no longer hold.
pub fn assert_invariants(store: &InMemoryLightningStore) {
    if let Err(broken) = store.check_state_invariants() {
        panic!("store invariants broken: {broken}");
    }
}
