//! The shape of a component as the pooling allocator sees it — the core instances one instance of
//! it creates (its modules' and the adapters wasmtime fuses between nested components), and the
//! linear memories and tables those define — read from its bytes before it is compiled, so that the engine's pool is sized for the components the process will run. A Rust
//! agent is three core instances and one memory; a componentize-py agent (CPython inside) or a
//! componentize-js one (StarlingMonkey) is several of each.

use crate::error::HostError;
use wasmparser::{
    ComponentAlias, ComponentExternalKind, ComponentInstance, ComponentOuterAliasKind, ComponentTypeRef, Encoding,
    Instance, Parser, Payload,
};

/// What one instance of a component takes from the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ComponentShape {
    /// Core module instances it creates.
    pub core_instances: u32,
    /// Linear memories those instances define (imported ones are shared, not allocated).
    pub memories: u32,
    /// Tables those instances define.
    pub tables: u32,
}

impl Default for ComponentShape {
    /// Room for any Rust guest (wit-bindgen: a main module and two shims) with a margin.
    fn default() -> Self {
        Self {
            core_instances: 8,
            memories: 2,
            tables: 4,
        }
    }
}

impl ComponentShape {
    /// The shape of the component in `bytes`; `name` names it in the error.
    pub fn of(bytes: &[u8], name: &str) -> Result<Self, HostError> {
        count(bytes).map_err(|e| HostError::Compile {
            name: name.to_owned(),
            message: e.to_string(),
        })
    }

    /// Room for both: the larger need of each kind.
    pub fn max(self, other: Self) -> Self {
        Self {
            core_instances: self.core_instances.max(other.core_instances),
            memories: self.memories.max(other.memories),
            tables: self.tables.max(other.tables),
        }
    }

    /// Whether an instance of `self` fits in room sized for `room`.
    pub fn fits_in(self, room: Self) -> bool {
        self.core_instances <= room.core_instances && self.memories <= room.memories && self.tables <= room.tables
    }
}

/// What a core module defines, by its place in a component's core module index space.
#[derive(Debug, Clone, Copy, Default)]
struct ModuleNeeds {
    memories: u32,
    tables: u32,
}

/// A component or module being read (nested ones are read inside their parent's bytes).
enum Scope {
    Component { modules: Vec<ModuleNeeds> },
    Module(ModuleNeeds),
}

fn count(bytes: &[u8]) -> Result<ComponentShape, wasmparser::BinaryReaderError> {
    let mut shape = ComponentShape {
        core_instances: 0,
        memories: 0,
        tables: 0,
    };
    let mut scopes: Vec<Scope> = Vec::new();
    for payload in Parser::new(0).parse_all(bytes) {
        match payload? {
            Payload::Version { encoding, .. } => scopes.push(match encoding {
                Encoding::Component => Scope::Component { modules: Vec::new() },
                Encoding::Module => Scope::Module(ModuleNeeds::default()),
            }),
            Payload::MemorySection(section) => {
                if let Some(Scope::Module(needs)) = scopes.last_mut() {
                    needs.memories += section.count();
                }
            }
            Payload::TableSection(section) => {
                if let Some(Scope::Module(needs)) = scopes.last_mut() {
                    needs.tables += section.count();
                }
            }
            Payload::End(_) => {
                if let Some(Scope::Module(needs)) = scopes.pop()
                    && let Some(Scope::Component { modules }) = scopes.last_mut()
                {
                    modules.push(needs);
                }
            }
            Payload::InstanceSection(section) => {
                for instance in section {
                    if let Instance::Instantiate { module_index, .. } = instance? {
                        shape.core_instances += 1;
                        if let Some(Scope::Component { modules }) = scopes.last()
                            && let Some(needs) = usize::try_from(module_index).ok().and_then(|i| modules.get(i))
                        {
                            shape.memories += needs.memories;
                            shape.tables += needs.tables;
                        }
                    }
                }
            }
            // Where one nested component's exports meet another's imports, wasmtime fuses an
            // adapter module (lifting and lowering) and instantiates it: room for one per
            // nested component instance.
            Payload::ComponentInstanceSection(section) => {
                for instance in section {
                    if let ComponentInstance::Instantiate { .. } = instance? {
                        shape.core_instances += 1;
                    }
                }
            }
            Payload::ComponentAliasSection(section) => {
                for alias in section {
                    let aliased = match alias? {
                        ComponentAlias::Outer {
                            kind: ComponentOuterAliasKind::CoreModule,
                            count,
                            index,
                        } => Some(outer_module(&scopes, count, index)),
                        ComponentAlias::InstanceExport {
                            kind: ComponentExternalKind::Module,
                            ..
                        } => Some(ModuleNeeds::default()),
                        _ => None,
                    };
                    push_module(&mut scopes, aliased);
                }
            }
            Payload::ComponentImportSection(section) => {
                for import in section {
                    if matches!(import?.ty, ComponentTypeRef::Module(_)) {
                        push_module(&mut scopes, Some(ModuleNeeds::default()));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(shape)
}

/// Adds a module (aliased or imported: what it defines, as far as known) to the current component's
/// index space.
fn push_module(scopes: &mut [Scope], module: Option<ModuleNeeds>) {
    if let (Some(module), Some(Scope::Component { modules })) = (module, scopes.last_mut()) {
        modules.push(module);
    }
}

/// The module `index` of the component `count` levels out (unknown: nothing).
fn outer_module(scopes: &[Scope], count: u32, index: u32) -> ModuleNeeds {
    let components: Vec<&Vec<ModuleNeeds>> = scopes
        .iter()
        .filter_map(|scope| match scope {
            Scope::Component { modules } => Some(modules),
            Scope::Module(_) => None,
        })
        .collect();
    let level = usize::try_from(count)
        .ok()
        .and_then(|c| components.len().checked_sub(1 + c));
    level
        .and_then(|level| components[level].get(usize::try_from(index).ok()?).copied())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_an_error_naming_the_component() {
        let err = ComponentShape::of(b"\0asm\x0d\0\x01\0garbage", "bad.wasm").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("bad.wasm is not a valid WebAssembly component"),
            "{err}"
        );
    }

    #[test]
    fn max_and_fits_compare_kind_by_kind() {
        let small = ComponentShape {
            core_instances: 3,
            memories: 1,
            tables: 2,
        };
        let python = ComponentShape {
            core_instances: 12,
            memories: 3,
            tables: 1,
        };
        let both = small.max(python);
        assert_eq!((both.core_instances, both.memories, both.tables), (12, 3, 2));
        assert!(small.fits_in(both) && python.fits_in(both));
        assert!(!python.fits_in(small));
    }
}
