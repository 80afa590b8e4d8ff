//! Applies a [`SandboxPolicy`] to a fresh per-attempt WASI context: nothing but what is granted.
//! No args; env only as granted; preopens only as granted (read-only unless `rw`); no sockets or
//! name lookups; stdout/stderr captured into bounded buffers; virtual clocks (real ones only by
//! grant) and a random source seeded from the attempt.

use crate::clocks::{VirtualTime, seeded_rng};
use crate::output::CappedPipe;
use crate::policy::{DirAccess, SandboxPolicy};
use std::time::Duration;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder};

/// The WASI side of one attempt, plus handles to what it prints.
pub struct AttemptWasi {
    pub ctx: WasiCtx,
    pub stdout: CappedPipe,
    pub stderr: CappedPipe,
}

/// Builds the WASI context of one attempt. `start` is the attempt's recorded start time (the
/// virtual wall clock begins there); `seed` seeds both random sources.
pub fn attempt_wasi(policy: &SandboxPolicy, start: Duration, seed: u64) -> anyhow::Result<AttemptWasi> {
    let stdout = CappedPipe::new(policy.output_capture_bytes);
    let stderr = CappedPipe::new(policy.output_capture_bytes);
    let mut builder = WasiCtxBuilder::new();
    builder.stdout(stdout.clone()).stderr(stderr.clone());
    builder.allow_tcp(false).allow_udp(false).allow_ip_name_lookup(false);
    for (name, value) in &policy.env {
        builder.env(name, value);
    }
    for grant in &policy.dirs {
        let perms = match grant.access {
            DirAccess::ReadOnly => FsPerms::ReadOnly,
            DirAccess::ReadWrite => FsPerms::ReadWrite,
        };
        builder
            .preopened_dir(&grant.host_path, &grant.guest_path, perms)
            .map_err(|e| anyhow::anyhow!("cannot grant {}: {e}", grant.host_path.display()))?;
    }
    if !policy.real_clock {
        let time = VirtualTime::starting_at(start);
        builder
            .wall_clock(time.wall_clock())
            .monotonic_clock(time.monotonic_clock());
    }
    builder
        .secure_random(seeded_rng(seed))
        .insecure_random(seeded_rng(seed.rotate_left(17)));
    builder.insecure_random_seed(u128::from(seed) << 64 | u128::from(seed.rotate_left(31)));
    Ok(AttemptWasi {
        ctx: builder.build(),
        stdout,
        stderr,
    })
}
