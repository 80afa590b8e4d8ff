//! "Rebuild only when sources change": a digest of a guest folder's sources (every file's path
//! relative to the folder and its bytes, in a fixed order) plus whatever else the build depends on
//! (the SDK and WIT embedded in this binary, the toolchain's version). Build output and tool
//! folders (dot-folders, `node_modules`, `__pycache__`, `target`, `build`, `dist`) are skipped.

use crate::error::GuestBuildError;
use sha2::{Digest, Sha256};
use std::path::Path;

/// Folders that hold build output or installed tools, never sources.
const SKIPPED_DIRS: &[&str] = &["node_modules", "__pycache__", "target", "build", "dist"];

/// Hex SHA-256 of the sources under `dir` and of each of `extra`.
pub(crate) fn source_digest(dir: &Path, extra: &[&[u8]]) -> Result<String, GuestBuildError> {
    let mut files = Vec::new();
    collect(dir, dir, &mut files)?;
    files.sort();
    let mut hasher = Sha256::new();
    for relative in &files {
        let path = dir.join(relative);
        let bytes = std::fs::read(&path).map_err(|source| GuestBuildError::Cache {
            path: path.clone(),
            source,
        })?;
        // Lengths first, so that no two different listings hash the same bytes.
        hasher.update((relative.len() as u64).to_le_bytes());
        hasher.update(relative.as_bytes());
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    for part in extra {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    Ok(hasher.finalize().iter().map(|byte| format!("{byte:02x}")).collect())
}

/// The files under `dir` (relative to `root`, `/`-separated), skipping [`SKIPPED_DIRS`] and
/// dot-entries; symlinks are followed only to files.
fn collect(root: &Path, dir: &Path, files: &mut Vec<String>) -> Result<(), GuestBuildError> {
    let read_error = |source| GuestBuildError::Cache {
        path: dir.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(read_error)? {
        let entry = entry.map_err(read_error)?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            if !SKIPPED_DIRS.contains(&name.as_ref()) {
                collect(root, &path, files)?;
            }
        } else if path.is_file()
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
        let first = source_digest(&dir, &[b"sdk-1"]).expect("digest");
        assert_eq!(first, source_digest(&dir, &[b"sdk-1"]).expect("digest"), "stable");
        assert_ne!(first, source_digest(&dir, &[b"sdk-2"]).expect("digest"), "extras count");

        for skipped in ["node_modules", "__pycache__", ".venv", "target"] {
            std::fs::create_dir_all(dir.join(skipped)).expect("mkdir");
            std::fs::write(dir.join(skipped).join("junk"), "junk").expect("write");
        }
        std::fs::write(dir.join(".hidden"), "junk").expect("write");
        assert_eq!(
            first,
            source_digest(&dir, &[b"sdk-1"]).expect("digest"),
            "output is skipped"
        );

        std::fs::write(dir.join("src/lib.py"), "x = 2").expect("write");
        assert_ne!(
            first,
            source_digest(&dir, &[b"sdk-1"]).expect("digest"),
            "an edit counts"
        );
        std::fs::write(dir.join("src/lib.py"), "x = 1").expect("write");
        std::fs::rename(dir.join("src/lib.py"), dir.join("src/other.py")).expect("rename");
        assert_ne!(
            first,
            source_digest(&dir, &[b"sdk-1"]).expect("digest"),
            "a rename counts"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_missing_folder_is_an_error() {
        assert!(source_digest(Path::new("/nonexistent/agl/guest"), &[]).is_err());
    }
}
