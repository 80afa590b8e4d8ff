//! Loading the components of a command: the agent with its sandbox (manifest, then flags), the
//! algorithm with its own, and the engine sized for them. Problems are input errors (exit 2).

use crate::args::AgentSandboxArgs;
use crate::inputs::{self, InputError};
use crate::sandbox;
use agl_wasm::{AgentComponent, AlgorithmComponent, EngineOptions, PolicyOverrides, SandboxPolicy, WasmHost};
use anyhow::Context;
use std::path::{Path, PathBuf};

/// An agent ready to run, with the engine that runs it.
pub struct LoadedAgent {
    pub host: WasmHost,
    pub agent: AgentComponent,
    /// The `.wasm` file (built first when a crate directory was given).
    pub path: PathBuf,
    pub overrides: PolicyOverrides,
}

pub fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// Resolves and loads the agent; `instances` sizes the engine's pool.
pub fn load_agent(agent: &Path, sandbox_args: &AgentSandboxArgs, instances: u32) -> anyhow::Result<LoadedAgent> {
    let overrides = sandbox::overrides(sandbox_args)?;
    let path = inputs::resolve_component(agent, "agent")?;
    let mut policy = SandboxPolicy::for_component(&path).map_err(|e| InputError(e.to_string()))?;
    policy.apply_overrides(overrides.clone());
    let options = EngineOptions {
        fuel: policy.fuel.is_some(),
        max_concurrent_instances: instances,
        ..EngineOptions::default()
    };
    let host = WasmHost::new(options).context("starting the WebAssembly engine")?;
    let agent = host.load_agent(&path, policy).map_err(|e| InputError(e.to_string()))?;
    Ok(LoadedAgent {
        host,
        agent,
        path,
        overrides,
    })
}

/// Resolves and loads an algorithm into `host`; it shares the agent's LLM timeout flag.
pub fn load_algorithm(
    host: &WasmHost,
    algo: &Path,
    overrides: &PolicyOverrides,
) -> anyhow::Result<(AlgorithmComponent, PathBuf)> {
    let path = inputs::resolve_component(algo, "algorithm")?;
    let mut policy = SandboxPolicy::for_algorithm(&path).map_err(|e| InputError(e.to_string()))?;
    if let Some(timeout) = overrides.llm_timeout {
        policy.llm_timeout = timeout;
    }
    let algorithm = host
        .load_algorithm(&path, policy)
        .map_err(|e| InputError(e.to_string()))?;
    Ok((algorithm, path))
}
