//! Host-side bindings of the `agl:agent/algorithm` world. The interfaces it shares with the agent
//! world (`types`, `llm`, `trace`) are the agent bindings' own, so one implementation serves both.
//! `store` and `adapter` calls are async (they wait on the store); `progress` is a quick call.

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "algorithm",
    imports: {
        "agl:agent/store": async,
        "agl:agent/adapter": async,
    },
    exports: { default: async },
    with: {
        "agl:agent/types": crate::bindings::types,
        "agl:agent/llm": crate::bindings::llm,
        "agl:agent/trace": crate::bindings::trace,
    },
});

pub use agl::agent::{adapter, progress, store};
