//! `agl-host build DIR [-o FILE]`: a guest folder of any language built into a component in the
//! cache (as `--agent DIR` does before a run), its path printed on stdout, and optionally copied.

use crate::args::BuildArgs;
use crate::components::build_guest_folder;
use crate::inputs::InputError;
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
            output.clone()
        }
        None => built,
    };
    println!("{}", shown.display());
    Ok(ExitCode::SUCCESS)
}
