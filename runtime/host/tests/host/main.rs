//! The WASM host's integration tests, in one binary (each test binary links wasmtime, which is
//! the costly part of building them): the example agents end to end, and hostile guests against
//! the sandbox.

mod budgets;
mod common;
mod examples;
mod pool;
mod sandbox;
mod versions;
