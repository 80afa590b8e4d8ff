//! Building a user's guest crate outside its source tree: into a cache directory (the CLI passes
//! the user's cache, `~/.cache/agl-host/guests` by default) that holds one cargo target directory
//! shared by every crate it builds, and a copy of each component under a name of its own —
//! `<name>-<16 hex digits of the crate folder's path>.wasm` (`naming.rs`: the package name as
//! `[a-z0-9_]`, which is cargo's artifact name) — so that two crates with one name
//! never overwrite each other. A file lock makes the build and the copy one step across processes.

use crate::error::GuestBuildError;
use crate::fingerprint::{Fingerprint, Sources};
use crate::{CrateNames, build_now, canonical, read_names};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Builds the guest crate in `crate_dir` into `cache_dir` and returns the path of its own copy of
/// the component there. With `echo`, cargo's progress is copied to stderr as it comes.
pub fn build_cached(crate_dir: &Path, cache_dir: &Path, echo: bool) -> Result<PathBuf, GuestBuildError> {
    build_cached_noting(crate_dir, cache_dir, echo, &mut |_| {})
}

/// [`build_cached`], telling `note` why before a build when the crate's sources changed since its
/// last build in this cache (or there was none): cargo runs every time, and decides itself what
/// to recompile (path dependencies outside the folder included).
pub(crate) fn build_cached_noting(
    crate_dir: &Path,
    cache_dir: &Path,
    echo: bool,
    note: &mut dyn FnMut(&str),
) -> Result<PathBuf, GuestBuildError> {
    let cache_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| GuestBuildError::Cache { path, source }
    };
    let names = read_names(crate_dir)?;
    let folder = canonical(crate_dir);
    std::fs::create_dir_all(cache_dir).map_err(cache_error(cache_dir))?;
    let lock_path = cache_dir.join(".build.lock");
    let lock = std::fs::File::create(&lock_path).map_err(cache_error(&lock_path))?;
    // Held until `lock` drops: another process's crate of the same name cannot overwrite the
    // shared target's component between this build and its copy.
    lock.lock().map_err(cache_error(&lock_path))?;
    let destination = cached_component_path(&folder, &names, cache_dir);
    let fingerprint = Fingerprint::of(&folder, Sources::Rust, &[])?;
    let previous = Fingerprint::load(cache_dir, &folder).filter(|_| destination.is_file());
    if previous.as_ref() != Some(&fingerprint) {
        note(&fingerprint.why(previous.as_ref()));
    }
    let built = build_now(&folder, &names, &cache_dir.join("target"), echo)?;
    let partial = destination.with_extension("wasm.partial");
    std::fs::copy(&built, &partial).map_err(cache_error(&partial))?;
    std::fs::rename(&partial, &destination).map_err(cache_error(&destination))?;
    fingerprint.save(cache_dir, &folder);
    Ok(destination)
}

/// Where [`build_cached`] puts the component of the crate (`names`) in the canonical `folder`.
fn cached_component_path(folder: &Path, names: &CrateNames, cache_dir: &Path) -> PathBuf {
    let digest = Sha256::digest(folder.as_os_str().as_encoded_bytes());
    let hex: String = digest.iter().take(8).map(|byte| format!("{byte:02x}")).collect();
    let name = crate::component_name(Some(&names.package), folder);
    cache_dir.join(format!("{name}-{hex}.wasm"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(package: &str) -> CrateNames {
        CrateNames {
            package: package.to_owned(),
            artifact: package.replace('-', "_"),
        }
    }

    #[test]
    fn two_crates_with_one_name_get_two_paths_and_one_crate_keeps_its_path() {
        let cache = Path::new("/cache");
        let agent = names("my-agent");
        let one = cached_component_path(Path::new("/a/agent"), &agent, cache);
        let other = cached_component_path(Path::new("/b/agent"), &agent, cache);
        assert_ne!(one, other);
        assert_eq!(one, cached_component_path(Path::new("/a/agent"), &agent, cache));
        let name = one.file_name().and_then(|n| n.to_str()).expect("name");
        assert!(name.starts_with("my_agent-") && name.ends_with(".wasm"), "{name}");
        assert_eq!(name.len(), "my_agent-".len() + 16 + ".wasm".len(), "{name}");
        assert_eq!(one.parent(), Some(cache));
    }
}
