//! Helpers for the host workspace's tests, used only as a dev-dependency
//! (`agl-testkit = { path = "../testkit" }` under `[dev-dependencies]`): [`postgres`] gives each
//! test process one throwaway PostgreSQL server and each test a fresh database on it. Nothing here
//! is built into `agl-host`.

pub mod postgres;
