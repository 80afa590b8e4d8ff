//! Builds guests into components: any guest folder — Rust, Python, JavaScript — into the user's
//! cache ([`build_folder`], for `agl-host --agent DIR` and `agl-host build`); and guest crates
//! (agents, algorithms, the hostile test guests) into `wasm32-wasip2`
//! components with a nested `cargo build --release`: the repository's guests into one shared
//! target directory (for the tests, benchmarks and CI, and for `agl-host`'s build script, which
//! embeds the built-in algorithms), a user's crate into a cache directory ([`build_cached`], for
//! `agl-host --agent DIR`). Holds the one list of the repository's guest crates ([`GUESTS`]). It
//! knows nothing of wasmtime.
//!
//! Safe to call from parallel test threads and processes: calls in one process take turns (and a
//! crate built once is not rebuilt in that process), and cargo's own lock on the target directory
//! serializes processes.

mod cache;
pub mod embedded;
mod env;
mod error;
mod fingerprint;
mod folder;
mod js;
mod manifest;
mod naming;
mod python;
mod tool;

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, PoisonError};

pub use cache::build_cached;
pub use error::GuestBuildError;
pub use folder::{GuestLanguage, build_folder, build_folder_noting, detect};
pub use manifest::{CrateNames, crate_names};
pub use naming::component_name;

/// The Rust target guests are built for.
pub const GUEST_TARGET: &str = "wasm32-wasip2";

/// What a guest crate builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestKind {
    /// A component (`crate-type = ["cdylib"]`): an agent, an algorithm or a test guest.
    Component,
    /// A library the components use (an SDK).
    Library,
}

/// A guest crate of the repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Guest {
    /// Its directory, relative to the repository root.
    pub dir: &'static str,
    pub kind: GuestKind,
}

const fn component(dir: &'static str) -> Guest {
    Guest {
        dir,
        kind: GuestKind::Component,
    }
}

const fn library(dir: &'static str) -> Guest {
    Guest {
        dir,
        kind: GuestKind::Library,
    }
}

/// Every guest crate of the repository: the one list that the tests, `agl-guest-build` and CI
/// (`agl-guest-build --list`, for the guests' format, lint and test gates) read.
pub const GUESTS: &[Guest] = &[
    library("sdk/rust"),
    library("sdk/rust-algorithm"),
    component("examples/math-agent"),
    component("examples/classifier-agent"),
    component("examples/tool-agent"),
    component("examples/rl-cpu/agent-rs"),
    component("examples/gepa-two-prompts"),
    component("tests/guests/probe"),
    component("tests/guests/http-probe"),
    component("tests/guests/proxy-agent"),
    component("tests/guests/wrong-world"),
    component("plugins/baseline"),
    component("plugins/apo"),
    component("plugins/gepa"),
    component("plugins/gepa/bench/agent"),
];

/// The directories of the component crates of [`GUESTS`].
pub fn components() -> impl Iterator<Item = &'static str> {
    GUESTS
        .iter()
        .filter(|guest| guest.kind == GuestKind::Component)
        .map(|guest| guest.dir)
}

/// The repository root (two levels above this crate).
pub fn repo_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .ancestors()
        .nth(2)
        .map_or_else(|| manifest_dir.join("../.."), Path::to_path_buf)
}

/// The one target directory all guests share: `<repo>/target/wasm-guests`.
pub fn guest_target_dir() -> PathBuf {
    repo_root().join("target").join("wasm-guests")
}

/// Where cargo writes the component whose artifact name is `artifact` (e.g. `math_agent`).
pub fn component_path(target_dir: &Path, artifact: &str) -> PathBuf {
    target_dir
        .join(GUEST_TARGET)
        .join("release")
        .join(format!("{artifact}.wasm"))
}

/// Builds the guest crate in `crate_dir` (release, `wasm32-wasip2`) into the repository's shared
/// [`guest_target_dir`] and returns its `.wasm` component. Cargo's output is kept and shown only
/// when the build fails.
pub fn build(crate_dir: &Path) -> Result<PathBuf, GuestBuildError> {
    build_into(crate_dir, &guest_target_dir(), false)
}

/// [`build`], echoing cargo's progress to this process's stderr as it comes.
pub fn build_echoing(crate_dir: &Path) -> Result<PathBuf, GuestBuildError> {
    build_into(crate_dir, &guest_target_dir(), true)
}

/// Builds the guest crate at `relative` to the repository root (one of [`GUESTS`], say).
pub fn build_guest(relative: &str) -> Result<PathBuf, GuestBuildError> {
    build(&repo_root().join(relative))
}

/// Components built by this process, by (canonical crate directory, target directory). Its lock
/// is held for a whole build, so the calls of one process take turns.
static BUILT: Mutex<Option<HashMap<(PathBuf, PathBuf), PathBuf>>> = Mutex::new(None);

/// Builds the guest crate in `crate_dir` with `target_dir` as cargo's target directory and returns
/// the component's path inside it (`<target_dir>/wasm32-wasip2/release/<artifact>.wasm`). With
/// `echo`, cargo's progress is copied to this process's stderr as it comes.
pub fn build_into(crate_dir: &Path, target_dir: &Path, echo: bool) -> Result<PathBuf, GuestBuildError> {
    let names = read_names(crate_dir)?;
    let key = canonical(crate_dir);
    let mut built = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
    let memo_key = (key.clone(), target_dir.to_path_buf());
    if let Some(path) = built.as_ref().and_then(|map| map.get(&memo_key)) {
        return Ok(path.clone());
    }
    let path = build_now(&key, &names, target_dir, echo)?;
    built.get_or_insert_with(HashMap::new).insert(memo_key, path.clone());
    Ok(path)
}

/// The package and artifact names of the guest crate in `crate_dir`.
pub(crate) fn read_names(crate_dir: &Path) -> Result<CrateNames, GuestBuildError> {
    let manifest = crate_dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).map_err(|source| GuestBuildError::Manifest {
        crate_dir: crate_dir.to_path_buf(),
        manifest: manifest.clone(),
        source,
    })?;
    crate_names(&text).ok_or(GuestBuildError::NoPackageName { manifest })
}

/// `dir` with symlinks and `..` resolved, when it exists.
pub(crate) fn canonical(dir: &Path) -> PathBuf {
    dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf())
}

/// Runs cargo for the crate in `crate_dir` (named `names`) and returns its component's path in
/// `target_dir`, whatever this process built before.
pub(crate) fn build_now(
    crate_dir: &Path,
    names: &CrateNames,
    target_dir: &Path,
    echo: bool,
) -> Result<PathBuf, GuestBuildError> {
    run_cargo(
        crate_dir,
        &crate_dir.join("Cargo.toml"),
        &names.package,
        target_dir,
        echo,
    )?;
    let path = component_path(target_dir, &names.artifact);
    if !path.is_file() {
        return Err(GuestBuildError::MissingArtifact {
            crate_name: names.package.clone(),
            path,
        });
    }
    Ok(path)
}

/// Runs `cargo build --release --target wasm32-wasip2` for one crate with a cleaned environment.
fn run_cargo(
    crate_dir: &Path,
    manifest: &Path,
    crate_name: &str,
    target_dir: &Path,
    echo: bool,
) -> Result<(), GuestBuildError> {
    // The parent's cargo (tests run under `cargo test`) is the toolchain's own; otherwise the rustup
    // proxy, run from the crate directory so that the repository's rust-toolchain.toml applies.
    let program = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let mut command = Command::new(&program);
    command
        .current_dir(crate_dir)
        .args(["build", "--release", "--target", GUEST_TARGET, "--manifest-path"])
        .arg(manifest)
        .arg("--target-dir")
        .arg(target_dir);
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(env::is_inherited_build_var) {
            command.env_remove(&name);
        }
    }
    let (status, stderr) = tool::run_streaming(&mut command, echo, |source| GuestBuildError::Spawn {
        program: program.to_string_lossy().into_owned(),
        crate_name: crate_name.to_string(),
        source,
    })?;
    if status.success() {
        return Ok(());
    }
    let stderr_tail = error::stderr_tail(&stderr);
    if error::target_missing(&stderr) {
        return Err(GuestBuildError::TargetNotInstalled {
            crate_name: crate_name.to_string(),
            stderr_tail,
        });
    }
    Err(GuestBuildError::Compile {
        crate_name: crate_name.to_string(),
        crate_dir: crate_dir.to_path_buf(),
        status,
        stderr_tail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repo_root_holds_the_workspace_and_the_wit() {
        let root = repo_root();
        assert!(root.join("Cargo.toml").is_file());
        assert!(root.join("wit").join("agent.wit").is_file());
        assert!(root.join("runtime").join("guest-build").join("Cargo.toml").is_file());
    }

    #[test]
    fn guests_share_one_target_dir_under_target() {
        assert_eq!(guest_target_dir(), repo_root().join("target/wasm-guests"));
        assert_eq!(
            component_path(Path::new("/t"), "math_agent"),
            Path::new("/t/wasm32-wasip2/release/math_agent.wasm")
        );
    }

    #[test]
    fn every_listed_guest_is_a_standalone_crate() {
        for guest in GUESTS {
            let text = std::fs::read_to_string(repo_root().join(guest.dir).join("Cargo.toml"))
                .unwrap_or_else(|e| panic!("{}: {e}", guest.dir));
            assert!(
                text.lines().any(|l| l.trim() == "[workspace]"),
                "{}: needs its own empty [workspace]",
                guest.dir
            );
        }
    }

    #[test]
    fn every_listed_component_is_a_cdylib_crate() {
        for guest in components() {
            let manifest = repo_root().join(guest).join("Cargo.toml");
            let text = std::fs::read_to_string(&manifest).unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
            let names = crate_names(&text).unwrap_or_else(|| panic!("{guest}: no package name"));
            assert!(!names.artifact.contains('-'), "{guest}");
            assert!(
                text.contains("crate-type = [\"cdylib\"]"),
                "{guest}: needs crate-type = [\"cdylib\"]"
            );
        }
    }

    #[test]
    fn guest_artifact_names_are_unique() {
        let mut artifacts: Vec<String> = components()
            .filter_map(|guest| std::fs::read_to_string(repo_root().join(guest).join("Cargo.toml")).ok())
            .filter_map(|text| crate_names(&text).map(|n| n.artifact))
            .collect();
        let listed = artifacts.len();
        artifacts.sort();
        artifacts.dedup();
        assert_eq!(
            artifacts.len(),
            listed,
            "two guests would write the same .wasm in the shared target dir"
        );
    }

    #[test]
    fn a_directory_without_manifest_is_reported() {
        let err = build(Path::new("/nonexistent/guest")).unwrap_err();
        assert!(matches!(err, GuestBuildError::Manifest { .. }));
        assert!(
            err.to_string().starts_with("/nonexistent/guest is not a guest crate"),
            "{err}"
        );
    }
}
