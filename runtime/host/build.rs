//! Embeds the built-in algorithms in the `agl-host` binary: builds `plugins/baseline`,
//! `plugins/apo` and `plugins/gepa` for wasm32-wasip2 (through agl-guest-build, into the `wasm-guests` folder beside
//! this build's own target directory, which the tests share) and copies each component into
//! `OUT_DIR`, where `src/builtin.rs` includes it. So `--algo apo` works anywhere, with no Rust
//! toolchain at run time; building agl-host needs the wasm32-wasip2 target (rust-toolchain.toml
//! names it, so rustup installs it with the toolchain).
//!
//! Also, for the tests only, the cfgs of the outside tools they need (`agl_test_tools::emit_cfgs`:
//! `agl_has_postgres`, `agl_has_chromium`, `agl_has_c_toolchain`); without one, its tests are
//! ignored with the reason, except under `CI=true`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a build script: a failure stops the build with its reason"
)]

use std::path::{Path, PathBuf};

/// The built-in algorithms: (name, guest crate folder relative to the repository root).
const BUILTINS: &[(&str, &str)] = &[
    ("baseline", "plugins/baseline"),
    ("apo", "plugins/apo"),
    ("gepa", "plugins/gepa"),
];

/// What a plugin's build reads besides its own folder.
const SHARED_SOURCES: &[&str] = &["sdk/rust", "sdk/rust-algorithm", "wit"];

fn main() {
    agl_test_tools::emit_cfgs(&agl_test_tools::Tool::ALL);
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir.join("../..");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let guest_target = guest_target_dir(&out_dir);
    for source in SHARED_SOURCES {
        rerun_if_changed(&root.join(source));
    }
    for (name, folder) in BUILTINS {
        let crate_dir = root.join(folder);
        for part in ["src", "Cargo.toml", "Cargo.lock", "prompts"] {
            rerun_if_changed(&crate_dir.join(part));
        }
        let built = match agl_guest_build::build_into(&crate_dir, &guest_target, false) {
            Ok(path) => path,
            Err(error) => {
                eprintln!("error: cannot build the built-in algorithm `{name}` ({folder}): {error}");
                std::process::exit(1);
            }
        };
        let embedded = out_dir.join(format!("{name}.wasm"));
        if let Err(error) = std::fs::copy(&built, &embedded) {
            eprintln!(
                "error: cannot copy {} to {}: {error}",
                built.display(),
                embedded.display()
            );
            std::process::exit(1);
        }
    }
}

/// `<target>/wasm-guests`, where `<target>` holds this build's profile folder: OUT_DIR is
/// `<target>/<profile>/build/agl-host-<hash>/out`.
fn guest_target_dir(out_dir: &Path) -> PathBuf {
    out_dir
        .ancestors()
        .nth(4)
        .map_or_else(|| out_dir.join("wasm-guests"), |target| target.join("wasm-guests"))
}

fn rerun_if_changed(path: &Path) {
    if path.exists() {
        println!("cargo::rerun-if-changed={}", path.display());
    }
}
