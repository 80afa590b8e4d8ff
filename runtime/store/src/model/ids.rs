//! Identifier generation: `ro-` + 12 hex, `at-` + 8 hex, `rs-` + 12 hex, as Agent-lightning does.
//! Random ids can collide; backends check uniqueness and draw again.

fn random_hex(prefix: &str, digits: usize) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut bits = fastrand::u64(..);
    let mut out = String::with_capacity(prefix.len() + digits);
    out.push_str(prefix);
    for _ in 0..digits {
        out.push(HEX[(bits & 0xf) as usize] as char);
        bits >>= 4;
    }
    out
}

pub fn new_rollout_id() -> String {
    random_hex("ro-", 12)
}

pub fn new_attempt_id() -> String {
    random_hex("at-", 8)
}

pub fn new_resources_id() -> String {
    random_hex("rs-", 12)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_the_wire_prefixes_and_lengths() {
        for (id, prefix, len) in [
            (new_rollout_id(), "ro-", 15),
            (new_attempt_id(), "at-", 11),
            (new_resources_id(), "rs-", 15),
        ] {
            assert!(id.starts_with(prefix), "{id}");
            assert_eq!(id.len(), len, "{id}");
            assert!(
                id[3..]
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
            );
        }
    }
}
