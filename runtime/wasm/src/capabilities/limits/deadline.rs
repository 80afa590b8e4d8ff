//! Wall-clock deadlines for guest code, enforced by epoch interruption — and a guest that computes
//! without calling the host still yields to the async executor every few ticks, so one spinning
//! guest never holds a worker thread of the runtime (timers, signals and other rollouts keep
//! running, and a forced stop can drop the attempt at its next yield).

use std::time::{Duration, Instant};
use wasmtime::{Store, UpdateDeadline};

/// Ticks of guest execution between yields to the executor.
const YIELD_EVERY_TICKS: u64 = 1;

/// Traps the guest (as `Trap::Interrupt`) once `deadline` has passed; yields every tick until then.
pub(crate) fn arm<T: 'static>(store: &mut Store<T>, deadline: Duration) {
    let expires = Instant::now().checked_add(deadline);
    store.set_epoch_deadline(YIELD_EVERY_TICKS);
    store.epoch_deadline_callback(move |_| match expires {
        Some(at) if Instant::now() >= at => Ok(UpdateDeadline::Interrupt),
        _ => Ok(UpdateDeadline::Yield(YIELD_EVERY_TICKS)),
    });
}
