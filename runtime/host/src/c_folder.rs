//! C agent folders (`.c` files and no other manifest) for `--agent DIR` and `agl-host build`:
//! built with `agl-c-guest` (wit-bindgen-c bindings, clang for WASI preview 1, the preview 1
//! adapter) into `<cache>/c/<name>-<16 hex of its path>.wasm` (the folder's name as every
//! language's components are named: `agl_guest_build::component_name`), every time (a build takes
//! half a second).

use crate::inputs::InputError;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

/// Whether `dir` is a C agent folder: `.c` files at its top, and no manifest of another language.
pub fn is_c_folder(dir: &Path) -> bool {
    agl_guest_build::detect(dir).is_none() && agl_c_guest::compile::sources(dir).is_ok()
}

/// Builds the C agent in `dir` into `cache_dir`; clang's warnings are shown, failures explained.
pub fn build(dir: &Path, cache_dir: &Path) -> Result<PathBuf, InputError> {
    let folder = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    folder.hash(&mut hasher);
    // The rule every language's components are named by (agl_guest_build's naming.rs).
    let name = agl_guest_build::component_name(None, &folder);
    let out = cache_dir
        .join("c")
        .join(format!("{name}-{:016x}.wasm", hasher.finish()));
    let built = agl_c_guest::build_agent(dir, &out, &agl_c_guest::Toolchain::default())
        .map_err(|e| InputError(format!("cannot build the C agent {}: {e}", dir.display())))?;
    if !built.warnings.trim().is_empty() {
        crate::output::stderr_line(&format!("clang warnings:\n{}", built.warnings.trim_end()));
    }
    Ok(built.component)
}
