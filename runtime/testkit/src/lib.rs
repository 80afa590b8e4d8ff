//! Helpers for the host workspace's tests, used only as a dev-dependency
//! (`agl-testkit = { path = "../testkit" }` under `[dev-dependencies]`): [`postgres`] gives each
//! test process one throwaway PostgreSQL server and each test a fresh database on it;
//! [`browser`] gives a test a headless Chromium driven over WebDriver, with screenshots;
//! [`prometheus`] reads a `GET /metrics` answer into its samples. Nothing here is built into
//! `agl-host`.

pub mod browser;
pub mod postgres;
pub mod prometheus;

use std::path::PathBuf;

/// The `target` folder of the build that made this executable: the nearest folder above it
/// holding cargo's `CACHEDIR.TAG`.
pub fn target_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    exe.ancestors()
        .skip(1)
        .find(|dir| dir.join("CACHEDIR.TAG").is_file())
        .map(PathBuf::from)
}
