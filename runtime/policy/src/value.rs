//! The value types a manifest and the flags share, each parsed by one function for both: sizes
//! (`256MiB`, `64k`, `1024`) and durations (`300s`, `1500ms`, `5m`, `2h`, bare seconds), spelled
//! as the wasmtime CLI spells them. `FromStr` serves clap's value parser, `Deserialize` the TOML
//! manifest (from a string only: `timeout = 5` is refused, as a unit is expected).

use crate::PolicyError;
use serde::{Deserialize, Deserializer};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A number of bytes, written `268435456`, `256MiB`, `256M`, `1GiB`, `64KiB`, `64k`...
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size(pub u64);

/// A length of time, written `300s`, `5m`, `1500ms`, `2h`, or bare seconds (`300`, `0.5`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HumanDuration(pub Duration);

impl Size {
    /// As a length in memory (saturating on 32-bit hosts).
    pub fn as_usize(self) -> usize {
        usize::try_from(self.0).unwrap_or(usize::MAX)
    }
}

impl FromStr for Size {
    type Err = PolicyError;
    fn from_str(value: &str) -> Result<Self, PolicyError> {
        parse_size(value).map(Size)
    }
}

impl FromStr for HumanDuration {
    type Err = PolicyError;
    fn from_str(value: &str) -> Result<Self, PolicyError> {
        parse_duration(value).map(HumanDuration)
    }
}

/// Deserializes any `FromStr` value from a TOML string (and from nothing else).
pub(crate) fn from_text<'de, D: Deserializer<'de>, T: FromStr<Err = PolicyError>>(
    deserializer: D,
    expected: &'static str,
) -> Result<T, D::Error> {
    struct Text<T>(&'static str, std::marker::PhantomData<T>);
    impl<T: FromStr<Err = PolicyError>> serde::de::Visitor<'_> for Text<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
        fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<T, E> {
            value.parse().map_err(E::custom)
        }
    }
    deserializer.deserialize_str(Text(expected, std::marker::PhantomData))
}

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        from_text(deserializer, "a size such as \"64MiB\"")
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        from_text(deserializer, "a duration such as \"300s\"")
    }
}

/// Sizes: `268435456`, `256MiB`, `256M`, `1GiB`, `64KiB`, `64k`...
pub fn parse_size(value: &str) -> Result<u64, PolicyError> {
    let text = value.trim();
    let digits_end = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(digits_end);
    let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => {
            return Err(PolicyError::InvalidValue {
                what: "size",
                value: value.to_owned(),
                message: "expected a number with an optional unit (KiB, MiB, GiB)".into(),
            });
        }
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(multiplier))
        .ok_or_else(|| PolicyError::InvalidValue {
            what: "size",
            value: value.to_owned(),
            message: "not a number, or too large".into(),
        })
}

/// Durations: `300s`, `5m`, `1500ms`, `2h`, or bare seconds (`300`, `0.5`).
pub fn parse_duration(value: &str) -> Result<Duration, PolicyError> {
    let text = value.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let seconds_per_unit = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 0.001,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => f64::NAN,
    };
    // `try_from_secs_f64`: a number too large for a `Duration` (`99999999999999999999s`, found by
    // fuzzing) is an invalid value, not a panic; a NaN unit fails there too.
    let number = number.parse::<f64>().ok().filter(|n| n.is_finite() && *n >= 0.0);
    match number.and_then(|n| Duration::try_from_secs_f64(n * seconds_per_unit).ok()) {
        Some(duration) => Ok(duration),
        None => Err(PolicyError::InvalidValue {
            what: "duration",
            value: value.to_owned(),
            message: "expected e.g. 300s, 1500ms, 5m or 2h".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations_parse_like_the_wasmtime_cli() {
        assert_eq!(parse_size("256MiB").unwrap(), 256 << 20);
        assert_eq!(parse_size("64k").unwrap(), 64 << 10);
        assert_eq!(parse_size("1024").unwrap(), 1024);
        assert!(parse_size("lots").is_err());
        assert!(parse_size("99999999999999999999GiB").is_err());
        assert_eq!(parse_duration("300s").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("1500ms").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("0.5").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn durations_too_large_for_a_duration_are_refused() {
        // Found by the policy_manifest fuzz target: these panicked in `Duration::from_secs_f64`.
        assert!(parse_duration("99999999999999999999s").is_err());
        assert!(parse_duration("9999999999999999h").is_err());
    }

    #[test]
    fn the_flag_and_the_manifest_parse_a_value_alike() {
        #[derive(Deserialize)]
        struct One {
            size: Size,
            time: HumanDuration,
        }
        let one: One = toml::from_str("size = \"64MiB\"\ntime = \"1500ms\"").unwrap();
        assert_eq!(one.size, "64MiB".parse().unwrap());
        assert_eq!(one.time, "1500ms".parse().unwrap());
        assert!(
            toml::from_str::<One>("size = 64\ntime = \"1s\"").is_err(),
            "a size is text"
        );
        assert!(
            toml::from_str::<One>("size = \"1\"\ntime = 5").is_err(),
            "a duration is text"
        );
    }
}
