//! The grants slice: host directories and environment variables a guest may see (nothing by
//! default). Grants from each layer add up. A manifest's env grant names its value
//! (`NAME=VALUE`); only a flag may pass the host's (`--agent-env NAME`), so that a manifest
//! shipped beside a component cannot read the host's environment.

use crate::value::from_text;
use crate::{Layer, PolicyError};
use serde::{Deserialize, Deserializer};
use std::path::PathBuf;
use std::str::FromStr;

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

/// An environment variable the guest sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvGrant {
    pub name: String,
    pub value: String,
}

impl EnvGrant {
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            value: value.into(),
        }
    }

    /// A flag's grant: `NAME=VALUE`, or `NAME` to pass the host's value.
    pub fn from_flag(value: &str) -> Result<Self, PolicyError> {
        parse_env_grant(value, |name| std::env::var(name).ok())
    }
}

/// Every directory and variable granted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Grants {
    pub dirs: Vec<DirGrant>,
    pub env: Vec<EnvGrant>,
}

/// Grants as a manifest (`dir = [...]`, `env = [...]`) or the flags give them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, clap::Args)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct GrantOptions {
    /// Grant a directory: HOST[::GUEST][:ro|:rw] (read-only unless :rw). Repeatable.
    #[arg(long = "agent-dir", value_name = "DIR")]
    #[serde(default)]
    pub dir: Vec<DirGrant>,
    /// Grant an environment variable: NAME=VALUE, or NAME to pass the host's. Repeatable.
    #[arg(long = "agent-env", value_name = "NAME[=VALUE]", value_parser = EnvGrant::from_flag)]
    #[serde(default)]
    pub env: Vec<EnvGrant>,
}

impl Layer for GrantOptions {
    type Policy = Grants;
    fn apply(self, grants: &mut Grants) {
        grants.dirs.extend(self.dir);
        grants.env.extend(self.env);
    }
}

impl FromStr for DirGrant {
    type Err = PolicyError;
    fn from_str(value: &str) -> Result<Self, PolicyError> {
        parse_dir_grant(value)
    }
}

impl<'de> Deserialize<'de> for DirGrant {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        from_text(deserializer, "a directory grant such as \"/data::/data:ro\"")
    }
}

/// A manifest's env grant: `NAME=VALUE` only.
impl FromStr for EnvGrant {
    type Err = PolicyError;
    fn from_str(value: &str) -> Result<Self, PolicyError> {
        parse_env_grant(value, |_| None)
    }
}

impl<'de> Deserialize<'de> for EnvGrant {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        from_text(deserializer, "an environment grant such as \"MODE=test\"")
    }
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
pub fn parse_env_grant(value: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<EnvGrant, PolicyError> {
    let invalid = |message: &str| PolicyError::InvalidValue {
        what: "environment grant",
        value: value.to_owned(),
        message: message.to_owned(),
    };
    match value.split_once('=') {
        Some(("", _)) => Err(invalid("the name is empty")),
        Some((name, val)) => Ok(EnvGrant::new(name, val)),
        None if value.is_empty() => Err(invalid("the name is empty")),
        None => lookup(value)
            .map(|val| EnvGrant::new(value, val))
            .ok_or_else(|| invalid("not set on the host; use NAME=VALUE")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(parse_env_grant("A=1", |_| None).unwrap(), EnvGrant::new("A", "1"));
        assert_eq!(
            parse_env_grant("B", |_| Some("2".into())).unwrap(),
            EnvGrant::new("B", "2")
        );
        assert!(parse_env_grant("C", |_| None).is_err());
        assert!(parse_env_grant("=x", |_| None).is_err());
    }

    #[test]
    fn a_manifest_cannot_pass_the_hosts_environment() {
        assert!("PATH".parse::<EnvGrant>().is_err());
        assert!(EnvGrant::from_flag("PATH").is_ok() || std::env::var("PATH").is_err());
    }
}
