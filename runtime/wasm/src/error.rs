//! Errors of loading and preparing components (running one never errors: it has an outcome).

use std::path::PathBuf;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum HostError {
    #[error("cannot read component {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("{name} is not a valid WebAssembly component: {message}")]
    Compile { name: String, message: String },
    #[error(
        "{name} does not implement the agl:agent/{world} world (it must export what the world exports and may only import agl:agent and WASI interfaces): {message}"
    )]
    WrongWorld {
        name: String,
        world: &'static str,
        message: String,
    },
    #[error("cannot set up the wasmtime engine: {0}")]
    Engine(String),
}
