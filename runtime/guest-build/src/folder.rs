//! A guest folder of any language, built into a component in the cache: the language is told by
//! the folder's manifest — `Cargo.toml` (Rust), `pyproject.toml` or `app.py` (Python),
//! `package.json` (JavaScript) — and each language's builder installs its toolchain on first use
//! and rebuilds only when the sources change.

use crate::error::GuestBuildError;
use std::path::{Path, PathBuf};

/// The language a guest folder is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestLanguage {
    Rust,
    Python,
    JavaScript,
}

impl GuestLanguage {
    /// Its name, as the CLI prints it.
    pub fn name(self) -> &'static str {
        match self {
            GuestLanguage::Rust => "Rust",
            GuestLanguage::Python => "Python",
            GuestLanguage::JavaScript => "JavaScript",
        }
    }
}

/// The language of the guest in `dir`, by its manifest; `None` when it has none of them.
pub fn detect(dir: &Path) -> Option<GuestLanguage> {
    if dir.join("Cargo.toml").is_file() {
        Some(GuestLanguage::Rust)
    } else if dir.join("pyproject.toml").is_file() || dir.join("app.py").is_file() {
        Some(GuestLanguage::Python)
    } else if dir.join("package.json").is_file() {
        Some(GuestLanguage::JavaScript)
    } else {
        None
    }
}

/// Builds the guest in `dir` into `cache_dir` and returns its component there. With `echo`, the
/// build tool's progress goes to stderr as it comes (Rust); first-use toolchain installs always
/// say so on stderr.
pub fn build_folder(dir: &Path, cache_dir: &Path, echo: bool) -> Result<PathBuf, GuestBuildError> {
    build_folder_noting(dir, cache_dir, echo, &mut |_| {})
}

/// [`build_folder`], telling `note` why a build runs, just before it does: `first build`,
/// `src/lib.rs changed`, `the SDK or the toolchain changed`... Nothing is told when the cache
/// holds a component of the same sources. Only the files the build reads are sources (see
/// `fingerprint.rs`): data, notes, results and the folder's `agent.toml` are not.
pub fn build_folder_noting(
    dir: &Path,
    cache_dir: &Path,
    echo: bool,
    note: &mut dyn FnMut(&str),
) -> Result<PathBuf, GuestBuildError> {
    // The build tools run in the guest's folder: a relative cache path (AGL_CACHE_DIR=target/x)
    // would point elsewhere there.
    let cache_dir = &std::path::absolute(cache_dir).map_err(|source| GuestBuildError::Cache {
        path: cache_dir.to_path_buf(),
        source,
    })?;
    match detect(dir) {
        Some(GuestLanguage::Rust) => crate::cache::build_cached_noting(dir, cache_dir, echo, note),
        Some(GuestLanguage::Python) => crate::python::build_cached(dir, cache_dir, echo, note),
        Some(GuestLanguage::JavaScript) => crate::js::build_cached(dir, cache_dir, echo, note),
        None => Err(GuestBuildError::UnknownFolder { dir: dir.to_path_buf() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_tells_the_language() {
        let root = crate::repo_root();
        assert_eq!(detect(&root.join("examples/math-agent")), Some(GuestLanguage::Rust));
        let dir = std::env::temp_dir().join(format!("agl-folder-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        assert_eq!(detect(&dir), None);
        let err = build_folder(&dir, &dir.join("cache"), false).unwrap_err();
        assert!(err.to_string().contains("is not a guest folder"), "{err}");
        std::fs::write(dir.join("package.json"), "{}").expect("write");
        assert_eq!(detect(&dir), Some(GuestLanguage::JavaScript));
        std::fs::write(dir.join("app.py"), "").expect("write");
        assert_eq!(
            detect(&dir),
            Some(GuestLanguage::Python),
            "Python wins over package.json"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
