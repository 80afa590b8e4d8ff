//! Building a Python guest folder (one with `pyproject.toml` or `app.py`) into a component with
//! componentize-py, cached: the toolchain is installed into the cache on first use
//! ([`toolchain`]), the project's `[project] dependencies` are installed pure-Python into a folder
//! of their own, and the component goes to `<cache>/<name>-<16 hex>.wasm`, where the hex is a
//! digest of the folder's sources, the SDK and WIT embedded in this binary, the dependency list,
//! the world, the entry module and componentize-py's version: a build runs only when one of them
//! changed. An `agent` is built from a generated entry module that imports the user's module and
//! exports its `@agl.rollout` function through the SDK ([`sdk`]), against world `agent-python`
//! (`agent` plus `wasi:http/outgoing-handler`, for the SDK's `ctx.http()`; its WIT folder is
//! [`embedded::PYTHON_WIT_FILES`]); another world (`[tool.agl] world = "algorithm"`), or a module
//! built without the SDK (`sdk = false`), uses the user's module as the app itself, against the
//! repository's WIT and the world it names.

mod pyproject;
mod sdk;
mod toolchain;

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::GuestBuildError;
use crate::fingerprint::{Fingerprint, Sources};
use crate::{canonical, embedded, tool};
use pyproject::Project;
use toolchain::COMPONENTIZE_PY_VERSION;

/// Builds the Python guest in `dir` into `cache_dir` (unless a component of the same sources is
/// there already) and returns the component's path. With `echo`, componentize-py's messages are
/// copied to stderr as they come; `note` is told why, before a build runs.
pub(crate) fn build_cached(
    dir: &Path,
    cache_dir: &Path,
    echo: bool,
    note: &mut dyn FnMut(&str),
) -> Result<PathBuf, GuestBuildError> {
    let folder = canonical(dir);
    let project = read_project(&folder)?;
    check_module(&folder, &project.module)?;
    let with_sdk = project.world == pyproject::DEFAULT_WORLD && project.sdk;
    // An SDK agent is built against world `agent-python` (world `agent` plus wasi:http, for
    // `ctx.http()`), from a WIT folder of its own; anything else against the repository's WIT.
    let (wit, world) = if with_sdk {
        (embedded::write_python_wit(cache_dir)?, embedded::PYTHON_AGENT_WORLD)
    } else {
        (embedded::write_wit(cache_dir)?, project.world.as_str())
    };
    let fingerprint = Fingerprint::of(
        &folder,
        Sources::Python,
        &[
            &sdk::sdk_digest(),
            embedded::wit_digest().as_bytes(),
            embedded::python_wit_digest().as_bytes(),
            project.dependencies.join("\n").as_bytes(),
            project.world.as_bytes(),
            project.module.as_bytes(),
            if project.sdk { b"sdk" } else { b"bindings only" },
            COMPONENTIZE_PY_VERSION.as_bytes(),
        ],
    )?;
    let digest = fingerprint.digest();
    let output = cache_dir.join(format!("{}-{}.wasm", component_name(&project, &folder), &digest[..16]));
    if output.is_file() {
        fingerprint.save(cache_dir, &folder);
        return Ok(output);
    }
    let stem = output
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let _lock = tool::lock(&cache_dir.join("python").join("locks").join(format!("{stem}.lock")))?;
    if output.is_file() {
        fingerprint.save(cache_dir, &folder);
        return Ok(output);
    }
    note(&fingerprint.why(Fingerprint::load(cache_dir, &folder).as_ref()));
    let tools = toolchain::ensure(cache_dir)?;
    let site = toolchain::ensure_site(&tools, cache_dir, &project.dependencies)?;
    let sdk_dir = sdk::write_sdk(cache_dir)?;
    // The path componentize-py searches, in order: the entry module, the SDK, the guest's own
    // folder, its dependencies.
    let mut path = Vec::new();
    let app = if with_sdk {
        path.push(sdk::write_entry(cache_dir, &project.module)?);
        sdk::ENTRY_MODULE.to_owned()
    } else {
        project.module.clone()
    };
    path.push(sdk_dir);
    path.push(folder.clone());
    path.extend(site);
    let partial = output.with_extension("wasm.partial");
    componentize(&tools, &folder, &wit, world, &app, &path, &partial, echo)?;
    std::fs::rename(&partial, &output).map_err(|source| GuestBuildError::Cache {
        path: output.clone(),
        source,
    })?;
    fingerprint.save(cache_dir, &folder);
    Ok(output)
}

/// The project read from `folder/pyproject.toml`, or the defaults when there is none.
fn read_project(folder: &Path) -> Result<Project, GuestBuildError> {
    let manifest = folder.join("pyproject.toml");
    let text = match std::fs::read_to_string(&manifest) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Project::default()),
        Err(source) => {
            return Err(GuestBuildError::Manifest {
                crate_dir: folder.to_path_buf(),
                manifest,
                source,
            });
        }
    };
    pyproject::parse(&text).map_err(|err| GuestBuildError::Manifest {
        crate_dir: folder.to_path_buf(),
        manifest,
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, err.to_string()),
    })
}

/// Fails unless `module` is a file (`a/b.py`) or a package (`a/b/__init__.py`) in `folder`.
fn check_module(folder: &Path, module: &str) -> Result<(), GuestBuildError> {
    let relative: PathBuf = module.split('.').collect();
    let file = folder.join(&relative).with_extension("py");
    if file.is_file() || folder.join(&relative).join("__init__.py").is_file() {
        return Ok(());
    }
    Err(GuestBuildError::Manifest {
        crate_dir: folder.to_path_buf(),
        manifest: file,
        source: std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!(
                "no module `{module}` to build (the agent's module is `app` unless pyproject.toml sets \
                 [tool.agl] module = \"...\")"
            ),
        ),
    })
}

/// The stem of the component's file: the project's name, else the folder's (`naming.rs`).
fn component_name(project: &Project, folder: &Path) -> String {
    crate::component_name(project.name.as_deref(), folder)
}

/// Runs componentize-py; its error (the Python traceback of a module that does not import, say)
/// becomes [`GuestBuildError::ToolFailed`].
#[allow(clippy::too_many_arguments)]
fn componentize(
    tools: &toolchain::Toolchain,
    folder: &Path,
    wit: &Path,
    world: &str,
    app: &str,
    path: &[PathBuf],
    output: &Path,
    echo: bool,
) -> Result<(), GuestBuildError> {
    let program = tools.componentize_py();
    let mut command = Command::new(&program);
    command
        .current_dir(folder)
        .arg("-q")
        .arg("-d")
        .arg(wit)
        .args(["-w", world, "componentize"]);
    for dir in path {
        command.arg("-p").arg(dir);
    }
    command
        .arg(app)
        .arg("-o")
        .arg(output)
        // componentize-py adds a virtual environment's or pipenv's packages to the path when it
        // finds one; the build uses exactly the path above. Its errors carry a Rust backtrace
        // when RUST_BACKTRACE is set: noise for a Python author.
        .env_remove("VIRTUAL_ENV")
        .env_remove("PYTHONPATH")
        .env_remove("PYTHONHOME")
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .env("PIPENV_ACTIVE", "");
    let (status, stderr) = tool::run_streaming(&mut command, echo, |err| GuestBuildError::ToolMissing {
        tool: program.display().to_string(),
        hint: format!("it could not be run ({err}); delete the folder to reinstall it"),
    })?;
    if status.success() && output.is_file() {
        return Ok(());
    }
    Err(GuestBuildError::ToolFailed {
        tool: format!("componentize-py {COMPONENTIZE_PY_VERSION}"),
        dir: folder.to_path_buf(),
        status,
        stderr_tail: error_text(&stderr),
    })
}

/// The part of componentize-py's stderr worth showing: the Python traceback it wraps (without the
/// wrapper's own traceback and any Rust backtrace), its last lines.
fn error_text(stderr: &str) -> String {
    let start = stderr
        .find("AssertionError: ")
        .map_or(0, |at| at + "AssertionError: ".len());
    let inner = &stderr[start..];
    let end = inner.find("\nStack backtrace:").unwrap_or(inner.len());
    let inner = &inner[..end];
    // "Caused by:" repeats the last line of the traceback.
    let inner = inner.split("\n\nCaused by:").next().unwrap_or(inner);
    tool::tail(inner.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SYNTAX_ERROR: &str = "Traceback (most recent call last):\n  File \"/venv/bin/componentize-py\", line 8, in <module>\n    sys.exit(script())\n\
AssertionError: Traceback (most recent call last):\n  File \"/0/agl_component.py\", line 2, in <module>\n    WitWorld = agl._wit.export(\"app\")\n\
  File \"/2/app.py\", line 2\n    def rollout(task, ctx)\n                          ^\nSyntaxError: expected ':'\n\n\n\
Caused by:\n    SyntaxError: expected ':' (app.py, line 2)\n\nStack backtrace:\n   0: <anyhow::Error>::msg\n";

    #[test]
    fn the_error_is_the_python_traceback() {
        let text = error_text(SYNTAX_ERROR);
        assert!(
            text.starts_with("Traceback (most recent call last):\n  File \"/0/agl_component.py\""),
            "{text}"
        );
        assert!(text.ends_with("SyntaxError: expected ':'"), "{text}");
        assert!(
            !text.contains("Stack backtrace") && !text.contains("Caused by"),
            "{text}"
        );
        assert_eq!(error_text("error: no such world `x`\n"), "error: no such world `x`");
    }

    #[test]
    fn names_come_from_the_project_or_the_folder() {
        let named = Project {
            name: Some("math-agent-py".into()),
            ..Project::default()
        };
        assert_eq!(component_name(&named, Path::new("/x/y")), "math_agent_py");
        assert_eq!(
            component_name(&Project::default(), Path::new("/x/probe-py")),
            "probe_py"
        );
    }

    #[test]
    fn the_module_must_exist() {
        let dir = std::env::temp_dir().join(format!("agl-python-module-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("agents")).unwrap();
        std::fs::write(dir.join("app.py"), "").unwrap();
        std::fs::write(dir.join("agents/__init__.py"), "").unwrap();
        std::fs::write(dir.join("agents/main.py"), "").unwrap();
        let found = ["app", "agents", "agents.main"].map(|m| check_module(&dir, m).is_ok());
        let missing = check_module(&dir, "other").unwrap_err().to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(found, [true, true, true]);
        assert!(missing.contains("no module `other` to build"), "{missing}");
    }

    #[test]
    fn a_malformed_pyproject_is_reported_with_its_line() {
        let dir = std::env::temp_dir().join(format!("agl-python-pyproject-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("pyproject.toml"), "[project]\ndependencies = \"x\"\n").unwrap();
        let err = read_project(&dir).unwrap_err().to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            err.contains("line 2: [project] dependencies must be an array of strings"),
            "{err}"
        );
    }
}
