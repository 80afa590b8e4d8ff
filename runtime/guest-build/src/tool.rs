//! Running the build tools of Python and JavaScript guests: finding a program on PATH (a clear
//! error when it is missing), running a command with its output captured (shown, tail only, when
//! it fails), and a file lock that makes a first-use toolchain install one step across processes.

use crate::error::GuestBuildError;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};

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

/// Runs a build step with its stderr captured line by line (and copied to this process's stderr
/// as it comes, with `echo`); stdout is dropped. Returns the exit status and the stderr text;
/// `spawn_error` makes the error for a program that cannot be started.
pub(crate) fn run_streaming(
    command: &mut Command,
    echo: bool,
    spawn_error: impl Fn(std::io::Error) -> GuestBuildError,
) -> Result<(ExitStatus, String), GuestBuildError> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = command.spawn().map_err(&spawn_error)?;
    let mut stderr = String::new();
    if let Some(pipe) = child.stderr.take() {
        let mut reader = BufReader::new(pipe);
        let mut line = Vec::new();
        // A read error ends the capture early; the exit status still decides.
        while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
            let text = String::from_utf8_lossy(&line);
            if echo {
                let _ = std::io::stderr().write_all(text.as_bytes());
            }
            stderr.push_str(&text);
            line.clear();
        }
    }
    let status = child.wait().map_err(spawn_error)?;
    Ok((status, stderr))
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
    fn a_streamed_step_gives_its_status_and_stderr_and_a_missing_program_its_error() {
        let mut command = Command::new("sh");
        command.args(["-c", "echo out; echo one >&2; echo two >&2; exit 3"]);
        let (status, stderr) = run_streaming(&mut command, false, |e| GuestBuildError::ToolMissing {
            tool: "sh".into(),
            hint: e.to_string(),
        })
        .expect("runs");
        assert_eq!((status.code(), stderr.as_str()), (Some(3), "one\ntwo\n"));
        let mut missing = Command::new("/nonexistent/agl-tool");
        let err = run_streaming(&mut missing, false, |_| GuestBuildError::ToolMissing {
            tool: "agl-tool".into(),
            hint: "gone".into(),
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "agl-tool is needed to build this guest but gone");
        assert!(tail(&"x\n".repeat(50)).starts_with("[... 10 earlier lines]"));
    }
}
