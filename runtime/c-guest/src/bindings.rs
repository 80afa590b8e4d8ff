//! C bindings of a world, generated with wit-bindgen-c as a library: `<world>.h`, `<world>.c`
//! and `<world>_component_type.o` (the world's type, a custom section that the linker keeps and
//! wit-component reads). Generated at build time, never committed.

use crate::error::CGuestError;
use std::path::{Path, PathBuf};
use wit_bindgen_core::wit_parser::{Resolve, WorldId};

/// The generated files, written into a folder.
#[derive(Debug, Clone)]
pub struct Bindings {
    /// The folder holding them (give it to the compiler with `-I`).
    pub dir: PathBuf,
    /// The C sources and objects to compile and link with the agent (`<world>.c`,
    /// `<world>_component_type.o`).
    pub link: Vec<PathBuf>,
    /// Every file written (the header too).
    pub files: Vec<PathBuf>,
}

/// Generates the C bindings of `world` into `dir` (created if needed; files of the same names
/// are replaced).
pub fn generate(resolve: &mut Resolve, world: WorldId, dir: &Path) -> Result<Bindings, CGuestError> {
    let mut files = wit_bindgen_core::Files::default();
    wit_bindgen_c::Opts::default()
        .build()
        .generate(resolve, world, &mut files)
        .map_err(CGuestError::Bindings)?;
    std::fs::create_dir_all(dir).map_err(CGuestError::io(dir))?;
    let (mut link, mut written) = (Vec::new(), Vec::new());
    for (name, contents) in files.iter() {
        let path = dir.join(name);
        std::fs::write(&path, contents).map_err(CGuestError::io(&path))?;
        if name.ends_with(".c") || name.ends_with(".o") {
            link.push(path.clone());
        }
        written.push(path);
    }
    Ok(Bindings {
        dir: dir.to_path_buf(),
        link,
        files: written,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wit;

    #[test]
    fn the_agent_world_gives_a_header_a_source_and_its_type_object() {
        let scratch = crate::Scratch::new("bindings");
        let dir = scratch.0.join("bindings");
        let (mut resolve, world) = wit::load(None, wit::AGENT_WORLD).expect("WIT");
        let bindings = generate(&mut resolve, world, &dir).expect("bindings");
        let names: Vec<_> = bindings
            .link
            .iter()
            .filter_map(|p| p.file_name()?.to_str().map(str::to_owned))
            .collect();
        assert_eq!(names, ["agent.c", "agent_component_type.o"]);
        let header = std::fs::read_to_string(dir.join("agent.h")).expect("agent.h");
        // The export an agent defines and the imports it calls, as the example agent uses them.
        for symbol in [
            "bool exports_agent_rollout(agent_rollout_context_t *ctx, agent_string_t *task_json, agent_option_f64_t *ret, agent_string_t *err);",
            "agl_agent_llm_chat(",
            "agl_agent_resources_format_prompt(",
            "agl_agent_trace_log(",
            "agl_agent_reward_emit(",
        ] {
            assert!(header.contains(symbol), "agent.h lacks {symbol}");
        }
    }
}
