//! The clock slice: virtual, per-attempt clocks (the default) or the host's real ones. The
//! clocks themselves are the host's (`clocks.rs`).

use crate::{Layer, set};
use serde::Deserialize;

/// Which clocks the guest reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Clock {
    /// Give the guest the real wall and monotonic clocks instead of the virtual ones.
    pub real: bool,
}

/// The clock as a manifest (`real-clock = true`) or the flags set it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, clap::Args)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ClockOptions {
    /// Give the agent the real clocks instead of virtual, per-attempt ones.
    #[arg(long = "agent-real-clock", num_args = 0, default_missing_value = "true")]
    pub real_clock: Option<bool>,
}

impl Layer for ClockOptions {
    type Policy = Clock;
    fn apply(self, clock: &mut Clock) {
        set(&mut clock.real, self.real_clock);
    }
}
