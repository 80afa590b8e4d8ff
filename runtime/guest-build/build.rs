//! Lists the SDK files embedded in this crate from their folders, so that a module added to
//! `sdk/python/agl` or `sdk/js/src` is embedded without editing a list: writes
//! `$OUT_DIR/python_sdk_files.rs` (every `*.py` of `sdk/python/agl`) and
//! `$OUT_DIR/js_sdk_files.rs` (every `*.js` of `sdk/js/src` and its subfolders, such as
//! `capabilities/`, `package.json` and the build script), each a slice of
//! `(name, include_str!(path))` that `python/sdk.rs` and `js/sdk.rs` include.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a build script: a failure stops the build with its reason"
)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The regular files of `dir` whose names end with `suffix` (hidden ones left out), sorted.
fn files(dir: &Path, suffix: &str) -> Vec<(String, PathBuf)> {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    let mut found: Vec<(String, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_file()))
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            (name.ends_with(suffix) && !name.starts_with('.')).then(|| (name, entry.path()))
        })
        .collect();
    found.sort();
    found
}

/// The files of `dir` and its subfolders whose names end with `suffix` (hidden ones left out),
/// named by their path under `dir` with `/` between folders, sorted.
fn files_deep(dir: &Path, suffix: &str) -> Vec<(String, PathBuf)> {
    let mut found = files(dir, suffix);
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    for entry in entries.filter_map(Result::ok) {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) && !name.starts_with('.') {
            found.extend(
                files_deep(&entry.path(), suffix)
                    .into_iter()
                    .map(|(inner, path)| (format!("{name}/{inner}"), path)),
            );
        }
    }
    found.sort();
    found
}

/// One `(name, include_str!(path)),` line per entry, in a slice expression.
fn slice<'a>(entries: impl IntoIterator<Item = (String, &'a Path)>, extra: &str) -> String {
    let mut out = String::from("&[\n");
    for (name, path) in entries {
        let _ = writeln!(out, "    ({name:?}, include_str!({:?})),", path.display().to_string());
    }
    out.push_str(extra);
    out.push_str("]\n");
    out
}

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let sdk = manifest.join("../../sdk");
    let python = sdk.join("python/agl");
    let js = sdk.join("js");
    for watched in [&python, &js.join("src")] {
        println!("cargo:rerun-if-changed={}", watched.display());
    }

    let python_files = files(&python, ".py");
    let python_list = slice(
        python_files.iter().map(|(name, path)| (name.clone(), path.as_path())),
        "",
    );
    std::fs::write(out.join("python_sdk_files.rs"), python_list).expect("write python_sdk_files.rs");

    let js_files = files_deep(&js.join("src"), ".js");
    let package = js.join("package.json");
    let build_script = manifest.join("src/js/build.mjs");
    let js_list = slice(
        js_files
            .iter()
            .map(|(name, path)| (format!("src/{name}"), path.as_path()))
            .chain([("package.json".to_owned(), package.as_path())]),
        &format!(
            "    (BUILD_SCRIPT, include_str!({:?})),\n",
            build_script.display().to_string()
        ),
    );
    std::fs::write(out.join("js_sdk_files.rs"), js_list).expect("write js_sdk_files.rs");
}
