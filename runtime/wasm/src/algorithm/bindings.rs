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

use super::AlgorithmState;
use crate::v0_1::algorithm as v0_1;
use crate::v0_2::algorithm as v0_2;
use wasmtime::component::{HasSelf, Linker};

/// Adds the algorithm world's own imports (`store`, `adapter`, `progress`, at 0.3.0, 0.2.0 and
/// 0.1.0) to its linker; those it shares with agents (`types`, `llm`, `trace`) are the
/// capabilities' (`capabilities::link`).
pub(crate) fn link(linker: &mut Linker<AlgorithmState>) -> wasmtime::Result<()> {
    store::add_to_linker::<_, HasSelf<_>>(linker, |state| state)?;
    adapter::add_to_linker::<_, HasSelf<_>>(linker, |state| state)?;
    progress::add_to_linker::<_, HasSelf<_>>(linker, |state| state)?;
    v0_2::store::add_to_linker::<_, HasSelf<_>>(linker, |state| state)?;
    v0_2::adapter::add_to_linker::<_, HasSelf<_>>(linker, |state| state)?;
    v0_2::progress::add_to_linker::<_, HasSelf<_>>(linker, |state| state)?;
    v0_1::store::add_to_linker::<_, HasSelf<_>>(linker, |state| state)?;
    v0_1::adapter::add_to_linker::<_, HasSelf<_>>(linker, |state| state)?;
    v0_1::progress::add_to_linker::<_, HasSelf<_>>(linker, |state| state)
}
