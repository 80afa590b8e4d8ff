//! Helpers for the host workspace's tests, used only as a dev-dependency
//! (`agl-testkit = { path = "../testkit" }` under `[dev-dependencies]`): [`postgres`] gives each
//! test process one throwaway PostgreSQL server and each test a fresh database on it;
//! [`browser`] gives a test a headless Chromium driven over WebDriver, with screenshots;
//! [`prometheus`] reads a `GET /metrics` answer into its samples; [`llm_server`] is a mock
//! OpenAI endpoint (scripted answers, injected faults and delays). Nothing here is built into
//! `agl-host`.
//!
//! # A test that did not run never says ok
//!
//! Finding the tools is `agl-test-tools`'s. A test that needs one carries [`needs`] (its crate's
//! build script calls `agl_test_tools::emit_cfgs`): without the tool it is *ignored*, with the
//! reason, in `cargo test`'s summary; under `CI=true` it runs. Once running, [`postgres::server`],
//! [`browser::Browser::start`] and [`c_tools`] return the tool or panic with what is missing:
//! a test never returns early, and never runs on another backend instead.
//! A test on each store backend is [`each_backend`] over [`Backend`], the one list of backends.

// Test support: a helper that cannot give a test what it needs fails that test, by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod browser;
pub mod llm_server;
pub mod postgres;
pub mod prometheus;

pub use agl_test_macros::{each_backend, needs};
pub use agl_test_tools::{Tool, ci};

use std::path::PathBuf;

/// A store backend a test runs on: [`each_backend`] stamps a test per variant, from the list in
/// `agl_test_tools::BACKENDS` (PostgreSQL's needs `agl_has_postgres`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The in-memory store (`--db memory`).
    Memory,
    /// A SQLite file.
    Sqlite,
    /// A database on the test process's throwaway PostgreSQL server ([`postgres::server`]).
    Postgres,
}

impl Backend {
    /// Every backend, in `agl_test_tools::BACKENDS`'s order.
    pub const ALL: [Backend; 3] = [Backend::Memory, Backend::Sqlite, Backend::Postgres];

    /// The name of its test (`name::memory`...).
    pub fn name(self) -> &'static str {
        match self {
            Backend::Memory => "memory",
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// In place of `test` and `tokio` in a suite written for any backend (the store's conformance
/// suite), so that its `#[test]` and `#[tokio::test]` need PostgreSQL:
/// `use agl_testkit::needs_postgres::{test, tokio};` before the suite's `include!`.
pub mod needs_postgres {
    pub use agl_test_macros::postgres_test as test;

    /// The `tokio` crate, but for its `test` attribute, which needs PostgreSQL.
    pub mod tokio {
        pub use ::tokio::*;
        pub use agl_test_macros::postgres_tokio_test as test;
    }
}

/// The C toolchain for C agents (clang, lld, a WASI libc), found by `agl-test-tools`.
///
/// # Panics
/// When it is not there, with what is missing: a test that needs it carries
/// `#[needs(c_toolchain)]`, and is ignored rather than run without it (except under `CI=true`).
pub fn c_tools() -> agl_test_tools::c::CTools {
    agl_test_tools::c::find().unwrap_or_else(|reason| panic!("{}", missing(Tool::CToolchain, &reason)))
}

/// The panic message of a test that runs without the tool it needs.
pub(crate) fn missing(tool: Tool, reason: &str) -> String {
    if ci() {
        format!("CI=true, so every tool tests need must be installed (.ci/run installs them): {reason}")
    } else {
        format!(
            "{reason} (this test {}; it ran because it was built where the tool was found, or with \
             --include-ignored)",
            tool.ignore_reason()
        )
    }
}

/// The `target` folder of the build that made this executable: the nearest folder above it
/// holding cargo's `CACHEDIR.TAG`, else (a `target` that existed before cargo first wrote into it
/// has no tag, e.g. one `cargo install --root target/tools` made) the folder above the profile's
/// (`target/<profile>/deps/<test>` or `target/<triple>/<profile>/deps/<test>`).
pub fn target_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let tagged = exe.ancestors().skip(1).find(|dir| dir.join("CACHEDIR.TAG").is_file());
    let above_profile = || {
        let profile = exe.parent().filter(|deps| deps.ends_with("deps"))?.parent()?;
        let above = profile.parent()?;
        match above.file_name()?.to_str()? {
            name if name.contains('-') && above.parent()?.join(profile.file_name()?).is_dir() => above.parent(),
            _ => Some(above),
        }
    };
    tagged.or_else(above_profile).map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::Backend;

    #[test]
    fn the_backends_are_the_list_the_attribute_stamps() {
        let names: Vec<&str> = Backend::ALL.iter().map(|backend| backend.name()).collect();
        let listed: Vec<&str> = agl_test_tools::BACKENDS.iter().map(|(name, _, _)| *name).collect();
        assert_eq!(names, listed);
        for (backend, (_, variant, _)) in Backend::ALL.iter().zip(agl_test_tools::BACKENDS) {
            assert_eq!(format!("{backend:?}"), variant);
        }
    }
}
