//! Really builds guests: one small guest from parallel threads (the first run compiles wit-bindgen,
//! about a minute), plus two throwaway crates for the failure messages (a compile error, a crate
//! that is not a `cdylib`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test: a failed step panics and fails it"
)]

use std::path::{Path, PathBuf};

use agl_guest_build::{GuestBuildError, build, build_guest, guest_target_dir};

/// The preamble of a component binary: `\0asm`, version 0x0d, layer 1 (a core module has layer 0).
const COMPONENT_HEADER: [u8; 8] = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];

#[test]
fn a_guest_built_from_parallel_threads_is_one_component() {
    let threads: Vec<_> = (0..3)
        .map(|_| std::thread::spawn(|| build_guest("tests/guests/wrong-world")))
        .collect();
    let paths: Vec<PathBuf> = threads
        .into_iter()
        .map(|t| {
            t.join()
                .expect("build thread panicked")
                .unwrap_or_else(|e| panic!("{e}"))
        })
        .collect();
    assert!(paths.windows(2).all(|w| w[0] == w[1]), "{paths:?}");
    assert_eq!(
        paths[0],
        guest_target_dir().join("wasm32-wasip2/release/wrong_world.wasm")
    );
    let bytes = std::fs::read(&paths[0]).expect("the component is readable");
    assert_eq!(bytes[..8], COMPONENT_HEADER, "not a component: {}", paths[0].display());
}

/// Writes a standalone crate with `manifest_extra` and `lib_rs` under this test's temporary dir.
fn throwaway_crate(name: &str, manifest_extra: &str, lib_rs: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(dir.join("src")).expect("create the throwaway crate");
    let manifest = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n{manifest_extra}\n[workspace]\n"
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).expect("write Cargo.toml");
    std::fs::write(dir.join("src/lib.rs"), lib_rs).expect("write lib.rs");
    dir
}

#[test]
fn a_compile_error_names_the_crate_and_shows_rustc() {
    let dir = throwaway_crate(
        "agl-guest-build-broken-fixture",
        "[lib]\ncrate-type = [\"cdylib\"]\n",
        "compile_error!(\"this guest is broken on purpose\");\n",
    );
    let err = build(&dir).expect_err("a broken crate must not build");
    let message = err.to_string();
    assert!(matches!(err, GuestBuildError::Compile { .. }), "{message}");
    assert!(
        message.starts_with("guest crate agl-guest-build-broken-fixture ("),
        "{message}"
    );
    assert!(message.contains("error: this guest is broken on purpose"), "{message}");
    assert!(
        !message.contains("Compiling"),
        "progress lines are not part of the tail: {message}"
    );
}

#[test]
fn a_crate_that_is_not_a_cdylib_has_no_component() {
    let dir = throwaway_crate("agl-guest-build-rlib-fixture", "", "pub fn nothing() {}\n");
    let err = build(&dir).expect_err("an rlib is no component");
    assert!(matches!(err, GuestBuildError::MissingArtifact { .. }), "{err}");
    assert!(
        err.to_string().contains("agl_guest_build_rlib_fixture.wasm is missing"),
        "{err}"
    );
}
