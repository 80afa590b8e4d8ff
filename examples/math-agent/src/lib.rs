//! Example agent: solves a grade-school word problem with one LLM call and grades itself by the
//! last number of the reply. The prompt is the tunable `prompt` resource (a template with a
//! `{question}` placeholder), so a prompt-optimization algorithm can improve it.

mod grading;

use agl_sdk::prelude::*;
use serde::Deserialize;

/// Used when the rollout's resources have no `prompt` template.
const FALLBACK_PROMPT: &str = "Solve the problem and end with the number.\nProblem: {question}";

/// One line of `data/train.jsonl` or `data/val.jsonl`.
#[derive(Deserialize)]
struct Task {
    question: String,
    /// The expected final number, as text ("19").
    answer: String,
}

fn rollout(task: Task, ctx: &Ctx) -> Result<Option<f64>> {
    // The tunable prompt, filled by the host (which records which version was used).
    let prompt = ctx
        .prompt_or("prompt", FALLBACK_PROMPT)?
        .format(&[("question", task.question.as_str())])?;
    let reply = ctx.llm().ask(prompt)?;

    // Exact match of the final number: "... so she has 27 left." -> 27.
    let extracted = grading::last_number(&reply);
    let correct = extracted.is_some_and(|value| grading::same_number(value, &task.answer));
    let shown = extracted.map_or_else(|| "no number".to_string(), |value| value.to_string());
    ctx.info(&format!("extracted answer: {shown} (expected {})", task.answer));
    // Textual feedback beside the reward, for algorithms that learn from text: what went wrong
    // on this task ("expected 27, got 2.7"). The reward stays 0.
    if let Some(text) = grading::feedback(extracted, &task.answer) {
        ctx.feedback(&text);
    }

    // The final reward; an algorithm reads it from the rollout.
    Ok(Some(if correct { 1.0 } else { 0.0 }))
}

agl_sdk::export_agent!(rollout);
