//! Why a guest build failed, in words that say what to do, and the reading of cargo's stderr that
//! tells a missing `wasm32-wasip2` target from a compile error. Each error names the guest crate.

use std::path::PathBuf;
use std::process::ExitStatus;

/// A failed guest build.
#[derive(Debug, thiserror::Error)]
pub enum GuestBuildError {
    /// The directory has no readable `Cargo.toml`.
    #[error("{} is not a guest crate: cannot read {}: {source}", crate_dir.display(), manifest.display())]
    Manifest {
        crate_dir: PathBuf,
        manifest: PathBuf,
        source: std::io::Error,
    },

    /// The manifest has no plain `[package] name = "..."`.
    #[error("{}: no `name = \"...\"` under [package]; guest crates need a plain package name", manifest.display())]
    NoPackageName { manifest: PathBuf },

    /// cargo itself could not be started.
    #[error("cannot run `{program}` to build guest crate {crate_name}: {source} (is the Rust toolchain on PATH?)")]
    Spawn {
        program: String,
        crate_name: String,
        source: std::io::Error,
    },

    /// The toolchain lacks the guest target.
    #[error(
        "cannot build guest crate {crate_name}: the wasm32-wasip2 target is not installed for this toolchain; \
         run `rustup target add wasm32-wasip2`\n{stderr_tail}"
    )]
    TargetNotInstalled { crate_name: String, stderr_tail: String },

    /// cargo ran and failed: a compile error, a dependency that could not be fetched, ...
    #[error("guest crate {crate_name} ({}) failed to build ({status}); cargo said:\n{stderr_tail}", crate_dir.display())]
    Compile {
        crate_name: String,
        crate_dir: PathBuf,
        status: ExitStatus,
        stderr_tail: String,
    },

    /// The cache directory (or a file in it) could not be created, locked or written.
    #[error("guest build cache {}: {source}", path.display())]
    Cache { path: PathBuf, source: std::io::Error },

    /// A program a guest language needs (python3, node, npm) is not on PATH, or too old.
    #[error("{tool} is needed to build this guest but {hint}")]
    ToolMissing { tool: String, hint: String },

    /// Installing the pinned toolchain into the cache failed (no network, a registry error, ...).
    #[error("cannot install {what}:\n{stderr_tail}")]
    ToolInstall { what: String, stderr_tail: String },

    /// The guest's build tool ran and failed: the guest's code or its manifest is wrong.
    #[error("{tool} failed on {} ({status}):\n{stderr_tail}", dir.display())]
    ToolFailed {
        tool: String,
        dir: PathBuf,
        status: ExitStatus,
        stderr_tail: String,
    },

    /// The folder has none of the files that say which language a guest is written in.
    #[error(
        "{} is not a guest folder: it needs Cargo.toml (Rust), pyproject.toml or app.py (Python), or package.json (JavaScript)",
        dir.display()
    )]
    UnknownFolder { dir: PathBuf },

    /// cargo succeeded but wrote no component where expected.
    #[error(
        "guest crate {crate_name} built, but {} is missing: guest crates need `crate-type = [\"cdylib\"]` under [lib]",
        path.display()
    )]
    MissingArtifact { crate_name: String, path: PathBuf },
}

/// At most this many lines of cargo's stderr go into an error.
const TAIL_LINES: usize = 60;

/// Whether cargo's stderr says the standard library for the target is absent.
pub(crate) fn target_missing(stderr: &str) -> bool {
    stderr.contains("target may not be installed")
        || stderr.contains("rustup target add")
        || (stderr.contains("error[E0463]")
            && (stderr.contains("crate for `core`") || stderr.contains("crate for `std`")))
}

/// The part of cargo's stderr worth showing: from the first `error` line on (progress lines such as
/// `Compiling ...` before it are dropped), at most [`TAIL_LINES`] lines, the last ones.
pub(crate) fn stderr_tail(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().collect();
    let first_error = lines
        .iter()
        .position(|line| line.trim_start().starts_with("error"))
        .unwrap_or(0);
    let shown = &lines[first_error..];
    let shown = &shown[shown.len().saturating_sub(TAIL_LINES)..];
    let mut tail = shown.join("\n");
    if shown.len() < lines.len() - first_error {
        tail.insert_str(0, "...\n");
    }
    tail
}

#[cfg(test)]
mod tests {
    use super::*;

    const MISSING_TARGET: &str = "   Compiling probe v0.1.0\n\
        error[E0463]: can't find crate for `core`\n  |\n  = note: the `wasm32-wasip2` target may not be installed\n\
          = help: consider downloading the target with `rustup target add wasm32-wasip2`\n";

    const COMPILE_ERROR: &str = "   Compiling serde v1.0.0\n   Compiling math-agent v0.1.0 (/repo/examples/math-agent)\n\
        error[E0425]: cannot find value `x` in this scope\n --> src/lib.rs:3:5\n\
        error: could not compile `math-agent` (lib) due to 1 previous error\n";

    #[test]
    fn a_missing_target_is_recognised() {
        assert!(target_missing(MISSING_TARGET));
        assert!(target_missing("error[E0463]: can't find crate for `std`\n"));
        assert!(!target_missing(COMPILE_ERROR));
    }

    #[test]
    fn the_tail_starts_at_the_first_error() {
        let tail = stderr_tail(COMPILE_ERROR);
        assert!(tail.starts_with("error[E0425]: cannot find value `x`"), "{tail}");
        assert!(tail.ends_with("due to 1 previous error"));
        assert!(!tail.contains("Compiling"));
    }

    #[test]
    fn a_long_tail_is_cut_to_its_last_lines() {
        let stderr: String = (0..200).map(|i| format!("error line {i}\n")).collect();
        let tail = stderr_tail(&stderr);
        assert!(tail.starts_with("...\nerror line 140"), "{tail}");
        assert_eq!(tail.lines().count(), TAIL_LINES + 1);
    }

    #[test]
    fn without_an_error_line_the_whole_short_output_is_kept() {
        assert_eq!(
            stderr_tail("warning: a\nsomething failed"),
            "warning: a\nsomething failed"
        );
    }

    #[test]
    fn messages_say_what_to_do() {
        let err = GuestBuildError::TargetNotInstalled {
            crate_name: "probe".into(),
            stderr_tail: String::new(),
        };
        assert!(err.to_string().contains("run `rustup target add wasm32-wasip2`"));
        let err = GuestBuildError::MissingArtifact {
            crate_name: "x".into(),
            path: "/t/x.wasm".into(),
        };
        assert!(err.to_string().contains("crate-type = [\"cdylib\"]"));
    }
}
