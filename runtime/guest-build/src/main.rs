//! `agl-guest-build [CRATE_DIR...]`: builds guest crates into `wasm32-wasip2` components (every
//! component crate of `GUESTS` when no directory is given) and prints each component's path, one a
//! line. Cargo's progress goes to stderr; the first failure stops the run with exit code 1.
//! `agl-guest-build --list` prints every guest crate directory instead (CI's list of guests).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use agl_guest_build::{GUESTS, build_echoing, components, repo_root};

const USAGE: &str = "usage: agl-guest-build [CRATE_DIR...]\n\
    \x20      agl-guest-build --list\n\
    Builds guest crates for wasm32-wasip2 (release) into <repo>/target/wasm-guests and prints the\n\
    path of each .wasm component. Without CRATE_DIR, builds every component crate of the repository.\n\
    A CRATE_DIR is taken relative to the current directory, else to the repository root.\n\
    --list prints the directory of every guest crate of the repository (SDKs too), one a line.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|arg| arg == "-h" || arg == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    if args == ["--list"] {
        for guest in GUESTS {
            println!("{}", guest.dir);
        }
        return ExitCode::SUCCESS;
    }
    if let Some(flag) = args.iter().find(|arg| arg.starts_with('-')) {
        eprintln!("agl-guest-build: unknown option {flag}\n{USAGE}");
        return ExitCode::from(2);
    }
    let root = repo_root();
    let dirs: Vec<PathBuf> = if args.is_empty() {
        components().map(|guest| root.join(guest)).collect()
    } else {
        args.iter()
            .map(|arg| resolve_crate_dir(Path::new(arg), &root))
            .collect()
    };
    for dir in dirs {
        eprintln!("agl-guest-build: building {}", dir.display());
        match build_echoing(&dir) {
            Ok(component) => println!("{}", component.display()),
            Err(err) => {
                eprintln!("agl-guest-build: {err}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

/// `arg` as given when it holds a `Cargo.toml` (relative to the current directory), else relative
/// to the repository root; an absolute path is kept.
fn resolve_crate_dir(arg: &Path, root: &Path) -> PathBuf {
    if arg.is_absolute() || arg.join("Cargo.toml").is_file() {
        arg.to_path_buf()
    } else {
        root.join(arg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guest_dir_relative_to_the_root_resolves_from_anywhere() {
        let root = repo_root();
        let resolved = resolve_crate_dir(Path::new("tests/guests/probe"), &root);
        assert!(resolved.join("Cargo.toml").is_file(), "{}", resolved.display());
    }

    #[test]
    fn absolute_dirs_are_kept() {
        assert_eq!(
            resolve_crate_dir(Path::new("/abs/guest"), Path::new("/repo")),
            Path::new("/abs/guest")
        );
    }
}
