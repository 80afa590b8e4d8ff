//! How a guest's end is put in words: a one-line, bounded reason for the attempt (the trap kind,
//! the limit that was reached, the host call that refused, and the guest's own panic message or
//! exception text when it printed one), and the long form — the whole error chain with its wasm
//! backtrace and the tail of stderr — for the attempt's root span.

use crate::capabilities::wasi::output::CapturedOutput;
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
        // wasmtime says "wasm trap: integer overflow": the kind is all that is new here.
        Some(trap) => {
            let text = trap.to_string();
            let kind = text.strip_prefix("wasm trap: ").unwrap_or(&text);
            format!("the {role} trapped: {kind}")
        }
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
        Some(message) => compose(&what, &clip(&message, MAX_GUEST_MESSAGE_BYTES)),
        None => what,
    };
    Failure {
        reason: one_line(&reason, MAX_REASON_BYTES),
        detail: detail(error, stderr),
    }
}

/// The guest (`role`) returned an error with `reason`, its own words.
pub fn guest_error(role: &str, reason: &str) -> String {
    one_line(
        &compose(&format!("{role} error"), &clip(reason, MAX_REASON_BYTES)),
        MAX_REASON_BYTES,
    )
}

/// The guest (`role`) outlived its deadline while it waited in a host call (no trap could stop it).
pub fn host_call_deadline(role: &str, deadline: std::time::Duration) -> String {
    format!("deadline of {deadline:?} exceeded while the {role} waited in a host call")
}

/// The guest (`role`) returned a reward that is not one (`why`).
pub fn bad_reward(role: &str, why: &str) -> String {
    compose(&format!("the {role} returned a bad reward"), why)
}

/// `what: cause` said once: labels leading `cause` that only repeat the end of `what`, or the
/// label after them, are dropped ("agent error" and "Error: bad task" make "agent error: bad
/// task"), and a cause that already begins with `what` stands alone.
pub fn compose(what: &str, cause: &str) -> String {
    let what_words = words(what);
    let mut cause = cause.trim();
    while let Some((label, rest)) = cause.split_once(':') {
        let label = words(label);
        let repeats_what = label.len() <= what_words.len() && what_words.ends_with(&label);
        let repeated = rest.split_once(':').is_some_and(|(next, _)| words(next) == label);
        if label.is_empty() || !(repeats_what || repeated) {
            break;
        }
        cause = rest.trim_start();
    }
    let cause_words = words(cause);
    if cause_words.is_empty() {
        what.to_owned()
    } else if cause_words.starts_with(&what_words) {
        cause.to_owned()
    } else {
        format!("{what}: {cause}")
    }
}

/// `text`'s words, lowercase, without punctuation.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The error chain without wasmtime's backtrace wrapper, one line, outermost first; an error
/// whose words its outer one already said is not said again.
fn error_chain(error: &wasmtime::Error) -> String {
    let mut said = String::new();
    let texts = error
        .chain()
        .map(|e| e.to_string())
        .filter(|text| !text.starts_with(BACKTRACE_CONTEXT))
        .filter_map(|text| text.lines().map(str::trim).find(|l| !l.is_empty()).map(str::to_owned));
    for text in texts {
        if said.is_empty() {
            said = text;
        } else if !said.ends_with(&text) {
            said = compose(&said, &text);
        }
    }
    said
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

    /// Where `reason` says a word twice in a row, or a label twice (`a: a: ...`).
    fn stutter(reason: &str) -> Option<String> {
        let all = words(reason);
        if let Some(pair) = all.windows(2).find(|pair| pair[0] == pair[1]) {
            return Some(format!("{:?} twice in a row", pair[0]));
        }
        let labels: Vec<Vec<String>> = reason.split(':').map(words).collect();
        labels
            .windows(2)
            .find(|pair| !pair[0].is_empty() && pair[1].starts_with(&pair[0]))
            .map(|pair| format!("the label {:?} twice", pair[0].join(" ")))
    }

    fn stderr(text: &str) -> CapturedOutput {
        CapturedOutput {
            text: text.to_owned(),
            dropped_bytes: 0,
        }
    }

    #[test]
    fn no_failure_reason_says_a_word_or_a_label_twice() {
        let policy = SandboxPolicy::default();
        let quiet = CapturedOutput::default();
        let traps = [
            Trap::StackOverflow,
            Trap::MemoryOutOfBounds,
            Trap::HeapMisaligned,
            Trap::TableOutOfBounds,
            Trap::IndirectCallToNull,
            Trap::BadSignature,
            Trap::IntegerOverflow,
            Trap::IntegerDivisionByZero,
            Trap::BadConversionToInteger,
            Trap::UnreachableCodeReached,
            Trap::Interrupt,
            Trap::OutOfFuel,
            Trap::NullReference,
            Trap::AllocationTooLarge,
            Trap::CannotEnterComponent,
        ];
        let mut reasons = Vec::new();
        for role in ["agent", "algorithm"] {
            for trap in traps {
                reasons.push(describe_trap(role, &policy, &wasmtime::Error::from(trap), &quiet).reason);
            }
            // Traps with what the guest said on its way out.
            let panic = stderr("thread '<unnamed>' panicked at src/lib.rs:1:1:\nthe agent panicked: boom\n");
            let error = wasmtime::Error::from(Trap::UnreachableCodeReached);
            reasons.push(describe_trap(role, &policy, &error, &panic).reason);
            let python = stderr("Traceback (most recent call last):\nMemoryError: memory limit exceeded\n");
            let memory = wasmtime::Error::msg("forcing trap when growing memory to 1073741824 bytes");
            reasons.push(describe_trap(role, &policy, &memory, &python).reason);
            let deadline = stderr("deadline exceeded\n");
            reasons.push(describe_trap(role, &policy, &wasmtime::Error::from(Trap::Interrupt), &deadline).reason);
            reasons.push(describe_trap(role, &policy, &wasmtime::Error::msg(""), &quiet).reason);
            // A host call's refusal wrapped in contexts that repeat it.
            let refused = wasmtime::Error::msg("NaN is not a reward")
                .context("reward.emit: NaN is not a reward")
                .context(format!("{BACKTRACE_CONTEXT}:\n    0: 0x1 - agent!rollout"));
            reasons.push(describe_trap(role, &policy, &refused, &quiet).reason);
            reasons.push(host_call_deadline(role, std::time::Duration::from_secs(3)));
            reasons.push(bad_reward(role, "NaN is not a reward"));
            // The guest's own error, as the SDKs word them (an LLM refusal, a thrown Error...).
            for said in [
                "LLM budget of this attempt exceeded: calls: 3 of 2 used",
                "LLM call timed out: the backend did not answer within the host's limit",
                "LLM call refused: model `m` is not allowed for this agent",
                "JSON error: expected value at line 1 column 1",
                "Error: probe: panic on purpose",
                "error: bad output",
                "agent error: agent error: bad task",
                "RuntimeError: probe: panic on purpose",
            ] {
                reasons.push(guest_error(role, said));
            }
        }
        for reason in &reasons {
            assert_eq!(stutter(reason), None, "{reason}");
        }
        assert!(
            reasons.contains(&"the agent trapped: integer overflow".to_owned()),
            "{reasons:#?}"
        );
        assert!(reasons.contains(&"agent error: bad task".to_owned()), "{reasons:#?}");
        assert!(
            reasons.contains(&"agent error: probe: panic on purpose".to_owned()),
            "{reasons:#?}"
        );
        assert!(
            reasons.contains(&"a host call refused: reward.emit: NaN is not a reward".to_owned()),
            "{reasons:#?}"
        );
        // The checker itself finds what it is for.
        assert!(stutter("trap: wasm trap: x").is_none(), "different labels");
        assert!(stutter("timeout: timeout: x").is_some());
        assert!(stutter("agent failed: failed to run").is_some());
    }

    #[test]
    fn composing_drops_what_the_cause_repeats() {
        assert_eq!(compose("agent error", "Error: bad"), "agent error: bad");
        assert_eq!(compose("agent error", "agent error: bad"), "agent error: bad");
        assert_eq!(compose("agent error", "  "), "agent error");
        assert_eq!(
            compose("memory limit of 1 MiB exceeded", "MemoryError"),
            "memory limit of 1 MiB exceeded: MemoryError"
        );
        assert_eq!(
            compose("deadline of 3s exceeded", "deadline of 3s exceeded"),
            "deadline of 3s exceeded"
        );
        assert_eq!(
            compose("agent error", "RuntimeError: x"),
            "agent error: RuntimeError: x"
        );
        assert_eq!(
            compose("a host call refused", "timeout: timeout: x"),
            "a host call refused: timeout: x"
        );
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
