//! The WASM host's integration tests, in one binary (each test binary links wasmtime, which is
//! the costly part of building them): the example agents end to end, and hostile guests against
//! the sandbox (outgoing HTTP to a loopback server among them).

mod budgets;
mod common;
mod examples;
mod http;
mod pool;
mod sandbox;
mod versions;
