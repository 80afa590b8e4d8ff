//! The sandbox probe: an agent that does what its task says, so that the host's tests and benchmarks
//! can check limits (CPU, memory, stack, output, LLM budget), grants (files, environment, network)
//! and how odd results are reported. The task is `{"do": "<action>", ...}`; see tests/guests/README.md.

mod capabilities;
mod host_calls;
mod hostile;

use agl_sdk::prelude::*;
use serde::Deserialize;

/// One probe action with its arguments.
#[derive(Deserialize)]
#[serde(tag = "do", rename_all = "snake_case")]
enum Task {
    /// Returns `Some(1.0)` at once.
    Noop,
    /// Loops forever (the host's CPU limit must stop it).
    Spin,
    /// Sleeps `secs` seconds (`std::thread::sleep`: the guest waits in a host call, which the
    /// deadline must cut short).
    Sleep { secs: u64 },
    /// Allocates and touches 16 MiB chunks forever (the memory limit must stop it).
    MemoryBomb,
    /// Recurses without end (wasm's call stack must overflow into a trap).
    DeepRecursion,
    /// May it read a file?
    ReadFile { path: String },
    /// May it list a directory?
    ListDir { path: String },
    /// May it see the environment (all of it, or one variable)?
    ReadEnv {
        #[serde(default)]
        name: Option<String>,
    },
    /// May it open a TCP connection to `addr` (and bind a UDP socket)?
    OpenSocket { addr: String },
    /// Writes `bytes` to stdout (and a sixteenth of that to stderr).
    StdoutFlood {
        #[serde(default = "ten_mib")]
        bytes: usize,
    },
    /// Calls the LLM `calls` times, stopping at the first error; the reward is the number that worked.
    LlmFlood {
        #[serde(default = "thousand")]
        calls: u32,
    },
    /// One oversized LLM call: `message_bytes` of user text in one message (else a short one),
    /// `max_tokens` if given, `tools` tools; logs the host's verdict. `Some(1.0)` if it was sent.
    LlmOversized {
        #[serde(default)]
        message_bytes: usize,
        #[serde(default)]
        max_tokens: Option<u32>,
        #[serde(default)]
        tools: usize,
    },
    /// One LLM call with a conversation of `messages` messages (a system prompt, then users and
    /// assistants taking turns, ending with a user); logs the answer.
    LlmConversation { messages: usize },
    /// One LLM call holding a whole tool-calling turn: the user's question, the assistant's call of
    /// the tool `add` (`{"a": 2, "b": 3}`, id `call-1`), the tool's answer `5`; the tool offered.
    LlmToolConversation,
    /// One LLM call, with the host's model or `model`.
    LlmOnce {
        #[serde(default)]
        prompt: Option<String>,
        #[serde(default)]
        model: Option<String>,
    },
    /// `n` debug logs: the cheapest host call, for the per-call overhead.
    HostCalls { n: u32 },
    /// Returns NaN as the final reward.
    GarbageReward,
    /// Fails with an error message of `bytes` bytes.
    HugeError { bytes: usize },
    /// Fails with exactly `text` as the error message (control characters and all), after
    /// emitting `reward` if given (a reward the failed attempt must not be credited with).
    ErrorText {
        text: String,
        #[serde(default)]
        reward: Option<f64>,
    },
    /// Panics (a trap: the attempt fails).
    Panic,
    /// Logs the wall clock, a monotonic clock difference and four random numbers as one object.
    ClockAndRandom,
    /// Emits a named and a primary reward and returns no final reward.
    EmitRewards,
    /// An operation span around an LLM call and a log, ending with an error.
    Operation,
    /// Panics (a trap) on the first attempt and returns `Some(1.0)` on later ones: a retry works.
    Flaky,
    /// Returns `value` as the final reward.
    Reward { value: f64 },
    /// `count` trace calls of `kind` (`log`, `message`, `object` or `operation`), each carrying
    /// `bytes` bytes, then returns `then` as the final reward.
    TraceFlood {
        kind: String,
        count: u32,
        bytes: usize,
        #[serde(default)]
        then: Option<f64>,
    },
    /// Emits `value` (`"nan"`, `"inf"`, `"-inf"` or a number) with `reward.emit`, then returns
    /// `Some(1.0)` if the host let it.
    EmitReward { value: String },
    /// Asks the LLM `ask` (when given), gives each of `texts` (and `repeat` more copies of the
    /// last) as feedback, then returns `reward`, or fails with "failed on purpose" when `fail`.
    Feedback {
        #[serde(default)]
        ask: Option<String>,
        texts: Vec<String>,
        #[serde(default)]
        repeat: usize,
        reward: Option<f64>,
        #[serde(default)]
        fail: bool,
    },
}

fn ten_mib() -> usize {
    10 * 1024 * 1024
}

fn thousand() -> u32 {
    1000
}

fn rollout(task: Task, ctx: &Ctx) -> Result<Option<f64>> {
    match task {
        Task::Noop => Ok(Some(1.0)),
        Task::Spin => hostile::spin(),
        Task::Sleep { secs } => {
            std::thread::sleep(std::time::Duration::from_secs(secs));
            Ok(Some(1.0))
        }
        Task::MemoryBomb => hostile::memory_bomb(),
        Task::DeepRecursion => Ok(Some(hostile::deep_recursion() as f64)),
        Task::ReadFile { path } => Ok(Some(capabilities::read_file(ctx, &path))),
        Task::ListDir { path } => Ok(Some(capabilities::list_dir(ctx, &path))),
        Task::ReadEnv { name } => Ok(Some(capabilities::read_env(ctx, name.as_deref()))),
        Task::OpenSocket { addr } => Ok(Some(capabilities::open_socket(ctx, &addr))),
        Task::StdoutFlood { bytes } => Ok(Some(hostile::stdout_flood(ctx, bytes))),
        Task::LlmFlood { calls } => Ok(Some(host_calls::llm_flood(ctx, calls))),
        Task::LlmOversized {
            message_bytes,
            max_tokens,
            tools,
        } => Ok(Some(host_calls::llm_oversized(ctx, message_bytes, max_tokens, tools))),
        Task::LlmConversation { messages } => host_calls::llm_conversation(ctx, messages),
        Task::LlmToolConversation => host_calls::llm_tool_conversation(ctx),
        Task::LlmOnce { prompt, model } => host_calls::llm_once(ctx, prompt.as_deref(), model.as_deref()),
        Task::HostCalls { n } => Ok(Some(host_calls::debug_logs(ctx, n))),
        Task::GarbageReward => Ok(Some(f64::NAN)),
        Task::HugeError { bytes } => Err(Error::new("E".repeat(bytes))),
        Task::ErrorText { text, reward } => {
            if let Some(value) = reward {
                ctx.reward(value);
            }
            Err(Error::new(text))
        }
        Task::Panic => panic!("probe: panic on purpose"),
        Task::ClockAndRandom => host_calls::clock_and_random(ctx),
        Task::EmitRewards => {
            ctx.reward_named("a", 0.5);
            ctx.reward(0.25);
            Ok(None)
        }
        Task::Operation => host_calls::failing_operation(ctx),
        Task::Flaky => {
            if ctx.attempt_number() == 1 {
                panic!("probe: flaky, the first attempt fails on purpose");
            }
            Ok(Some(1.0))
        }
        Task::Reward { value } => Ok(Some(value)),
        Task::TraceFlood {
            kind,
            count,
            bytes,
            then,
        } => hostile::trace_flood(ctx, &kind, count, bytes).map(|()| then),
        Task::Feedback {
            ask,
            texts,
            repeat,
            reward,
            fail,
        } => {
            if let Some(prompt) = ask {
                host_calls::llm_once(ctx, Some(&prompt), None)?;
            }
            for text in &texts {
                ctx.feedback(text);
            }
            if let Some(last) = texts.last() {
                for _ in 0..repeat {
                    ctx.feedback(last);
                }
            }
            if fail {
                Err(Error::new("failed on purpose"))
            } else {
                Ok(reward)
            }
        }
        Task::EmitReward { value } => {
            let value: f64 = value
                .parse()
                .map_err(|e| Error::new(format!("emit_reward: {value:?}: {e}")))?;
            ctx.reward(value);
            Ok(Some(1.0))
        }
    }
}

agl_sdk::export_agent!(rollout);
