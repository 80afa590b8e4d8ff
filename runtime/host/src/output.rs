//! Writing to stdout and stderr without panicking when they are closed (`agl-host dev | head -1`).
//! Stdout carries the command's result (the summary): when it is closed the reader has gone, so
//! the process ends quietly with [`EXIT_STDOUT_CLOSED`] (141, what a shell reports for a tool
//! killed by SIGPIPE). Stderr carries diagnostics: a write that fails there is dropped and the
//! command goes on, its outcome still in its exit code and results file.
//!
//! Agents (and algorithms) choose much of what is printed: failure reasons, logs, names. Every
//! write here goes through [`terminal_safe`], the one sanitizer: no control character reaches
//! the terminal raw (an escape sequence could retitle the window, clear the screen or move the
//! cursor), and text meant for one line ([`one_line`], [`reason_line`]) cannot start another
//! (a fake summary line).

use std::io::Write;

pub use agl_runs::text::{Lines, one_line, reason_line, terminal_safe};

/// Exit code when stdout was closed before the summary was written.
pub const EXIT_STDOUT_CLOSED: u8 = 141;

/// Writes `text` to stdout; when stdout is closed, ends the process with [`EXIT_STDOUT_CLOSED`].
pub fn print(text: &str) {
    let text = terminal_safe(text, Lines::Many);
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(i32::from(EXIT_STDOUT_CLOSED));
        }
        // Another failure (a full disk behind a redirection): say so where we still can.
        stderr_line(&format!("agl-host: cannot write to stdout: {error}"));
    }
}

/// Writes `line` and a newline to stderr; a failed write is dropped.
pub fn stderr_line(line: &str) {
    let line = terminal_safe(line, Lines::Many);
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(line.as_bytes()).and_then(|()| stderr.write_all(b"\n"));
}
