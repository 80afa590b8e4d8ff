//! The algorithms built into the binary: `--algo baseline`, `--algo apo` and `--algo gepa`. Their components are
//! built from `plugins/` by build.rs and embedded here, so they run anywhere, with no Rust
//! toolchain and no source tree.

/// An algorithm component embedded in the binary.
#[derive(Debug)]
pub struct BuiltinAlgorithm {
    /// What `--algo` calls it.
    pub name: &'static str,
    /// One line for `--help` and errors.
    pub summary: &'static str,
    /// The component's bytes.
    pub component: &'static [u8],
}

pub const BUILTIN_ALGORITHMS: &[BuiltinAlgorithm] = &[
    BuiltinAlgorithm {
        name: "baseline",
        summary: "every train and val task once with the initial resources; mean reward per split",
        component: include_bytes!(concat!(env!("OUT_DIR"), "/baseline.wasm")),
    },
    BuiltinAlgorithm {
        name: "apo",
        summary: "automatic prompt optimization: beam search over prompt templates with textual gradients",
        component: include_bytes!(concat!(env!("OUT_DIR"), "/apo.wasm")),
    },
    BuiltinAlgorithm {
        name: "gepa",
        summary: "GEPA: reflective prompt evolution with a per-task Pareto front, merge and budgets",
        component: include_bytes!(concat!(env!("OUT_DIR"), "/gepa.wasm")),
    },
];

/// The built-in algorithm called `name`.
pub fn find(name: &str) -> Option<&'static BuiltinAlgorithm> {
    BUILTIN_ALGORITHMS.iter().find(|algorithm| algorithm.name == name)
}

/// One line per built-in algorithm, its name and what it does, for `--help`.
pub fn help_table() -> String {
    BUILTIN_ALGORITHMS
        .iter()
        .map(|algorithm| format!("  {:<10} {}\n", algorithm.name, algorithm.summary))
        .collect()
}

/// The built-in names, for messages: `baseline, apo, gepa`.
pub fn names() -> String {
    BUILTIN_ALGORITHMS
        .iter()
        .map(|algorithm| algorithm.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_is_an_embedded_component() {
        for algorithm in BUILTIN_ALGORITHMS {
            // A component starts with the wasm magic and the component-model layer (0x0d 0x00 0x01 0x00).
            assert_eq!(
                algorithm.component.get(..8),
                Some(&b"\0asm\x0d\x00\x01\x00"[..]),
                "{}",
                algorithm.name
            );
        }
        assert_eq!(names(), "baseline, apo, gepa");
        assert!(find("apo").is_some() && find("plugins/apo").is_none());
    }
}
