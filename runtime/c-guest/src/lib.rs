//! Builds C agents into `agl:agent` components with a Debian-installable toolchain: C bindings
//! of the `agent` world generated with wit-bindgen-c ([`bindings`]), clang for WASI preview 1
//! (a reactor core module, [`compile`]), then a component made with wit-component and wasmtime
//! 48's preview 1 reactor adapter ([`componentize`]). [`build_agent`] does all three for a
//! folder of `.c` files; the `agl-c-guest` binary is its command line.

pub mod bindings;
pub mod compile;
pub mod componentize;
mod error;
pub mod wit;

pub use compile::Toolchain;
pub use error::CGuestError;

use std::path::{Path, PathBuf};

/// What [`build_agent`] made.
#[derive(Debug, Clone)]
pub struct Built {
    /// The component.
    pub component: PathBuf,
    /// Its size in bytes.
    pub component_bytes: usize,
    /// The core module it was made from (kept beside it, in `<out>.parts/`).
    pub module: PathBuf,
    /// clang's warnings (empty when it had none).
    pub warnings: String,
}

/// Builds the C agent in `dir` (every `.c` file at its top level, `dir` on the include path,
/// `#include "agent.h"` for the bindings) into the component `out`. The bindings and the core
/// module are written to `<out>.parts/`.
pub fn build_agent(dir: &Path, out: &Path, toolchain: &Toolchain) -> Result<Built, CGuestError> {
    let sources = compile::sources(dir)?;
    let parts = parts_dir(out);
    let (mut resolve, world) = wit::load(None, wit::AGENT_WORLD)?;
    let bindings = bindings::generate(&mut resolve, world, &parts.join("bindings"))?;
    let module = parts.join("module.wasm");
    let warnings = toolchain.compile(dir, &sources, &bindings, &module)?;
    let module_bytes = std::fs::read(&module).map_err(CGuestError::io(&module))?;
    let component = componentize::componentize(&module_bytes, &module)?;
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(CGuestError::io(parent))?;
    }
    std::fs::write(out, &component).map_err(CGuestError::io(out))?;
    Ok(Built {
        component: out.to_path_buf(),
        component_bytes: component.len(),
        module,
        warnings: warnings.0,
    })
}

/// `<out>.parts`: where the bindings and the core module of `out` go.
fn parts_dir(out: &Path) -> PathBuf {
    let mut name = out.as_os_str().to_owned();
    name.push(".parts");
    PathBuf::from(name)
}

/// A scratch folder for unit tests, removed when dropped.
#[cfg(test)]
pub(crate) struct Scratch(pub PathBuf);

#[cfg(test)]
impl Scratch {
    pub(crate) fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("agl-c-guest-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }
}

#[cfg(test)]
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
