//! The sandbox manifest (`agl-policy`): the whole input as a TOML manifest applied over the agent
//! and the algorithm defaults (`SandboxPolicy::apply_manifest`), and the same text through the
//! value parsers a manifest and the command line share (`parse_size`, `parse_duration`,
//! `parse_dir_grant`, `parse_env_grant`).
//!
//! Invariants: no panic; a size or duration that parses is finite and, for a bare number, the
//! number itself; a directory grant has a non-empty guest path; an env grant a non-empty name.

#![no_main]

use agl_policy::{SandboxPolicy, parse_dir_grant, parse_duration, parse_env_grant, parse_size};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);

    let mut agent = SandboxPolicy::default();
    let _ = agent.apply_manifest(&text);
    let mut algorithm = SandboxPolicy::algorithm_defaults();
    let _ = algorithm.apply_manifest(&text);

    // The value parsers see each line on its own too (a manifest value is one line).
    for value in std::iter::once(text.as_ref()).chain(text.lines().take(8)) {
        if let Ok(bytes) = parse_size(value)
            && let Ok(plain) = value.trim().parse::<u64>()
        {
            assert_eq!(bytes, plain, "a bare size is bytes");
        }
        if let Ok(duration) = parse_duration(value)
            && let Ok(seconds) = value.trim().parse::<f64>()
        {
            let diff = (duration.as_secs_f64() - seconds).abs();
            assert!(
                diff <= seconds * 1e-9 + 1e-9,
                "a bare duration is seconds: {value:?} -> {duration:?}"
            );
        }
        if let Ok(grant) = parse_dir_grant(value) {
            assert!(!grant.guest_path.is_empty(), "empty guest path from {value:?}");
        }
        if let Ok(grant) = parse_env_grant(value, |name| (name.len() % 2 == 0).then(|| "x".to_owned())) {
            assert!(!grant.name.is_empty(), "empty env name from {value:?}");
        }
    }
});
