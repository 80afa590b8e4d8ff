//! What every loaded component carries besides its `InstancePre`: its name, its sandbox policy and
//! how it was loaded.

use crate::cache::Compiled;
use crate::capabilities::wasi::output::CapturedOutput;
use crate::failure::{self, Failure};
use crate::policy::SandboxPolicy;
use std::time::Duration;

/// A component's identity and limits (agents and algorithms deref to it).
#[derive(Debug, Clone)]
pub struct Loaded {
    pub(crate) name: String,
    pub(crate) policy: SandboxPolicy,
    compiled: Compiled,
    compile_time: Duration,
    /// The names of the component's imports (e.g. `agl:agent/llm@0.3.0`).
    imports: Vec<String>,
    /// Whether it imports a function of the LLM interface (not only its types).
    uses_llm: bool,
    /// The lowercase hex SHA-256 of its bytes.
    digest: String,
}

/// The LLM interface of the `agl:agent` package, without its version.
const LLM_INTERFACE: &str = "agl:agent/llm";

/// Whether `name` is the LLM interface, at any version.
pub(crate) fn is_llm_interface(name: &str) -> bool {
    name == LLM_INTERFACE || name.strip_prefix(LLM_INTERFACE).is_some_and(|v| v.starts_with('@'))
}

impl Loaded {
    pub(crate) fn new(
        name: String,
        policy: SandboxPolicy,
        compiled: Compiled,
        compile_time: Duration,
        imports: Vec<String>,
        uses_llm: bool,
    ) -> Self {
        Self {
            name,
            policy,
            compiled,
            compile_time,
            imports,
            uses_llm,
            digest: String::new(),
        }
    }

    /// The same, known as the component whose bytes hash to `digest`.
    pub(crate) fn with_digest(self, digest: String) -> Self {
        Self { digest, ..self }
    }

    /// The lowercase hex SHA-256 of the component's bytes: what a recording says ran.
    pub fn digest(&self) -> &str {
        &self.digest
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

    /// Whether the component calls the LLM (so its runs need an LLM backend): it imports a
    /// function of the LLM interface. One that imports the interface for its types only (an
    /// algorithm reading `adapter.task`'s transcript of `llm.message`s) does not.
    pub fn uses_llm(&self) -> bool {
        self.uses_llm
    }

    /// Whether the compiled code came from the cache, and how long loading took.
    pub fn load_info(&self) -> (Compiled, Duration) {
        (self.compiled, self.compile_time)
    }

    /// Why the guest (`role`: "agent" or "algorithm") stopped, in one line and in full.
    pub(crate) fn describe_trap(&self, role: &str, error: &wasmtime::Error, stderr: &CapturedOutput) -> Failure {
        failure::describe_trap(role, &self.policy, error, stderr)
    }
}
