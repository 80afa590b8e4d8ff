//! Bench agent for the simulated LLM (`agl-host --llm-simulate`, the book's "The simulated
//! LLM"): fills the `prompt` template with the task's question (which carries the
//! `[task ID family FAMILY]` tag the simulator reads), asks the model once and grades its answer:
//! `ANSWER: correct` earns 1, anything else 0 with feedback quoting what the model says went
//! wrong, the way a grader that knows the expected answer would explain a mistake.

use agl_sdk::prelude::*;
use serde::Deserialize;

/// Used when the rollout's resources have no `prompt` template.
const FALLBACK_PROMPT: &str = "Answer the question.\n{question}";

/// One line of the bench's `data/*.jsonl`.
#[derive(Deserialize)]
struct Task {
    question: String,
}

/// The reward and the feedback of an answer.
fn grade(reply: &str) -> (f64, Option<String>) {
    let last = reply.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    if last == "ANSWER: correct" {
        return (1.0, None);
    }
    let why = last.strip_prefix("ANSWER: wrong — ").map_or_else(
        || format!("the answer is not in the expected form: {last}"),
        str::to_owned,
    );
    (0.0, Some(format!("Wrong answer: the model {why}.")))
}

fn rollout(task: Task, ctx: &Ctx) -> Result<Option<f64>> {
    let prompt = ctx
        .prompt_or("prompt", FALLBACK_PROMPT)?
        .format(&[("question", task.question.as_str())])?;
    let reply = ctx.llm().ask(prompt)?;
    let (reward, feedback) = grade(&reply);
    if let Some(text) = feedback {
        ctx.feedback(&text);
    }
    Ok(Some(reward))
}

agl_sdk::export_agent!(rollout);

#[cfg(test)]
mod tests {
    use super::grade;

    #[test]
    fn grading() {
        assert_eq!(grade("ANSWER: correct\n"), (1.0, None));
        let (reward, feedback) = grade("ANSWER: wrong — gave the wrong unit");
        assert_eq!(reward, 0.0);
        assert_eq!(
            feedback.as_deref(),
            Some("Wrong answer: the model gave the wrong unit.")
        );
        assert!(grade("no idea").1.unwrap().contains("expected form"));
    }
}
