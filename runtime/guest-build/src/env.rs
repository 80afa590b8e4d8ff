//! Which inherited environment variables the nested `cargo` must not see. A parent cargo (running
//! our tests, or a build script) sets variables for its own build that a nested cargo would obey:
//! another target dir or target, host `RUSTFLAGS`, its jobserver. CARGO_HOME and the toolchain stay.

/// Exact names a parent build sets (or a user sets for host builds) that would mislead a nested one.
const EXACT: &[&str] = &[
    // Where and for what to build: ours are given on the command line.
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET",
    "CARGO_BUILD_TARGET_DIR",
    "CARGO_BUILD_BUILD_DIR",
    // Flags for the host build (e.g. `-C target-cpu=native`, a host linker) break a wasm build; guest
    // flags go in CARGO_TARGET_WASM32_WASIP2_RUSTFLAGS, which is kept.
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "CARGO_ENCODED_RUSTFLAGS",
    "CARGO_ENCODED_RUSTDOCFLAGS",
    "CARGO_BUILD_RUSTFLAGS",
    "CARGO_BUILD_RUSTDOCFLAGS",
    // The parent's jobserver: its file descriptors are not inherited.
    "CARGO_MAKEFLAGS",
    "MAKEFLAGS",
    "MFLAGS",
    // `cargo clippy` of the parent would lint every guest dependency.
    "RUSTC_WORKSPACE_WRAPPER",
    // Nightly features unlocked on a stable toolchain (CI's test runner sets it for libtest's
    // per-test times): dependencies' build scripts would see another compiler, and every guest
    // dependency would build again.
    "RUSTC_BOOTSTRAP",
    // Set by cargo for the crate being built or tested.
    "CARGO_MANIFEST_DIR",
    "CARGO_MANIFEST_PATH",
    "CARGO_MANIFEST_LINKS",
    "CARGO_CRATE_NAME",
    "CARGO_BIN_NAME",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_TARGET_TMPDIR",
    "CARGO_RUSTC_CURRENT_DIR",
];

/// Prefixes of variables cargo sets per crate or per build script, and its internal `__CARGO_*`.
const PREFIXES: &[&str] = &[
    "CARGO_PKG_",
    "CARGO_CFG_",
    "CARGO_FEATURE_",
    "CARGO_BIN_EXE_",
    "__CARGO",
];

/// Whether the nested cargo must not inherit the variable `name`.
pub fn is_inherited_build_var(name: &str) -> bool {
    EXACT.contains(&name) || PREFIXES.iter().any(|prefix| name.starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parent_builds_variables_are_cleared() {
        for name in [
            "CARGO_TARGET_DIR",
            "CARGO_BUILD_TARGET",
            "CARGO_ENCODED_RUSTFLAGS",
            "RUSTFLAGS",
            "CARGO_MAKEFLAGS",
            "RUSTC_WORKSPACE_WRAPPER",
            "RUSTC_BOOTSTRAP",
            "CARGO_MANIFEST_DIR",
            "CARGO_PKG_NAME",
            "CARGO_CFG_TARGET_OS",
            "CARGO_FEATURE_STD",
            "CARGO_BIN_EXE_agl-guest-build",
            "__CARGO_DEFAULT_LIB_METADATA",
        ] {
            assert!(is_inherited_build_var(name), "{name} should be cleared");
        }
    }

    #[test]
    fn home_toolchain_and_user_configuration_are_kept() {
        for name in [
            "CARGO_HOME",
            "CARGO",
            "RUSTUP_HOME",
            "RUSTUP_TOOLCHAIN",
            "RUSTC",
            "RUSTC_WRAPPER",
            "PATH",
            "HOME",
            "CARGO_NET_OFFLINE",
            "CARGO_REGISTRIES_CRATES_IO_PROTOCOL",
            "CARGO_HTTP_TIMEOUT",
            "CARGO_TARGET_WASM32_WASIP2_RUSTFLAGS",
            "CARGO_TERM_COLOR",
            "CARGO_BUILD_JOBS",
        ] {
            assert!(!is_inherited_build_var(name), "{name} should be kept");
        }
    }
}
