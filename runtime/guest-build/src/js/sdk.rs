//! The JavaScript SDK (`sdk/js/src`) and the build script (`build.mjs`) embedded in this binary,
//! so that a `cargo install`ed `agl-host` builds JS guests with no repository around: written on
//! demand into `<cache>/js-sdk/<16 hex>/`, one folder per content digest.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::embedded::write_files;
use crate::error::GuestBuildError;

/// The build script, run by Node with the toolchain's modules.
pub(crate) const BUILD_SCRIPT: &str = "build.mjs";

/// The embedded files: (path in the SDK folder, text): every `*.js` of `sdk/js/src` and its
/// subfolders (`src/capabilities/...`), `package.json` and the build script, listed by
/// `build.rs`. `src/index.js` is what `import 'agl'` resolves to in a guest.
pub(crate) const SDK_FILES: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/js_sdk_files.rs"));

/// Hex SHA-256 of the embedded files (names and texts): part of every JS guest's fingerprint.
pub(crate) fn sdk_digest() -> String {
    let mut hasher = Sha256::new();
    for (name, text) in SDK_FILES {
        hasher.update((name.len() as u64).to_le_bytes());
        hasher.update(name.as_bytes());
        hasher.update((text.len() as u64).to_le_bytes());
        hasher.update(text.as_bytes());
    }
    hasher.finalize().iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Writes the embedded SDK into `<cache_dir>/js-sdk/<digest>/` (once) and returns that folder.
pub(crate) fn write_sdk(cache_dir: &Path) -> Result<PathBuf, GuestBuildError> {
    let digest = sdk_digest();
    write_files(&cache_dir.join("js-sdk").join(&digest[..16]), SDK_FILES)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `src/...` names of the `*.js` files under `dir`, subfolders included.
    fn modules_under(dir: &Path, prefix: &str, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir)
            .expect("an SDK folder")
            .filter_map(|entry| entry.ok())
        {
            let name = format!("{prefix}/{}", entry.file_name().to_string_lossy());
            if entry.path().is_dir() {
                modules_under(&entry.path(), &name, found);
            } else if name.ends_with(".js") {
                found.push(name);
            }
        }
    }

    #[test]
    fn every_sdk_module_is_embedded() {
        let mut on_disk = Vec::new();
        modules_under(&crate::repo_root().join("sdk/js/src"), "src", &mut on_disk);
        on_disk.sort();
        assert!(
            on_disk.contains(&"src/capabilities/reward.js".to_owned()),
            "{on_disk:?}"
        );
        let mut embedded: Vec<String> = SDK_FILES
            .iter()
            .map(|(name, _)| (*name).to_owned())
            .filter(|name| name.starts_with("src/"))
            .collect();
        embedded.sort();
        assert_eq!(on_disk, embedded, "a module of sdk/js/src is not in SDK_FILES");
    }

    #[test]
    fn the_sdk_lands_in_the_cache_once_under_its_digest() {
        let cache = std::env::temp_dir().join(format!("agl-js-sdk-{}", std::process::id()));
        let dir = write_sdk(&cache).expect("written");
        assert!(dir.ends_with(Path::new("js-sdk").join(&sdk_digest()[..16])));
        assert!(dir.join("src/index.js").is_file() && dir.join(BUILD_SCRIPT).is_file());
        let index = std::fs::read_to_string(dir.join("src/index.js")).expect("index.js");
        assert!(index.contains("export function rollout(fn)"));
        assert_eq!(write_sdk(&cache).expect("again"), dir);
        let _ = std::fs::remove_dir_all(&cache);
    }
}
