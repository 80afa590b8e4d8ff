//! `agl:agent@0.1.0`, still served: components built against the first version of the WIT keep
//! running unchanged. The host links every version's imports into one linker (their names differ
//! by version: `agl:agent/llm@0.1.0` beside `@0.2.0` and `@0.3.0`), as Zed and Spin do for their
//! plugin APIs. Every 0.1.0 import is the current (0.3.0) one behind a type conversion
//! ([`imports`]); the exports (`rollout`, `run`) have the same types in every version, so the
//! current bindings call them.
//!
//! The 0.1.0 WIT is frozen in `runtime/wasm/wit/v0.1.0/`; what changed since: `llm.message`
//! gained `tool-calls` in 0.2.0 (a 0.1.0 guest never sends any, and sees none in the adapter's
//! messages); 0.3.0 added functions only (`reward.feedback`, `adapter.task`).

mod convert;
mod imports;

/// The 0.1.0 `agent` world's imports.
pub mod agent {
    wasmtime::component::bindgen!({
        path: "wit/v0.1.0",
        world: "agent",
        imports: {
            "agl:agent/llm.chat": async | trappable,
            default: trappable,
        },
        exports: { default: async },
    });

    pub use agl::agent::{llm, resources, reward, trace, types};
}

/// The 0.1.0 `algorithm` world's imports (`types`, `llm`, `trace` are the agent world's).
pub mod algorithm {
    wasmtime::component::bindgen!({
        path: "wit/v0.1.0",
        world: "algorithm",
        imports: {
            "agl:agent/store": async,
            "agl:agent/adapter": async,
        },
        exports: { default: async },
        with: {
            "agl:agent/types": super::agent::types,
            "agl:agent/llm": super::agent::llm,
            "agl:agent/trace": super::agent::trace,
        },
    });

    pub use agl::agent::{adapter, progress, store};
}
