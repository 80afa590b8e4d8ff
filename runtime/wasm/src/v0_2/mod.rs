//! `agl:agent@0.2.0`, still served: components built against it keep running unchanged, as those
//! built against 0.1.0 do ([`crate::v0_1`]). wasmtime's linker takes `0.x` minors as
//! incompatible (`@0.2.0` does not satisfy an `@0.3.0` import, nor the reverse), so each version's
//! interfaces are linked under their own names (`agl:agent/reward@0.2.0` beside `@0.3.0`). Every
//! 0.2.0 import is the 0.3.0 one behind a type conversion ([`imports`]); the exports (`rollout`,
//! `run`) have the same types in every version, so the 0.3.0 bindings call them.
//!
//! The 0.2.0 WIT is frozen in `runtime/wasm/wit/v0.2.0/`; what 0.3.0 added: `reward.feedback`
//! (a 0.2.0 agent gives none) and `adapter.task` (a 0.2.0 algorithm cannot ask for it). No
//! type the versions share changed.

mod convert;
mod imports;

/// The 0.2.0 `agent` world's imports.
pub mod agent {
    wasmtime::component::bindgen!({
        path: "wit/v0.2.0",
        world: "agent",
        imports: {
            "agl:agent/llm.chat": async | trappable,
            default: trappable,
        },
        exports: { default: async },
    });

    pub use agl::agent::{llm, resources, reward, trace, types};
}

/// The 0.2.0 `algorithm` world's imports (`types`, `llm`, `trace` are the agent world's).
pub mod algorithm {
    wasmtime::component::bindgen!({
        path: "wit/v0.2.0",
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
