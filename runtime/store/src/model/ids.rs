//! Identifier generation: `ro-` + 12 hex, `at-` + 8 hex, `rs-` + 12 hex, as Agent-lightning does.
//! Ids can collide; backends check uniqueness and draw again.
//!
//! Rollout ids are ordered by when they were made (the clock's milliseconds, then a per-process
//! offset), not random: the kept stores index attempts and spans by rollout id, and with random
//! ids every new attempt or span landed in a B-tree page of its own, so a commit wrote a whole
//! page per row (`runtime/host/benches/README.md`). Ids made together now share pages. The wire
//! format is the same: 12 lowercase hex digits, opaque to clients.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

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

/// `ro-` and 12 hex digits: the Unix time in milliseconds (9 digits, wrapping every 2.2 years),
/// then 3 digits of this process's own random offset; each id is at least one more than the last
/// this process made, so a process never repeats one (past 4,096 ids in a millisecond they run
/// ahead of the clock), and two processes collide only when a millisecond and their offsets agree.
pub fn new_rollout_id() -> String {
    const BITS: u64 = 0xffff_ffff_ffff;
    static OFFSET: OnceLock<u64> = OnceLock::new();
    static LAST: AtomicU64 = AtomicU64::new(0);
    let offset = *OFFSET.get_or_init(|| fastrand::u64(..0x1000));
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64);
    let from_clock = ((millis << 12) | offset) & BITS;
    let previous = LAST
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |last| {
            Some(from_clock.max(last.wrapping_add(1) & BITS))
        })
        .unwrap_or(0);
    let id = from_clock.max(previous.wrapping_add(1) & BITS);
    format!("ro-{id:012x}")
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
    fn rollout_ids_differ_and_carry_the_millisecond_they_were_made_in() {
        let millis = || SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64 & 0xf_ffff_ffff;
        let before = millis();
        let ids: Vec<String> = (0..5000).map(|_| new_rollout_id()).collect();
        assert!(
            ids.windows(2).all(|pair| pair[0] < pair[1]),
            "made in order, sorted in order"
        );
        let after = millis();
        let distinct: std::collections::HashSet<&String> = ids.iter().collect();
        assert_eq!(distinct.len(), ids.len());
        // The first carries the clock; the rest may run ahead of it by one id each.
        let made = |id: &String| u64::from_str_radix(&id[3..12], 16).unwrap();
        assert!(
            (before..=after).contains(&made(&ids[0])),
            "{}: not in {before}..={after}",
            ids[0]
        );
        assert!(made(&ids[4999]) <= after + 2, "{} ran ahead of {after}", ids[4999]);
    }

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
