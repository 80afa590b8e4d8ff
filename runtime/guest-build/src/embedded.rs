//! The WIT this binary was built with, embedded, so that a `cargo install`ed `agl-host` builds
//! Python and JS guests with no repository around: written on demand into the cache, one folder
//! per content digest (`<cache>/wit/<16 hex>/`), never rewritten once complete.

use crate::error::GuestBuildError;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The WIT files of the `agl:agent` package: (file name, text).
pub const WIT_FILES: &[(&str, &str)] = &[
    ("agent.wit", include_str!("../../../wit/agent.wit")),
    ("algorithm.wit", include_str!("../../../wit/algorithm.wit")),
];

/// The WIT files' digest: part of every guest's fingerprint (a new WIT rebuilds every guest).
pub fn wit_digest() -> String {
    let mut hasher = Sha256::new();
    for (name, text) in WIT_FILES {
        hasher.update(name.as_bytes());
        hasher.update([0]);
        hasher.update(text.as_bytes());
        hasher.update([0]);
    }
    hasher
        .finalize()
        .iter()
        .take(8)
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Writes the embedded WIT into `<cache_dir>/wit/<digest>/` (if not there yet) and returns it.
pub(crate) fn write_wit(cache_dir: &Path) -> Result<PathBuf, GuestBuildError> {
    write_files(&cache_dir.join("wit").join(wit_digest()), WIT_FILES)
}

/// Writes `files` into `dir` unless a previous call completed it (marked by `.complete`); files
/// are written under temporary names and renamed, so a reader never sees half a file.
pub(crate) fn write_files(dir: &Path, files: &[(&str, &str)]) -> Result<PathBuf, GuestBuildError> {
    let error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| GuestBuildError::Cache { path, source }
    };
    let marker = dir.join(".complete");
    if marker.is_file() {
        return Ok(dir.to_path_buf());
    }
    for (name, text) in files {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(error(parent))?;
        }
        let partial = path.with_extension(format!("partial-{}", std::process::id()));
        std::fs::write(&partial, text).map_err(error(&partial))?;
        std::fs::rename(&partial, &path).map_err(error(&path))?;
    }
    std::fs::write(&marker, "").map_err(error(&marker))?;
    Ok(dir.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_wit_is_the_repositorys_and_lands_in_the_cache_once() {
        for (name, text) in WIT_FILES {
            let on_disk = std::fs::read_to_string(crate::repo_root().join("wit").join(name)).expect("wit file");
            assert_eq!(&on_disk, text, "{name}");
        }
        let cache = std::env::temp_dir().join(format!("agl-embedded-{}", std::process::id()));
        let dir = write_wit(&cache).expect("written");
        assert!(dir.ends_with(Path::new("wit").join(wit_digest())));
        assert!(dir.join("agent.wit").is_file() && dir.join("algorithm.wit").is_file());
        assert_eq!(write_wit(&cache).expect("again"), dir);
        let _ = std::fs::remove_dir_all(&cache);
    }
}
