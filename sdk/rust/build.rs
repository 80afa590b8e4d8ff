//! Declares one module per file of `src/capabilities/` (a host capability's wrapper: its calls,
//! its `Ctx` accessor), so that adding a capability is adding its file: writes
//! `$OUT_DIR/capabilities.rs`, which `src/lib.rs` includes as `agl_sdk::capabilities`.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default()).join("src/capabilities");
    println!("cargo::rerun-if-changed={}", dir.display());
    let mut modules: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("cannot list {}: {error}", dir.display()))
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "rs"))
        .filter_map(|path| Some((path.file_stem()?.to_str()?.to_owned(), path.clone())))
        .collect();
    modules.sort();
    let mut out = String::new();
    for (name, path) in &modules {
        assert!(
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "{}: a capability file is named as a Rust module (lowercase, digits, _)",
            path.display()
        );
        let _ = writeln!(out, "#[path = {:?}]\npub mod {name};", path.display().to_string());
    }
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    std::fs::write(out_dir.join("capabilities.rs"), out)
        .unwrap_or_else(|error| panic!("cannot write capabilities.rs: {error}"));
}
