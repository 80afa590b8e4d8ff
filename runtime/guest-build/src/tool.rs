//! Running the build tools of Python and JavaScript guests: finding a program on PATH (a clear
//! error when it is missing), running a command with its output captured (shown, tail only, when
//! it fails), and a file lock that makes a first-use toolchain install one step across processes.

use crate::error::GuestBuildError;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// At most this many lines of a tool's output go into an error.
const TAIL_LINES: usize = 40;

/// The last [`TAIL_LINES`] lines of `text`, with a note of how many were left out.
pub(crate) fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(TAIL_LINES);
    let mut shown = lines[start..].join("\n");
    if start > 0 {
        shown = format!("[... {start} earlier lines]\n{shown}");
    }
    shown
}

/// `program` found on PATH (or as given, when it holds a `/`); `hint` says how to get it.
pub(crate) fn find_program(program: &str, hint: &str) -> Result<PathBuf, GuestBuildError> {
    let missing = || GuestBuildError::ToolMissing {
        tool: program.to_owned(),
        hint: hint.to_owned(),
    };
    if program.contains('/') {
        let path = PathBuf::from(program);
        return if path.is_file() { Ok(path) } else { Err(missing()) };
    }
    let path = std::env::var_os("PATH").ok_or_else(missing)?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .ok_or_else(missing)
}

/// The output of `command`, run with no stdin; a failure to start is `ToolMissing`.
fn output_of(command: &mut Command, tool: &str) -> Result<Output, GuestBuildError> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| GuestBuildError::ToolMissing {
            tool: tool.to_owned(),
            hint: format!("it could not be started: {e}"),
        })
}

/// Both output streams, stdout first.
fn both(output: &Output) -> String {
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    text
}

/// Runs a build step on the guest in `dir`; its stdout on success, `ToolFailed` (with the output's
/// tail) when it fails.
pub(crate) fn run_step(command: &mut Command, tool: &str, dir: &Path) -> Result<String, GuestBuildError> {
    let output = output_of(command, tool)?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    Err(GuestBuildError::ToolFailed {
        tool: tool.to_owned(),
        dir: dir.to_path_buf(),
        status: output.status,
        stderr_tail: tail(&both(&output)),
    })
}

/// Runs one step of a toolchain install (`what` names the toolchain); `ToolInstall` when it fails.
pub(crate) fn run_install(command: &mut Command, what: &str) -> Result<(), GuestBuildError> {
    let output = output_of(command, what)?;
    if output.status.success() {
        return Ok(());
    }
    Err(GuestBuildError::ToolInstall {
        what: what.to_owned(),
        stderr_tail: tail(&both(&output)),
    })
}

/// Holds an exclusive lock on `path` (created if needed) until dropped.
pub(crate) struct FolderLock {
    _file: File,
}

/// Locks `path` exclusively, waiting for another process that holds it.
pub(crate) fn lock(path: &Path) -> Result<FolderLock, GuestBuildError> {
    let error = |source| GuestBuildError::Cache {
        path: path.to_path_buf(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(error)?;
    }
    let file = File::create(path).map_err(error)?;
    file.lock().map_err(error)?;
    Ok(FolderLock { _file: file })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_says_how_to_get_it() {
        let err = find_program("agl-no-such-program", "install it from example.org").unwrap_err();
        assert_eq!(
            err.to_string(),
            "agl-no-such-program is needed to build this guest but install it from example.org"
        );
        assert!(find_program("sh", "").is_ok());
    }

    #[test]
    fn a_failing_step_shows_the_tail_of_its_output() {
        let mut command = Command::new("sh");
        command.args([
            "-c",
            "for i in $(seq 1 100); do echo line $i; done; echo boom >&2; exit 3",
        ]);
        let err = run_step(&mut command, "sh", Path::new("/guest")).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("sh failed on /guest (exit status: 3):"), "{text}");
        assert!(
            text.contains("[... 61 earlier lines]") && text.contains("line 100\nboom"),
            "{text}"
        );
        let mut ok = Command::new("sh");
        ok.args(["-c", "echo fine"]);
        assert_eq!(run_step(&mut ok, "sh", Path::new("/g")).expect("runs"), "fine\n");
    }
}
