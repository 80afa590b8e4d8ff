//! The WIT this binary was built with, embedded, so that a `cargo install`ed `agl-host` builds
//! Python and JS guests with no repository around: written on demand into the cache, one folder
//! per content digest (`<cache>/wit/<16 hex>/`), never rewritten once complete. Python agents
//! built with the SDK get a folder of their own (`<cache>/wit-python/<16 hex>/`): the same
//! `agl:agent` files plus `sdk/python/wit/` (world `agent-python`, which adds
//! `wasi:http/outgoing-handler`, and the `wasi:*` declarations it needs under `deps/`).

use crate::error::GuestBuildError;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The WIT files of the `agl:agent` package: (file name, text).
pub const WIT_FILES: &[(&str, &str)] = &[
    ("agent.wit", include_str!("../../../wit/agent.wit")),
    ("algorithm.wit", include_str!("../../../wit/algorithm.wit")),
];

/// The world a Python agent built with the SDK is built against (in [`PYTHON_WIT_FILES`]).
pub const PYTHON_AGENT_WORLD: &str = "agent-python";

/// The WIT folder of Python agents built with the SDK: [`WIT_FILES`], the world
/// [`PYTHON_AGENT_WORLD`] and the parts of `wasi:http`, `wasi:io` and `wasi:clocks` it imports
/// (relative path, text).
pub const PYTHON_WIT_FILES: &[(&str, &str)] = &[
    ("agent.wit", include_str!("../../../wit/agent.wit")),
    ("algorithm.wit", include_str!("../../../wit/algorithm.wit")),
    (
        "agent-python.wit",
        include_str!("../../../sdk/python/wit/agent-python.wit"),
    ),
    (
        "deps/clocks.wit",
        include_str!("../../../sdk/python/wit/deps/clocks.wit"),
    ),
    ("deps/http.wit", include_str!("../../../sdk/python/wit/deps/http.wit")),
    ("deps/io.wit", include_str!("../../../sdk/python/wit/deps/io.wit")),
];

/// The WIT files' digest: part of every guest's fingerprint (a new WIT rebuilds every guest).
pub fn wit_digest() -> String {
    digest(WIT_FILES)
}

/// The digest of [`PYTHON_WIT_FILES`]: part of a Python guest's fingerprint.
pub fn python_wit_digest() -> String {
    digest(PYTHON_WIT_FILES)
}

/// 16 hex digits of the SHA-256 of `files`' names and texts.
fn digest(files: &[(&str, &str)]) -> String {
    let mut hasher = Sha256::new();
    for (name, text) in files {
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

/// Writes the Python agents' WIT into `<cache_dir>/wit-python/<digest>/` (if not there yet) and
/// returns it.
pub(crate) fn write_python_wit(cache_dir: &Path) -> Result<PathBuf, GuestBuildError> {
    write_files(
        &cache_dir.join("wit-python").join(python_wit_digest()),
        PYTHON_WIT_FILES,
    )
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

    #[test]
    fn the_python_wit_is_the_agl_package_plus_the_sdks_folder() {
        let root = crate::repo_root();
        let mut expected: Vec<String> = WIT_FILES.iter().map(|(name, _)| (*name).to_owned()).collect();
        let sdk_wit = root.join("sdk/python/wit");
        for sub in ["", "deps"] {
            for entry in std::fs::read_dir(sdk_wit.join(sub)).expect("sdk/python/wit") {
                let name = entry.expect("entry").file_name().to_string_lossy().into_owned();
                if name.ends_with(".wit") {
                    expected.push(if sub.is_empty() { name } else { format!("{sub}/{name}") });
                }
            }
        }
        expected.sort();
        let mut embedded: Vec<String> = PYTHON_WIT_FILES.iter().map(|(name, _)| (*name).to_owned()).collect();
        embedded.sort();
        assert_eq!(
            embedded, expected,
            "list every file of sdk/python/wit in PYTHON_WIT_FILES"
        );
        for (name, text) in PYTHON_WIT_FILES {
            let on_disk = match WIT_FILES.iter().any(|(agl, _)| agl == name) {
                true => root.join("wit").join(name),
                false => sdk_wit.join(name),
            };
            assert_eq!(&std::fs::read_to_string(on_disk).expect("wit file"), text, "{name}");
        }
        let world = format!("world {PYTHON_AGENT_WORLD} {{");
        assert!(PYTHON_WIT_FILES.iter().any(|(_, text)| text.contains(&world)));
        assert_ne!(python_wit_digest(), wit_digest());

        let cache = std::env::temp_dir().join(format!("agl-embedded-py-{}", std::process::id()));
        let dir = write_python_wit(&cache).expect("written");
        assert!(dir.ends_with(Path::new("wit-python").join(python_wit_digest())));
        assert!(dir.join("agent-python.wit").is_file() && dir.join("deps/http.wit").is_file());
        assert_eq!(write_python_wit(&cache).expect("again"), dir);
        let _ = std::fs::remove_dir_all(&cache);
    }
}
