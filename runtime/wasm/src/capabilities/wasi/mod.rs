//! The WASI capability: a fresh per-instance WASI context with nothing but what is granted. No
//! args; env only as granted; preopens only as granted (read-only unless `rw`); no sockets or
//! name lookups; stdout/stderr captured into bounded buffers; virtual clocks (real ones only by
//! grant, read through the attempt's tape) and a random source seeded from the attempt
//! (`clocks.rs`). What the guest prints is kept
//! by `output.rs`. Policy slices: `grants`, `clock`, `output`.

pub mod clocks;
pub mod output;

use super::{Capability, InstanceContext, InstanceState, Link, SandboxError, World};
use crate::policy::{DirAccess, SandboxPolicy};
use clocks::{TapedMonotonicClock, TapedWallClock, VirtualTime, seeded_rng};
use output::CappedPipe;
use wasmtime::component::Linker;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// The WASI side of one instance, plus handles to what it prints (its resources are in the
/// sandbox's table).
pub struct WasiState {
    ctx: WasiCtx,
    pub stdout: CappedPipe,
    pub stderr: CappedPipe,
}

impl<W: World> Link<W> for WasiState {
    fn link(linker: &mut Linker<InstanceState<W>>) -> wasmtime::Result<()> {
        wasmtime_wasi::p2::add_to_linker_async(linker)
    }
}

impl Capability for WasiState {
    /// `instance.start` is where the virtual wall clock begins; `instance.seed` seeds both
    /// random sources.
    fn prepare(policy: &SandboxPolicy, instance: &InstanceContext) -> Result<Self, SandboxError> {
        let stdout = CappedPipe::new(policy.output.bytes);
        let stderr = CappedPipe::new(policy.output.bytes);
        let mut builder = WasiCtxBuilder::new();
        builder.stdout(stdout.clone()).stderr(stderr.clone());
        builder.allow_tcp(false).allow_udp(false).allow_ip_name_lookup(false);
        for grant in &policy.grants.env {
            builder.env(&grant.name, &grant.value);
        }
        for grant in &policy.grants.dirs {
            let perms = match grant.access {
                DirAccess::ReadOnly => FsPerms::ReadOnly,
                DirAccess::ReadWrite => FsPerms::ReadWrite,
            };
            builder
                .preopened_dir(&grant.host_path, &grant.guest_path, perms)
                .map_err(|e| SandboxError(format!("cannot grant {}: {e}", grant.host_path.display())))?;
        }
        if !policy.clock.real {
            let time = VirtualTime::starting_at(instance.start);
            builder
                .wall_clock(time.wall_clock())
                .monotonic_clock(time.monotonic_clock());
        } else if instance.tape.is_on() {
            builder
                .wall_clock(TapedWallClock(instance.tape.clone()))
                .monotonic_clock(TapedMonotonicClock(instance.tape.clone()));
        }
        let seed = instance.seed;
        builder
            .secure_random(seeded_rng(seed))
            .insecure_random(seeded_rng(seed.rotate_left(17)));
        builder.insecure_random_seed(u128::from(seed) << 64 | u128::from(seed.rotate_left(31)));
        Ok(Self {
            ctx: builder.build(),
            stdout,
            stderr,
        })
    }
}

impl<W: World> WasiView for InstanceState<W> {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.sandbox.wasi.ctx,
            table: &mut self.sandbox.table,
        }
    }
}
