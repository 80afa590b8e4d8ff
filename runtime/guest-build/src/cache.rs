//! Building a user's guest crate outside its source tree: into a cache directory (the CLI passes
//! the user's cache, `~/.cache/agl-host/guests` by default) that holds one cargo target directory
//! shared by every crate it builds, and a copy of each component under a name of its own —
//! `<artifact>-<16 hex digits of the crate folder's path>.wasm` — so that two crates with one name
//! never overwrite each other. A file lock makes the build and the copy one step across processes.

use crate::error::GuestBuildError;
use crate::{build_into, crate_names};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Builds the guest crate in `crate_dir` into `cache_dir` and returns the path of its own copy of
/// the component there. With `echo`, cargo's progress is copied to stderr as it comes.
pub fn build_cached(crate_dir: &Path, cache_dir: &Path, echo: bool) -> Result<PathBuf, GuestBuildError> {
    let cache_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| GuestBuildError::Cache { path, source }
    };
    std::fs::create_dir_all(cache_dir).map_err(cache_error(cache_dir))?;
    let lock_path = cache_dir.join(".build.lock");
    let lock = std::fs::File::create(&lock_path).map_err(cache_error(&lock_path))?;
    lock.lock().map_err(cache_error(&lock_path))?;

    let built = build_into(crate_dir, &cache_dir.join("target"), echo)?;
    let destination = cached_component_path(crate_dir, cache_dir)?;
    let partial = destination.with_extension("wasm.partial");
    std::fs::copy(&built, &partial).map_err(cache_error(&partial))?;
    std::fs::rename(&partial, &destination).map_err(cache_error(&destination))?;
    Ok(destination)
    // The lock is released when `lock` is dropped.
}

/// Where [`build_cached`] puts the component of the crate in `crate_dir`.
pub fn cached_component_path(crate_dir: &Path, cache_dir: &Path) -> Result<PathBuf, GuestBuildError> {
    let manifest = crate_dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).map_err(|source| GuestBuildError::Manifest {
        crate_dir: crate_dir.to_path_buf(),
        manifest: manifest.clone(),
        source,
    })?;
    let names = crate_names(&text).ok_or(GuestBuildError::NoPackageName { manifest })?;
    let folder = crate_dir.canonicalize().unwrap_or_else(|_| crate_dir.to_path_buf());
    let digest = Sha256::digest(folder.as_os_str().as_encoded_bytes());
    let hex: String = digest.iter().take(8).map(|byte| format!("{byte:02x}")).collect();
    Ok(cache_dir.join(format!("{}-{hex}.wasm", names.artifact)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crate_at(dir: &Path, name: &str) {
        std::fs::create_dir_all(dir).expect("dir");
        std::fs::write(dir.join("Cargo.toml"), format!("[package]\nname = \"{name}\"\n")).expect("manifest");
    }

    #[test]
    fn two_crates_with_one_name_get_two_paths_and_one_crate_keeps_its_path() {
        let root = std::env::temp_dir().join(format!("agl-guest-cache-{}", std::process::id()));
        let (first, second) = (root.join("a/agent"), root.join("b/agent"));
        crate_at(&first, "my-agent");
        crate_at(&second, "my-agent");
        let cache = root.join("cache");
        let one = cached_component_path(&first, &cache).expect("path");
        let other = cached_component_path(&second, &cache).expect("path");
        assert_ne!(one, other);
        assert_eq!(one, cached_component_path(&first, &cache).expect("path"));
        let name = one.file_name().and_then(|n| n.to_str()).expect("name");
        assert!(name.starts_with("my_agent-") && name.ends_with(".wasm"), "{name}");
        assert_eq!(one.parent(), Some(cache.as_path()));
        let _ = std::fs::remove_dir_all(root);
    }
}
