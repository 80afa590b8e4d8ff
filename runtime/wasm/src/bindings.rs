//! Host-side bindings of the `agl:agent/agent` world (generated from `wit/` by wasmtime).
//! `llm.chat` is async (it waits on the network); every other import is a quick synchronous call.

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "agent",
    imports: {
        "agl:agent/llm.chat": async | trappable,
        default: trappable,
    },
    exports: { default: async },
});

pub use agl::agent::{llm, resources, reward, trace, types};

/// The store's rollout mode as the WIT enum.
pub(crate) fn wit_mode(mode: agl_store::Mode) -> types::Mode {
    match mode {
        agl_store::Mode::Train => types::Mode::Train,
        agl_store::Mode::Val => types::Mode::Val,
        agl_store::Mode::Test => types::Mode::Test,
    }
}

/// The WIT mode as the store's.
pub(crate) fn store_mode(mode: types::Mode) -> agl_store::Mode {
    match mode {
        types::Mode::Train => agl_store::Mode::Train,
        types::Mode::Val => agl_store::Mode::Val,
        types::Mode::Test => agl_store::Mode::Test,
    }
}
