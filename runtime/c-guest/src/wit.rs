//! The WIT world C agents are built against: `agl:agent`'s `agent` world, embedded from the
//! repository's `wit/agent.wit` (so an installed binary needs no checkout), or read from a folder.

use crate::error::CGuestError;
use std::path::Path;
use wit_bindgen_core::wit_parser::{Resolve, WorldId};

/// `wit/agent.wit` as this binary was built with.
pub const AGENT_WIT: &str = include_str!("../../../wit/agent.wit");

/// The world agents implement.
pub const AGENT_WORLD: &str = "agent";

/// The parsed WIT and the `world` in it: from the folder `wit_dir` (a WIT package with an
/// optional `deps/`), or the embedded `agent.wit` when `None`.
pub fn load(wit_dir: Option<&Path>, world: &str) -> Result<(Resolve, WorldId), CGuestError> {
    let mut resolve = Resolve::default();
    let package = match wit_dir {
        Some(dir) => resolve.push_dir(dir).map(|(package, _)| package),
        None => resolve.push_str("agent.wit", AGENT_WIT),
    }
    .map_err(CGuestError::Wit)?;
    let world = resolve
        .select_world(&[package], Some(world))
        .map_err(CGuestError::Wit)?;
    Ok((resolve, world))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_wit_has_the_agent_world_with_rollout() {
        let (resolve, world) = load(None, AGENT_WORLD).expect("embedded WIT parses");
        let world = &resolve.worlds[world];
        assert_eq!(world.name, "agent");
        assert!(world.exports.keys().any(|key| resolve.name_world_key(key) == "rollout"));
    }

    #[test]
    fn an_unknown_world_is_an_error_naming_it() {
        let err = load(None, "no-such-world").expect_err("no such world");
        assert!(err.to_string().contains("no-such-world"), "{err}");
    }

    #[test]
    fn the_embedded_wit_is_the_repository_one() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../wit/agent.wit");
        let on_disk = std::fs::read_to_string(&dir).expect("wit/agent.wit");
        assert_eq!(on_disk, AGENT_WIT);
    }
}
