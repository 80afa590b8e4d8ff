//! How a guest's end is put in words: a one-line, bounded reason for the attempt (the trap kind,
//! the limit that was reached, the host call that refused, and the guest's own panic message or
//! exception text when it printed one), and the long form — the whole error chain with its wasm
//! backtrace and the tail of stderr — for the attempt's root span.

use crate::output::CapturedOutput;
use crate::policy::SandboxPolicy;
use crate::state::clip;
use wasmtime::Trap;

/// Longest one-line reason (the attempt's `failure`, a summary line).
pub const MAX_REASON_BYTES: usize = 1024;
/// Longest detail kept on the root span.
pub const MAX_DETAIL_BYTES: usize = 16 << 10;
/// Longest guest message quoted in a reason.
const MAX_GUEST_MESSAGE_BYTES: usize = 512;
/// Context wasmtime wraps around an error raised inside wasm; it carries no reason of its own.
const BACKTRACE_CONTEXT: &str = "error while executing at wasm backtrace";

/// A guest's end in one line and in full.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub reason: String,
    pub detail: String,
}

/// Why the guest (`role`: "agent" or "algorithm") stopped with `error`, in words.
pub fn describe_trap(role: &str, policy: &SandboxPolicy, error: &wasmtime::Error, stderr: &CapturedOutput) -> Failure {
    let what = match error.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => format!("deadline of {:?} exceeded", policy.limits.deadline),
        Some(Trap::StackOverflow) => "stack overflow (call stack exhausted, e.g. by deep recursion)".to_owned(),
        Some(Trap::MemoryOutOfBounds) => {
            format!("out-of-bounds memory access (e.g. the {role}'s own stack overflowed by deep recursion)")
        }
        Some(Trap::OutOfFuel) => format!("fuel budget of {} exhausted", policy.limits.fuel.unwrap_or_default()),
        Some(Trap::UnreachableCodeReached) => format!("the {role} panicked (wasm `unreachable` executed)"),
        Some(trap) => format!("trap: {trap}"),
        None => {
            let cause = error_chain(error);
            if cause.contains("forcing trap when growing memory") {
                format!("memory limit of {} MiB exceeded", policy.limits.memory_bytes >> 20)
            } else if cause.is_empty() {
                format!("the {role} trapped (no reason given)")
            } else {
                format!("a host call refused: {cause}")
            }
        }
    };
    let reason = match guest_message(&stderr.text) {
        Some(message) => format!("{what}: {}", clip(&message, MAX_GUEST_MESSAGE_BYTES)),
        None => what,
    };
    Failure {
        reason: one_line(&reason, MAX_REASON_BYTES),
        detail: detail(error, stderr),
    }
}

/// The error chain without wasmtime's backtrace wrapper, one line, outermost first.
fn error_chain(error: &wasmtime::Error) -> String {
    error
        .chain()
        .map(|e| e.to_string())
        .filter(|text| !text.starts_with(BACKTRACE_CONTEXT))
        .filter_map(|text| text.lines().map(str::trim).find(|l| !l.is_empty()).map(str::to_owned))
        .collect::<Vec<_>>()
        .join(": ")
}

/// What the guest said about its own end on stderr: a Rust panic's message, else the last
/// meaningful line (a Python or JavaScript exception ends its traceback with it).
pub fn guest_message(stderr: &str) -> Option<String> {
    let lines: Vec<&str> = stderr.lines().collect();
    if let Some(at) = lines.iter().rposition(|l| l.contains(" panicked at ")) {
        let message: Vec<&str> = lines[at + 1..]
            .iter()
            .map(|l| l.trim())
            .take_while(|l| !l.starts_with("note: "))
            .filter(|l| !l.is_empty())
            .collect();
        if !message.is_empty() {
            return Some(message.join(" "));
        }
        // Older formats put the message on the same line: `panicked at 'msg', src/lib.rs:1:2`.
        return lines[at]
            .split_once(" panicked at ")
            .map(|(_, rest)| rest.trim().to_owned());
    }
    lines
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| !l.is_empty() && !l.starts_with("note: run with `RUST_BACKTRACE"))
        .map(str::to_owned)
}

/// The full story for the root span: every error in the chain (with the wasm backtrace) and the
/// end of stderr.
fn detail(error: &wasmtime::Error, stderr: &CapturedOutput) -> String {
    let mut detail = format!("{error:?}");
    let tail = stderr.text.len().saturating_sub(MAX_DETAIL_BYTES / 2);
    let tail = (tail..=stderr.text.len())
        .find(|&i| stderr.text.is_char_boundary(i))
        .map_or("", |i| &stderr.text[i..]);
    if !tail.trim().is_empty() {
        detail.push_str("\n--- stderr (end) ---\n");
        detail.push_str(tail);
    }
    clip(&detail, MAX_DETAIL_BYTES)
}

/// `text` on one line (line breaks become " | "), at most `max` bytes.
pub fn one_line(text: &str, max: usize) -> String {
    let joined = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" | ");
    clip(&joined, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rust_panic_message_is_found_under_its_header() {
        let stderr = "starting\nthread '<unnamed>' panicked at src/lib.rs:12:9:\nindex out of bounds: the len is 3 but the index is 7\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
        assert_eq!(
            guest_message(stderr).as_deref(),
            Some("index out of bounds: the len is 3 but the index is 7")
        );
    }

    #[test]
    fn an_exception_is_the_last_meaningful_line() {
        let python =
            "Traceback (most recent call last):\n  File \"app.py\", line 3, in rollout\nValueError: bad task\n\n";
        assert_eq!(guest_message(python).as_deref(), Some("ValueError: bad task"));
        assert_eq!(guest_message("  \n"), None);
    }

    #[test]
    fn a_host_refusal_inside_wasm_keeps_its_words() {
        let error = wasmtime::Error::msg("reward.emit: NaN is not a reward")
            .context(format!("{BACKTRACE_CONTEXT}:\n    0: 0x1234 - agent!rollout"));
        let failure = describe_trap("agent", &SandboxPolicy::default(), &error, &CapturedOutput::default());
        assert_eq!(failure.reason, "a host call refused: reward.emit: NaN is not a reward");
        assert!(failure.detail.contains("agent!rollout"), "{}", failure.detail);
    }

    #[test]
    fn reasons_are_one_bounded_line() {
        let long = format!("first\nsecond\n{}", "x".repeat(5000));
        let line = one_line(&long, 100);
        assert!(
            !line.contains('\n') && line.starts_with("first | second | xx"),
            "{line}"
        );
        assert!(line.len() < 140, "{}", line.len());
    }
}
