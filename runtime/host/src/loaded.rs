//! What every loaded component carries besides its `InstancePre`: its name, its sandbox policy and
//! how it was loaded; and the words for a guest that trapped, shared by agents and algorithms.

use crate::cache::Compiled;
use crate::output::CapturedOutput;
use crate::policy::SandboxPolicy;
use crate::state::clip;
use std::time::Duration;
use wasmtime::Trap;

/// A component's identity and limits (agents and algorithms deref to it).
#[derive(Debug, Clone)]
pub struct Loaded {
    pub(crate) name: String,
    pub(crate) policy: SandboxPolicy,
    compiled: Compiled,
    compile_time: Duration,
    /// The names of the component's imports (e.g. `agl:agent/llm@0.1.0`).
    imports: Vec<String>,
}

/// The LLM interface of the `agl:agent` package, without its version.
const LLM_INTERFACE: &str = "agl:agent/llm";

impl Loaded {
    pub(crate) fn new(
        name: String,
        policy: SandboxPolicy,
        compiled: Compiled,
        compile_time: Duration,
        imports: Vec<String>,
    ) -> Self {
        Self {
            name,
            policy,
            compiled,
            compile_time,
            imports,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn policy(&self) -> &SandboxPolicy {
        &self.policy
    }

    /// The names of the component's imports, as its type lists them.
    pub fn imports(&self) -> &[String] {
        &self.imports
    }

    /// Whether the component imports the LLM interface (so its runs need an LLM backend).
    pub fn uses_llm(&self) -> bool {
        self.imports
            .iter()
            .any(|name| name == LLM_INTERFACE || name.strip_prefix(LLM_INTERFACE).is_some_and(|v| v.starts_with('@')))
    }

    /// Whether the compiled code came from the cache, and how long loading took.
    pub fn load_info(&self) -> (Compiled, Duration) {
        (self.compiled, self.compile_time)
    }

    /// Why the guest (`role`: "agent" or "algorithm") stopped, in words, with the last line it
    /// wrote to stderr when there is one.
    pub(crate) fn describe_trap(&self, role: &str, error: &wasmtime::Error, stderr: &CapturedOutput) -> String {
        let policy = &self.policy;
        let reason = match error.downcast_ref::<Trap>() {
            Some(Trap::Interrupt) => format!("deadline of {:?} exceeded", policy.deadline),
            Some(Trap::StackOverflow) => "stack overflow (call stack exhausted, e.g. by deep recursion)".to_owned(),
            Some(Trap::MemoryOutOfBounds) => {
                format!("out-of-bounds memory access (e.g. the {role}'s own stack overflowed by deep recursion)")
            }
            Some(Trap::OutOfFuel) => format!("fuel budget of {} exhausted", policy.fuel.unwrap_or_default()),
            Some(Trap::UnreachableCodeReached) => format!("the {role} panicked (wasm `unreachable` executed)"),
            Some(trap) => format!("trap: {trap}"),
            None => {
                let text = format!("{error:#}");
                if text.contains("forcing trap when growing memory") {
                    format!("memory limit of {} MiB exceeded", policy.memory_bytes >> 20)
                } else {
                    format!("trap: {}", text.lines().next().unwrap_or_default())
                }
            }
        };
        match stderr.text.lines().rev().find(|l| !l.trim().is_empty()) {
            Some(last) => format!("{reason}; last stderr line: {}", clip(last, 512)),
            None => reason,
        }
    }
}
