//! The one home for finding the programs outside Rust that some of the workspace's tests need:
//! PostgreSQL ([`postgres`]), Chromium with chromedriver ([`browser`]) and clang with lld and a
//! WASI libc for C agents ([`c`]). Std only, so that build scripts can use it.
//!
//! # A test that did not run never says ok
//!
//! A crate whose tests need such a tool calls [`emit_cfgs`] from its build script; each [`Tool`]
//! found becomes a cfg (`agl_has_postgres`, `agl_has_chromium`, `agl_has_c_toolchain`), and the
//! tests carry `#[agl_testkit::needs(postgres)]` (or `#[cfg_attr(not(agl_has_postgres), ignore =
//! "...")]`): without the tool they are *ignored*, with the reason, in `cargo test`'s summary.
//! Under `CI=true` every cfg is set, found or not, so that a tool CI failed to install makes its
//! tests run and fail (the helpers in agl-testkit panic with what is missing) instead of passing
//! unseen. A test that runs never swaps in another backend or returns early for want of a tool.
//!
//! A build script (`build.rs`) that needs PostgreSQL for its crate's tests:
//!
//! ```no_run
//! agl_test_tools::emit_cfgs(&[agl_test_tools::Tool::Postgres]);
//! ```

use std::path::{Path, PathBuf};

/// A program outside Rust that some tests need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// PostgreSQL's `initdb`, `pg_ctl`, `postgres` and `psql`, or a server named by
    /// `AGL_TEST_POSTGRES_URL` ([`postgres`]).
    Postgres,
    /// A headless Chromium and its `chromedriver` ([`browser`]).
    Chromium,
    /// clang, lld (`wasm-ld`) and a WASI libc, to build C agents ([`c`]).
    CToolchain,
}

impl Tool {
    /// Every tool, in the order the cfgs are declared.
    pub const ALL: [Tool; 3] = [Tool::Postgres, Tool::Chromium, Tool::CToolchain];

    /// The cfg set when the tool is there (or under `CI=true`).
    pub fn cfg(self) -> &'static str {
        match self {
            Tool::Postgres => "agl_has_postgres",
            Tool::Chromium => "agl_has_chromium",
            Tool::CToolchain => "agl_has_c_toolchain",
        }
    }

    /// The attribute argument of `ignore`: what the test needs and how to get it.
    pub fn ignore_reason(self) -> &'static str {
        match self {
            Tool::Postgres => "needs PostgreSQL: apt-get install postgresql, or set AGL_TEST_POSTGRES_URL",
            Tool::Chromium => {
                "needs Chromium: apt-get install chromium chromium-driver, or set AGL_TEST_CHROMIUM and \
                 AGL_TEST_CHROMEDRIVER"
            }
            Tool::CToolchain => {
                "needs clang for WASI: apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32, or set \
                 AGL_CLANG and WASI_SYSROOT"
            }
        }
    }

    /// The name an attribute uses for it (`#[needs(postgres)]`).
    pub fn name(self) -> &'static str {
        match self {
            Tool::Postgres => "postgres",
            Tool::Chromium => "chromium",
            Tool::CToolchain => "c_toolchain",
        }
    }

    /// The tool an attribute names.
    pub fn from_name(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|tool| tool.name() == name)
    }

    /// The variables that name the tool (or a server of it).
    pub fn variables(self) -> &'static [&'static str] {
        match self {
            Tool::Postgres => &[postgres::URL_VAR],
            Tool::Chromium => &[browser::CHROMIUM_VAR, browser::CHROMEDRIVER_VAR],
            Tool::CToolchain => &[c::CLANG_VAR, c::SYSROOT_VAR],
        }
    }

    /// Whether the tool is there: found, or named by one of its variables (a name that is wrong
    /// then fails the test, with the reason, rather than ignoring it).
    pub fn present(self) -> bool {
        if self.variables().iter().any(|var| std::env::var_os(var).is_some()) {
            return true;
        }
        match self {
            Tool::Postgres => postgres::bin_dir().is_ok(),
            Tool::Chromium => browser::chromedriver().is_ok() && browser::chromium().is_ok(),
            Tool::CToolchain => c::find().is_ok(),
        }
    }

    /// Folders whose change may mean the tool was installed or removed: the ones that exist of
    /// the places it is looked for, and never a large tree (cargo scans a folder recursively on
    /// every build, and reruns every build for a path that does not exist).
    fn watched(self) -> Vec<PathBuf> {
        let mut dirs = vec![PathBuf::from("/usr/bin"), PathBuf::from("/usr/local/bin")];
        match self {
            Tool::Postgres => dirs.push(PathBuf::from(postgres::DEBIAN_DIR)),
            Tool::Chromium => {}
            Tool::CToolchain => dirs.extend(c::DEBIAN_LIBC.iter().map(PathBuf::from)),
        }
        dirs.retain(|dir| dir.is_dir());
        dirs
    }
}

/// The store backends that backend-parametrised tests run on, each a test of its own:
/// (the name of the test and of `agl_testkit::Backend`'s variant, the tool it needs).
pub const BACKENDS: [(&str, &str, Option<Tool>); 3] = [
    ("memory", "Memory", None),
    ("sqlite", "Sqlite", None),
    ("postgres", "Postgres", Some(Tool::Postgres)),
];

/// Names tools (comma-separated, as `#[needs]` does: `postgres,chromium,c_toolchain`) for
/// [`emit_cfgs`] to take as missing, to see their tests ignored on a machine that has them.
pub const WITHOUT_VAR: &str = "AGL_TEST_WITHOUT";

/// Whether `AGL_TEST_WITHOUT` names `tool`.
fn pretended_missing(tool: Tool) -> bool {
    std::env::var(WITHOUT_VAR).is_ok_and(|names| names.split(',').any(|name| name.trim() == tool.name()))
}

/// Whether this is CI (`CI=true`), where every tool is required.
pub fn ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// For a build script: declares the cfg of each of `tools` and sets it when the tool is there or
/// `CI=true`, and tells cargo when to look again (the variables `CI`, `PATH` and the tools' own,
/// and the folders they are installed into). `AGL_TEST_WITHOUT` takes tools as missing.
pub fn emit_cfgs(tools: &[Tool]) {
    for var in ["CI", "PATH", WITHOUT_VAR] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    let mut watched: Vec<PathBuf> = Vec::new();
    for &tool in tools {
        println!("cargo::rustc-check-cfg=cfg({})", tool.cfg());
        for var in tool.variables() {
            println!("cargo::rerun-if-env-changed={var}");
        }
        for dir in tool.watched() {
            if !watched.contains(&dir) {
                watched.push(dir);
            }
        }
        if ci() || (tool.present() && !pretended_missing(tool)) {
            println!("cargo::rustc-cfg={}", tool.cfg());
        } else {
            println!("cargo::warning=tests ignored ({})", tool.ignore_reason());
        }
    }
    for dir in watched {
        println!("cargo::rerun-if-changed={}", dir.display());
    }
}

/// The first of `names` in one of `PATH`'s folders.
pub fn on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    names
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// The file `var` names (an error if that is not a file), else the first of `names` on `PATH`
/// (`Ok(None)` when there is none).
fn named_or_on_path(var: &str, names: &[&str]) -> Result<Option<PathBuf>, String> {
    if let Some(named) = std::env::var_os(var) {
        let named = PathBuf::from(named);
        return if named.is_file() {
            Ok(Some(named))
        } else {
            Err(format!("{var} names {}, which is not a file", named.display()))
        };
    }
    Ok(on_path(names))
}

/// PostgreSQL's binaries.
pub mod postgres {
    use super::*;

    /// The variable naming an existing server to use instead of starting one.
    pub const URL_VAR: &str = "AGL_TEST_POSTGRES_URL";

    /// Where Debian's `postgresql` package puts each version's binaries (`<version>/bin`).
    pub const DEBIAN_DIR: &str = "/usr/lib/postgresql";

    /// What a throwaway server needs.
    pub const PROGRAMS: [&str; 4] = ["initdb", "pg_ctl", "postgres", "psql"];

    /// The folders that may hold PostgreSQL's binaries: Debian's, newest version first, then
    /// `PATH`.
    pub fn bin_dirs() -> Vec<PathBuf> {
        let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir(DEBIAN_DIR)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| Some((entry.file_name().to_str()?.parse().ok()?, entry.path().join("bin"))))
            .collect();
        debian.sort_by_key(|(version, _)| std::cmp::Reverse(*version));
        let path = std::env::var_os("PATH").unwrap_or_default();
        debian
            .into_iter()
            .map(|(_, dir)| dir)
            .chain(std::env::split_paths(&path))
            .collect()
    }

    /// The first folder holding every one of `programs`.
    pub fn dir_with(programs: &[&str]) -> Option<PathBuf> {
        bin_dirs()
            .into_iter()
            .find(|dir| programs.iter().all(|program| dir.join(program).is_file()))
    }

    /// The folder with `initdb`, `pg_ctl`, `postgres` and `psql`, or why there is none.
    pub fn bin_dir() -> Result<PathBuf, String> {
        dir_with(&PROGRAMS).ok_or_else(|| {
            format!(
                "PostgreSQL is not installed (no initdb, pg_ctl, postgres and psql in {DEBIAN_DIR}/*/bin or on \
                 PATH): install Debian's `postgresql` package, or set {URL_VAR} to a server's URL"
            )
        })
    }
}

/// A headless browser and its WebDriver.
pub mod browser {
    use super::*;

    /// Names the `chromedriver` to use instead of the one on `PATH`.
    pub const CHROMEDRIVER_VAR: &str = "AGL_TEST_CHROMEDRIVER";
    /// Names the browser binary to use instead of the first of `chromium`, `chromium-browser`,
    /// `google-chrome` on `PATH`.
    pub const CHROMIUM_VAR: &str = "AGL_TEST_CHROMIUM";

    /// `chromedriver`: the one `AGL_TEST_CHROMEDRIVER` names, else the one on `PATH`.
    pub fn chromedriver() -> Result<PathBuf, String> {
        named_or_on_path(CHROMEDRIVER_VAR, &["chromedriver"])?.ok_or_else(|| {
            format!(
                "chromedriver is not installed (not on PATH): install Debian's `chromium-driver` package, or set \
                 {CHROMEDRIVER_VAR}"
            )
        })
    }

    /// The browser: the one `AGL_TEST_CHROMIUM` names, else the first Chromium on `PATH`.
    pub fn chromium() -> Result<PathBuf, String> {
        named_or_on_path(CHROMIUM_VAR, &["chromium", "chromium-browser", "google-chrome"])?.ok_or_else(|| {
            format!(
                "Chromium is not installed (no chromium, chromium-browser or google-chrome on PATH): install \
                 Debian's `chromium` package, or set {CHROMIUM_VAR}"
            )
        })
    }
}

/// clang for WASI: what building a C agent needs.
pub mod c {
    use super::*;

    /// Names the clang to use (as `agl-host` and `agl-c-guest` read it).
    pub const CLANG_VAR: &str = "AGL_CLANG";
    /// Names the WASI sysroot (as `agl-c-guest` reads it); Debian's wasi-libc needs none.
    pub const SYSROOT_VAR: &str = "WASI_SYSROOT";
    /// Where Debian's `wasi-libc` puts its `libc.a`.
    pub const DEBIAN_LIBC: [&str; 1] = ["/usr/lib/wasm32-wasi"];

    /// The C toolchain found.
    #[derive(Debug, Clone)]
    pub struct CTools {
        /// `$AGL_CLANG`, else `clang` on `PATH`.
        pub clang: PathBuf,
        /// `$WASI_SYSROOT`; `None` with Debian's wasi-libc, which clang finds itself.
        pub sysroot: Option<PathBuf>,
    }

    /// clang, `wasm-ld` and a WASI libc, or what is missing. A quick look at files; whether they
    /// build a component is `agl_c_guest::Toolchain::check`'s to say.
    pub fn find() -> Result<CTools, String> {
        let clang = named_or_on_path(CLANG_VAR, &["clang"])?.ok_or_else(|| {
            format!("clang is not installed (not on PATH): install Debian's `clang` package, or set {CLANG_VAR}")
        })?;
        let sysroot = match std::env::var_os(SYSROOT_VAR) {
            Some(dir) => {
                let dir = PathBuf::from(dir);
                if !dir.is_dir() {
                    return Err(format!("{SYSROOT_VAR} names {}, which is not a folder", dir.display()));
                }
                Some(dir)
            }
            None => {
                if !DEBIAN_LIBC.iter().any(|dir| Path::new(dir).join("libc.a").is_file()) {
                    return Err(format!(
                        "no WASI libc ({}/libc.a): install Debian's `wasi-libc` and `libclang-rt-14-dev-wasm32` \
                         packages, or set {SYSROOT_VAR}",
                        DEBIAN_LIBC[0]
                    ));
                }
                None
            }
        };
        let linker_beside_clang = clang.parent().is_some_and(|dir| dir.join("wasm-ld").is_file());
        if !linker_beside_clang && on_path(&["wasm-ld"]).is_none() {
            return Err(
                "lld is not installed (no wasm-ld on PATH or beside clang): install Debian's `lld` package".to_owned(),
            );
        }
        Ok(CTools { clang, sysroot })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_a_name_a_cfg_and_a_reason() {
        for tool in Tool::ALL {
            assert_eq!(Tool::from_name(tool.name()), Some(tool));
            assert!(tool.cfg().starts_with("agl_has_"), "{tool:?}");
            assert!(tool.ignore_reason().starts_with("needs "), "{tool:?}");
            assert!(!tool.variables().is_empty(), "{tool:?}");
        }
        assert_eq!(Tool::from_name("oracle"), None);
    }

    #[test]
    fn watched_folders_exist() {
        for tool in Tool::ALL {
            for dir in tool.watched() {
                assert!(dir.is_dir(), "{}", dir.display());
            }
        }
    }
}
