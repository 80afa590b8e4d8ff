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
