//! The one way a store is named everywhere (`--db`, `AGL_DB`): `memory`, `sqlite:PATH` (or a
//! path ending in `.db`/`.sqlite`/`.sqlite3`), `postgres://USER@HOST[:PORT]/DB` (or
//! `postgresql://`). Parsing only: opening is [`crate::open`].

use crate::error::DbError;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// Where a store keeps its records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbUrl {
    /// In this process's memory: gone when it exits.
    Memory,
    /// An SQLite database file (created if missing).
    Sqlite(PathBuf),
    /// A PostgreSQL database, as a libpq URL.
    Postgres(String),
}

impl DbUrl {
    /// What `--help` and errors show as the accepted forms.
    pub const FORMS: &'static str = "memory, sqlite:PATH, postgres://USER@HOST[:PORT]/DB";

    /// The URL with any password replaced by `***`, for logs and messages.
    pub fn redacted(&self) -> String {
        match self {
            DbUrl::Postgres(url) => redact_password(url),
            other => other.to_string(),
        }
    }
}

fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((user_info, host)) => match user_info.split_once(':') {
            Some((user, _password)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

impl FromStr for DbUrl {
    type Err = DbError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("memory") || text == ":memory:" {
            return Ok(DbUrl::Memory);
        }
        if let Some(path) = text.strip_prefix("sqlite://").or_else(|| text.strip_prefix("sqlite:")) {
            if path.is_empty() {
                return Err(DbError::Url {
                    url: text.to_owned(),
                    reason: "no file after `sqlite:` (e.g. sqlite:.agl/runs.db)".to_owned(),
                });
            }
            return Ok(DbUrl::Sqlite(PathBuf::from(path)));
        }
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            let after = text.split_once("://").map_or("", |(_, rest)| rest);
            if after.is_empty() || after.starts_with('/') {
                return Err(DbError::Url {
                    url: redact_password(text),
                    reason: "no host (e.g. postgres://agl@localhost/agl)".to_owned(),
                });
            }
            return Ok(DbUrl::Postgres(text.to_owned()));
        }
        let lower = text.to_ascii_lowercase();
        if [".db", ".sqlite", ".sqlite3"].iter().any(|ext| lower.ends_with(ext)) && !text.contains("://") {
            return Ok(DbUrl::Sqlite(PathBuf::from(text)));
        }
        Err(DbError::Url {
            url: redact_password(text),
            reason: format!("not a store URL; use one of: {}", DbUrl::FORMS),
        })
    }
}

impl fmt::Display for DbUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbUrl::Memory => f.write_str("memory"),
            DbUrl::Sqlite(path) => write!(f, "sqlite:{}", path.display()),
            DbUrl::Postgres(url) => f.write_str(url),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_form_parses() {
        assert_eq!("memory".parse::<DbUrl>().unwrap(), DbUrl::Memory);
        assert_eq!(
            "sqlite:.agl/runs.db".parse::<DbUrl>().unwrap(),
            DbUrl::Sqlite(".agl/runs.db".into())
        );
        assert_eq!(
            "sqlite:///tmp/x.db".parse::<DbUrl>().unwrap(),
            DbUrl::Sqlite("/tmp/x.db".into())
        );
        assert_eq!(
            "runs.sqlite".parse::<DbUrl>().unwrap(),
            DbUrl::Sqlite("runs.sqlite".into())
        );
        assert_eq!(
            "postgres://agl@db:5432/agl".parse::<DbUrl>().unwrap(),
            DbUrl::Postgres("postgres://agl@db:5432/agl".into())
        );
        assert!(matches!(
            "postgresql://u@h/d".parse::<DbUrl>().unwrap(),
            DbUrl::Postgres(_)
        ));
    }

    #[test]
    fn bad_urls_say_what_is_accepted_and_hide_passwords() {
        let err = "mysql://root:hunter2@h/d".parse::<DbUrl>().unwrap_err().to_string();
        assert!(err.contains("sqlite:PATH") && err.contains("root:***@h/d"), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
        assert!("sqlite:".parse::<DbUrl>().unwrap_err().to_string().contains("no file"));
        assert!(
            "postgres:///db"
                .parse::<DbUrl>()
                .unwrap_err()
                .to_string()
                .contains("no host")
        );
        assert_eq!(
            DbUrl::Postgres("postgres://u:pw@h/d".into()).redacted(),
            "postgres://u:***@h/d"
        );
    }
}
