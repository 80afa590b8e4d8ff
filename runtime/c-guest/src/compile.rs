//! Compiling C for WASI preview 1 with clang: the agent's `.c` files and the generated bindings
//! into one core module, a *reactor* (`-mexec-model=reactor`: no `main`, `_initialize` runs
//! libc's constructors, exports stay callable). Debian's clang 14 with `wasi-libc` and
//! `libclang-rt-14-dev-wasm32` finds its sysroot by itself; wasi-sdk's clang too.

use crate::bindings::Bindings;
use crate::error::CGuestError;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The clang target: WASI preview 1 (clang 14 knows it as `wasm32-wasi`).
pub const TARGET: &str = "wasm32-wasi";

/// What to install when clang or the WASI libc is missing.
pub const INSTALL_HINT: &str = "on Debian/Ubuntu: apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32 \
     (or use wasi-sdk: --clang <wasi-sdk>/bin/clang --sysroot <wasi-sdk>/share/wasi-sysroot)";

/// Which clang and which WASI sysroot.
#[derive(Debug, Clone)]
pub struct Toolchain {
    /// The clang binary (`$AGL_CLANG`, else `clang` on PATH).
    pub clang: PathBuf,
    /// `--sysroot` (`$WASI_SYSROOT`, else clang's default: Debian's wasi-libc needs none).
    pub sysroot: Option<PathBuf>,
    /// Flags added after the built-in ones (e.g. `-DDEBUG`).
    pub extra_flags: Vec<String>,
}

impl Default for Toolchain {
    fn default() -> Self {
        Toolchain {
            clang: std::env::var_os("AGL_CLANG").map_or_else(|| PathBuf::from("clang"), PathBuf::from),
            sysroot: std::env::var_os("WASI_SYSROOT").map(PathBuf::from),
            extra_flags: Vec::new(),
        }
    }
}

/// What clang wrote on stderr on success (its warnings), for the caller to show.
#[derive(Debug, Clone, Default)]
pub struct Warnings(pub String);

impl Toolchain {
    /// The arguments every compile gets: target, reactor, optimisation, warnings, no DWARF, sysroot.
    fn base_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = [
            format!("--target={TARGET}").as_str(),
            "-mexec-model=reactor",
            "-O2",
            "-std=c11",
            "-Wall",
            "-Wextra",
            // Debian's libc.a carries DWARF (~130 KB of the module); the name section stays, for
            // backtraces.
            "-Wl,--strip-debug",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        if let Some(sysroot) = &self.sysroot {
            args.push("--sysroot".into());
            args.push(sysroot.into());
        }
        args.extend(self.extra_flags.iter().map(OsString::from));
        args
    }

    fn run(&self, args: Vec<OsString>) -> Result<Output, CGuestError> {
        Command::new(&self.clang)
            .args(args)
            .output()
            .map_err(|e| CGuestError::ToolMissing {
                tool: self.clang.display().to_string(),
                detail: e.to_string(),
                hint: INSTALL_HINT.to_owned(),
            })
    }

    /// Whether clang, the linker and the WASI libc work: compiles and links a reactor that
    /// uses libc (`strtod`, which also needs compiler-rt's wasm32 builtins) in `scratch`.
    pub fn check(&self, scratch: &Path) -> Result<(), CGuestError> {
        std::fs::create_dir_all(scratch).map_err(CGuestError::io(scratch))?;
        let source = scratch.join("probe.c");
        let probe = "#include <stdlib.h>\n#include <string.h>\n\
                     __attribute__((export_name(\"probe\"))) double probe(const char *s) { return strtod(s, 0) + (double)strlen(s); }\n";
        std::fs::write(&source, probe).map_err(CGuestError::io(&source))?;
        let mut args = self.base_args();
        args.extend([
            source.into_os_string(),
            "-o".into(),
            scratch.join("probe.wasm").into_os_string(),
        ]);
        let output = self.run(args)?;
        if output.status.success() {
            return Ok(());
        }
        Err(CGuestError::ToolMissing {
            tool: format!("{} --target={TARGET}", self.clang.display()),
            detail: tail(&String::from_utf8_lossy(&output.stderr), 1500),
            hint: INSTALL_HINT.to_owned(),
        })
    }

    /// Compiles `sources` (with `include` and the bindings' folder on the include path) and the
    /// bindings into the core module `out`.
    pub fn compile(
        &self,
        dir: &Path,
        sources: &[PathBuf],
        bindings: &Bindings,
        out: &Path,
    ) -> Result<Warnings, CGuestError> {
        let mut args = self.base_args();
        args.extend([
            "-I".into(),
            dir.into(),
            "-I".into(),
            bindings.dir.clone().into_os_string(),
        ]);
        args.extend(sources.iter().chain(&bindings.link).map(|p| p.clone().into_os_string()));
        args.extend(["-o".into(), out.into()]);
        let output = self.run(args)?;
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        if !output.status.success() {
            return Err(CGuestError::CompileFailed {
                dir: dir.to_path_buf(),
                status: output.status,
                stderr: tail(&stderr, 8000),
            });
        }
        Ok(Warnings(stderr))
    }
}

/// The last `max` bytes of `text` (whole characters), marked when cut.
fn tail(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("...{}", &text[start..])
}

/// The `.c` files at the top of `dir`, sorted (subfolders are not searched: a `tests/` folder
/// may hold host-side tests with a `main`).
pub fn sources(dir: &Path) -> Result<Vec<PathBuf>, CGuestError> {
    let mut sources = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(CGuestError::io(dir))? {
        let path = entry.map_err(CGuestError::io(dir))?.path();
        if path.is_file() && path.extension().is_some_and(|ext| ext == "c") {
            sources.push(path);
        }
    }
    if sources.is_empty() {
        return Err(CGuestError::NoSources { dir: dir.to_path_buf() });
    }
    sources.sort();
    Ok(sources)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_end_on_a_char_boundary() {
        assert_eq!(tail("short", 10), "short");
        assert_eq!(tail("abcdef", 3), "...def");
        assert_eq!(tail("aé", 1), "...");
    }

    #[test]
    fn sources_are_the_top_level_c_files_sorted() {
        let scratch = crate::Scratch::new("sources");
        let dir = scratch.0.clone();
        std::fs::create_dir_all(dir.join("tests")).expect("dirs");
        for name in ["b.c", "a.c", "a.h", "tests/t.c"] {
            std::fs::write(dir.join(name), "").expect("file");
        }
        let names: Vec<_> = sources(&dir)
            .expect("sources")
            .iter()
            .map(|p| p.strip_prefix(&dir).expect("inside").to_path_buf())
            .collect();
        assert_eq!(names, [PathBuf::from("a.c"), PathBuf::from("b.c")]);
        std::fs::remove_dir_all(dir.join("tests")).expect("rm");
        for name in ["a.c", "b.c"] {
            std::fs::remove_file(dir.join(name)).expect("rm");
        }
        assert!(matches!(sources(&dir), Err(CGuestError::NoSources { .. })));
    }

    #[test]
    fn a_missing_clang_is_reported_with_the_install_hint() {
        let toolchain = Toolchain {
            clang: PathBuf::from("/nonexistent/clang"),
            sysroot: None,
            extra_flags: Vec::new(),
        };
        let scratch = crate::Scratch::new("missing");
        let err = toolchain.check(&scratch.0).expect_err("no such clang");
        let text = err.to_string();
        assert!(
            text.contains("/nonexistent/clang") && text.contains("wasi-libc"),
            "{text}"
        );
    }
}
