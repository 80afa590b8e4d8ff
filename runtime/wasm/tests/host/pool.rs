//! The instance pool is sized from the components' own shapes: a component larger than the
//! engine was sized for is refused at load, saying what it needs.

use crate::common::*;
use agl_wasm::pool::ComponentShape;
use agl_wasm::*;

#[test]
fn a_component_larger_than_the_pool_was_sized_for_is_refused_at_load_saying_why() {
    let probe = guest("tests/guests/probe");
    let bytes = std::fs::read(&probe).expect("probe built");
    let shape = ComponentShape::of(&bytes, "probe.wasm").expect("a component");
    assert!(shape.core_instances >= 1 && shape.memories >= 1, "{shape:?}");
    assert!(
        shape.fits_in(ComponentShape::default()),
        "a Rust guest fits the default room: {shape:?}"
    );

    let tiny = ComponentShape {
        core_instances: 1,
        memories: 1,
        tables: 1,
    };
    let options = EngineOptions {
        max_concurrent_instances: 2,
        instance_shape: tiny,
        max_memory_bytes: 256 << 20,
        cache_dir: None,
        ..EngineOptions::default()
    };
    let host = WasmHost::new(options).expect("the engine starts");
    if !host.uses_pooling() {
        eprintln!("skipped: the OS refused the pool's reservation, nothing to size");
        return;
    }
    let err = host
        .load_agent_bytes(&bytes, "probe.wasm", SandboxPolicy::default())
        .err()
        .expect("refused");
    let message = err.to_string();
    assert!(
        message.contains(&format!("probe.wasm needs {} core instances", shape.core_instances)),
        "{message}"
    );

    let sized = EngineOptions {
        max_concurrent_instances: 2,
        instance_shape: shape,
        max_memory_bytes: 256 << 20,
        cache_dir: None,
        ..EngineOptions::default()
    };
    let host = WasmHost::new(sized).expect("the engine starts");
    host.load_agent_bytes(&bytes, "probe.wasm", SandboxPolicy::default())
        .expect("sized for it, it loads");
}
