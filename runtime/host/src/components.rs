//! Loading the components of a command: a guest folder is built into the user's cache first
//! (and the built component's path printed, and why it was built when it was: `rebuilding
//! agent: src/lib.rs changed`); the agent gets its sandbox (manifest — a folder's own
//! `agent.toml`, else the one beside the `.wasm` — then flags),
//! the algorithm (a file, a folder or a built-in) its own; the engine is sized for them; and a
//! component that uses the LLM is refused when none is configured. Problems are input errors
//! (exit 2).

use crate::args::LlmArgs;
use crate::inputs::{ComponentSource, InputError};
use crate::output::stderr_line;
use agl_wasm::pool::ComponentShape;
use agl_wasm::{AgentComponent, AlgorithmComponent, EngineOptions, Loaded, SandboxOptions, SandboxPolicy, WasmHost};
use anyhow::Context;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// An agent found, built and given its sandbox, not yet loaded.
pub struct AgentPlan {
    /// The `.wasm` file (in the cache when a guest folder was given).
    pub path: PathBuf,
    pub policy: SandboxPolicy,
    bytes: Vec<u8>,
    /// What one instance takes from the engine's pool.
    pub shape: ComponentShape,
}

/// An algorithm found (built in, a file, or a folder built into the cache), not yet loaded.
pub struct AlgorithmPlan {
    name: String,
    bytes: Cow<'static, [u8]>,
    policy: SandboxPolicy,
    /// What one instance takes from the engine's pool.
    pub shape: ComponentShape,
}

/// The bytes of a component file and their shape.
fn read_component(path: &Path) -> Result<(Vec<u8>, ComponentShape), InputError> {
    let bytes = std::fs::read(path).map_err(|e| InputError(format!("cannot read {}: {e}", path.display())))?;
    let shape = ComponentShape::of(&bytes, &file_name(path)).map_err(|e| InputError(e.to_string()))?;
    Ok((bytes, shape))
}

pub fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// Where guest folders are built: `<cache dir>/guests` (`$AGL_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/agl-host`, else `~/.cache/agl-host`).
fn guest_cache_dir() -> Result<PathBuf, InputError> {
    agl_wasm::cache::default_cache_dir()
        .map(|dir| dir.join("guests"))
        .ok_or_else(|| InputError("no cache directory to build guests in: set AGL_CACHE_DIR (or HOME)".to_owned()))
}

/// Builds the guest folder `dir` (any language) into the cache when its build inputs changed,
/// saying so on stderr before and after (and that it is up to date when they did not); `role`
/// ("agent", "algorithm", "guest") names it in the messages.
pub fn build_guest_folder(dir: &Path, role: &str) -> Result<PathBuf, InputError> {
    let c = crate::c_folder::is_c_folder(dir);
    let language = agl_guest_build::detect(dir).map_or(if c { "C" } else { "guest" }, |l| l.name());
    let building = || stderr_line(&format!("building the {role} {} ({language}) ...", dir.display()));
    let mut built = false;
    let path = if c {
        building();
        built = true;
        crate::c_folder::build(dir, &guest_cache_dir()?)?
    } else {
        // Said only when the folder is built: a folder whose build inputs did not change is
        // taken from the cache, and the line below says so.
        let mut note = |why: &str| {
            building();
            built = true;
            let verb = if why == "first build" { "building" } else { "rebuilding" };
            stderr_line(&format!("{verb} {role}: {why}"));
        };
        agl_guest_build::build_folder_noting(dir, &guest_cache_dir()?, false, &mut note)
            .map_err(|e| InputError(format!("cannot build the {role} {}: {e}", dir.display())))?
    };
    let size = human_size(std::fs::metadata(&path).map_or(0, |m| m.len()));
    let (shown_dir, shown_path) = (dir.display(), path.display());
    if built {
        stderr_line(&format!("built {role} {shown_dir} -> {shown_path} ({size})"));
    } else {
        stderr_line(&format!("{role} {shown_dir} is up to date -> {shown_path} ({size})"));
    }
    Ok(path)
}

/// `size` bytes for a person: "209 KB", "18.4 MB".
fn human_size(size: u64) -> String {
    // An f64 holds any file size closely enough for one decimal.
    #[allow(clippy::cast_precision_loss)]
    let (kb, mb) = (size as f64 / 1e3, size as f64 / 1e6);
    if mb >= 1.0 {
        format!("{mb:.1} MB")
    } else {
        format!("{kb:.0} KB")
    }
}

/// The `.wasm` file of a file or folder source; a folder is built into the cache first.
fn component_file(source: &ComponentSource, role: &str) -> Result<PathBuf, InputError> {
    match source {
        ComponentSource::File(path) => Ok(path.clone()),
        ComponentSource::Folder(dir) => build_guest_folder(dir, role),
        ComponentSource::Builtin(algorithm) => Err(InputError(format!(
            "`{}` is a built-in algorithm, not an {role}",
            algorithm.name
        ))),
    }
}

/// Refuses a component that calls the LLM (imports `llm.chat`, not only the interface's types)
/// when no LLM is configured: every run of it would fail.
pub fn require_llm(component: &Loaded, role: &str, llm: &LlmArgs) -> Result<(), InputError> {
    if component.uses_llm() && !llm.is_configured() {
        return Err(InputError(format!(
            "the {role} {} uses the LLM (it imports agl:agent/llm) but no LLM is configured: \
             add --llm-script RULES.json (offline, scripted answers) or --llm-endpoint URL --llm-model MODEL",
            component.name()
        )));
    }
    Ok(())
}

/// A WebAssembly engine for `instances` concurrent instances of components no larger than
/// `shape` (fuel metering when `fuel`).
pub fn engine(fuel: bool, instances: u32, shape: ComponentShape) -> anyhow::Result<WasmHost> {
    let options = EngineOptions {
        fuel,
        max_concurrent_instances: instances,
        instance_shape: shape.max(ComponentShape::default()),
        ..EngineOptions::default()
    };
    WasmHost::new(options).context("starting the WebAssembly engine")
}

/// The sandbox manifest of a component: a guest folder's own `<role>.toml` (`agent.toml`,
/// `algorithm.toml`: the built `.wasm` in the cache has a hashed name no one writes beside), else
/// the file beside the `.wasm` (`x.wasm` → `x.toml`).
pub fn manifest_path(source: &ComponentSource, component: &Path, role: &str) -> PathBuf {
    match source {
        ComponentSource::Folder(dir) => dir.join(format!("{role}.toml")),
        _ => SandboxPolicy::manifest_path(component),
    }
}

/// Builds the agent (if a folder) and sets its sandbox: its manifest, then the flags.
pub fn plan_agent(source: &ComponentSource, flags: &SandboxOptions) -> anyhow::Result<AgentPlan> {
    let path = component_file(source, "agent")?;
    let mut policy = SandboxPolicy::default();
    policy
        .apply_manifest_file(&manifest_path(source, &path, "agent"))
        .map_err(|e| InputError(e.to_string()))?;
    policy.apply(flags.clone());
    let (bytes, shape) = read_component(&path)?;
    Ok(AgentPlan {
        path,
        policy,
        bytes,
        shape,
    })
}

/// Loads the planned agent into `host`.
pub fn load_agent(host: &WasmHost, plan: &AgentPlan) -> anyhow::Result<AgentComponent> {
    Ok(host
        .load_agent_bytes(&plan.bytes, &file_name(&plan.path), plan.policy.clone())
        .map_err(|e| InputError(e.to_string()))?)
}

/// Finds (builds, if a folder) an algorithm and sets its sandbox; it shares the agent's LLM
/// timeout flag.
pub fn plan_algorithm(source: &ComponentSource, flags: &SandboxOptions) -> anyhow::Result<AlgorithmPlan> {
    let (name, bytes, mut policy) = match source {
        ComponentSource::Builtin(algorithm) => (
            algorithm.name.to_owned(),
            Cow::Borrowed(algorithm.component),
            SandboxPolicy::algorithm_defaults(),
        ),
        ComponentSource::File(_) | ComponentSource::Folder(_) => {
            let path = component_file(source, "algorithm")?;
            let mut policy = SandboxPolicy::algorithm_defaults();
            policy
                .apply_manifest_file(&manifest_path(source, &path, "algorithm"))
                .map_err(|e| InputError(e.to_string()))?;
            let (bytes, _) = read_component(&path)?;
            (file_name(&path), Cow::Owned(bytes), policy)
        }
    };
    policy.apply(flags.shared_with_algorithm());
    let shape = ComponentShape::of(&bytes, &name).map_err(|e| InputError(e.to_string()))?;
    Ok(AlgorithmPlan {
        name,
        bytes,
        policy,
        shape,
    })
}

/// Loads the planned algorithm into `host`.
pub fn load_algorithm(host: &WasmHost, plan: &AlgorithmPlan) -> anyhow::Result<AlgorithmComponent> {
    Ok(host
        .load_algorithm_bytes(&plan.bytes, &plan.name, plan.policy.clone())
        .map_err(|e| InputError(e.to_string()))?)
}
