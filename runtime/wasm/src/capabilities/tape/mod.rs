//! The tape capability: what enters an agent's guest during an attempt, recorded — and, when
//! an attempt is replayed, answered from a recording instead of from the outside world.
//!
//! Every host call of the agent world goes through the attempt's [`TapeHandle`] before it acts:
//! [`TapeHandle::call`] for a call whose answer comes from outside the instance or is kept (an LLM
//! chat, an HTTP exchange, a resource, a formatted prompt), [`TapeHandle::note`] for one whose
//! effect is the host's alone (a reward, a log line). Recording, the call is done for real and
//! kept, with its answer ([`Ticket::answer`]). Replaying, the next call on the tape must be the same
//! call with the same request: then its recorded answer stands in for the outside world (the
//! host's own checks, spans and accounting run as they did), so the guest cannot tell. The first
//! call that differs is a [`Divergence`]: the attempt stops there, or goes on live
//! ([`OnDivergence`]). A fork ([`ForkPoint`]) leaves the tape on purpose at an LLM call. What a
//! replay does is recorded too: a forked attempt's recording is whole.
//!
//! What else enters the guest is in the tape's [`Header`]: the task and its context, the
//! resources, the seed its random sources and the start its virtual clocks are made from, the
//! environment granted. The algorithm world records nothing (its handle is off).

pub mod bytes;
pub mod codec;
pub mod dirs;
pub mod format;

use super::{Capability, InstanceContext, Link, SandboxError, World};
use crate::policy::SandboxPolicy;
pub use format::{Call, Clock, ClockReadings, Header, RecordedOutcome, TAPE_VERSION, Tape, TapeError};
use parking_lot::Mutex;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::sync::Arc;
use thiserror::Error;

/// The tape's name of an LLM chat (`agl:agent/llm.chat`), the calls a fork counts.
pub const LLM_CHAT: &str = "llm.chat";

/// Most bytes (roughly: the requests' and answers' text) a tape keeps of one attempt. A guest
/// that makes more is recorded up to there and its tape marked `truncated`: the host's memory
/// is not the guest's to fill, and a replay stops where the tape ends.
pub const MAX_TAPE_CONTENT_BYTES: usize = 16 << 20;

/// What an attempt's tape does.
#[derive(Debug, Default)]
pub enum TapeMode {
    /// Nothing is recorded.
    #[default]
    Off,
    /// Every call is recorded.
    Record,
    /// Calls are answered from a tape; what happens is recorded as a new one.
    Replay(Box<ReplayPlan>),
}

/// How to replay a tape.
#[derive(Debug)]
pub struct ReplayPlan {
    pub tape: Tape,
    pub on_divergence: OnDivergence,
    pub fork: Option<ForkPoint>,
}

/// What a call that is not the tape's next one does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnDivergence {
    /// The attempt stops, failed, saying where it diverged.
    Stop,
    /// It goes on live: this call and every later one reach the outside world.
    GoLive,
}

/// Where a replay leaves its tape on purpose.
#[derive(Debug, Clone)]
pub struct ForkPoint {
    /// The LLM call (1 for the first) from which the attempt runs live.
    pub at_llm_call: u32,
    /// The answer that call gets instead of a live one (an LLM answer as the tape keeps it:
    /// `llm::scripted_answer`); the calls after it are live.
    pub answer: Option<Value>,
}

/// Where a replay left the tape without meaning to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Divergence {
    /// The call's index (0 for the first).
    pub index: usize,
    /// The call the tape holds there (`None`: the tape had no more).
    pub recorded: Option<Call>,
    /// The call the guest made (`None`: it ended there).
    pub actual: Option<Call>,
}

/// What a replay did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ReplayReport {
    /// Calls answered from the tape.
    pub replayed: usize,
    /// Where it left the tape without meaning to, if it did.
    pub divergence: Option<Divergence>,
    /// The index of the call where a fork went live.
    pub forked_at: Option<usize>,
}

/// A replay stopped at a call the tape does not hold.
#[derive(Debug, Clone, Error)]
#[error("replay diverged at host call #{number} ({call}): {why}")]
pub struct Diverged {
    /// 1 for the first call.
    pub number: usize,
    pub call: String,
    pub why: String,
}

/// The tape of one attempt, shared by the capabilities that call out (cheap to clone); off for
/// an algorithm or when recording is off.
#[derive(Clone, Default)]
pub struct TapeHandle(Option<Arc<Mutex<Deck>>>);

/// A tape being made, and the one being replayed.
struct Deck {
    header: Header,
    made: Vec<Call>,
    /// Calls seen (the next one's index); `made` stops growing once the tape is full.
    calls: usize,
    /// About how many bytes `made` holds, and whether calls were left off past the cap.
    bytes: usize,
    truncated: bool,
    /// The real clocks' readings taken (recorded), and those of the tape replayed with how many
    /// were handed out.
    clock: ClockReadings,
    replayed_clock: ClockReadings,
    clock_read: [usize; 2],
    source: Option<Source>,
    /// Past a divergence or a fork point: calls go to the outside world.
    live: bool,
    /// The replay stopped: every later call is refused with this.
    stopped: Option<Diverged>,
    llm_calls: u32,
    report: ReplayReport,
}

struct Source {
    calls: Vec<Call>,
    /// The tape was cut: past its end, the calls are unknown.
    truncated: bool,
    next: usize,
    on_divergence: OnDivergence,
    fork: Option<ForkPoint>,
}

/// What a host call is to do once the tape has seen it.
pub enum Cue {
    /// Do it for real, and give the tape its answer through the ticket.
    Live(Ticket),
    /// Answer with what the tape holds (`Value::Null` for a call kept without an answer).
    Recorded(Value),
}

/// Where a live call's answer goes on the tape (nowhere when the tape is off).
pub struct Ticket {
    deck: Option<Arc<Mutex<Deck>>>,
    index: usize,
}

impl Ticket {
    /// A ticket that keeps nothing.
    pub fn none() -> Self {
        Self { deck: None, index: 0 }
    }

    /// Keeps `answer` (made only when the tape is on) as the call's answer.
    pub fn answer(&self, answer: impl FnOnce() -> Value) {
        if let Some(deck) = &self.deck {
            let answer = answer();
            let size = approximate_bytes(&answer);
            let mut deck = deck.lock();
            if deck.bytes.saturating_add(size) > MAX_TAPE_CONTENT_BYTES {
                // Kept without its answer: a replay going past here finds the tape cut.
                deck.truncated = true;
                return;
            }
            deck.bytes += size;
            if let Some(call) = deck.made.get_mut(self.index) {
                call.answer = Some(answer);
            }
        }
    }

    /// Whether an answer given to this ticket is kept.
    pub fn is_kept(&self) -> bool {
        self.deck.is_some()
    }
}

impl TapeHandle {
    /// A tape recording the attempt whose guest is handed `header`.
    pub fn recording(header: Header) -> Self {
        Self::with(header, None, ClockReadings::default())
    }

    /// A tape answering from `plan`'s, recording what happens under `header`.
    pub fn replaying(header: Header, plan: ReplayPlan) -> Self {
        let source = Source {
            truncated: plan.tape.truncated,
            calls: plan.tape.calls,
            next: 0,
            on_divergence: plan.on_divergence,
            fork: plan.fork,
        };
        Self::with(header, Some(source), plan.tape.clock)
    }

    fn with(header: Header, source: Option<Source>, replayed_clock: ClockReadings) -> Self {
        Self(Some(Arc::new(Mutex::new(Deck {
            header,
            made: Vec::new(),
            calls: 0,
            bytes: 0,
            truncated: false,
            clock: ClockReadings::default(),
            replayed_clock,
            clock_read: [0, 0],
            source,
            live: false,
            stopped: None,
            llm_calls: 0,
            report: ReplayReport::default(),
        }))))
    }

    pub fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// Whether this tape replays one (answering from it, or live past where it left it).
    pub fn is_replaying(&self) -> bool {
        self.0.as_ref().is_some_and(|shared| shared.lock().source.is_some())
    }

    /// While a replay answers from its tape: the LLM backend's default model when the attempt
    /// was recorded (`None` when it goes live, or the tape does not say).
    pub fn recorded_default_model(&self) -> Option<String> {
        let shared = self.0.as_ref()?;
        let deck = shared.lock();
        if deck.source.is_none() || deck.live {
            return None;
        }
        deck.header.default_model.clone()
    }

    /// A call that may be answered from outside the instance, or whose answer is kept: what
    /// to do with it. `request` is made only when the tape is on.
    pub fn call(&self, call: &str, request: impl FnOnce() -> Value) -> Result<Cue, Diverged> {
        let Some(shared) = &self.0 else {
            return Ok(Cue::Live(Ticket::none()));
        };
        let made = Call {
            call: call.to_owned(),
            request: request(),
            answer: None,
        };
        let mut deck = shared.lock();
        if let Some(stopped) = &deck.stopped {
            return Err(stopped.clone());
        }
        let index = deck.calls;
        deck.calls += 1;
        if call == LLM_CHAT {
            deck.llm_calls += 1;
        }
        let cue = deck.cue(index, &made);
        let answer = match &cue {
            Ok(Some(recorded)) if !recorded.is_null() => Some(recorded.clone()),
            _ => None,
        };
        let size = approximate_bytes(&made.request) + answer.as_ref().map_or(0, approximate_bytes);
        let kept = !deck.truncated && deck.bytes.saturating_add(size) <= MAX_TAPE_CONTENT_BYTES;
        if kept {
            deck.bytes += size;
            deck.made.push(Call { answer, ..made });
        } else {
            deck.truncated = true;
        }
        match cue {
            Ok(Some(recorded)) => Ok(Cue::Recorded(recorded)),
            Ok(None) => Ok(Cue::Live(Ticket {
                deck: kept.then(|| Arc::clone(shared)),
                index,
            })),
            Err(diverged) => Err(diverged),
        }
    }

    /// A call whose effect is the host's alone: kept, and compared when replaying.
    pub fn note(&self, call: &str, request: impl FnOnce() -> Value) -> Result<(), Diverged> {
        self.call(call, request).map(drop)
    }

    /// A reading of a real clock: the recorded one, in turn, while a replay has some left (else
    /// `live`'s); kept as the guest's reading either way, within the tape's cap.
    pub fn clock_reading(&self, clock: Clock, live: impl FnOnce() -> u64) -> u64 {
        let Some(shared) = &self.0 else {
            return live();
        };
        let mut deck = shared.lock();
        let turn = match clock {
            Clock::Wall => 0,
            Clock::Monotonic => 1,
        };
        let taken = deck.clock_read[turn];
        let reading = match deck.replayed_clock.of(clock).get(taken).copied() {
            Some(recorded) => recorded,
            None => live(),
        };
        deck.clock_read[turn] += 1;
        if deck.bytes.saturating_add(8) <= MAX_TAPE_CONTENT_BYTES {
            deck.bytes += 8;
            deck.clock.of(clock).push(reading);
        } else {
            deck.truncated = true;
        }
        reading
    }

    /// The index of the last call put on the tape.
    pub fn last_index(&self) -> usize {
        self.0
            .as_ref()
            .map_or(0, |shared| shared.lock().calls.saturating_sub(1))
    }

    /// The call at `index`, answered from the tape, turns out to differ from the recorded one
    /// after all (`actual` adds what was learnt since: an HTTP request's body). Going live, the
    /// ticket its live answer goes to; stopping, `None`, and the guest's next call stops it.
    pub fn diverged_late(&self, index: usize, actual: Value) -> Option<Ticket> {
        let shared = self.0.as_ref()?;
        let mut deck = shared.lock();
        let recorded = deck.source.as_ref().and_then(|source| source.calls.get(index)).cloned();
        let actual = match deck.made.get_mut(index) {
            Some(made) => {
                merge(&mut made.request, actual);
                made.answer = None;
                made.clone()
            }
            None => Call {
                call: recorded.as_ref().map_or_else(String::new, |r| r.call.clone()),
                request: actual,
                answer: None,
            },
        };
        let kept = index < deck.made.len();
        let on_divergence = deck.source.as_ref().map_or(OnDivergence::Stop, |s| s.on_divergence);
        deck.report.replayed = deck.report.replayed.saturating_sub(1);
        deck.report.divergence.get_or_insert(Divergence {
            index,
            recorded,
            actual: Some(actual.clone()),
        });
        match on_divergence {
            OnDivergence::GoLive => {
                deck.live = true;
                Some(Ticket {
                    deck: kept.then(|| Arc::clone(shared)),
                    index,
                })
            }
            OnDivergence::Stop => {
                deck.stopped = Some(Diverged {
                    number: index + 1,
                    call: actual.call,
                    why: "its request differs from the recorded one".to_owned(),
                });
                None
            }
        }
    }

    /// The tape made (with `outcome`) and, when replaying, what the replay did; `None` when off.
    pub fn finish(&self, outcome: RecordedOutcome) -> Option<(Tape, Option<ReplayReport>)> {
        let shared = self.0.as_ref()?;
        let mut deck = shared.lock();
        let index = deck.calls;
        let ended_early = match &deck.source {
            Some(source) if !deck.live && deck.report.divergence.is_none() => source.calls.get(source.next).cloned(),
            _ => None,
        };
        if let Some(recorded) = ended_early {
            deck.report.divergence = Some(Divergence {
                index,
                recorded: Some(recorded),
                actual: None,
            });
        }
        let report = deck.source.is_some().then(|| deck.report.clone());
        // Taken, not copied: a tape is finished once.
        let header = std::mem::take(&mut deck.header);
        let tape = Tape {
            version: TAPE_VERSION,
            header,
            calls: std::mem::take(&mut deck.made),
            truncated: deck.truncated,
            clock: std::mem::take(&mut deck.clock),
            outcome: Some(outcome),
        };
        Some((tape, report))
    }
}

impl Deck {
    /// `Some(answer)`: the call is answered from the tape; `None`: it is live.
    fn cue(&mut self, index: usize, made: &Call) -> Result<Option<Value>, Diverged> {
        let llm_calls = self.llm_calls;
        let Some(source) = self.source.as_mut().filter(|_| !self.live) else {
            return Ok(None);
        };
        let recorded = source.calls.get(source.next);
        if let Some(recorded) = recorded.filter(|recorded| recorded.same_request(made)) {
            let answer = recorded.answer.clone().unwrap_or(Value::Null);
            source.next += 1;
            let fork = source
                .fork
                .as_ref()
                .filter(|fork| made.call == LLM_CHAT && fork.at_llm_call == llm_calls);
            if let Some(fork) = fork {
                let answer = fork.answer.clone();
                self.live = true;
                self.report.forked_at = Some(index);
                return Ok(answer);
            }
            self.report.replayed += 1;
            return Ok(Some(answer));
        }
        let why = match recorded {
            None if source.truncated => "the recording was cut here (past its size cap)".to_owned(),
            None => "the recording has no more calls".to_owned(),
            Some(recorded) if recorded.call != made.call => format!("the recording has {} here", recorded.call),
            Some(_) => "its request differs from the recorded one".to_owned(),
        };
        let on_divergence = source.on_divergence;
        self.report.divergence = Some(Divergence {
            index,
            recorded: recorded.cloned(),
            actual: Some(made.clone()),
        });
        match on_divergence {
            OnDivergence::GoLive => {
                self.live = true;
                Ok(None)
            }
            OnDivergence::Stop => {
                let diverged = Diverged {
                    number: index + 1,
                    call: made.call.clone(),
                    why,
                };
                self.stopped = Some(diverged.clone());
                Err(diverged)
            }
        }
    }
}

/// About how many bytes `value` takes as JSON (its strings' lengths, a few for everything else).
fn approximate_bytes(value: &Value) -> usize {
    match value {
        Value::String(text) => text.len() + 2,
        Value::Array(items) => items.iter().map(approximate_bytes).sum::<usize>() + 2,
        Value::Object(fields) => {
            fields
                .iter()
                .map(|(k, v)| k.len() + 3 + approximate_bytes(v))
                .sum::<usize>()
                + 2
        }
        _ => 8,
    }
}

/// `into` with the fields of `from` added (both objects; otherwise `from` replaces it).
fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(into), Value::Object(from)) => into.extend(from),
        (into, from) => *into = from,
    }
}

/// The tape capability's per-instance state: the attempt's handle.
pub struct TapeState {
    pub(crate) handle: TapeHandle,
}

impl Capability for TapeState {
    fn prepare(_policy: &SandboxPolicy, instance: &InstanceContext) -> Result<Self, SandboxError> {
        Ok(Self {
            handle: instance.tape.clone(),
        })
    }
}

/// No imports of its own: the other capabilities call through it.
impl<W: World> Link<W> for TapeState {}

/// The answer of a call the host computes itself (a resource, a formatted prompt): `live`'s,
/// kept on the tape, or, replaying, the tape's (`live`'s when the tape's cannot be read as one).
pub fn answered<T: Serialize + DeserializeOwned>(cue: Cue, live: impl FnOnce() -> T) -> T {
    match cue {
        Cue::Recorded(answer) => serde_json::from_value(answer).unwrap_or_else(|_| live()),
        Cue::Live(ticket) => {
            let answer = live();
            ticket.answer(|| serde_json::to_value(&answer).unwrap_or(Value::Null));
            answer
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn header() -> Header {
        Header {
            agent: "probe".into(),
            component: String::new(),
            rollout_id: "ro".into(),
            attempt_id: "at".into(),
            attempt_number: 1,
            mode: None,
            resources_id: None,
            task: "{}".into(),
            resources: None,
            seed: 1,
            clock_start: 0.0,
            clock: "virtual".into(),
            default_model: None,
            env: Vec::new(),
            dirs: Vec::new(),
        }
    }

    fn live(cue: Cue) -> Ticket {
        match cue {
            Cue::Live(ticket) => ticket,
            Cue::Recorded(answer) => panic!("answered from the tape: {answer}"),
        }
    }

    fn recorded(cue: Cue) -> Value {
        match cue {
            Cue::Recorded(answer) => answer,
            Cue::Live(_) => panic!("live"),
        }
    }

    fn outcome() -> RecordedOutcome {
        RecordedOutcome {
            status: "succeeded".into(),
            reward: Some(1.0),
            failure: None,
        }
    }

    /// A tape of: chat "a" → "A", reward 1, chat "b" → "B".
    fn made() -> Tape {
        let tape = TapeHandle::recording(header());
        live(tape.call(LLM_CHAT, || json!("a")).unwrap()).answer(|| json!("A"));
        tape.note("reward.emit", || json!(1.0)).unwrap();
        live(tape.call(LLM_CHAT, || json!("b")).unwrap()).answer(|| json!("B"));
        tape.finish(outcome()).unwrap().0
    }

    fn plan(on_divergence: OnDivergence, fork: Option<ForkPoint>) -> ReplayPlan {
        ReplayPlan {
            tape: made(),
            on_divergence,
            fork,
        }
    }

    #[test]
    fn recording_keeps_every_call_and_its_answer() {
        let tape = made();
        let calls: Vec<_> = tape.calls.iter().map(|c| (c.call.as_str(), c.answer.clone())).collect();
        assert_eq!(
            calls,
            [
                (LLM_CHAT, Some(json!("A"))),
                ("reward.emit", None),
                (LLM_CHAT, Some(json!("B")))
            ]
        );
        assert!(TapeHandle::default().finish(outcome()).is_none(), "off keeps nothing");
    }

    #[test]
    fn the_same_calls_are_answered_from_the_tape() {
        let tape = TapeHandle::replaying(header(), plan(OnDivergence::Stop, None));
        assert_eq!(recorded(tape.call(LLM_CHAT, || json!("a")).unwrap()), json!("A"));
        tape.note("reward.emit", || json!(1.0)).unwrap();
        assert_eq!(recorded(tape.call(LLM_CHAT, || json!("b")).unwrap()), json!("B"));
        let (again, report) = tape.finish(outcome()).unwrap();
        assert_eq!(again.calls, made().calls, "a replay records what it was answered");
        let report = report.unwrap();
        assert_eq!((report.replayed, report.divergence), (3, None));
    }

    #[test]
    fn a_different_request_stops_the_replay_where_it_differs() {
        let tape = TapeHandle::replaying(header(), plan(OnDivergence::Stop, None));
        recorded(tape.call(LLM_CHAT, || json!("a")).unwrap());
        let Err(diverged) = tape.note("reward.emit", || json!(0.5)) else {
            panic!("a different reward was replayed")
        };
        assert_eq!((diverged.number, diverged.call.as_str()), (2, "reward.emit"));
        let report = tape.finish(outcome()).unwrap().1.unwrap();
        let divergence = report.divergence.unwrap();
        assert_eq!(divergence.index, 1);
        assert_eq!(divergence.recorded.unwrap().request, json!(1.0));
        assert_eq!(divergence.actual.unwrap().request, json!(0.5));
    }

    #[test]
    fn going_live_at_a_divergence_answers_nothing_more_from_the_tape() {
        let tape = TapeHandle::replaying(header(), plan(OnDivergence::GoLive, None));
        live(tape.call(LLM_CHAT, || json!("changed")).unwrap()).answer(|| json!("live"));
        // The tape's next call would have matched; it is live all the same.
        live(tape.call(LLM_CHAT, || json!("b")).unwrap());
        let (made, report) = tape.finish(outcome()).unwrap();
        assert_eq!(made.calls[0].answer, Some(json!("live")));
        assert_eq!(report.unwrap().divergence.unwrap().index, 0);
    }

    #[test]
    fn ending_before_the_tape_does_is_a_divergence() {
        let tape = TapeHandle::replaying(header(), plan(OnDivergence::Stop, None));
        recorded(tape.call(LLM_CHAT, || json!("a")).unwrap());
        let divergence = tape.finish(outcome()).unwrap().1.unwrap().divergence.unwrap();
        assert_eq!((divergence.index, divergence.actual), (1, None));
        assert_eq!(divergence.recorded.unwrap().call, "reward.emit");
    }

    #[test]
    fn a_fork_replays_up_to_its_llm_call_then_runs_live_or_with_the_given_answer() {
        let fork = |answer| ForkPoint { at_llm_call: 2, answer };
        let tape = TapeHandle::replaying(header(), plan(OnDivergence::Stop, Some(fork(None))));
        recorded(tape.call(LLM_CHAT, || json!("a")).unwrap());
        tape.note("reward.emit", || json!(1.0)).unwrap();
        live(tape.call(LLM_CHAT, || json!("b")).unwrap()).answer(|| json!("other"));
        live(tape.call("reward.emit", || json!(0.0)).unwrap());
        let (made, report) = tape.finish(outcome()).unwrap();
        let report = report.unwrap();
        assert_eq!(
            (report.forked_at, report.replayed, report.divergence),
            (Some(2), 2, None)
        );
        assert_eq!(made.calls[2].answer, Some(json!("other")));

        let tape = TapeHandle::replaying(header(), plan(OnDivergence::Stop, Some(fork(Some(json!("X"))))));
        recorded(tape.call(LLM_CHAT, || json!("a")).unwrap());
        tape.note("reward.emit", || json!(1.0)).unwrap();
        assert_eq!(recorded(tape.call(LLM_CHAT, || json!("b")).unwrap()), json!("X"));
        assert_eq!(tape.finish(outcome()).unwrap().0.calls[2].answer, Some(json!("X")));
    }

    #[test]
    fn a_tape_past_its_cap_is_cut_and_says_so() {
        let tape = TapeHandle::recording(header());
        let big = "x".repeat(MAX_TAPE_CONTENT_BYTES / 4);
        for _ in 0..6 {
            tape.note("trace.log", || json!(big)).unwrap();
        }
        let made = tape.finish(outcome()).unwrap().0;
        assert!(made.truncated);
        assert_eq!(made.calls.len(), 3, "kept up to the cap");
        let replay = TapeHandle::replaying(
            header(),
            ReplayPlan {
                tape: made,
                on_divergence: OnDivergence::Stop,
                fork: None,
            },
        );
        for _ in 0..3 {
            replay.note("trace.log", || json!(big)).unwrap();
        }
        let Err(diverged) = replay.note("trace.log", || json!(big)) else {
            panic!("replayed past the end of a cut tape")
        };
        assert!(diverged.why.contains("cut"), "{}", diverged.why);
    }

    #[test]
    fn real_clock_readings_are_kept_and_replayed_in_turn() {
        let tape = TapeHandle::recording(header());
        assert_eq!(tape.clock_reading(Clock::Wall, || 10), 10);
        assert_eq!(tape.clock_reading(Clock::Monotonic, || 1), 1);
        assert_eq!(tape.clock_reading(Clock::Wall, || 20), 20);
        let made = tape.finish(outcome()).unwrap().0;
        assert_eq!(
            (made.clock.wall.clone(), made.clock.monotonic.clone()),
            (vec![10, 20], vec![1])
        );
        let plan = ReplayPlan {
            tape: made,
            on_divergence: OnDivergence::Stop,
            fork: None,
        };
        let replay = TapeHandle::replaying(header(), plan);
        assert_eq!(replay.clock_reading(Clock::Monotonic, || 99), 1);
        assert_eq!(replay.clock_reading(Clock::Wall, || 99), 10);
        assert_eq!(replay.clock_reading(Clock::Wall, || 99), 20);
        assert_eq!(replay.clock_reading(Clock::Wall, || 30), 30, "past the record: live");
        assert!(TapeHandle::default().clock_reading(Clock::Wall, || 5) == 5);
    }

    #[test]
    fn computed_answers_are_kept_and_read_back() {
        let tape = TapeHandle::recording(header());
        let cue = tape.call("resources.format-prompt", || json!("p")).unwrap();
        let made: Result<String, String> = answered(cue, || Ok("filled".into()));
        let plan = ReplayPlan {
            tape: tape.finish(outcome()).unwrap().0,
            on_divergence: OnDivergence::Stop,
            fork: None,
        };
        let replay = TapeHandle::replaying(header(), plan);
        let cue = replay.call("resources.format-prompt", || json!("p")).unwrap();
        let again: Result<String, String> = answered(cue, || Err("computed, not read".into()));
        assert_eq!(again, made);
    }
}
