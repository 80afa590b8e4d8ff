//! Example agent for GEPA with two prompt components: a `system` instruction (the system message)
//! and a `format` instruction (the user message, with the `{question}` placeholder). Each fixes its
//! own failure mode of the task model: the `format` one makes the answer's last number the answer
//! (unprompted, replies end with a stray number), the `system` one makes it convert to the unit the
//! question asks for (minutes, cents). The reward is 1.0 when the last number of the reply equals
//! the task's `answer`; a wrong answer gets feedback naming which failure it was.

mod grading;

use agl_sdk::prelude::*;
use serde::Deserialize;

/// Used when the rollout's resources have no `system` template.
const FALLBACK_SYSTEM: &str = "You solve word problems.";
/// Used when the rollout's resources have no `format` template.
const FALLBACK_FORMAT: &str = "Solve this problem.\nQuestion: {question}";

/// One line of `data/train.jsonl` or `data/val.jsonl`.
#[derive(Deserialize)]
struct Task {
    question: String,
    /// The expected final number, as text ("135").
    answer: String,
    /// The unit the question asks for ("minutes"), when it asks for one.
    #[serde(default)]
    unit: Option<String>,
}

fn rollout(task: Task, ctx: &Ctx) -> Result<Option<f64>> {
    // The two tunable templates, filled by the host (which records the resources version used).
    let system = ctx.prompt_or("system", FALLBACK_SYSTEM)?.format(&[])?;
    let user = ctx
        .prompt_or("format", FALLBACK_FORMAT)?
        .format(&[("question", task.question.as_str())])?;
    let reply = ctx.llm().chat(ChatRequest::user(user).with_system(system))?.content;

    let grade = grading::grade(&reply, &task.answer, task.unit.as_deref());
    ctx.info(&format!("graded: {}", grade.summary()));
    // Textual feedback beside the reward of 0, naming the failure: what GEPA's reflection reads.
    if let Some(text) = grade.feedback {
        ctx.feedback(&text);
    }
    Ok(Some(if grade.correct { 1.0 } else { 0.0 }))
}

agl_sdk::export_agent!(rollout);
