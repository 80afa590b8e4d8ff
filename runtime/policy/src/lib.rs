//! The sandbox policy of one plugin: limits and grants, deny by default.
//!
//! A plain struct built in layers — defaults, then an optional TOML manifest beside the `.wasm`
//! (`agent.wasm` → `agent.toml`), then command-line overrides — and applied in one place when a
//! `Store` is made (see `sandbox.rs`). Spellings follow the wasmtime CLI (`--dir HOST::GUEST`,
//! `--env NAME[=VAL]`, sizes like `256MiB`, durations like `300s`).

use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;
use thiserror::Error;

pub const DEFAULT_MEMORY_BYTES: u64 = 256 << 20;
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(300);
pub const DEFAULT_OUTPUT_CAPTURE_BYTES: usize = 64 << 10;
pub const DEFAULT_LLM_TIMEOUT: Duration = Duration::from_secs(120);
pub const DEFAULT_LLM_MAX_CALLS: u32 = 100;
pub const DEFAULT_LLM_MAX_TOKENS: u64 = 1_000_000;
/// Largest LLM request (bytes of its messages and stop sequences): room for long contexts.
pub const DEFAULT_LLM_MAX_REQUEST_BYTES: u64 = 4 << 20;
/// Largest `max_tokens` one LLM request may ask for.
pub const DEFAULT_LLM_MAX_OUTPUT_TOKENS: u32 = 1_000_000;
/// Most tools one LLM request may offer, and their total bytes (names, descriptions, schemas).
pub const DEFAULT_LLM_MAX_TOOLS: u32 = 128;
pub const DEFAULT_LLM_MAX_TOOLS_BYTES: u64 = 1 << 20;
/// Host-call spans one attempt may record (the final reward and the summary marker always are).
pub const DEFAULT_MAX_SPANS: u32 = 10_000;
/// Bytes of span content one attempt may make the host hold (attribute text and a fixed
/// overhead per span), the final reward and the summary marker aside.
pub const DEFAULT_MAX_SPAN_BYTES: u64 = 32 << 20;
/// Longest string kept in one span attribute (a log line, a message, a prompt); longer ones are
/// clipped and say so.
pub const DEFAULT_MAX_ATTRIBUTE_BYTES: usize = 64 << 10;
/// An algorithm runs the whole optimisation: its limits are per run, not per rollout.
pub const ALGORITHM_DEADLINE: Duration = Duration::from_secs(7 * 24 * 3600);
pub const ALGORITHM_MEMORY_BYTES: u64 = 1 << 30;
pub const ALGORITHM_LLM_MAX_CALLS: u32 = 100_000;
pub const ALGORITHM_LLM_MAX_TOKENS: u64 = 1_000_000_000;

#[derive(Debug, Error, PartialEq)]
pub enum PolicyError {
    #[error("cannot read the sandbox manifest {path}: {message}")]
    ManifestUnreadable { path: PathBuf, message: String },
    #[error("sandbox manifest {path} is invalid: {message}")]
    ManifestInvalid { path: PathBuf, message: String },
    #[error("invalid {what} '{value}': {message}")]
    InvalidValue {
        what: &'static str,
        value: String,
        message: String,
    },
}

/// What a guest may do with a granted directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirAccess {
    ReadOnly,
    ReadWrite,
}

/// A host directory made visible to the guest at `guest_path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirGrant {
    pub host_path: PathBuf,
    pub guest_path: String,
    pub access: DirAccess,
}

/// How many LLM calls and tokens one attempt may spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LlmBudget {
    pub max_calls: u32,
    pub max_tokens: u64,
}

impl Default for LlmBudget {
    fn default() -> Self {
        Self {
            max_calls: DEFAULT_LLM_MAX_CALLS,
            max_tokens: DEFAULT_LLM_MAX_TOKENS,
        }
    }
}

/// How large one LLM request may be. A larger one is refused to the guest as `invalid-request`
/// (a `max_tokens` beyond what the budget has left as `budget-exceeded`) and never sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LlmRequestLimits {
    /// Bytes of the messages (content, tool call ids, roles) and stop sequences.
    pub max_request_bytes: u64,
    pub max_output_tokens: u32,
    pub max_tools: u32,
    /// Bytes of the tool definitions.
    pub max_tools_bytes: u64,
}

impl Default for LlmRequestLimits {
    fn default() -> Self {
        Self {
            max_request_bytes: DEFAULT_LLM_MAX_REQUEST_BYTES,
            max_output_tokens: DEFAULT_LLM_MAX_OUTPUT_TOKENS,
            max_tools: DEFAULT_LLM_MAX_TOOLS,
            max_tools_bytes: DEFAULT_LLM_MAX_TOOLS_BYTES,
        }
    }
}

/// What one attempt may make the host hold in spans. Past a bound, further spans are counted
/// and summarised by one marker span, never buffered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanBudget {
    pub max_spans: u32,
    pub max_bytes: u64,
    pub max_attribute_bytes: usize,
}

impl Default for SpanBudget {
    fn default() -> Self {
        Self {
            max_spans: DEFAULT_MAX_SPANS,
            max_bytes: DEFAULT_MAX_SPAN_BYTES,
            max_attribute_bytes: DEFAULT_MAX_ATTRIBUTE_BYTES,
        }
    }
}

/// Limits and grants for every instance of one plugin.
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxPolicy {
    /// Largest linear memory an instance may grow to; growing past it traps.
    pub memory_bytes: u64,
    /// Wall-clock limit of one attempt (enforced by epoch interruption inside wasm).
    pub deadline: Duration,
    /// Optional instruction budget (needs an engine built with fuel).
    pub fuel: Option<u64>,
    /// Bytes of stdout and of stderr kept per attempt (the rest is counted, not kept).
    pub output_capture_bytes: usize,
    pub dirs: Vec<DirGrant>,
    pub env: Vec<(String, String)>,
    /// Models the guest may ask for; empty = only the backend's default model.
    pub allowed_models: Vec<String>,
    pub llm_budget: LlmBudget,
    /// Timeout of one LLM call (a guest blocked in a host call is not interrupted by epochs).
    pub llm_timeout: Duration,
    /// Bounds on one LLM request, checked before it is sent.
    pub llm_request: LlmRequestLimits,
    /// Give the guest the real wall and monotonic clocks instead of the virtual ones.
    pub real_clock: bool,
    /// Spans per attempt: count, bytes, bytes per attribute.
    pub spans: SpanBudget,
}

impl Default for SandboxPolicy {
    fn default() -> Self {
        Self {
            memory_bytes: DEFAULT_MEMORY_BYTES,
            deadline: DEFAULT_DEADLINE,
            fuel: None,
            output_capture_bytes: DEFAULT_OUTPUT_CAPTURE_BYTES,
            dirs: Vec::new(),
            env: Vec::new(),
            allowed_models: Vec::new(),
            llm_budget: LlmBudget::default(),
            llm_timeout: DEFAULT_LLM_TIMEOUT,
            llm_request: LlmRequestLimits::default(),
            real_clock: false,
            spans: SpanBudget::default(),
        }
    }
}

/// The manifest file: every key optional, same words as the flags.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct Manifest {
    max_memory_size: Option<String>,
    timeout: Option<String>,
    fuel: Option<u64>,
    output_capture: Option<String>,
    #[serde(default)]
    dir: Vec<String>,
    #[serde(default)]
    env: Vec<String>,
    real_clock: Option<bool>,
    llm: Option<ManifestLlm>,
    spans: Option<ManifestSpans>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct ManifestSpans {
    max_count: Option<u32>,
    max_bytes: Option<String>,
    max_attribute_bytes: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct ManifestLlm {
    #[serde(default)]
    models: Vec<String>,
    max_calls: Option<u32>,
    max_tokens: Option<u64>,
    timeout: Option<String>,
    max_request: Option<String>,
    max_output_tokens: Option<u32>,
    max_tools: Option<u32>,
    max_tools_size: Option<String>,
}

/// Command-line overrides (the CLI fills these from `--agent-*` flags).
#[derive(Debug, Clone, Default)]
pub struct PolicyOverrides {
    pub memory_bytes: Option<u64>,
    pub deadline: Option<Duration>,
    pub fuel: Option<u64>,
    pub dirs: Vec<DirGrant>,
    pub env: Vec<(String, String)>,
    pub allowed_models: Vec<String>,
    pub llm_max_calls: Option<u32>,
    pub llm_max_tokens: Option<u64>,
    pub llm_timeout: Option<Duration>,
    pub llm_max_request_bytes: Option<u64>,
    pub llm_max_output_tokens: Option<u32>,
    pub llm_max_tools: Option<u32>,
    pub llm_max_tools_bytes: Option<u64>,
    pub real_clock: bool,
    pub max_spans: Option<u32>,
    pub max_span_bytes: Option<u64>,
    pub max_attribute_bytes: Option<u64>,
}

impl SandboxPolicy {
    /// The manifest that belongs to a component: `x.wasm` → `x.toml` in the same folder.
    pub fn manifest_path(component: &Path) -> PathBuf {
        component.with_extension("toml")
    }

    /// Defaults, then the manifest beside `component` if there is one.
    pub fn for_component(component: &Path) -> Result<Self, PolicyError> {
        let mut policy = Self::default();
        policy.apply_manifest_beside(component)?;
        Ok(policy)
    }

    /// Applies the manifest beside `component`, if it has one.
    fn apply_manifest_beside(&mut self, component: &Path) -> Result<(), PolicyError> {
        let manifest = Self::manifest_path(component);
        if !manifest.is_file() {
            return Ok(());
        }
        let text = std::fs::read_to_string(&manifest).map_err(|e| PolicyError::ManifestUnreadable {
            path: manifest.clone(),
            message: e.to_string(),
        })?;
        self.apply_manifest(&text).map_err(|e| PolicyError::ManifestInvalid {
            path: manifest,
            message: e.to_string(),
        })
    }

    /// An algorithm's defaults (a week, 1 GiB, 100k LLM calls per run), then its manifest.
    pub fn for_algorithm(component: &Path) -> Result<Self, PolicyError> {
        let mut policy = Self::algorithm_defaults();
        policy.apply_manifest_beside(component)?;
        Ok(policy)
    }

    /// The limits an algorithm starts from before its manifest and flags.
    pub fn algorithm_defaults() -> Self {
        Self {
            memory_bytes: ALGORITHM_MEMORY_BYTES,
            deadline: ALGORITHM_DEADLINE,
            llm_budget: LlmBudget {
                max_calls: ALGORITHM_LLM_MAX_CALLS,
                max_tokens: ALGORITHM_LLM_MAX_TOKENS,
            },
            ..Self::default()
        }
    }

    /// Applies a manifest's settings on top of this policy.
    pub fn apply_manifest(&mut self, text: &str) -> Result<(), PolicyError> {
        let manifest: Manifest = toml::from_str(text).map_err(|e| PolicyError::InvalidValue {
            what: "manifest",
            value: String::new(),
            message: e.to_string(),
        })?;
        if let Some(size) = manifest.max_memory_size {
            self.memory_bytes = parse_size(&size)?;
        }
        if let Some(timeout) = manifest.timeout {
            self.deadline = parse_duration(&timeout)?;
        }
        if manifest.fuel.is_some() {
            self.fuel = manifest.fuel;
        }
        if let Some(size) = manifest.output_capture {
            self.output_capture_bytes = usize::try_from(parse_size(&size)?).unwrap_or(usize::MAX);
        }
        for dir in manifest.dir {
            self.dirs.push(parse_dir_grant(&dir)?);
        }
        for env in manifest.env {
            self.env.push(parse_env_grant(&env, |_| None)?);
        }
        if let Some(real) = manifest.real_clock {
            self.real_clock = real;
        }
        if let Some(llm) = manifest.llm {
            self.allowed_models.extend(llm.models);
            if let Some(calls) = llm.max_calls {
                self.llm_budget.max_calls = calls;
            }
            if let Some(tokens) = llm.max_tokens {
                self.llm_budget.max_tokens = tokens;
            }
            if let Some(timeout) = llm.timeout {
                self.llm_timeout = parse_duration(&timeout)?;
            }
            if let Some(size) = llm.max_request {
                self.llm_request.max_request_bytes = parse_size(&size)?;
            }
            if let Some(tokens) = llm.max_output_tokens {
                self.llm_request.max_output_tokens = tokens;
            }
            if let Some(count) = llm.max_tools {
                self.llm_request.max_tools = count;
            }
            if let Some(size) = llm.max_tools_size {
                self.llm_request.max_tools_bytes = parse_size(&size)?;
            }
        }
        if let Some(spans) = manifest.spans {
            if let Some(count) = spans.max_count {
                self.spans.max_spans = count;
            }
            if let Some(bytes) = spans.max_bytes {
                self.spans.max_bytes = parse_size(&bytes)?;
            }
            if let Some(bytes) = spans.max_attribute_bytes {
                self.spans.max_attribute_bytes = attribute_bytes(parse_size(&bytes)?);
            }
        }
        Ok(())
    }

    /// Applies command-line overrides on top of this policy (grants add up, limits replace).
    pub fn apply_overrides(&mut self, overrides: PolicyOverrides) {
        if let Some(bytes) = overrides.memory_bytes {
            self.memory_bytes = bytes;
        }
        if let Some(deadline) = overrides.deadline {
            self.deadline = deadline;
        }
        if overrides.fuel.is_some() {
            self.fuel = overrides.fuel;
        }
        self.dirs.extend(overrides.dirs);
        self.env.extend(overrides.env);
        self.allowed_models.extend(overrides.allowed_models);
        if let Some(calls) = overrides.llm_max_calls {
            self.llm_budget.max_calls = calls;
        }
        if let Some(tokens) = overrides.llm_max_tokens {
            self.llm_budget.max_tokens = tokens;
        }
        if let Some(timeout) = overrides.llm_timeout {
            self.llm_timeout = timeout;
        }
        if let Some(bytes) = overrides.llm_max_request_bytes {
            self.llm_request.max_request_bytes = bytes;
        }
        if let Some(tokens) = overrides.llm_max_output_tokens {
            self.llm_request.max_output_tokens = tokens;
        }
        if let Some(count) = overrides.llm_max_tools {
            self.llm_request.max_tools = count;
        }
        if let Some(bytes) = overrides.llm_max_tools_bytes {
            self.llm_request.max_tools_bytes = bytes;
        }
        self.real_clock |= overrides.real_clock;
        if let Some(count) = overrides.max_spans {
            self.spans.max_spans = count;
        }
        if let Some(bytes) = overrides.max_span_bytes {
            self.spans.max_bytes = bytes;
        }
        if let Some(bytes) = overrides.max_attribute_bytes {
            self.spans.max_attribute_bytes = attribute_bytes(bytes);
        }
    }
}

/// An attribute cap as a length; at least 64 bytes, so a clipped value still says something.
fn attribute_bytes(bytes: u64) -> usize {
    usize::try_from(bytes).unwrap_or(usize::MAX).max(64)
}

/// `HOST_DIR[::GUEST_DIR][:ro|:rw]`; read-only unless `:rw`; the guest path defaults to the host path.
pub fn parse_dir_grant(value: &str) -> Result<DirGrant, PolicyError> {
    let invalid = |message: &str| PolicyError::InvalidValue {
        what: "directory grant",
        value: value.to_owned(),
        message: message.to_owned(),
    };
    let (spec, access) = match value.rsplit_once(':') {
        Some((spec, "rw")) if !spec.ends_with(':') => (spec, DirAccess::ReadWrite),
        Some((spec, "ro")) if !spec.ends_with(':') => (spec, DirAccess::ReadOnly),
        _ => (value, DirAccess::ReadOnly),
    };
    let (host, guest) = match spec.split_once("::") {
        Some((host, guest)) => (host, guest.to_owned()),
        None => (spec, spec.to_owned()),
    };
    if host.is_empty() || guest.is_empty() {
        return Err(invalid("expected HOST_DIR[::GUEST_DIR][:ro|:rw]"));
    }
    let host_path = PathBuf::from(host);
    if !host_path.is_dir() {
        return Err(invalid("the host directory does not exist"));
    }
    Ok(DirGrant {
        host_path,
        guest_path: guest,
        access,
    })
}

/// `NAME=VALUE`, or `NAME` to pass the host's value (looked up with `lookup`).
pub fn parse_env_grant(value: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<(String, String), PolicyError> {
    let invalid = |message: &str| PolicyError::InvalidValue {
        what: "environment grant",
        value: value.to_owned(),
        message: message.to_owned(),
    };
    match value.split_once('=') {
        Some(("", _)) => Err(invalid("the name is empty")),
        Some((name, val)) => Ok((name.to_owned(), val.to_owned())),
        None if value.is_empty() => Err(invalid("the name is empty")),
        None => lookup(value)
            .map(|val| (value.to_owned(), val))
            .ok_or_else(|| invalid("not set on the host; use NAME=VALUE")),
    }
}

/// Sizes: `268435456`, `256MiB`, `256M`, `1GiB`, `64KiB`, `64k`...
pub fn parse_size(value: &str) -> Result<u64, PolicyError> {
    let text = value.trim();
    let digits_end = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(digits_end);
    let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => {
            return Err(PolicyError::InvalidValue {
                what: "size",
                value: value.to_owned(),
                message: "expected a number with an optional unit (KiB, MiB, GiB)".into(),
            });
        }
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(multiplier))
        .ok_or_else(|| PolicyError::InvalidValue {
            what: "size",
            value: value.to_owned(),
            message: "not a number, or too large".into(),
        })
}

/// Durations: `300s`, `5m`, `1500ms`, `2h`, or bare seconds (`300`, `0.5`).
pub fn parse_duration(value: &str) -> Result<Duration, PolicyError> {
    let text = value.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let seconds_per_unit = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 0.001,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => f64::NAN,
    };
    // `try_from_secs_f64`: a number too large for a `Duration` (`99999999999999999999s`, found by
    // fuzzing) is an invalid value, not a panic; a NaN unit fails there too.
    let number = number.parse::<f64>().ok().filter(|n| n.is_finite() && *n >= 0.0);
    match number.and_then(|n| Duration::try_from_secs_f64(n * seconds_per_unit).ok()) {
        Some(duration) => Ok(duration),
        None => Err(PolicyError::InvalidValue {
            what: "duration",
            value: value.to_owned(),
            message: "expected e.g. 300s, 1500ms, 5m or 2h".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_deny_everything_and_match_the_documented_limits() {
        let policy = SandboxPolicy::default();
        assert_eq!(policy.memory_bytes, 256 << 20);
        assert_eq!(policy.deadline, Duration::from_secs(300));
        assert_eq!(policy.output_capture_bytes, 64 << 10);
        assert!(policy.dirs.is_empty() && policy.env.is_empty() && policy.allowed_models.is_empty());
        assert!(policy.fuel.is_none() && !policy.real_clock);
    }

    #[test]
    fn sizes_and_durations_parse_like_the_wasmtime_cli() {
        assert_eq!(parse_size("256MiB").unwrap(), 256 << 20);
        assert_eq!(parse_size("64k").unwrap(), 64 << 10);
        assert_eq!(parse_size("1024").unwrap(), 1024);
        assert!(parse_size("lots").is_err());
        assert!(parse_size("99999999999999999999GiB").is_err());
        assert_eq!(parse_duration("300s").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("1500ms").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("0.5").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn durations_too_large_for_a_duration_are_refused() {
        // Found by the policy_manifest fuzz target: these panicked in `Duration::from_secs_f64`.
        assert!(parse_duration("99999999999999999999s").is_err());
        assert!(parse_duration("9999999999999999h").is_err());
        assert!(SandboxPolicy::default().apply_manifest("timeout = \"1e30\"").is_err());
        let mut policy = SandboxPolicy::default();
        assert!(policy.apply_manifest("timeout = \"99999999999999999999\"").is_err());
    }

    #[test]
    fn dir_grants_read_host_guest_and_access() {
        let tmp = std::env::temp_dir();
        let host = tmp.to_string_lossy();
        let grant = parse_dir_grant(&format!("{host}::/data:rw")).unwrap();
        assert_eq!(
            (grant.guest_path.as_str(), grant.access),
            ("/data", DirAccess::ReadWrite)
        );
        let grant = parse_dir_grant(&host).unwrap();
        assert_eq!(
            (grant.guest_path, grant.access),
            (host.to_string(), DirAccess::ReadOnly)
        );
        assert!(parse_dir_grant("/definitely/not/here::/x").is_err());
        assert!(parse_dir_grant("::/x").is_err());
    }

    #[test]
    fn env_grants_take_a_value_or_the_hosts() {
        assert_eq!(parse_env_grant("A=1", |_| None).unwrap(), ("A".into(), "1".into()));
        assert_eq!(
            parse_env_grant("B", |_| Some("2".into())).unwrap(),
            ("B".into(), "2".into())
        );
        assert!(parse_env_grant("C", |_| None).is_err());
        assert!(parse_env_grant("=x", |_| None).is_err());
    }

    #[test]
    fn a_manifest_sets_limits_and_grants_and_rejects_unknown_keys() {
        let mut policy = SandboxPolicy::default();
        policy
            .apply_manifest(
                r#"
                max-memory-size = "64MiB"
                timeout = "20s"
                fuel = 1000000
                env = ["MODE=test"]
                real-clock = true
                [llm]
                models = ["gpt-x"]
                max-calls = 10
                max-tokens = 5000
                timeout = "30s"
                [spans]
                max-count = 500
                max-bytes = "4MiB"
                max-attribute-bytes = "8KiB"
                "#,
            )
            .unwrap();
        assert_eq!(
            (policy.memory_bytes, policy.deadline, policy.fuel),
            (64 << 20, Duration::from_secs(20), Some(1_000_000))
        );
        assert_eq!(policy.env, vec![("MODE".to_string(), "test".to_string())]);
        assert_eq!(policy.allowed_models, vec!["gpt-x".to_string()]);
        assert_eq!(
            policy.llm_budget,
            LlmBudget {
                max_calls: 10,
                max_tokens: 5000
            }
        );
        assert!(policy.real_clock);
        assert_eq!(
            policy.spans,
            SpanBudget {
                max_spans: 500,
                max_bytes: 4 << 20,
                max_attribute_bytes: 8 << 10
            }
        );
        assert!(SandboxPolicy::default().apply_manifest("network = true").is_err());
        assert!(
            SandboxPolicy::default()
                .apply_manifest("[spans]\nmax-bytes = \"lots\"")
                .is_err()
        );
    }

    #[test]
    fn overrides_replace_limits_and_add_grants() {
        let mut policy = SandboxPolicy {
            env: vec![("A".into(), "1".into())],
            ..SandboxPolicy::default()
        };
        policy.apply_overrides(PolicyOverrides {
            deadline: Some(Duration::from_millis(200)),
            env: vec![("B".into(), "2".into())],
            llm_max_calls: Some(10),
            ..PolicyOverrides::default()
        });
        assert_eq!(policy.deadline, Duration::from_millis(200));
        assert_eq!(policy.env.len(), 2);
        assert_eq!(policy.llm_budget.max_calls, 10);
    }

    #[test]
    fn a_missing_manifest_means_defaults_and_a_broken_one_names_its_file() {
        let dir = std::env::temp_dir().join(format!("agl-policy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let wasm = dir.join("agent.wasm");
        assert_eq!(SandboxPolicy::for_component(&wasm).unwrap(), SandboxPolicy::default());
        std::fs::write(dir.join("agent.toml"), "timeout = 5").unwrap();
        let err = SandboxPolicy::for_component(&wasm).unwrap_err();
        assert!(err.to_string().contains("agent.toml"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn llm_request_limits_layer_defaults_manifest_and_flags() {
        let mut policy = SandboxPolicy::default();
        assert_eq!(
            policy.llm_request,
            LlmRequestLimits {
                max_request_bytes: 4 << 20,
                max_output_tokens: 1_000_000,
                max_tools: 128,
                max_tools_bytes: 1 << 20,
            }
        );
        policy
            .apply_manifest(
                r#"
                [llm]
                max-request = "16MiB"
                max-output-tokens = 4096
                max-tools = 8
                max-tools-size = "64KiB"
                "#,
            )
            .unwrap();
        assert_eq!(
            policy.llm_request,
            LlmRequestLimits {
                max_request_bytes: 16 << 20,
                max_output_tokens: 4096,
                max_tools: 8,
                max_tools_bytes: 64 << 10,
            }
        );
        assert!(policy.apply_manifest("[llm]\nmax-request = \"lots\"\n").is_err());
        policy.apply_overrides(PolicyOverrides {
            llm_max_request_bytes: Some(1024),
            llm_max_tools: Some(0),
            ..PolicyOverrides::default()
        });
        assert_eq!(
            (policy.llm_request.max_request_bytes, policy.llm_request.max_tools),
            (1024, 0)
        );
        assert_eq!(
            policy.llm_request.max_output_tokens, 4096,
            "an absent flag keeps the manifest's"
        );
        assert_eq!(
            SandboxPolicy::algorithm_defaults().llm_request,
            LlmRequestLimits::default()
        );
    }
}
