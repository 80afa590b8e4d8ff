//! The WASM host's integration tests, in one binary (each test binary links wasmtime, which is
//! the costly part of building them): the example agents end to end, and hostile guests against
//! the sandbox (outgoing HTTP to a loopback server among them).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test: a failed step panics and fails it"
)]

mod budgets;
mod common;
mod examples;
mod feedback;
mod http;
mod pool;
mod replay;
mod sandbox;
mod versions;
