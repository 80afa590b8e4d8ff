//! `agl-host build DIR [-o FILE]`: a guest folder of any language built into a component in the
//! cache (as `--agent DIR` does before a run), its path printed on stdout, and optionally copied;
//! with the copy (`-o agent.wasm`), the folder's sandbox manifest (`agent.toml`, else
//! `algorithm.toml`) is copied beside it (`agent.toml`), where a `.wasm`'s manifest is read.

use crate::args::BuildArgs;
use crate::components::build_guest_folder;
use crate::inputs::InputError;
use crate::output::stderr_line;
use agl_wasm::SandboxPolicy;
use std::path::Path;
use std::process::ExitCode;

pub fn run(args: &BuildArgs) -> anyhow::Result<ExitCode> {
    if !args.dir.is_dir() {
        return Err(InputError(format!("{}: no such folder", args.dir.display())).into());
    }
    if agl_guest_build::detect(&args.dir).is_none() && !crate::c_folder::is_c_folder(&args.dir) {
        return Err(
            InputError(agl_guest_build::GuestBuildError::UnknownFolder { dir: args.dir.clone() }.to_string()).into(),
        );
    }
    let built = build_guest_folder(&args.dir, "guest")?;
    let shown = match &args.output {
        Some(output) => {
            std::fs::copy(&built, output).map_err(|e| InputError(format!("cannot write {}: {e}", output.display())))?;
            copy_manifest(&args.dir, output)?;
            output.clone()
        }
        None => built,
    };
    println!("{}", shown.display());
    Ok(ExitCode::SUCCESS)
}

/// Copies the folder's manifest (`agent.toml`, else `algorithm.toml`) beside `output`
/// (`x.wasm` → `x.toml`), saying so on stderr; nothing when the folder has none.
fn copy_manifest(dir: &Path, output: &Path) -> Result<(), InputError> {
    let Some(manifest) = ["agent.toml", "algorithm.toml"]
        .iter()
        .map(|name| dir.join(name))
        .find(|path| path.is_file())
    else {
        return Ok(());
    };
    let beside = SandboxPolicy::manifest_path(output);
    let same = |a: &Path, b: &Path| matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b);
    if !same(&manifest, &beside) {
        std::fs::copy(&manifest, &beside).map_err(|e| InputError(format!("cannot write {}: {e}", beside.display())))?;
    }
    stderr_line(&format!(
        "sandbox manifest {} -> {}",
        manifest.display(),
        beside.display()
    ));
    Ok(())
}
