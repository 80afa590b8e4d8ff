//! What a tape holds, as it is stored: the header (every value handed to the guest before its
//! first call — the task, its context, the resources, the seed and clock start its clocks and
//! random sources are made from — and which component ran), the host calls in the order the
//! guest made them (the request, and the answer where one came from outside or is kept), and
//! how the attempt ended. Kept in a [`Recording`], packed by `codec.rs`.

use super::codec::{self, MissingBlob};
use super::dirs::DirSnapshot;
use agl_store::{Mode, Recording};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use thiserror::Error;

/// The tape format's version; a tape of another version is refused, not misread.
pub const TAPE_VERSION: u32 = 1;

/// One attempt's tape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tape {
    pub version: u32,
    pub header: Header,
    pub calls: Vec<Call>,
    /// The calls stop early: the guest made more than a tape keeps (`MAX_TAPE_CONTENT_BYTES`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// The readings of real clocks, in the order the guest took them (an agent granted
    /// `clock = "real"`; virtual clocks are made again from the header).
    #[serde(default, skip_serializing_if = "ClockReadings::is_empty")]
    pub clock: ClockReadings,
    /// How the attempt ended (absent while it runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<RecordedOutcome>,
}

/// Readings of the real clocks: the wall clock's (nanoseconds since the Unix epoch) and the
/// monotonic clock's (nanoseconds), each in the order taken.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClockReadings {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wall: Vec<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub monotonic: Vec<u64>,
}

impl ClockReadings {
    pub fn is_empty(&self) -> bool {
        self.wall.is_empty() && self.monotonic.is_empty()
    }

    pub(crate) fn of(&mut self, clock: Clock) -> &mut Vec<u64> {
        match clock {
            Clock::Wall => &mut self.wall,
            Clock::Monotonic => &mut self.monotonic,
        }
    }
}

/// Which real clock a reading is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    Wall,
    Monotonic,
}

/// What the guest was given before it made a call, and what ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// The agent's name and the SHA-256 of its component's bytes.
    pub agent: String,
    pub component: String,
    /// The rollout context the guest was handed.
    pub rollout_id: String,
    pub attempt_id: String,
    pub attempt_number: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_id: Option<String>,
    /// The task, as the JSON text the guest was handed.
    pub task: String,
    /// The resources version the guest could read (JSON of the store's bundle), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Value>,
    /// What its random sources were seeded with.
    pub seed: u64,
    /// Where its virtual wall clock started (seconds since the Unix epoch).
    pub clock_start: f64,
    /// `virtual` or `real` (then each reading is on the tape: [`Tape::clock`]).
    pub clock: String,
    /// The LLM backend's default model (what a request naming none was sent with).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// The environment variables the guest was granted, in order: each name with the SHA-256 of
    /// its value (values may be secrets; a replay checks it is granted the same ones).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<(String, String)>,
    /// The directories the guest was granted, their files as the attempt began (`dirs.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dirs: Vec<DirSnapshot>,
}

/// One host call: which (`llm.chat`, `http.send`, `resources.get`...), what the guest asked (in
/// the host's terms), and the answer where it came from outside the instance or is kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Call {
    #[serde(rename = "c")]
    pub call: String,
    #[serde(rename = "q")]
    pub request: Value,
    #[serde(rename = "a", default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<Value>,
}

impl Call {
    /// Whether `other` is the same call with the same request (answers are not compared).
    pub fn same_request(&self, other: &Call) -> bool {
        self.call == other.call && self.request == other.request
    }
}

/// How the attempt ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedOutcome {
    /// `succeeded` or `failed`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

/// A recording that cannot be read as a tape.
#[derive(Debug, Error)]
pub enum TapeError {
    #[error("the recording's tape is not JSON: {0}")]
    NotJson(serde_json::Error),
    #[error(transparent)]
    MissingBlob(#[from] MissingBlob),
    #[error("the recording's tape is not a tape: {0}")]
    NotATape(serde_json::Error),
    #[error("the tape is of version {found}; this agl-host reads version {TAPE_VERSION}")]
    Version { found: u32 },
}

impl Tape {
    /// The tape kept in `recording`, its blobs read from the recording alone.
    pub fn from_recording(recording: &Recording) -> Result<Self, TapeError> {
        let packed: Value = serde_json::from_str(&recording.tape).map_err(TapeError::NotJson)?;
        let value = codec::unpack(packed, &recording.blobs)?;
        if let Some(found) = value.get("version").and_then(Value::as_u64)
            && found != u64::from(TAPE_VERSION)
        {
            return Err(TapeError::Version {
                found: u32::try_from(found).unwrap_or(u32::MAX),
            });
        }
        serde_json::from_value(value).map_err(TapeError::NotATape)
    }

    /// The recording of this tape for the attempt `attempt_id` of `rollout_id` (which may not
    /// be the header's: a replayed or forked attempt keeps the context it was handed).
    pub fn to_recording(&self, rollout_id: &str, attempt_id: &str) -> Recording {
        let mut blobs = BTreeMap::new();
        // Most tapes of small attempts have no string to pack: written out in one pass.
        let tape = if self.has_packable() {
            let value = serde_json::to_value(self).unwrap_or(Value::Null);
            codec::pack(value, &mut blobs).to_string()
        } else {
            serde_json::to_string(self).unwrap_or_default()
        };
        Recording {
            rollout_id: rollout_id.to_owned(),
            attempt_id: attempt_id.to_owned(),
            tape,
            blobs,
        }
    }

    /// Whether some string of the tape is one `codec::pack` changes.
    fn has_packable(&self) -> bool {
        let h = &self.header;
        let texts = [&h.agent, &h.component, &h.rollout_id, &h.attempt_id, &h.task, &h.clock];
        let optional = [&h.resources_id, &h.default_model];
        texts.into_iter().any(|t| codec::is_packable(t))
            || optional.into_iter().flatten().any(|t| codec::is_packable(t))
            || h.env
                .iter()
                .any(|(name, value)| codec::is_packable(name) || codec::is_packable(value))
            || !h.dirs.is_empty()
            || h.resources.as_ref().is_some_and(codec::any_packable)
            || self.calls.iter().any(|c| {
                codec::is_packable(&c.call)
                    || codec::any_packable(&c.request)
                    || c.answer.as_ref().is_some_and(codec::any_packable)
            })
            || self
                .outcome
                .as_ref()
                .is_some_and(|o| codec::is_packable(&o.status) || o.failure.as_deref().is_some_and(codec::is_packable))
    }

    /// How many `llm.chat` calls the tape holds.
    pub fn llm_calls(&self) -> usize {
        self.calls.iter().filter(|c| c.call == super::LLM_CHAT).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn header() -> Header {
        Header {
            agent: "probe".into(),
            component: "ab".repeat(32),
            rollout_id: "ro-1".into(),
            attempt_id: "at-1".into(),
            attempt_number: 1,
            mode: Some(Mode::Train),
            resources_id: None,
            task: r#"{"question":"1+1"}"#.into(),
            resources: None,
            seed: 7,
            clock_start: 1_800_000_000.5,
            clock: "virtual".into(),
            default_model: Some("scripted".into()),
            env: vec![("KEY".into(), "value".into())],
            dirs: Vec::new(),
        }
    }

    #[test]
    fn a_tape_survives_its_recording() {
        let long = &"a prompt long enough to be kept as a blob, shared by every attempt that saw it. ".repeat(3);
        let tape = Tape {
            version: TAPE_VERSION,
            header: header(),
            calls: vec![
                Call {
                    call: "llm.chat".into(),
                    request: serde_json::json!({"messages": [{"content": long}]}),
                    answer: Some(serde_json::json!({"ok": {"content": long}})),
                },
                Call {
                    call: "reward.emit".into(),
                    request: serde_json::json!({"value": 1.0}),
                    answer: None,
                },
            ],
            truncated: false,
            clock: ClockReadings::default(),
            outcome: Some(RecordedOutcome {
                status: "succeeded".into(),
                reward: Some(1.0),
                failure: None,
            }),
        };
        let recording = tape.to_recording("ro-2", "at-9");
        assert_eq!(
            (recording.rollout_id.as_str(), recording.attempt_id.as_str()),
            ("ro-2", "at-9")
        );
        let kept = recording.blobs.values().filter(|text| *text == long).count();
        assert_eq!(kept, 1, "the same text is one blob");
        assert!(!recording.tape.contains(long.as_str()));
        assert_eq!(Tape::from_recording(&recording).ok(), Some(tape));
        let mut other = recording.clone();
        other.tape = other.tape.replace("\"version\":1", "\"version\":99");
        assert!(matches!(
            Tape::from_recording(&other),
            Err(TapeError::Version { found: 99 })
        ));
        assert!(Tape::from_recording(&recording_without_blobs(&recording)).is_err());
    }

    #[test]
    fn a_tape_with_nothing_to_pack_is_written_in_one_pass_and_reads_back() {
        let tape = Tape {
            version: TAPE_VERSION,
            header: header(),
            calls: vec![Call {
                call: "reward.emit".into(),
                request: serde_json::json!({"name": "primary", "value": "1"}),
                answer: None,
            }],
            truncated: false,
            clock: ClockReadings::default(),
            outcome: None,
        };
        assert!(!tape.has_packable());
        let recording = tape.to_recording("ro", "at");
        assert!(recording.blobs.is_empty());
        assert_eq!(Tape::from_recording(&recording).ok(), Some(tape.clone()));
        let mut escaped = tape;
        escaped.header.task = "\u{1}starts with the escape".into();
        assert!(escaped.has_packable(), "an escape goes the packing way");
        assert_eq!(
            Tape::from_recording(&escaped.to_recording("ro", "at")).ok(),
            Some(escaped)
        );
    }

    fn recording_without_blobs(recording: &Recording) -> Recording {
        Recording {
            blobs: BTreeMap::new(),
            ..recording.clone()
        }
    }
}
