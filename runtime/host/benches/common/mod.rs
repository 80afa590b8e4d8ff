//! What the benchmarks of `agl-host` share: the Python that runs Agent-lightning 0.3.0, their
//! anchor.

use std::path::PathBuf;

/// The venv's Python with Agent-lightning 0.3.0 (made by `cargo test -p agl-host --test
/// python_client`); `None`, said on stdout, when there is none.
pub fn anchor_python() -> Option<PathBuf> {
    let python = agl_guest_build::repo_root().join("target/py/agl-0.3/bin/python");
    if python.is_file() {
        return Some(python);
    }
    println!(
        "anchor: skipped, no venv at {} (cargo test -p agl-host --test cli python_client makes it)",
        python.display()
    );
    None
}
