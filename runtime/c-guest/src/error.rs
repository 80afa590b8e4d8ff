//! The one error type of this crate: what went wrong while building a C agent, in words a user
//! can act on (a missing tool names the package to install; a failed compile carries clang's
//! output).

use std::path::PathBuf;
use std::process::ExitStatus;

#[derive(Debug, thiserror::Error)]
pub enum CGuestError {
    /// The WIT could not be read or does not have the world asked for.
    #[error("reading the WIT: {0:#}")]
    Wit(anyhow::Error),
    /// wit-bindgen-c failed on the world.
    #[error("generating the C bindings: {0:#}")]
    Bindings(anyhow::Error),
    /// clang (or its WASI libc) is not installed.
    #[error("{tool} is not usable: {detail}\n  {hint}")]
    ToolMissing { tool: String, detail: String, hint: String },
    /// The folder has no `.c` file at its top level.
    #[error("no .c file in {}", dir.display())]
    NoSources { dir: PathBuf },
    /// clang rejected the code (the user's code is wrong, or the bindings do not match it).
    #[error("clang failed ({status}) building {}:\n{stderr}", dir.display())]
    CompileFailed {
        dir: PathBuf,
        status: ExitStatus,
        stderr: String,
    },
    /// The core module could not be turned into a component (e.g. it exports no `rollout`).
    #[error("making a component of {}: {source:#}", module.display())]
    Componentize { module: PathBuf, source: anyhow::Error },
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
}

impl CGuestError {
    /// An io error on `path`.
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| CGuestError::Io { path, source }
    }
}
