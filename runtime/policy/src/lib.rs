//! The sandbox policy of one plugin: limits and grants, deny by default.
//!
//! A policy is made of slices, one per capability, each in its own module with two types: the
//! slice itself (e.g. [`Limits`], [`LlmPolicy`]), which the host applies when a `Store` is made,
//! and its options (e.g. [`LimitsOptions`]), declared once for both the TOML manifest (serde,
//! kebab-case keys, unknown keys refused) and the command line (clap flags, the same doc comment
//! as help). The layers are one rule, [`Layer::apply`]: defaults, then the manifest beside the
//! `.wasm` (`agent.wasm` → `agent.toml`; for a guest folder, the folder's own `agent.toml` or
//! `algorithm.toml`, read by the CLI), then the flags; a value set replaces, grants add up.
//! Spellings follow the wasmtime CLI (`--dir HOST::GUEST`, `--env NAME[=VAL]`, sizes like `256MiB`,
//! durations like `300s`), parsed by the value types of [`value`] for both.
//!
//! A new capability's policy: one module here (its slice, its options and their `Layer`), one
//! field in [`SandboxPolicy`] and one in [`SandboxOptions`] (below). Nothing in the CLI changes:
//! it flattens [`SandboxOptions`] into its flags.

mod clock;
mod grants;
mod http;
mod limits;
mod llm;
mod output;
mod spans;
pub mod value;

pub use clock::{Clock, ClockOptions};
pub use grants::{DirAccess, DirGrant, EnvGrant, GrantOptions, Grants, parse_dir_grant, parse_env_grant};
pub use http::{
    DEFAULT_HTTP_MAX_REQUESTS, DEFAULT_HTTP_MAX_RESPONSE_BYTES, DEFAULT_HTTP_TIMEOUT, Granted, HostMatch, HostPattern,
    HttpOptions, HttpPolicy, HttpScheme, RequestHost, parse_host_pattern,
};
pub use limits::{
    ALGORITHM_DEADLINE, ALGORITHM_MEMORY_BYTES, DEFAULT_DEADLINE, DEFAULT_MEMORY_BYTES, Limits, LimitsOptions,
};
pub use llm::{
    ALGORITHM_LLM_MAX_CALLS, ALGORITHM_LLM_MAX_TOKENS, DEFAULT_LLM_MAX_CALLS, DEFAULT_LLM_MAX_OUTPUT_TOKENS,
    DEFAULT_LLM_MAX_REQUEST_BYTES, DEFAULT_LLM_MAX_TOKENS, DEFAULT_LLM_MAX_TOOLS, DEFAULT_LLM_MAX_TOOLS_BYTES,
    DEFAULT_LLM_TIMEOUT, LlmBudget, LlmOptions, LlmPolicy, LlmRequestLimits,
};
pub use output::{DEFAULT_OUTPUT_CAPTURE_BYTES, OutputCapture, OutputOptions};
pub use spans::{DEFAULT_MAX_ATTRIBUTE_BYTES, DEFAULT_MAX_SPAN_BYTES, DEFAULT_MAX_SPANS, SpanBudget, SpanOptions};
pub use value::{HumanDuration, Size, parse_duration, parse_size};

use serde::Deserialize;
use std::path::{Path, PathBuf};
use thiserror::Error;

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

/// One layer's options for one slice (from a manifest or the flags), laid over it: what the
/// layer sets replaces the slice's value, grants add up, what it leaves unset stays.
pub trait Layer {
    type Policy;
    fn apply(self, policy: &mut Self::Policy);
}

/// The merge rule of one setting: a value set replaces, an unset one keeps what was there.
pub(crate) fn set<T>(slot: &mut T, value: Option<T>) {
    if let Some(value) = value {
        *slot = value;
    }
}

/// Limits and grants for every instance of one plugin: one slice per capability.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SandboxPolicy {
    /// Memory, deadline and fuel per instance.
    pub limits: Limits,
    /// Bytes of stdout and of stderr kept per attempt.
    pub output: OutputCapture,
    /// Directories and environment variables.
    pub grants: Grants,
    /// Virtual or real clocks.
    pub clock: Clock,
    /// Models, budget, timeout and request bounds of the LLM.
    pub llm: LlmPolicy,
    /// Spans per attempt: count, bytes, bytes per attribute.
    pub spans: SpanBudget,
    /// Outgoing HTTP: granted hosts, requests, timeout, response size.
    pub http: HttpPolicy,
}

/// Every sandbox setting one layer may give: the manifest file (the slices' keys at the top
/// level, `[llm]`, `[spans]` and `[http]` as tables) and the agent's flags (`agl-host run --agent-*`; the
/// CLI flattens this struct) are this one struct.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, clap::Args)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SandboxOptions {
    #[command(flatten)]
    #[serde(flatten)]
    pub limits: LimitsOptions,
    #[command(flatten)]
    #[serde(flatten)]
    pub output: OutputOptions,
    #[command(flatten)]
    #[serde(flatten)]
    pub grants: GrantOptions,
    #[command(flatten)]
    #[serde(flatten)]
    pub clock: ClockOptions,
    #[command(flatten)]
    #[serde(default)]
    pub llm: LlmOptions,
    #[command(flatten)]
    #[serde(default)]
    pub spans: SpanOptions,
    #[command(flatten)]
    #[serde(default)]
    pub http: HttpOptions,
    /// `allowed-outbound-hosts` at the top level, where Spin's manifests put it: the same
    /// grants as `[http]`'s key (both add up). The flag is `[http]`'s, `--agent-http`.
    #[arg(skip)]
    #[serde(default)]
    pub allowed_outbound_hosts: Vec<HostPattern>,
}

impl Layer for SandboxOptions {
    type Policy = SandboxPolicy;
    fn apply(self, policy: &mut SandboxPolicy) {
        self.limits.apply(&mut policy.limits);
        self.output.apply(&mut policy.output);
        self.grants.apply(&mut policy.grants);
        self.clock.apply(&mut policy.clock);
        self.llm.apply(&mut policy.llm);
        self.spans.apply(&mut policy.spans);
        let mut http = self.http;
        http.allowed_outbound_hosts.extend(self.allowed_outbound_hosts);
        http.apply(&mut policy.http);
    }
}

impl SandboxOptions {
    /// A manifest's text as options.
    pub fn from_manifest(text: &str) -> Result<Self, PolicyError> {
        toml::from_str(text).map_err(|e| PolicyError::InvalidValue {
            what: "manifest",
            value: String::new(),
            message: e.to_string(),
        })
    }

    /// The part of the agent's flags an algorithm shares: the timeout of one LLM call.
    pub fn shared_with_algorithm(&self) -> Self {
        Self {
            llm: LlmOptions {
                timeout: self.llm.timeout,
                ..LlmOptions::default()
            },
            ..Self::default()
        }
    }
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

    /// An algorithm's defaults (a week, 1 GiB, 100k LLM calls per run), then its manifest.
    pub fn for_algorithm(component: &Path) -> Result<Self, PolicyError> {
        let mut policy = Self::algorithm_defaults();
        policy.apply_manifest_beside(component)?;
        Ok(policy)
    }

    /// The limits an algorithm starts from before its manifest and flags.
    pub fn algorithm_defaults() -> Self {
        Self {
            limits: Limits::algorithm(),
            llm: LlmPolicy::algorithm(),
            ..Self::default()
        }
    }

    /// Applies the manifest beside `component`, if it has one.
    fn apply_manifest_beside(&mut self, component: &Path) -> Result<(), PolicyError> {
        self.apply_manifest_file(&Self::manifest_path(component))
    }

    /// Applies the manifest file `manifest` if there is one (an agent folder's `agent.toml`, say);
    /// an unreadable or invalid one is an error that names it.
    pub fn apply_manifest_file(&mut self, manifest: &Path) -> Result<(), PolicyError> {
        if !manifest.is_file() {
            return Ok(());
        }
        let text = std::fs::read_to_string(manifest).map_err(|e| PolicyError::ManifestUnreadable {
            path: manifest.to_path_buf(),
            message: e.to_string(),
        })?;
        self.apply_manifest(&text).map_err(|e| PolicyError::ManifestInvalid {
            path: manifest.to_path_buf(),
            message: e.to_string(),
        })
    }

    /// Applies a manifest's settings on top of this policy (nothing when it is invalid).
    pub fn apply_manifest(&mut self, text: &str) -> Result<(), PolicyError> {
        SandboxOptions::from_manifest(text)?.apply(self);
        Ok(())
    }

    /// Applies one layer of options (the flags) on top of this policy.
    pub fn apply(&mut self, options: SandboxOptions) {
        options.apply(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn defaults_deny_everything_and_match_the_documented_limits() {
        let policy = SandboxPolicy::default();
        assert_eq!(policy.limits.memory_bytes, 256 << 20);
        assert_eq!(policy.limits.deadline, Duration::from_secs(300));
        assert_eq!(policy.output.bytes, 64 << 10);
        assert!(policy.grants.dirs.is_empty() && policy.grants.env.is_empty());
        assert!(policy.llm.allowed_models.is_empty());
        assert!(policy.limits.fuel.is_none() && !policy.clock.real);
        assert!(policy.http.allowed_hosts.is_empty(), "no outgoing HTTP");
        assert_eq!(
            (
                policy.http.max_requests,
                policy.http.timeout,
                policy.http.max_response_bytes
            ),
            (100, Duration::from_secs(30), 10 << 20)
        );
        assert_eq!(SandboxPolicy::algorithm_defaults().http, HttpPolicy::default());
    }

    #[test]
    fn durations_too_large_for_a_duration_are_refused_in_a_manifest() {
        assert!(SandboxPolicy::default().apply_manifest("timeout = \"1e30\"").is_err());
        let mut policy = SandboxPolicy::default();
        assert!(policy.apply_manifest("timeout = \"99999999999999999999\"").is_err());
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
                output-capture = "1KiB"
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
            policy.limits,
            Limits {
                memory_bytes: 64 << 20,
                deadline: Duration::from_secs(20),
                fuel: Some(1_000_000)
            }
        );
        assert_eq!(policy.output.bytes, 1 << 10);
        assert_eq!(policy.grants.env, vec![EnvGrant::new("MODE", "test")]);
        assert_eq!(policy.llm.allowed_models, vec!["gpt-x".to_string()]);
        assert_eq!(
            policy.llm.budget,
            LlmBudget {
                max_calls: 10,
                max_tokens: 5000
            }
        );
        assert_eq!(policy.llm.timeout, Duration::from_secs(30));
        assert!(policy.clock.real);
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
                .apply_manifest("[llm]\nnetwork = true")
                .is_err()
        );
        assert!(
            SandboxPolicy::default()
                .apply_manifest("[spans]\nmax-bytes = \"lots\"")
                .is_err()
        );
        assert!(
            SandboxPolicy::default().apply_manifest("env = [\"PATH\"]").is_err(),
            "a manifest names its values"
        );
    }

    #[test]
    fn an_invalid_manifest_changes_nothing() {
        let mut policy = SandboxPolicy::default();
        assert!(policy.apply_manifest("timeout = \"20s\"\nfuel = \"many\"").is_err());
        assert_eq!(policy, SandboxPolicy::default());
    }

    #[test]
    fn flags_replace_limits_and_add_grants() {
        let mut policy = SandboxPolicy {
            grants: Grants {
                env: vec![EnvGrant::new("A", "1")],
                ..Grants::default()
            },
            ..SandboxPolicy::default()
        };
        let mut flags = SandboxOptions::default();
        flags.limits.timeout = Some(HumanDuration(Duration::from_millis(200)));
        flags.grants.env.push(EnvGrant::new("B", "2"));
        flags.llm.max_calls = Some(10);
        policy.apply(flags);
        assert_eq!(policy.limits.deadline, Duration::from_millis(200));
        assert_eq!(policy.grants.env.len(), 2);
        assert_eq!(policy.llm.budget.max_calls, 10);
    }

    #[test]
    fn a_flag_overrides_the_manifest_which_overrides_the_default() {
        let mut policy = SandboxPolicy::default();
        policy
            .apply_manifest("timeout = \"20s\"\nreal-clock = true\n[llm]\nmax-calls = 5\nmax-tokens = 50")
            .unwrap();
        let mut flags = SandboxOptions::default();
        flags.llm.max_calls = Some(7);
        policy.apply(flags);
        assert_eq!(policy.llm.budget.max_calls, 7, "the flag's");
        assert_eq!(policy.llm.budget.max_tokens, 50, "the manifest's");
        assert_eq!(policy.limits.deadline, Duration::from_secs(20), "the manifest's");
        assert!(policy.clock.real, "an absent switch keeps the manifest's");
        assert_eq!(policy.llm.request, LlmRequestLimits::default(), "the default");
    }

    #[test]
    fn an_algorithm_shares_only_the_llm_timeout_flag() {
        let mut flags = SandboxOptions::default();
        flags.limits.timeout = Some(HumanDuration(Duration::from_secs(1)));
        flags.llm.timeout = Some(HumanDuration(Duration::from_secs(9)));
        flags.llm.max_calls = Some(1);
        let mut policy = SandboxPolicy::algorithm_defaults();
        policy.apply(flags.shared_with_algorithm());
        assert_eq!(policy.llm.timeout, Duration::from_secs(9));
        assert_eq!(policy.limits, Limits::algorithm());
        assert_eq!(policy.llm.budget.max_calls, ALGORITHM_LLM_MAX_CALLS);
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
            policy.llm.request,
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
            policy.llm.request,
            LlmRequestLimits {
                max_request_bytes: 16 << 20,
                max_output_tokens: 4096,
                max_tools: 8,
                max_tools_bytes: 64 << 10,
            }
        );
        assert!(policy.apply_manifest("[llm]\nmax-request = \"lots\"\n").is_err());
        let mut flags = SandboxOptions::default();
        flags.llm.max_request = Some(Size(1024));
        flags.llm.max_tools = Some(0);
        policy.apply(flags);
        assert_eq!(
            (policy.llm.request.max_request_bytes, policy.llm.request.max_tools),
            (1024, 0)
        );
        assert_eq!(
            policy.llm.request.max_output_tokens, 4096,
            "an absent flag keeps the manifest's"
        );
        assert_eq!(
            SandboxPolicy::algorithm_defaults().llm.request,
            LlmRequestLimits::default()
        );
    }

    #[test]
    fn outgoing_http_is_granted_by_the_manifest_and_the_flags() {
        let mut policy = SandboxPolicy::default();
        policy
            .apply_manifest(
                r#"
                [http]
                allowed-outbound-hosts = ["https://api.example.com", "http://127.0.0.1:8080"]
                max-requests = 10
                timeout = "5s"
                max-response-size = "1MiB"
                "#,
            )
            .unwrap();
        let granted: Vec<String> = policy.http.allowed_hosts.iter().map(|p| p.to_string()).collect();
        assert_eq!(granted, ["https://api.example.com", "http://127.0.0.1:8080"]);
        assert_eq!(
            (
                policy.http.max_requests,
                policy.http.timeout,
                policy.http.max_response_bytes
            ),
            (10, Duration::from_secs(5), 1 << 20)
        );
        let err = SandboxPolicy::default()
            .apply_manifest("[http]\nallowed-outbound-hosts = [\"https://*\"]")
            .unwrap_err();
        assert!(err.to_string().contains("every host"), "{err}");
        // Spin's place for the key, the top level, grants as well; both places add up.
        let mut both = SandboxPolicy::default();
        both.apply_manifest(
            "allowed-outbound-hosts = [\"https://a.example.com\"]\n[http]\nallowed-outbound-hosts = [\"http://b:81\"]",
        )
        .unwrap();
        let granted: Vec<String> = both.http.allowed_hosts.iter().map(|p| p.to_string()).collect();
        assert_eq!(granted, ["http://b:81", "https://a.example.com"]);
        assert!(
            SandboxPolicy::default()
                .apply_manifest("allowed-outbound-hosts = [\"ftp://a.example.com\"]")
                .is_err()
        );
        let mut flags = SandboxOptions::default();
        flags
            .http
            .allowed_outbound_hosts
            .push("https://*.example.org".parse().unwrap());
        flags.http.max_requests = Some(3);
        policy.apply(flags);
        assert_eq!(policy.http.allowed_hosts.len(), 3, "grants add up");
        assert_eq!(policy.http.max_requests, 3, "the flag's");
        assert_eq!(policy.http.timeout, Duration::from_secs(5), "the manifest's");
        let mut algorithm = SandboxPolicy::algorithm_defaults();
        let mut agent_flags = SandboxOptions::default();
        agent_flags
            .http
            .allowed_outbound_hosts
            .push("https://a.example.com".parse().unwrap());
        algorithm.apply(agent_flags.shared_with_algorithm());
        assert!(
            algorithm.http.allowed_hosts.is_empty(),
            "an agent's grants are not the algorithm's"
        );
    }

    #[test]
    fn the_flags_are_the_manifest_keys() {
        use clap::{Args, Command};
        let command = SandboxOptions::augment_args(Command::new("sandbox"));
        command.clone().debug_assert();
        let flags: Vec<&str> = command.get_arguments().filter_map(|a| a.get_long()).collect();
        for flag in [
            "agent-memory",
            "agent-timeout",
            "agent-fuel",
            "agent-output-capture",
            "agent-dir",
            "agent-env",
            "agent-real-clock",
            "agent-model",
            "agent-llm-calls",
            "agent-llm-tokens",
            "llm-timeout",
            "agent-llm-max-request",
            "agent-llm-max-output-tokens",
            "agent-llm-max-tools",
            "agent-llm-max-tools-size",
            "agent-max-spans",
            "agent-max-span-bytes",
            "agent-max-attribute-bytes",
            "agent-http",
            "agent-http-requests",
            "agent-http-timeout",
            "agent-http-max-response",
        ] {
            assert!(flags.contains(&flag), "--{flag} is missing from {flags:?}");
        }
        assert_eq!(flags.len(), 22, "one flag per manifest key: {flags:?}");
    }
}
