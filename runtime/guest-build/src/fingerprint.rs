//! "Rebuild only when sources change": a digest of the files of a guest folder that its build
//! reads — per language ([`Sources`]): Rust's `Cargo.toml`, `Cargo.lock`, `.rs` files, `src/`,
//! `.cargo/config*`; Python's `.py` files, `pyproject.toml`, requirements and lock files, `wit/`;
//! JavaScript's sources (`.js`, `.mjs`, `.cjs`, `.ts`, ...), `package.json` and lock files — each
//! file's path relative to the folder and its bytes, in a fixed order, plus whatever else the
//! build depends on (the SDK and WIT embedded in this binary, the toolchain's version). Any other
//! file (data, rules, notes, results written into the folder, the sandbox manifest `agent.toml`)
//! is not part of it, and neither are build output and tool folders (dot-folders but `.cargo`,
//! `node_modules`, `__pycache__`, `target`, `build`, `dist`). The listing of the last build of a
//! folder is kept in the cache (`<cache>/fingerprints/`), so that a rebuild says why
//! ([`Fingerprint::why`]: `src/lib.rs changed`, `first build`).

use crate::error::GuestBuildError;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Folders that hold build output or installed tools, never sources.
const SKIPPED_DIRS: &[&str] = &["node_modules", "__pycache__", "target", "build", "dist"];

/// Which files of a guest folder its build reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sources {
    Rust,
    Python,
    JavaScript,
}

impl Sources {
    /// Whether the build reads the file at `relative` (`/`-separated) in the folder.
    fn wants(self, relative: &str) -> bool {
        let name = relative.rsplit('/').next().unwrap_or(relative);
        let extension = name.rsplit_once('.').map_or("", |(_, ext)| ext);
        match self {
            Sources::Rust => {
                matches!(
                    name,
                    "Cargo.toml" | "Cargo.lock" | "rust-toolchain" | "rust-toolchain.toml"
                ) || extension == "rs"
                    || relative.starts_with("src/")
                    || relative.contains("/src/")
                    || matches!(relative, ".cargo/config" | ".cargo/config.toml")
            }
            Sources::Python => {
                matches!(
                    name,
                    "pyproject.toml" | "uv.lock" | "poetry.lock" | "pdm.lock" | "Pipfile" | "Pipfile.lock"
                ) || matches!(extension, "py" | "wit")
                    || (name.starts_with("requirements") && extension == "txt")
                    || relative.starts_with("wit/")
            }
            Sources::JavaScript => {
                matches!(
                    name,
                    "package.json"
                        | "package-lock.json"
                        | "npm-shrinkwrap.json"
                        | "yarn.lock"
                        | "pnpm-lock.yaml"
                        | "tsconfig.json"
                ) || matches!(extension, "js" | "mjs" | "cjs" | "ts" | "mts" | "cts" | "jsx" | "tsx")
            }
        }
    }

    /// Whether to look inside the dot-folder `name` (only Rust's `.cargo`).
    fn enters_dot_dir(self, name: &str) -> bool {
        self == Sources::Rust && name == ".cargo"
    }
}

/// The files a build reads (path and hex SHA-256 of the bytes, by path) and the digest of the
/// rest it depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    files: Vec<(String, String)>,
    extras: String,
}

impl Fingerprint {
    /// The sources of `sources`' language under `dir`, and each of `extra`.
    pub(crate) fn of(dir: &Path, sources: Sources, extra: &[&[u8]]) -> Result<Self, GuestBuildError> {
        let mut paths = Vec::new();
        collect(dir, dir, sources, &mut paths)?;
        paths.retain(|relative| sources.wants(relative));
        paths.sort();
        let mut files = Vec::with_capacity(paths.len());
        for relative in paths {
            let path = dir.join(&relative);
            let bytes = std::fs::read(&path).map_err(|source| GuestBuildError::Cache {
                path: path.clone(),
                source,
            })?;
            files.push((relative, hex(&Sha256::digest(&bytes))));
        }
        let mut hasher = Sha256::new();
        for part in extra {
            // Lengths first, so that no two different lists hash the same bytes.
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part);
        }
        Ok(Self {
            files,
            extras: hex(&hasher.finalize()),
        })
    }

    /// Hex SHA-256 of the whole: every file's path and digest, and the extras.
    pub(crate) fn digest(&self) -> String {
        let mut hasher = Sha256::new();
        for (relative, digest) in &self.files {
            hasher.update((relative.len() as u64).to_le_bytes());
            hasher.update(relative.as_bytes());
            hasher.update(digest.as_bytes());
        }
        hasher.update(self.extras.as_bytes());
        hex(&hasher.finalize())
    }

    /// Why a build of these sources runs, after the build of `previous` (the folder's last one):
    /// `first build`, `src/lib.rs changed`, `app.py added (and 2 more files)`, `the SDK or the
    /// toolchain changed`, or `no built component in the cache` when nothing changed.
    pub(crate) fn why(&self, previous: Option<&Fingerprint>) -> String {
        let Some(previous) = previous else {
            return "first build".to_owned();
        };
        let mut changes = Vec::new();
        for (relative, digest) in &self.files {
            match previous.files.iter().find(|(p, _)| p == relative) {
                None => changes.push(format!("{relative} added")),
                Some((_, old)) if old != digest => changes.push(format!("{relative} changed")),
                Some(_) => {}
            }
        }
        for (relative, _) in &previous.files {
            if !self.files.iter().any(|(p, _)| p == relative) {
                changes.push(format!("{relative} removed"));
            }
        }
        match changes.len() {
            0 if self.extras != previous.extras => "the SDK or the toolchain changed".to_owned(),
            0 => "no built component in the cache".to_owned(),
            1 => changes.remove(0),
            2 => format!("{} (and 1 more file)", changes[0]),
            n => format!("{} (and {} more files)", changes[0], n - 1),
        }
    }

    /// The listing of the last build of `folder` kept in `cache_dir`, if any (and readable).
    pub(crate) fn load(cache_dir: &Path, folder: &Path) -> Option<Self> {
        let text = std::fs::read_to_string(record_path(cache_dir, folder)).ok()?;
        let mut lines = text.lines();
        let extras = lines.next()?.strip_prefix("extras ")?.to_owned();
        let files = lines
            .map(|line| line.split_once(' ').map(|(d, p)| (p.to_owned(), d.to_owned())))
            .collect::<Option<Vec<_>>>()?;
        Some(Self { files, extras })
    }

    /// Keeps this listing as the last build of `folder` (best effort: it only words a message).
    pub(crate) fn save(&self, cache_dir: &Path, folder: &Path) {
        if Self::load(cache_dir, folder).as_ref() == Some(self) {
            return;
        }
        let mut text = format!("extras {}\n", self.extras);
        for (relative, digest) in &self.files {
            text.push_str(&format!("{digest} {relative}\n"));
        }
        let path = record_path(cache_dir, folder);
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let partial = path.with_extension("partial");
        if std::fs::write(&partial, text).is_ok() {
            let _ = std::fs::rename(&partial, &path);
        }
    }
}

/// Where the listing of the last build of the (canonical) `folder` is kept.
fn record_path(cache_dir: &Path, folder: &Path) -> PathBuf {
    let digest = hex(&Sha256::digest(folder.as_os_str().as_encoded_bytes()));
    cache_dir.join("fingerprints").join(format!("{}.txt", &digest[..16]))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Hex SHA-256 of the sources of `sources`' language under `dir` and of each of `extra`.
#[cfg(test)]
pub(crate) fn source_digest(dir: &Path, sources: Sources, extra: &[&[u8]]) -> Result<String, GuestBuildError> {
    Ok(Fingerprint::of(dir, sources, extra)?.digest())
}

/// The files under `dir` (relative to `root`, `/`-separated), skipping [`SKIPPED_DIRS`] and
/// dot-entries (but the dot-folders `sources` reads); symlinks are followed only to files.
fn collect(root: &Path, dir: &Path, sources: Sources, files: &mut Vec<String>) -> Result<(), GuestBuildError> {
    let read_error = |source| GuestBuildError::Cache {
        path: dir.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(read_error)? {
        let entry = entry.map_err(read_error)?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let path = entry.path();
        if path.is_dir() {
            if (!name.starts_with('.') || sources.enters_dot_dir(&name)) && !SKIPPED_DIRS.contains(&name.as_ref()) {
                collect(root, &path, sources, files)?;
            }
        } else if !name.starts_with('.')
            && path.is_file()
            && let Ok(relative) = path.strip_prefix(root)
        {
            let parts: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            files.push(parts.join("/"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("agl-fingerprint-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src")).expect("scratch dir");
        dir
    }

    #[test]
    fn the_digest_follows_sources_and_extras_but_not_build_output() {
        let dir = scratch("follows");
        std::fs::write(dir.join("app.py"), "print(1)").expect("write");
        std::fs::write(dir.join("src/lib.py"), "x = 1").expect("write");
        let digest = |extra: &[u8]| source_digest(&dir, Sources::Python, &[extra]).expect("digest");
        let first = digest(b"sdk-1");
        assert_eq!(first, digest(b"sdk-1"), "stable");
        assert_ne!(first, digest(b"sdk-2"), "extras count");

        for skipped in ["node_modules", "__pycache__", ".venv", "target"] {
            std::fs::create_dir_all(dir.join(skipped)).expect("mkdir");
            std::fs::write(dir.join(skipped).join("junk.py"), "junk").expect("write");
        }
        std::fs::write(dir.join(".hidden.py"), "junk").expect("write");
        assert_eq!(first, digest(b"sdk-1"), "output is skipped");

        std::fs::write(dir.join("src/lib.py"), "x = 2").expect("write");
        assert_ne!(first, digest(b"sdk-1"), "an edit counts");
        std::fs::write(dir.join("src/lib.py"), "x = 1").expect("write");
        std::fs::rename(dir.join("src/lib.py"), dir.join("src/other.py")).expect("rename");
        assert_ne!(first, digest(b"sdk-1"), "a rename counts");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn data_results_notes_and_the_manifest_are_not_sources() {
        type Case = (Sources, &'static [(&'static str, &'static str)], &'static str);
        let cases: [Case; 3] = [
            (
                Sources::Rust,
                &[("Cargo.toml", "[package]"), ("src/lib.rs", "fn a() {}")],
                "src/lib.rs",
            ),
            (
                Sources::Python,
                &[
                    ("pyproject.toml", "[project]"),
                    ("app.py", "x = 1"),
                    ("requirements.txt", ""),
                ],
                "app.py",
            ),
            (
                Sources::JavaScript,
                &[("package.json", "{}"), ("index.js", "export {}"), ("lib/util.ts", "")],
                "index.js",
            ),
        ];
        for (sources, files, source) in cases {
            let dir = scratch(&format!("{sources:?}"));
            for (path, text) in files {
                std::fs::create_dir_all(dir.join(path).parent().expect("parent")).expect("mkdir");
                std::fs::write(dir.join(path), text).expect("write");
            }
            let digest = || source_digest(&dir, sources, &[b"sdk"]).expect("digest");
            let first = digest();
            for (path, text) in [
                ("data/train.jsonl", "{}"),
                ("rules.json", "{}"),
                ("results.json", "{\"total\": 1}"),
                ("NOTES.md", "todo"),
                ("agent.toml", "timeout = \"5s\""),
            ] {
                std::fs::create_dir_all(dir.join(path).parent().expect("parent")).expect("mkdir");
                std::fs::write(dir.join(path), text).expect("write");
                assert_eq!(first, digest(), "{sources:?}: {path} is not a source");
            }
            std::fs::write(dir.join(source), "changed").expect("write");
            assert_ne!(first, digest(), "{sources:?}: {source} is a source");
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    #[test]
    fn rusts_cargo_config_counts() {
        let dir = scratch("cargo-config");
        std::fs::write(dir.join("Cargo.toml"), "[package]").expect("write");
        let first = source_digest(&dir, Sources::Rust, &[]).expect("digest");
        std::fs::create_dir_all(dir.join(".cargo")).expect("mkdir");
        std::fs::write(dir.join(".cargo/config.toml"), "[build]").expect("write");
        assert_ne!(first, source_digest(&dir, Sources::Rust, &[]).expect("digest"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_rebuild_says_why_and_the_listing_is_kept() {
        let dir = scratch("why");
        let cache = dir.join("cache");
        std::fs::write(dir.join("app.py"), "x = 1").expect("write");
        let of = || Fingerprint::of(&dir, Sources::Python, &[b"sdk"]).expect("fingerprint");
        let first = of();
        assert_eq!(first.why(Fingerprint::load(&cache, &dir).as_ref()), "first build");
        first.save(&cache, &dir);
        assert_eq!(Fingerprint::load(&cache, &dir).as_ref(), Some(&first));
        assert_eq!(first.why(Some(&first)), "no built component in the cache");
        std::fs::write(dir.join("app.py"), "x = 2").expect("write");
        assert_eq!(of().why(Some(&first)), "app.py changed");
        std::fs::write(dir.join("b.py"), "").expect("write");
        std::fs::write(dir.join("c.py"), "").expect("write");
        assert_eq!(of().why(Some(&first)), "app.py changed (and 2 more files)");
        let now = of();
        std::fs::remove_file(dir.join("b.py")).expect("rm");
        std::fs::remove_file(dir.join("c.py")).expect("rm");
        assert_eq!(of().why(Some(&now)), "b.py removed (and 1 more file)");
        let other = Fingerprint::of(&dir, Sources::Python, &[b"sdk-2"]).expect("fingerprint");
        assert_eq!(other.why(Some(&of())), "the SDK or the toolchain changed");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_missing_folder_is_an_error() {
        assert!(source_digest(Path::new("/nonexistent/agl/guest"), Sources::Rust, &[]).is_err());
    }
}
