//! Virtual clocks and seeded randomness per attempt, so that an attempt is deterministic given
//! its host-call results: the guest's wall clock starts at the attempt's recorded start time and
//! both clocks advance a fixed step per reading; its random source is seeded from the attempt.
//! Real clocks (by grant) are read through the attempt's tape, which keeps each reading.

use crate::capabilities::tape::{Clock, TapeHandle};
use rand::SeedableRng;
use rand::rngs::StdRng;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use wasmtime_wasi::{HostMonotonicClock, HostWallClock};

/// How far virtual time moves on every clock reading.
pub const VIRTUAL_TICK: Duration = Duration::from_micros(100);

/// Virtual time shared by the wall and monotonic clocks of one attempt.
#[derive(Debug, Clone)]
pub struct VirtualTime {
    start_since_epoch: Duration,
    elapsed_nanos: Arc<AtomicU64>,
}

impl VirtualTime {
    pub fn starting_at(start_since_epoch: Duration) -> Self {
        Self {
            start_since_epoch,
            elapsed_nanos: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Advances by one tick and returns the elapsed virtual time.
    fn tick(&self) -> u64 {
        let step = VIRTUAL_TICK.as_nanos() as u64;
        self.elapsed_nanos.fetch_add(step, Ordering::Relaxed) + step
    }

    pub fn wall_clock(&self) -> VirtualWallClock {
        VirtualWallClock(self.clone())
    }

    pub fn monotonic_clock(&self) -> VirtualMonotonicClock {
        VirtualMonotonicClock(self.clone())
    }
}

pub struct VirtualWallClock(VirtualTime);
pub struct VirtualMonotonicClock(VirtualTime);

impl HostWallClock for VirtualWallClock {
    fn resolution(&self) -> Duration {
        VIRTUAL_TICK
    }
    fn now(&self) -> Duration {
        self.0.start_since_epoch + Duration::from_nanos(self.0.tick())
    }
}

impl HostMonotonicClock for VirtualMonotonicClock {
    fn resolution(&self) -> u64 {
        VIRTUAL_TICK.as_nanos() as u64
    }
    fn now(&self) -> u64 {
        self.0.tick()
    }
}

/// The real wall clock, read through the attempt's tape: each reading recorded, or, replayed,
/// the recorded one (`capabilities/tape`).
pub struct TapedWallClock(pub TapeHandle);

/// The real monotonic clock, read through the attempt's tape.
pub struct TapedMonotonicClock(pub TapeHandle);

impl HostWallClock for TapedWallClock {
    fn resolution(&self) -> Duration {
        Duration::from_nanos(1)
    }
    fn now(&self) -> Duration {
        let since_epoch = || {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            u64::try_from(now.as_nanos()).unwrap_or(u64::MAX)
        };
        Duration::from_nanos(self.0.clock_reading(Clock::Wall, since_epoch))
    }
}

impl HostMonotonicClock for TapedMonotonicClock {
    fn resolution(&self) -> u64 {
        1
    }
    fn now(&self) -> u64 {
        self.0.clock_reading(Clock::Monotonic, monotonic_nanos)
    }
}

/// Nanoseconds on the host's monotonic clock since this process first read it.
fn monotonic_nanos() -> u64 {
    static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let origin = *ORIGIN.get_or_init(std::time::Instant::now);
    u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// The guest's random source for an attempt: deterministic from `seed`.
pub fn seeded_rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// The seed of an attempt: stable for the same (rollout, attempt number), different otherwise.
pub fn attempt_seed(rollout_id: &str, attempt_number: u32) -> u64 {
    // FNV-1a: stable across processes and versions, unlike std's SipHash keys.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in rollout_id.bytes().chain(attempt_number.to_le_bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_clocks_are_deterministic_and_move_forward() {
        let readings = |time: VirtualTime| {
            let (wall, mono) = (time.wall_clock(), time.monotonic_clock());
            (wall.now(), mono.now(), wall.now())
        };
        let start = Duration::from_secs(1_800_000_000);
        let a = readings(VirtualTime::starting_at(start));
        let b = readings(VirtualTime::starting_at(start));
        assert_eq!(a, b);
        assert!(a.0 > start && a.2 > a.0);
    }

    #[test]
    fn seeds_are_stable_per_attempt() {
        assert_eq!(attempt_seed("ro-1", 1), attempt_seed("ro-1", 1));
        assert_ne!(attempt_seed("ro-1", 1), attempt_seed("ro-1", 2));
        assert_ne!(attempt_seed("ro-1", 1), attempt_seed("ro-2", 1));
    }
}
