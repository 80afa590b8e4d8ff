//! A WASI preview 1 core module into a component: wit-component reads the world from the
//! module's `component-type` custom section (linked in from the bindings' object file) and
//! adapts its `wasi_snapshot_preview1` imports to WASI 0.2 with the reactor adapter of wasmtime
//! 48 (the crate `wasi-preview1-component-adapter-provider`, embedded in this binary).

use crate::error::CGuestError;
use std::path::Path;
use wasi_preview1_component_adapter_provider::{
    WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME, WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
};

/// The component of the core module `module` (read from `path`, named in errors).
pub fn componentize(module: &[u8], path: &Path) -> Result<Vec<u8>, CGuestError> {
    let err = |source| CGuestError::Componentize {
        module: path.to_path_buf(),
        source,
    };
    wit_component::ComponentEncoder::default()
        .module(module)
        .map_err(err)?
        .adapter(
            WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME,
            WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
        )
        .map_err(err)?
        .validate(true)
        .encode()
        .map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_importing_what_no_world_offers_is_refused() {
        // A core module importing `env.foo: func()`: neither the (absent) world type nor WASI
        // preview 1 provides it, as when C code calls a function nobody defines.
        let mut module = b"\0asm\x01\0\0\0".to_vec();
        module.extend([1, 4, 1, 0x60, 0, 0]); // type section: one `func() -> ()`
        module.extend([2, 11, 1, 3, b'e', b'n', b'v', 3, b'f', b'o', b'o', 0, 0]); // import env.foo
        let err = componentize(&module, Path::new("undefined.wasm")).expect_err("unresolvable import");
        let text = format!("{err}");
        assert!(text.contains("undefined.wasm") && text.contains("env"), "{text}");
    }

    #[test]
    fn garbage_is_refused() {
        let err = componentize(b"not wasm", Path::new("x.wasm")).expect_err("not wasm");
        assert!(matches!(err, CGuestError::Componentize { .. }), "{err}");
    }
}
