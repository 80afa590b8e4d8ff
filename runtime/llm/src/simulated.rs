//! [`SimulatedBackend`]: an offline stand-in for a task model and a reflection model, for
//! measuring prompt optimisers without a real LLM (`agl-host --llm-simulate SPEC.json`; the book's
//! reference page "The simulated LLM").
//!
//! **As the task model** it answers a task recognised by `task_pattern` (a regex with the named
//! groups `task` and `family`, searched in every message): each failure mode whose `families`
//! hold the task's family affects the task with probability `rate` (a fixed draw per task and
//! mode) and then fires unless its `fix` phrase is somewhere in the messages (case-insensitive).
//! With none firing the answer is right, except that with probability `noise` (a draw per task
//! and per prompt text, so any edit of the prompt redraws it) it slips. It answers
//! `ANSWER: correct`, or `ANSWER: wrong — ` followed by the `symptom` of each mode that fired
//! (`; `-separated) or the `slip` text.
//!
//! **As the reflection model** it recognises four prompts by their opening words: GEPA's
//! (`I gave an assistant the following instructions`), the `gepa` package's (`I provided an
//! assistant with the following instructions`), APO's critique (`You are reviewing a prompt
//! template`) and APO's edit (`Rewrite the prompt template below`). A GEPA reflection takes the
//! current text from the prompt's first fence and the failures named in the rest (the modes whose
//! `symptom` appears there and whose `fix` the text lacks): with probability `reflection_p` it
//! answers the text plus the `fix` of one of them, else the text plus one of the `distractors`
//! (an unrelated edit), in a fence. An APO critique makes the same draw and names the fix (or the
//! distractor) in quotes; an APO edit applies what the critique quotes, between `<prompt>` tags.
//! So a proposal of either algorithm addresses a named failure with the same probability.
//!
//! Every draw is a hash of the spec's `seed` and the texts involved (FNV-1a, then SplitMix64):
//! the same seed and the same requests give the same answers, whatever the order of the calls.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::{ChatRequest, ChatResponse, LlmBackend, LlmError, Message, Usage};

/// The opening words of GEPA's reflection prompt (plugins/gepa/prompts/reflection.md).
pub const GEPA_MARKER: &str = "I gave an assistant the following instructions";
/// The opening words of the `gepa` package's (0.1.4) default reflection prompt.
pub const GEPA_PACKAGE_MARKER: &str = "I provided an assistant with the following instructions";
/// The opening words of APO's critique prompts (plugins/apo/prompts/critique-*.md).
pub const APO_CRITIQUE_MARKER: &str = "You are reviewing a prompt template";
/// The opening words of APO's edit prompt (plugins/apo/prompts/apply-edit.md).
pub const APO_EDIT_MARKER: &str = "Rewrite the prompt template below";

/// One failure mode of the simulated task model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailureMode {
    /// A short name, for reports.
    pub id: String,
    /// What the wrong answer says went wrong (the agent's feedback quotes it).
    pub symptom: String,
    /// The instruction that, anywhere in the prompt, prevents this failure.
    pub fix: String,
    /// The task families it affects.
    pub families: Vec<String>,
    /// The probability that it affects a task of those families (a fixed draw per task).
    pub rate: f64,
}

/// The simulator's specification (the `--llm-simulate` file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimulationSpec {
    /// Reported as the model unless the request names one.
    #[serde(default = "default_model")]
    pub model: String,
    /// Seeds every draw.
    #[serde(default)]
    pub seed: u64,
    /// The probability that an answer with no failure firing slips anyway.
    #[serde(default)]
    pub noise: f64,
    /// The probability that a reflection (or an APO critique) addresses a failure it was shown.
    pub reflection_p: f64,
    /// Finds the task in the messages: a regex with the named groups `task` and `family`.
    #[serde(default = "default_task_pattern")]
    pub task_pattern: String,
    /// What a slip says.
    #[serde(default = "default_slip")]
    pub slip: String,
    pub failure_modes: Vec<FailureMode>,
    /// Unrelated instructions an unhelpful reflection adds (at least one).
    pub distractors: Vec<String>,
}

fn default_model() -> String {
    "simulated".to_owned()
}

fn default_task_pattern() -> String {
    r"\[task (?<task>[^\s\]]+) family (?<family>[^\s\]]+)\]".to_owned()
}

fn default_slip() -> String {
    "made a careless slip".to_owned()
}

/// What a reflection prompt is, by its opening words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prompt {
    Reflection,
    ApoCritique,
    ApoEdit,
    Task,
}

/// An [`LlmBackend`] simulating a task model and a reflection model from a [`SimulationSpec`].
#[derive(Debug)]
pub struct SimulatedBackend {
    spec: SimulationSpec,
    task_pattern: Regex,
    source: String,
    calls: AtomicU64,
}

/// FNV-1a over the parts (each followed by a 0xff separator), then SplitMix64's finaliser.
fn hash(seed: u64, parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for part in parts {
        for byte in part.bytes().chain(std::iter::once(0xff)) {
            h ^= u64::from(byte);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// A draw in [0, 1).
fn unit(seed: u64, parts: &[&str]) -> f64 {
    (hash(seed, parts) >> 11) as f64 / (1u64 << 53) as f64
}

fn contains_ci(haystack: &str, needle: &str) -> bool {
    haystack.to_lowercase().contains(&needle.to_lowercase())
}

/// The text between the first fence (its language tag skipped) and the next one.
fn first_fence(text: &str) -> Option<(&str, &str)> {
    let start = text.find("```")?;
    let after = &text[start + 3..];
    let body_start = after.find('\n').map_or(0, |i| i + 1);
    let body = &after[body_start..];
    let end = body.find("```")?;
    Some((body[..end].trim_end_matches('\n'), &body[end + 3..]))
}

fn section<'t>(text: &'t str, heading: &str, next: &str) -> &'t str {
    let Some(start) = text.find(heading) else {
        return "";
    };
    let rest = &text[start + heading.len()..];
    let end = rest.find(next).unwrap_or(rest.len());
    rest[..end].trim_matches('\n')
}

impl SimulatedBackend {
    /// Loads a spec file; errors name the file and the problem.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, LlmError> {
        let path = path.as_ref();
        let label = format!("simulation spec {}", path.display());
        let text = std::fs::read_to_string(path)
            .map_err(|e| LlmError::InvalidRequest(format!("{label}: cannot read it: {e}")))?;
        let spec: SimulationSpec =
            serde_json::from_str(&text).map_err(|e| LlmError::InvalidRequest(format!("{label}: {e}")))?;
        Self::new(spec, path.display().to_string()).map_err(|e| LlmError::InvalidRequest(format!("{label}: {e}")))
    }

    /// A spec already parsed; fails on a bad pattern, a probability outside [0, 1], no
    /// distractors or a failure mode with an empty fix or symptom.
    pub fn from_spec(spec: SimulationSpec) -> Result<Self, LlmError> {
        Self::new(spec, "(inline spec)".to_owned()).map_err(LlmError::InvalidRequest)
    }

    fn new(spec: SimulationSpec, source: String) -> Result<Self, String> {
        let task_pattern = Regex::new(&spec.task_pattern).map_err(|e| format!("task_pattern: {e}"))?;
        for group in ["task", "family"] {
            if !task_pattern.capture_names().flatten().any(|n| n == group) {
                return Err(format!("task_pattern: no named group `{group}`"));
            }
        }
        let probability = |name: &str, p: f64| {
            if (0.0..=1.0).contains(&p) {
                Ok(())
            } else {
                Err(format!("{name}: {p} is not a probability"))
            }
        };
        probability("noise", spec.noise)?;
        probability("reflection_p", spec.reflection_p)?;
        for (i, mode) in spec.failure_modes.iter().enumerate() {
            probability(&format!("failure_modes[{i}].rate"), mode.rate)?;
            if mode.fix.trim().is_empty() || mode.symptom.trim().is_empty() {
                return Err(format!("failure_modes[{i}]: an empty fix or symptom"));
            }
        }
        if spec.distractors.iter().all(|d| d.trim().is_empty()) {
            return Err("distractors: at least one is needed".to_owned());
        }
        Ok(SimulatedBackend {
            spec,
            task_pattern,
            source,
            calls: AtomicU64::new(0),
        })
    }

    /// How many calls this backend has answered.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// The answer to a conversation, as text.
    pub fn answer(&self, messages: &[Message]) -> Result<String, LlmError> {
        let last = messages.last().map_or("", |m| m.content.as_str());
        let kind = if last.contains(GEPA_MARKER) || last.contains(GEPA_PACKAGE_MARKER) {
            Prompt::Reflection
        } else if last.contains(APO_CRITIQUE_MARKER) {
            Prompt::ApoCritique
        } else if last.contains(APO_EDIT_MARKER) {
            Prompt::ApoEdit
        } else {
            Prompt::Task
        };
        match kind {
            Prompt::Reflection => Ok(self.reflect(last)),
            Prompt::ApoCritique => Ok(self.critique(last)),
            Prompt::ApoEdit => Ok(self.edit(last)),
            Prompt::Task => self.solve(messages),
        }
    }

    /// The task model's answer.
    fn solve(&self, messages: &[Message]) -> Result<String, LlmError> {
        let found = messages
            .iter()
            .rev()
            .find_map(|m| self.task_pattern.captures(&m.content));
        let Some(captures) = found else {
            return Err(LlmError::InvalidRequest(
                "simulated LLM: no task (task_pattern) in the messages".to_owned(),
            ));
        };
        let (task, family) = (&captures["task"], &captures["family"]);
        let prompt: String = messages
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let seed = self.spec.seed;
        let fired: Vec<&str> = self
            .spec
            .failure_modes
            .iter()
            .filter(|mode| mode.families.iter().any(|f| f == family))
            .filter(|mode| unit(seed, &["affects", &mode.id, task]) < mode.rate)
            .filter(|mode| !contains_ci(&prompt, &mode.fix))
            .map(|mode| mode.symptom.as_str())
            .collect();
        if !fired.is_empty() {
            return Ok(format!("ANSWER: wrong — {}", fired.join("; ")));
        }
        if unit(seed, &["noise", task, &prompt]) < self.spec.noise {
            return Ok(format!("ANSWER: wrong — {}", self.spec.slip));
        }
        Ok("ANSWER: correct".to_owned())
    }

    /// The failure modes named in `shown` whose fix `current` lacks, in spec order.
    fn named<'s>(&'s self, current: &str, shown: &str) -> Vec<&'s FailureMode> {
        self.spec
            .failure_modes
            .iter()
            .filter(|mode| shown.contains(&mode.symptom) && !contains_ci(current, &mode.fix))
            .collect()
    }

    /// The instruction a proposal adds: a named failure's fix with probability `reflection_p`,
    /// else a distractor the text lacks (any distractor when it has them all).
    fn proposal(&self, kind: &str, prompt: &str, current: &str, shown: &str) -> String {
        let seed = self.spec.seed;
        let named = self.named(current, shown);
        let pick = hash(seed, &[kind, "pick", prompt]);
        if !named.is_empty() && unit(seed, &[kind, "p", prompt]) < self.spec.reflection_p {
            return named[(pick % named.len() as u64) as usize].fix.clone();
        }
        let fresh: Vec<&String> = self
            .spec
            .distractors
            .iter()
            .filter(|d| !d.trim().is_empty() && !contains_ci(current, d))
            .collect();
        let all: Vec<&String> = self.spec.distractors.iter().filter(|d| !d.trim().is_empty()).collect();
        let from = if fresh.is_empty() { all } else { fresh };
        from[(pick % from.len() as u64) as usize].clone()
    }

    fn reflect(&self, prompt: &str) -> String {
        let Some((current, rest)) = first_fence(prompt) else {
            return "I cannot find the current instructions.".to_owned();
        };
        let added = self.proposal("reflect", prompt, current, rest);
        format!("```\n{}\n{added}\n```", current.trim_end())
    }

    fn critique(&self, prompt: &str) -> String {
        let current = section(prompt, "## Prompt template\n", "\n## Runs");
        let runs = section(prompt, "## Runs\n", "\n## Your task");
        let added = self.proposal("critique", prompt, current, runs);
        format!("The template should add the instruction \"{added}\"")
    }

    fn edit(&self, prompt: &str) -> String {
        let current = section(prompt, "## Prompt template\n", "\n## Critique");
        let critique = section(prompt, "## Critique\n", "\n## Rules");
        let quoted = critique.split('"').nth(1).filter(|q| !q.trim().is_empty());
        let added = match quoted {
            Some(q) => q.to_owned(),
            None => self.proposal("edit", prompt, current, ""),
        };
        format!("<prompt>\n{}\n{added}\n</prompt>", current.trim_end())
    }
}

#[async_trait::async_trait]
impl LlmBackend for SimulatedBackend {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let content = self.answer(&request.messages)?;
        self.calls.fetch_add(1, Ordering::Relaxed);
        let words = |t: &str| u32::try_from(t.split_whitespace().count()).unwrap_or(u32::MAX);
        let usage = Usage {
            input_tokens: request
                .messages
                .iter()
                .map(|m| words(&m.content))
                .fold(0, u32::saturating_add),
            output_tokens: words(&content),
        };
        Ok(ChatResponse {
            content,
            tool_calls: Vec::new(),
            finish_reason: "stop".to_owned(),
            usage,
            model: request.model.clone().unwrap_or_else(|| self.spec.model.clone()),
            id: None,
            tokens: Default::default(),
        })
    }

    fn default_model(&self) -> &str {
        &self.spec.model
    }

    fn describe(&self) -> String {
        format!("simulated {}", self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(p: f64, noise: f64) -> SimulationSpec {
        serde_json::from_value(serde_json::json!({
            "seed": 7,
            "noise": noise,
            "reflection_p": p,
            "failure_modes": [
                {"id": "units", "symptom": "gave the wrong unit", "fix": "Use the unit asked for.",
                 "families": ["arith"], "rate": 1.0},
                {"id": "format", "symptom": "buried the answer", "fix": "End with the answer alone.",
                 "families": ["arith", "logic"], "rate": 0.5}
            ],
            "distractors": ["Be polite.", "Think about the reader."]
        }))
        .expect("spec")
    }

    fn sim(p: f64, noise: f64) -> SimulatedBackend {
        SimulatedBackend::from_spec(spec(p, noise)).expect("valid")
    }

    fn task(prompt: &str, id: &str, family: &str) -> Vec<Message> {
        vec![Message::user(format!(
            "{prompt}\n[task {id} family {family}] What is it?"
        ))]
    }

    #[test]
    fn a_failure_fires_until_its_fix_is_in_the_prompt() {
        let s = sim(1.0, 0.0);
        let wrong = s.answer(&task("Solve it.", "a1", "arith")).unwrap();
        assert!(
            wrong.starts_with("ANSWER: wrong") && wrong.contains("gave the wrong unit"),
            "{wrong}"
        );
        let both = "Solve it. use the unit ASKED for. End with the answer alone.";
        assert_eq!(s.answer(&task(both, "a1", "arith")).unwrap(), "ANSWER: correct");
        // `units` affects no logic task; `format` about half of them.
        let mut wrong_logic = 0;
        for i in 0..200 {
            let answer = s.answer(&task("Solve it.", &format!("l{i}"), "logic")).unwrap();
            assert!(!answer.contains("unit"), "{answer}");
            wrong_logic += usize::from(answer.contains("buried the answer"));
        }
        assert!((70..130).contains(&wrong_logic), "{wrong_logic} of 200");
    }

    #[test]
    fn noise_slips_some_right_answers_and_redraws_when_the_prompt_changes() {
        let s = sim(1.0, 0.3);
        let fixed = "Use the unit asked for. End with the answer alone.";
        let slips = |prompt: &str| {
            (0..300)
                .filter(|i| {
                    s.answer(&task(prompt, &format!("a{i}"), "arith"))
                        .unwrap()
                        .contains("careless slip")
                })
                .collect::<Vec<_>>()
        };
        let (a, b) = (slips(fixed), slips(&format!("{fixed} Be polite.")));
        assert!((60..120).contains(&a.len()), "{}", a.len());
        assert_ne!(a, b, "another prompt, other slips");
        assert_eq!(a, slips(fixed), "deterministic");
    }

    fn reflection(current: &str, feedback: &str) -> Vec<Message> {
        vec![Message::user(format!(
            "{GEPA_MARKER} (the prompt template `prompt`) to carry out a task for me:\n```\n{current}\n```\n\n\
             Below are task inputs...\n```\n# Example 1\n## Feedback\n{feedback}\n```\nGive the new instructions within ``` blocks."
        ))]
    }

    #[test]
    fn a_reflection_adds_a_named_fix_with_probability_p_else_a_distractor() {
        let current = "Solve it.\nProblem: {question}";
        for (p, low, high) in [(1.0, 100, 100), (0.0, 0, 0), (0.5, 35, 65)] {
            let s = sim(p, 0.0);
            let fixes = (0..100)
                .filter(|i| {
                    let answer = s
                        .answer(&reflection(
                            current,
                            &format!("Wrong: the model gave the wrong unit ({i})"),
                        ))
                        .unwrap();
                    let (text, _) = first_fence(&answer).expect("fenced");
                    assert!(text.starts_with(current), "{text}");
                    assert!(
                        ["Use the unit asked for.", "Be polite.", "Think about the reader."]
                            .iter()
                            .any(|tail| text.ends_with(tail)),
                        "{text}"
                    );
                    text.ends_with("Use the unit asked for.")
                })
                .count();
            assert!((low..=high).contains(&fixes), "p={p}: {fixes}");
        }
        // Nothing named, or its fix already there: an unrelated edit.
        let s = sim(1.0, 0.0);
        let answer = s.answer(&reflection(current, "Wrong: a careless slip")).unwrap();
        assert!(
            answer.contains("Be polite.") || answer.contains("Think about the reader."),
            "{answer}"
        );
        let has = "Solve it. Use the unit asked for.\n{question}";
        let answer = s.answer(&reflection(has, "Wrong: gave the wrong unit")).unwrap();
        assert!(!answer.ends_with("Use the unit asked for.\n```"), "{answer}");
        // The gepa package's prompt is recognised as well.
        let package = format!(
            "{GEPA_PACKAGE_MARKER} to perform a task for me:\n```\nBe brief.\n```\nfeedback: gave the wrong unit\n"
        );
        assert_eq!(
            s.answer(&[Message::user(package)]).unwrap(),
            "```\nBe brief.\nUse the unit asked for.\n```"
        );
    }

    #[test]
    fn apo_critique_names_the_fix_and_the_edit_applies_it() {
        let s = sim(1.0, 0.0);
        let critique_prompt = format!(
            "{APO_CRITIQUE_MARKER} and sends to a language model.\n\n## Prompt template\nSolve: {{question}}\n\n\
             ## Runs\n### Run 1\nReward: 0\n[user] Solve: x\n[assistant] ANSWER: wrong — buried the answer\n\n## Your task\nCompare."
        );
        let critique = s.answer(&[Message::user(critique_prompt)]).unwrap();
        assert_eq!(
            critique,
            "The template should add the instruction \"End with the answer alone.\""
        );
        let edit_prompt = format!(
            "{APO_EDIT_MARKER} so that it addresses the critique.\n\n## Prompt template\nSolve: {{question}}\n\n\
             ## Critique\n{critique}\n\n## Rules\n- Keep every placeholder"
        );
        assert_eq!(
            s.answer(&[Message::user(edit_prompt)]).unwrap(),
            "<prompt>\nSolve: {question}\nEnd with the answer alone.\n</prompt>"
        );
    }

    #[test]
    fn bad_specs_are_refused_and_a_message_without_a_task_fails() {
        let mut bad = spec(1.5, 0.0);
        assert!(SimulatedBackend::from_spec(bad.clone()).is_err());
        bad.reflection_p = 0.5;
        bad.task_pattern = "(?<task>x)".to_owned();
        let error = SimulatedBackend::from_spec(bad).unwrap_err().to_string();
        assert!(error.contains("family"), "{error}");
        assert!(sim(0.5, 0.0).answer(&[Message::user("hello")]).is_err());
        assert!(serde_json::from_str::<SimulationSpec>(r#"{"reflection_p": 1, "failure_mode": []}"#).is_err());
    }
}
