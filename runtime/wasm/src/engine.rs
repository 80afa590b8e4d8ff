//! The process's one wasmtime `Engine` for agents and algorithms: component model, async calls, epoch
//! interruption driven by a ticker thread, the pooling allocator (falling back to on-demand
//! allocation when the address-space reservation fails), optional fuel, and the compile cache.
//! Loading a component compiles it once and links it once (`InstancePre`). Each world's linker
//! holds every capability's imports (`capabilities::link`); the algorithm's also its own
//! (`algorithm::bindings::link`).

use crate::agent::AgentComponent;
use crate::algorithm::bindings::AlgorithmPre;
use crate::algorithm::{AlgorithmComponent, AlgorithmState};
use crate::bindings::AgentPre;
use crate::cache::{Compiled, ComponentCache, default_cache_dir};
use crate::error::HostError;
use crate::loaded::Loaded;
use crate::policy::SandboxPolicy;
use crate::pool::ComponentShape;
use crate::state::HostState;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// Memory of a pooled slot kept mapped between instances (reset, not decommitted): room for a
/// Python agent's instance (about 13 MiB), whose pages would otherwise be faulted in afresh by
/// every attempt.
const RESIDENT_BYTES: usize = 32 << 20;
/// Native stack a guest may use: eight times wasmtime's default, as CPython and SpiderMonkey
/// recurse in C (with it a Python agent recursing 5,000 deep meets its own RecursionError).
pub const MAX_WASM_STACK: usize = 4 << 20;
/// Each async call's stack: the guest's stack plus room for the host functions it calls.
const ASYNC_STACK: usize = MAX_WASM_STACK + (1 << 20);

/// How the engine is built.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Epoch period: a spinning guest stops within one tick after its deadline.
    pub epoch_tick: Duration,
    /// Use the pooling instance allocator (fast instantiation) when the OS allows its reservation.
    pub pooling: bool,
    /// Instances alive at once in the pool (concurrent attempts).
    pub max_concurrent_instances: u32,
    /// What one instance may take from the pool: the largest [`ComponentShape`] of the components
    /// this engine will load (read them with [`ComponentShape::of`] first). A component larger
    /// than this is refused at load with a message saying so.
    pub instance_shape: ComponentShape,
    /// Largest linear memory any policy may allow (the pool's slot size).
    pub max_memory_bytes: u64,
    /// Count instructions so policies can set a fuel budget (costs speed on call-heavy code).
    pub fuel: bool,
    /// Where compiled components are cached; `None` compiles every time.
    pub cache_dir: Option<PathBuf>,
}

impl Default for EngineOptions {
    fn default() -> Self {
        Self {
            epoch_tick: Duration::from_millis(10),
            pooling: true,
            max_concurrent_instances: 128,
            instance_shape: ComponentShape::default(),
            max_memory_bytes: 4 << 30,
            fuel: false,
            cache_dir: default_cache_dir(),
        }
    }
}

/// Compiles, links and instantiates agent components.
pub struct WasmHost {
    engine: Engine,
    linker: Arc<Linker<HostState>>,
    algorithm_linker: Arc<Linker<AlgorithmState>>,
    options: EngineOptions,
    pooling: bool,
    cache: Option<ComponentCache>,
}

fn base_config(options: &EngineOptions) -> Config {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    config.consume_fuel(options.fuel);
    config.max_wasm_stack(MAX_WASM_STACK);
    config.async_stack_size(ASYNC_STACK);
    config
}

fn pooling_config(options: &EngineOptions) -> PoolingAllocationConfig {
    let instances = options.max_concurrent_instances.max(1);
    let shape = options.instance_shape;
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(instances)
        .total_core_instances(instances.saturating_mul(shape.core_instances.max(1)))
        .total_memories(instances.saturating_mul(shape.memories.max(1)))
        .total_tables(instances.saturating_mul(shape.tables.max(1)))
        .max_core_instances_per_component(shape.core_instances.max(1))
        .max_memories_per_component(shape.memories.max(1))
        .max_tables_per_component(shape.tables.max(1))
        .total_stacks(instances)
        .max_memory_size(usize::try_from(options.max_memory_bytes).unwrap_or(usize::MAX))
        // Reusing a slot: reset only the pages the last instance dirtied (PAGEMAP_SCAN where the
        // kernel has it) instead of decommitting and faulting everything back in.
        .pagemap_scan(Enabled::Auto)
        .linear_memory_keep_resident(RESIDENT_BYTES)
        .table_keep_resident(64 << 10)
        .async_stack_keep_resident(256 << 10)
        .decommit_batch_size(16);
    pool
}

fn spawn_epoch_ticker(engine: &Engine, tick: Duration) -> Result<(), HostError> {
    let weak = engine.weak();
    let spawned = std::thread::Builder::new().name("agl-epoch".into()).spawn(move || {
        loop {
            std::thread::sleep(tick);
            match weak.upgrade() {
                Some(engine) => engine.increment_epoch(),
                None => return,
            }
        }
    });
    // Without the ticker deadlines would never fire: no host at all rather than one without them.
    spawned
        .map(drop)
        .map_err(|e| HostError::Engine(format!("cannot start the epoch ticker thread: {e}")))
}

impl WasmHost {
    pub fn new(options: EngineOptions) -> Result<Self, HostError> {
        let mut pooling = false;
        let mut engine = None;
        if options.pooling {
            let mut config = base_config(&options);
            config.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling_config(&options)));
            if let Ok(e) = Engine::new(&config) {
                engine = Some(e);
                pooling = true;
            }
        }
        let engine = match engine {
            Some(engine) => engine,
            None => Engine::new(&base_config(&options)).map_err(|e| HostError::Engine(e.to_string()))?,
        };
        spawn_epoch_ticker(&engine, options.epoch_tick)?;
        let mut linker = Linker::new(&engine);
        crate::capabilities::link(&mut linker).map_err(|e| HostError::Engine(e.to_string()))?;
        let mut algorithm_linker = Linker::new(&engine);
        crate::capabilities::link(&mut algorithm_linker)
            .and_then(|()| crate::algorithm::bindings::link(&mut algorithm_linker))
            .map_err(|e| HostError::Engine(e.to_string()))?;
        let cache = options.cache_dir.clone().map(ComponentCache::new);
        Ok(Self {
            engine,
            linker: Arc::new(linker),
            algorithm_linker: Arc::new(algorithm_linker),
            options,
            pooling,
            cache,
        })
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Whether instances come from the pool (false: the OS refused the reservation).
    pub fn uses_pooling(&self) -> bool {
        self.pooling
    }

    pub fn options(&self) -> &EngineOptions {
        &self.options
    }

    /// Compiles (or loads from the cache) and links an agent component from a file; its
    /// policy is `policy`, typically `SandboxPolicy::for_component(path)` plus CLI overrides.
    pub fn load_agent(&self, path: &Path, policy: SandboxPolicy) -> Result<AgentComponent, HostError> {
        let bytes = read_component(path)?;
        self.load_agent_bytes(&bytes, &component_name(path), policy)
    }

    /// Like [`Self::load_agent`] for component bytes already in memory.
    pub fn load_agent_bytes(
        &self,
        bytes: &[u8],
        name: &str,
        policy: SandboxPolicy,
    ) -> Result<AgentComponent, HostError> {
        let (component, compiled, compile_time) = self.prepare(bytes, name, &policy)?;
        let wrong_world = |e: wasmtime::Error| HostError::WrongWorld {
            name: name.to_owned(),
            world: "agent",
            message: format!("{e:#}"),
        };
        let pre = self.linker.instantiate_pre(&component).map_err(wrong_world)?;
        let pre = AgentPre::new(pre).map_err(wrong_world)?;
        let (imports, uses_llm) = self.import_names(&component);
        Ok(AgentComponent::new(
            pre,
            Loaded::new(name.to_owned(), policy, compiled, compile_time, imports, uses_llm)
                .with_digest(crate::cache::component_digest(bytes)),
        ))
    }

    /// Compiles (or loads from the cache) and links an algorithm component from a file; its
    /// policy is typically `SandboxPolicy::for_algorithm(path)` plus CLI overrides.
    pub fn load_algorithm(&self, path: &Path, policy: SandboxPolicy) -> Result<AlgorithmComponent, HostError> {
        let bytes = read_component(path)?;
        self.load_algorithm_bytes(&bytes, &component_name(path), policy)
    }

    /// Like [`Self::load_algorithm`] for component bytes already in memory.
    pub fn load_algorithm_bytes(
        &self,
        bytes: &[u8],
        name: &str,
        policy: SandboxPolicy,
    ) -> Result<AlgorithmComponent, HostError> {
        let (component, compiled, compile_time) = self.prepare(bytes, name, &policy)?;
        let wrong_world = |e: wasmtime::Error| HostError::WrongWorld {
            name: name.to_owned(),
            world: "algorithm",
            message: format!("{e:#}"),
        };
        let pre = self.algorithm_linker.instantiate_pre(&component).map_err(wrong_world)?;
        let pre = AlgorithmPre::new(pre).map_err(wrong_world)?;
        let (imports, uses_llm) = self.import_names(&component);
        Ok(AlgorithmComponent::new(
            pre,
            Loaded::new(name.to_owned(), policy, compiled, compile_time, imports, uses_llm)
                .with_digest(crate::cache::component_digest(bytes)),
        ))
    }

    /// The names of a component's imports, and whether it imports a function of the LLM
    /// interface (an import of it for its types only calls nothing).
    fn import_names(&self, component: &Component) -> (Vec<String>, bool) {
        let mut uses_llm = false;
        let names = component
            .component_type()
            .imports(&self.engine)
            .map(|(name, item)| {
                if crate::loaded::is_llm_interface(name)
                    && let ComponentItem::ComponentInstance(instance) = item.ty
                {
                    uses_llm |= instance
                        .exports(&self.engine)
                        .any(|(_, export)| matches!(export.ty, ComponentItem::ComponentFunc(_)));
                }
                name.to_owned()
            })
            .collect();
        (names, uses_llm)
    }

    /// Checks a policy against the engine's limits and compiles (or loads) the component.
    fn prepare(
        &self,
        bytes: &[u8],
        name: &str,
        policy: &SandboxPolicy,
    ) -> Result<(Component, Compiled, Duration), HostError> {
        if policy.limits.memory_bytes > self.options.max_memory_bytes {
            return Err(HostError::Engine(format!(
                "{name}: its policy allows {} MiB of memory but the engine's limit is {} MiB",
                policy.limits.memory_bytes >> 20,
                self.options.max_memory_bytes >> 20
            )));
        }
        if policy.limits.fuel.is_some() && !self.options.fuel {
            return Err(HostError::Engine(format!(
                "{name}: its policy sets fuel but the engine was built without fuel"
            )));
        }
        if self.pooling {
            let shape = ComponentShape::of(bytes, name)?;
            let room = self.options.instance_shape;
            if !shape.fits_in(room) {
                return Err(HostError::Engine(format!(
                    "{name} needs {} core instances, {} memories and {} tables per instance, but the engine's \
                     pool was sized for {}, {} and {}: size it with the component's shape (ComponentShape::of)",
                    shape.core_instances, shape.memories, shape.tables, room.core_instances, room.memories, room.tables
                )));
            }
        }
        let started = Instant::now();
        let (component, compiled) = self.compile(bytes, name)?;
        Ok((component, compiled, started.elapsed()))
    }

    fn compile(&self, bytes: &[u8], name: &str) -> Result<(Component, Compiled), HostError> {
        let compile_error = |e: wasmtime::Error| HostError::Compile {
            name: name.to_owned(),
            message: format!("{e:#}"),
        };
        match &self.cache {
            Some(cache) => cache.load_or_compile(&self.engine, bytes).map_err(compile_error),
            None => Component::new(&self.engine, bytes)
                .map(|c| (c, Compiled::Fresh))
                .map_err(compile_error),
        }
    }
}

fn read_component(path: &Path) -> Result<Vec<u8>, HostError> {
    std::fs::read(path).map_err(|e| HostError::Read {
        path: path.to_owned(),
        message: e.to_string(),
    })
}

fn component_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}
