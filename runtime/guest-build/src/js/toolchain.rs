//! The JavaScript toolchain of guest builds: componentize-js and esbuild (pinned) installed with
//! npm on first use into `<cache>/toolchains/componentize-js-<version>/`, under a file lock
//! (parallel test processes build at once) and marked complete only at the end, so an
//! interrupted install is redone, never used. Node and npm come from PATH; Node must be 18 or newer.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::GuestBuildError;
use crate::tool;

/// The componentize-js release guests are built with.
pub(crate) const COMPONENTIZE_JS_VERSION: &str = "0.23.0";
/// The packages installed, pinned: componentize-js; the WASI shim its splicer imports at run time
/// without declaring it (0.17, the line it was built against: 0.26 cannot read the WIT folder);
/// esbuild, which bundles a guest and the SDK into the one module componentize-js takes.
pub(crate) const PACKAGES: &[(&str, &str)] = &[
    ("@bytecodealliance/componentize-js", COMPONENTIZE_JS_VERSION),
    ("@bytecodealliance/preview2-shim", "0.17.8"),
    ("esbuild", "0.28.2"),
];
/// The oldest Node that runs componentize-js and esbuild.
const MIN_NODE: u32 = 18;
/// The file that says an install finished.
const DONE_MARKER: &str = ".agl-complete";

/// An installed toolchain: a folder whose `node_modules` holds [`PACKAGES`].
#[derive(Debug, Clone)]
pub(crate) struct Toolchain {
    pub(crate) dir: PathBuf,
    pub(crate) node: PathBuf,
}

/// What `npm install` gets: `name@version` for each of [`PACKAGES`].
pub(crate) fn install_specs() -> Vec<String> {
    PACKAGES
        .iter()
        .map(|(name, version)| format!("{name}@{version}"))
        .collect()
}

/// Returns the toolchain in `cache_dir`, installing it first if needed (one progress line on
/// stderr while it does).
pub(crate) fn ensure(cache_dir: &Path) -> Result<Toolchain, GuestBuildError> {
    let node = check_node()?;
    let toolchains = cache_dir.join("toolchains");
    let dir = toolchains.join(format!("componentize-js-{COMPONENTIZE_JS_VERSION}"));
    let toolchain = Toolchain { dir: dir.clone(), node };
    if dir.join(DONE_MARKER).is_file() {
        return Ok(toolchain);
    }
    let _lock = tool::lock(&toolchains.join(format!("componentize-js-{COMPONENTIZE_JS_VERSION}.lock")))?;
    if dir.join(DONE_MARKER).is_file() {
        return Ok(toolchain);
    }
    let npm = tool::find_program("npm", &format!("it is not on PATH: {}", node_remedy()))?;
    eprintln!(
        "installing componentize-js {COMPONENTIZE_JS_VERSION} and esbuild into {} (first use, ~30 s)",
        dir.display()
    );
    let cache_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| GuestBuildError::Cache { path, source }
    };
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(cache_error(&dir))?;
    }
    std::fs::create_dir_all(&dir).map_err(cache_error(&dir))?;
    let manifest = dir.join("package.json");
    std::fs::write(&manifest, "{\"private\": true}\n").map_err(cache_error(&manifest))?;
    tool::run_install(
        Command::new(&npm)
            .current_dir(&dir)
            // No install scripts: those of the toolchain only fetch optional binaries (weval's, for
            // --aot, which is not used) and would need the network beyond the registry.
            .args([
                "install",
                "--omit=dev",
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
            ])
            .args(install_specs()),
        &format!(
            "componentize-js {COMPONENTIZE_JS_VERSION} (npm, into {}; needs the npm registry once)",
            dir.display()
        ),
    )?;
    for (name, _) in PACKAGES {
        let installed = dir.join("node_modules").join(name).join("package.json");
        if !installed.is_file() {
            return Err(GuestBuildError::ToolInstall {
                what: format!("componentize-js {COMPONENTIZE_JS_VERSION}"),
                stderr_tail: format!("npm succeeded but {} is missing", installed.display()),
            });
        }
    }
    let marker = dir.join(DONE_MARKER);
    std::fs::write(&marker, install_specs().join("\n")).map_err(cache_error(&marker))?;
    Ok(toolchain)
}

fn node_remedy() -> String {
    format!(
        "install Node.js {MIN_NODE} or newer with npm (https://nodejs.org, or e.g. apt-get install nodejs npm); \
         agl-host installs componentize-js {COMPONENTIZE_JS_VERSION} itself"
    )
}

/// `node` from PATH, if it runs and is new enough; else [`GuestBuildError::ToolMissing`].
fn check_node() -> Result<PathBuf, GuestBuildError> {
    let node = tool::find_program("node", &format!("it is not on PATH: {}", node_remedy()))?;
    let output = Command::new(&node)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|err| GuestBuildError::ToolMissing {
            tool: node.display().to_string(),
            hint: format!("it could not be run ({err}): {}", node_remedy()),
        })?;
    let text = String::from_utf8_lossy(&output.stdout);
    match parse_major(&text) {
        Some(major) if output.status.success() && major >= MIN_NODE => Ok(node),
        found => Err(GuestBuildError::ToolMissing {
            tool: format!("Node.js >= {MIN_NODE}"),
            hint: match found {
                Some(major) => format!("{} is Node.js {major}: {}", node.display(), node_remedy()),
                None => format!("{} did not report its version: {}", node.display(), node_remedy()),
            },
        }),
    }
}

/// The major version in `node --version`'s output (`v20.11.1`).
fn parse_major(text: &str) -> Option<u32> {
    let version = text.trim().strip_prefix('v')?;
    version.split('.').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_versions_are_read() {
        assert_eq!(parse_major("v20.11.1\n"), Some(20));
        assert_eq!(parse_major("v18.0.0"), Some(18));
        assert_eq!(parse_major("20.1.0"), None);
        assert_eq!(parse_major(""), None);
    }

    #[test]
    fn every_package_is_pinned_to_an_exact_version() {
        for spec in install_specs() {
            let (_, version) = spec.rsplit_once('@').expect("name@version");
            assert!(
                version.split('.').count() == 3 && version.chars().all(|c| c.is_ascii_digit() || c == '.'),
                "{spec}"
            );
        }
        assert!(install_specs().contains(&format!("@bytecodealliance/componentize-js@{COMPONENTIZE_JS_VERSION}")));
    }
}
