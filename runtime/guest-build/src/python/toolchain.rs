//! The Python toolchain of guest builds: a virtual environment with componentize-py (pinned)
//! installed on first use into `<cache>/toolchains/componentize-py-<version>/`, and the per-guest
//! folders of pure-Python dependencies (`pip install --target`) under `<cache>/python/`. Each is
//! made under a file lock (parallel test processes build at once) and marked complete only at the
//! end, so an interrupted install is redone, never used.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

use crate::error::GuestBuildError;
use crate::tool;

/// The componentize-py release guests are built with.
pub(crate) const COMPONENTIZE_PY_VERSION: &str = "0.25.1";
/// The oldest Python that can run pip and componentize-py's wheel.
const MIN_PYTHON: (u32, u32) = (3, 9);
/// The file that says an install finished.
const DONE_MARKER: &str = ".agl-complete";
/// File suffixes of native code, which a component cannot load.
const NATIVE_SUFFIXES: &[&str] = &[".so", ".pyd", ".dylib", ".dll"];

/// An installed toolchain: the virtual environment holding componentize-py.
#[derive(Debug, Clone)]
pub(crate) struct Toolchain {
    venv: PathBuf,
}

impl Toolchain {
    /// The environment's Python.
    pub(crate) fn python(&self) -> PathBuf {
        venv_bin(&self.venv, "python")
    }

    /// The `componentize-py` command.
    pub(crate) fn componentize_py(&self) -> PathBuf {
        venv_bin(&self.venv, "componentize-py")
    }
}

fn venv_bin(venv: &Path, program: &str) -> PathBuf {
    if cfg!(windows) {
        venv.join("Scripts").join(format!("{program}.exe"))
    } else {
        venv.join("bin").join(program)
    }
}

fn cache_error(path: &Path) -> impl FnOnce(std::io::Error) -> GuestBuildError + use<> {
    let path = path.to_path_buf();
    move |source| GuestBuildError::Cache { path, source }
}

/// The Python that creates the toolchain: `$AGL_PYTHON`, else `python3`.
fn system_python() -> OsString {
    std::env::var_os("AGL_PYTHON")
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| OsString::from("python3"))
}

/// Returns the toolchain in `cache_dir`, installing it first if needed (one progress line on
/// stderr while it does).
pub(crate) fn ensure(cache_dir: &Path) -> Result<Toolchain, GuestBuildError> {
    let toolchains = cache_dir.join("toolchains");
    let venv = toolchains.join(format!("componentize-py-{COMPONENTIZE_PY_VERSION}"));
    let toolchain = Toolchain { venv: venv.clone() };
    if venv.join(DONE_MARKER).is_file() {
        return Ok(toolchain);
    }
    let _lock = tool::lock(&toolchains.join(format!("componentize-py-{COMPONENTIZE_PY_VERSION}.lock")))?;
    if venv.join(DONE_MARKER).is_file() {
        return Ok(toolchain);
    }
    let python = system_python();
    check_python(&python)?;
    eprintln!(
        "installing componentize-py {COMPONENTIZE_PY_VERSION} into {} (first use, ~30 s)",
        venv.display()
    );
    if venv.exists() {
        std::fs::remove_dir_all(&venv).map_err(cache_error(&venv))?;
    }
    tool::run_install(
        clean(Command::new(&python).args(["-m", "venv"]).arg(&venv)),
        &format!(
            "a Python virtual environment at {} (on Debian or Ubuntu: apt-get install python3-venv)",
            venv.display()
        ),
    )?;
    tool::run_install(
        clean(pip_install(&toolchain).arg(format!("componentize-py=={COMPONENTIZE_PY_VERSION}"))),
        &format!(
            "componentize-py {COMPONENTIZE_PY_VERSION} (pip, into {})",
            venv.display()
        ),
    )?;
    if !toolchain.componentize_py().is_file() {
        return Err(GuestBuildError::ToolInstall {
            what: format!("componentize-py {COMPONENTIZE_PY_VERSION}"),
            stderr_tail: format!("pip succeeded but {} is missing", toolchain.componentize_py().display()),
        });
    }
    let marker = venv.join(DONE_MARKER);
    std::fs::write(&marker, COMPONENTIZE_PY_VERSION).map_err(cache_error(&marker))?;
    Ok(toolchain)
}

/// Fails with [`GuestBuildError::ToolMissing`] unless `python` runs and is new enough.
fn check_python(python: &OsString) -> Result<(), GuestBuildError> {
    let shown = python.to_string_lossy().into_owned();
    let remedy = format!(
        "install Python {}.{} or newer (e.g. apt-get install python3 python3-venv) or set AGL_PYTHON to one; \
         it is used once, to install componentize-py {COMPONENTIZE_PY_VERSION} into the cache",
        MIN_PYTHON.0, MIN_PYTHON.1
    );
    let program = tool::find_program(&shown, &format!("it was not found: {remedy}"))?;
    let output = Command::new(&program)
        .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
        .stdin(Stdio::null())
        .output();
    let output = match output {
        Ok(output) => output,
        Err(err) => {
            return Err(GuestBuildError::ToolMissing {
                tool: shown,
                hint: format!("it could not be run ({err}): {remedy}"),
            });
        }
    };
    let text = String::from_utf8_lossy(&output.stdout);
    match parse_version(&text) {
        Some(version) if output.status.success() && version >= MIN_PYTHON => Ok(()),
        found => Err(GuestBuildError::ToolMissing {
            tool: format!("Python >= {}.{}", MIN_PYTHON.0, MIN_PYTHON.1),
            hint: match found {
                Some((major, minor)) => format!("{shown} is Python {major}.{minor}: {remedy}"),
                None => format!("{shown} did not report its version: {remedy}"),
            },
        }),
    }
}

/// `"3.11\n"` as `(3, 11)`.
fn parse_version(text: &str) -> Option<(u32, u32)> {
    let (major, minor) = text.trim().split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// Installs `dependencies` (pure Python only) into a folder of their own, keyed by the list, and
/// returns it; `None` when there are none. A package with native code is an error that names it.
pub(crate) fn ensure_site(
    toolchain: &Toolchain,
    cache_dir: &Path,
    dependencies: &[String],
) -> Result<Option<PathBuf>, GuestBuildError> {
    if dependencies.is_empty() {
        return Ok(None);
    }
    let site = cache_dir
        .join("python")
        .join(format!("site-{}", site_key(dependencies)));
    if site.join(DONE_MARKER).is_file() {
        return Ok(Some(site));
    }
    let _lock = tool::lock(&site.with_extension("lock"))?;
    if site.join(DONE_MARKER).is_file() {
        return Ok(Some(site));
    }
    eprintln!(
        "installing Python dependencies {} into {}",
        dependencies.join(", "),
        site.display()
    );
    if site.exists() {
        std::fs::remove_dir_all(&site).map_err(cache_error(&site))?;
    }
    tool::run_install(
        clean(
            pip_install(toolchain)
                .args(["--no-compile", "--target"])
                .arg(&site)
                .args(dependencies),
        ),
        &format!("the dependencies {}", dependencies.join(", ")),
    )?;
    let native = native_files(&site).map_err(cache_error(&site))?;
    if !native.is_empty() {
        let shown: Vec<String> = native.iter().take(5).map(|p| p.display().to_string()).collect();
        return Err(GuestBuildError::ToolInstall {
            what: format!("the dependencies {}", dependencies.join(", ")),
            stderr_tail: format!(
                "native code found ({}): a component runs pure-Python packages only; \
                 drop the package that brings it or pick a pure-Python alternative",
                shown.join(", ")
            ),
        });
    }
    let marker = site.join(DONE_MARKER);
    std::fs::write(&marker, dependencies.join("\n")).map_err(cache_error(&marker))?;
    Ok(Some(site))
}

/// The folder key of a dependency list: 16 hex digits of its digest.
pub(crate) fn site_key(dependencies: &[String]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(COMPONENTIZE_PY_VERSION.as_bytes());
    for dependency in dependencies {
        hasher.update(dependency.as_bytes());
        hasher.update([0]);
    }
    hasher.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The files under `dir` that are native libraries, relative to `dir`.
pub(crate) fn native_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current)? {
            let entry = entry?;
            let path = entry.path();
            if entry.file_type()?.is_dir() {
                pending.push(path);
            } else if is_native(&path) {
                found.push(path.strip_prefix(dir).unwrap_or(&path).to_path_buf());
            }
        }
    }
    found.sort();
    Ok(found)
}

fn is_native(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    NATIVE_SUFFIXES.iter().any(|suffix| name.ends_with(suffix)) || name.contains(".so.")
}

/// `command` without the variables that would point Python at other packages.
/// `pip install`, quiet and non-interactive, with the toolchain's own Python.
fn pip_install(toolchain: &Toolchain) -> Command {
    let mut command = Command::new(toolchain.python());
    command.args([
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--no-input",
        "--quiet",
    ]);
    command
}

fn clean(command: &mut Command) -> &mut Command {
    command
        .env_remove("PYTHONPATH")
        .env_remove("PYTHONHOME")
        .env_remove("VIRTUAL_ENV")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read() {
        assert_eq!(parse_version("3.11\n"), Some((3, 11)));
        assert_eq!(parse_version("3.9"), Some((3, 9)));
        assert_eq!(parse_version("Python 3"), None);
        assert!((3, 8) < MIN_PYTHON && (3, 10) > MIN_PYTHON);
    }

    #[test]
    fn a_missing_python_is_a_missing_tool() {
        let err = check_python(&OsString::from("/nonexistent/python3")).unwrap_err();
        let GuestBuildError::ToolMissing { tool, hint } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(tool, "/nonexistent/python3");
        assert!(hint.contains("AGL_PYTHON"), "{hint}");
    }

    #[test]
    fn site_keys_follow_the_list() {
        let one = site_key(&["a==1".to_owned()]);
        assert_eq!(one.len(), 16);
        assert_eq!(one, site_key(&["a==1".to_owned()]));
        assert_ne!(one, site_key(&["a==2".to_owned()]));
        assert_ne!(
            site_key(&["ab".to_owned(), "c".to_owned()]),
            site_key(&["a".to_owned(), "bc".to_owned()])
        );
    }

    #[test]
    fn native_files_are_found() {
        let dir = std::env::temp_dir().join(format!("agl-native-{}", std::process::id()));
        let package = dir.join("pkg");
        std::fs::create_dir_all(&package).unwrap();
        std::fs::write(package.join("__init__.py"), "").unwrap();
        assert!(native_files(&dir).unwrap().is_empty());
        std::fs::write(package.join("_speedups.cpython-311-x86_64-linux-gnu.so"), "").unwrap();
        std::fs::write(package.join("libz.so.1"), "").unwrap();
        let found = native_files(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            found,
            [
                Path::new("pkg/_speedups.cpython-311-x86_64-linux-gnu.so"),
                Path::new("pkg/libz.so.1")
            ]
        );
    }
}
