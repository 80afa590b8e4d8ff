//! Building a JavaScript guest folder (one with `package.json`) into a component with
//! componentize-js, cached. The toolchain (componentize-js and esbuild, pinned) is installed into
//! the cache on first use ([`toolchain`]); the SDK and the build script are embedded in this
//! binary and written into the cache ([`sdk`]). The build script (`js/build.mjs`, run by Node)
//! reads `package.json` (entry: `"agl": {"entry"}`, else `"main"`, else `index.js`; world:
//! `"agl": {"world"}`, `agent` by default), installs its `dependencies` with npm when the folder
//! has no `node_modules`, bundles the entry with the `agl` SDK and the dependencies into one ES
//! module (esbuild) and componentizes it. The component goes to `<cache>/<name>-<16 hex>.wasm`,
//! the hex a digest of the folder's sources (`node_modules` excluded), the SDK, the build script,
//! the WIT and the toolchain's pins: a build runs only when one of them changed.

mod sdk;
mod toolchain;

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::GuestBuildError;
use crate::fingerprint::{Fingerprint, Sources};
use crate::{canonical, embedded, tool};
use toolchain::COMPONENTIZE_JS_VERSION;

/// Builds the JavaScript guest in `dir` into `cache_dir` (unless a component of the same sources
/// is there already) and returns the component's path. With `echo`, the build script's messages
/// are copied to stderr as they come; `note` is told why, before a build runs.
pub(crate) fn build_cached(
    dir: &Path,
    cache_dir: &Path,
    echo: bool,
    note: &mut dyn FnMut(&str),
) -> Result<PathBuf, GuestBuildError> {
    let folder = canonical(dir);
    let manifest = folder.join("package.json");
    if !manifest.is_file() {
        return Err(GuestBuildError::Manifest {
            crate_dir: folder.clone(),
            manifest,
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "a JavaScript guest needs package.json"),
        });
    }
    let fingerprint = fingerprint(&folder, &sdk::sdk_digest())?;
    let digest = fingerprint.digest();
    let output = cache_dir.join(format!("{}-{}.wasm", component_name(&folder), &digest[..16]));
    if output.is_file() {
        fingerprint.save(cache_dir, &folder);
        return Ok(output);
    }
    let _lock = tool::lock(&output.with_extension("wasm.lock"))?;
    if output.is_file() {
        fingerprint.save(cache_dir, &folder);
        return Ok(output);
    }
    note(&fingerprint.why(Fingerprint::load(cache_dir, &folder).as_ref()));
    let tools = toolchain::ensure(cache_dir)?;
    let wit = embedded::write_wit(cache_dir)?;
    let sdk_dir = sdk::write_sdk(cache_dir)?;
    let partial = output.with_extension("wasm.partial");
    let mut command = Command::new(&tools.node);
    command
        .current_dir(&folder)
        .arg(sdk_dir.join(sdk::BUILD_SCRIPT))
        .arg("--dir")
        .arg(&folder)
        .arg("--toolchain")
        .arg(&tools.dir)
        .arg("--sdk")
        .arg(&sdk_dir)
        .arg("--wit")
        .arg(&wit)
        .arg("--work")
        .arg(cache_dir.join("js"))
        .arg("--out")
        .arg(&partial);
    run_build(&mut command, &folder, &partial, echo)?;
    std::fs::rename(&partial, &output).map_err(|source| GuestBuildError::Cache {
        path: output.clone(),
        source,
    })?;
    fingerprint.save(cache_dir, &folder);
    Ok(output)
}

/// What names the component of `folder`: its sources (`node_modules` excluded), the embedded SDK
/// and build script (`sdk_digest`), the WIT and the toolchain's pins.
fn fingerprint(folder: &Path, sdk_digest: &str) -> Result<Fingerprint, GuestBuildError> {
    let pins = toolchain::install_specs().join("\n");
    Fingerprint::of(
        folder,
        Sources::JavaScript,
        &[
            sdk_digest.as_bytes(),
            embedded::wit_digest().as_bytes(),
            pins.as_bytes(),
        ],
    )
}

/// The stem of the component's file: `package.json`'s `"name"`, else the folder's (`naming.rs`).
fn component_name(folder: &Path) -> String {
    let package = std::fs::read_to_string(folder.join("package.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|manifest| manifest.get("name")?.as_str().map(str::to_owned));
    crate::component_name(package.as_deref(), folder)
}

/// Runs the build script; its failure (the user's code does not bundle or does not componentize)
/// becomes [`GuestBuildError::ToolFailed`] with what the tools said.
fn run_build(command: &mut Command, folder: &Path, output: &Path, echo: bool) -> Result<(), GuestBuildError> {
    command
        // wizer and weval (Rust programs the build runs) print a backtrace when this is set.
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE");
    let (status, stderr) = tool::run_streaming(command, echo, |err| GuestBuildError::ToolMissing {
        tool: "node".to_owned(),
        hint: format!("it could not be run ({err})"),
    })?;
    if status.success() && output.is_file() {
        return Ok(());
    }
    Err(GuestBuildError::ToolFailed {
        tool: format!("componentize-js {COMPONENTIZE_JS_VERSION}"),
        dir: folder.to_path_buf(),
        status,
        stderr_tail: error_text(&stderr),
    })
}

/// The part of the build script's stderr worth showing: without Node's own stack of the script
/// (`    at ...` lines under an uncaught error), its last lines.
fn error_text(stderr: &str) -> String {
    let kept: Vec<&str> = stderr
        .lines()
        .filter(|line| !(line.starts_with("    at ") && (line.contains("node:") || line.contains("file://"))))
        .collect();
    tool::tail(kept.join("\n").trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_package_json_else_the_folder() {
        let root = crate::repo_root();
        assert_eq!(component_name(&root.join("examples/math-agent-js")), "math_agent_js");
        assert_eq!(component_name(&root.join("tests/guests/probe-js")), "probe_js");
        let dir = std::env::temp_dir().join(format!("agl-js-name-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(dir.join("package.json"), r#"{"name": "@Me/Calc-Agent"}"#).expect("write");
        assert_eq!(component_name(&dir), "me_calc_agent");
        std::fs::write(dir.join("package.json"), "{}").expect("write");
        assert_eq!(
            component_name(&dir),
            format!("agl_js_name_{}", std::process::id()),
            "the folder's"
        );
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(component_name(Path::new("/")), "guest");
    }

    #[test]
    fn the_error_keeps_the_tools_words_and_drops_nodes_stack() {
        let stderr = "bundling a.js (esbuild) failed:\n✘ [ERROR] Unexpected \";\"\n\n    a.js:3:12:\n      3 │   return 1 +;\n\
                      Error: boom\n    at main (file:///cache/js-sdk/x/build.mjs:1:1)\n    at node:internal/x:1:1\n";
        let text = error_text(stderr);
        assert!(text.starts_with("bundling a.js (esbuild) failed:"), "{text}");
        assert!(
            text.contains("    a.js:3:12:") && text.contains("return 1 +;"),
            "{text}"
        );
        assert!(
            !text.contains("build.mjs:1:1") && !text.contains("node:internal"),
            "{text}"
        );
    }

    #[test]
    fn a_folder_without_package_json_is_refused_before_any_tool_runs() {
        let dir = std::env::temp_dir().join(format!("agl-js-nopkg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let err = build_cached(&dir, &dir.join("cache"), false, &mut |_| {})
            .unwrap_err()
            .to_string();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(err.contains("a JavaScript guest needs package.json"), "{err}");
    }

    #[test]
    fn the_digest_covers_sources_sdk_wit_and_pins_but_not_node_modules() {
        let dir = std::env::temp_dir().join(format!("agl-js-digest-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("node_modules/x")).expect("dir");
        std::fs::write(dir.join("package.json"), "{\"main\": \"a.js\"}").expect("write");
        std::fs::write(dir.join("a.js"), "export const rollout = 1;").expect("write");
        let extras = |sdk: &str| fingerprint(&dir, sdk).expect("digest").digest();
        let first = extras(&sdk::sdk_digest());
        std::fs::write(dir.join("node_modules/x/index.js"), "junk").expect("write");
        assert_eq!(first, extras(&sdk::sdk_digest()), "node_modules is not a source");
        assert_ne!(first, extras("another sdk"), "the SDK counts");
        std::fs::write(dir.join("a.js"), "export const rollout = 2;").expect("write");
        assert_ne!(first, extras(&sdk::sdk_digest()), "an edit counts");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
