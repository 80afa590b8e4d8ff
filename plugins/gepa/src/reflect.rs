//! Reflection: the minibatch's records (input, output, reward, feedback, read through the
//! adapter's task view) shown to the reflection model with the current text of one component,
//! and the new text read from its answer (a fenced block, else the whole answer). An answer that
//! is empty, unchanged, or drops a placeholder of an f-string template is malformed: skipped by
//! the caller, never fatal. The calls are the algorithm's own LLM calls (recorded by the host
//! under the algorithm's rollout, never as an agent's).

use agl_algorithm_sdk::evaluate::Outcome;
use agl_algorithm_sdk::prelude::*;
use agl_algorithm_sdk::prompt_text::{edit_problem, extract_fenced, fill};
use std::fmt::Write as _;

use crate::config::Config;

/// One minibatch task as the reflection model sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub input: String,
    pub output: Option<String>,
    pub reward: f64,
    pub feedback: Vec<String>,
    pub failure: Option<String>,
}

impl Record {
    /// The record of `outcome`: its task view, or what the outcome says when there is none.
    pub fn read(host: &Host, outcome: &Outcome, task_json: &str) -> Record {
        match host.task(&outcome.rollout_id, None) {
            Ok(view) => Record {
                input: view.input_json,
                output: view.output,
                reward: outcome.reward,
                feedback: view.feedback,
                failure: view.failure.or_else(|| outcome.failure.clone()),
            },
            Err(e) => Record {
                input: task_json.to_owned(),
                output: None,
                reward: outcome.reward,
                feedback: Vec::new(),
                failure: Some(outcome.failure.clone().unwrap_or_else(|| format!("no task view: {e}"))),
            },
        }
    }
}

fn cut(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((at, _)) => format!("{}… [cut]", &text[..at]),
        None => text.trim().to_owned(),
    }
}

/// The records as the reflection prompt's `{examples}`: one `# Example N` each, with its
/// `## Inputs`, `## Generated Outputs`, `## Reward` and `## Feedback`.
pub fn examples(records: &[Record], max_chars: usize) -> String {
    let mut text = String::new();
    for (i, r) in records.iter().enumerate() {
        let _ = writeln!(text, "# Example {}", i + 1);
        let _ = writeln!(text, "## Inputs\n{}\n", cut(&r.input, max_chars));
        let output = r
            .output
            .as_deref()
            .map_or_else(|| "(no answer)".to_owned(), |o| cut(o, max_chars));
        let _ = writeln!(text, "## Generated Outputs\n{output}\n");
        let _ = writeln!(text, "## Reward\n{}\n", r.reward);
        let mut feedback: Vec<String> = r.feedback.iter().map(|f| cut(f, max_chars)).collect();
        if let Some(failure) = &r.failure {
            feedback.push(format!("The run failed: {}", cut(failure, max_chars)));
        }
        if feedback.is_empty() {
            feedback.push("(no feedback beyond the reward)".to_owned());
        }
        let _ = writeln!(text, "## Feedback\n{}\n", feedback.join("\n"));
    }
    text.trim_end().to_owned()
}

/// The reflection prompt for `component` (its current text) and the records.
pub fn prompt(config: &Config, component: &str, current: &str, records: &[Record]) -> String {
    let examples = examples(records, config.max_quoted_chars);
    fill(
        config.reflection_prompt(),
        &[
            ("component", component),
            ("current_instruction", current),
            ("examples", &examples),
        ],
    )
}

/// The new text in the reflection model's `answer`, or why it is malformed. Placeholders are
/// checked for f-string templates only.
pub fn parse(answer: &str, current: &str, engine: &str) -> std::result::Result<String, String> {
    let Some(text) = extract_fenced(answer) else {
        return Err("the answer holds no text".into());
    };
    if text == current.trim() {
        return Err("the answer repeats the current text".into());
    }
    if engine == "f-string"
        && let Some(problem) = edit_problem(current, &text)
    {
        return Err(problem);
    }
    Ok(text)
}

/// Asks the reflection model; the error is the reason the call failed.
pub fn ask(host: &Host, config: &Config, prompt: String) -> std::result::Result<String, String> {
    let mut request = ChatRequest::user(prompt);
    if let Some(model) = &config.reflection_model {
        request = request.with_model(model.clone());
    }
    if let Some(t) = config.reflection_temperature {
        request = request.with_temperature(t);
    }
    host.llm()
        .chat(request)
        .map(|reply| reply.content)
        .map_err(|e| format!("the reflection call failed: {}", Error::from(e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(reward: f64, feedback: &[&str]) -> Record {
        Record {
            input: r#"{"question": "2+2?"}"#.into(),
            output: Some("It is 4, in 2 steps.".into()),
            reward,
            feedback: feedback.iter().map(|f| (*f).to_owned()).collect(),
            failure: None,
        }
    }

    #[test]
    fn the_prompt_shows_the_text_and_every_record() {
        let config: Config = serde_json::from_str("{}").expect("config");
        let records = [record(0.0, &["expected 4, got 2"]), record(1.0, &[])];
        let text = prompt(&config, "prompt", "Solve {question}", &records);
        assert!(text.contains("the prompt template `prompt`"), "{text}");
        assert!(text.contains("```\nSolve {question}\n```"), "{text}");
        for needle in [
            "# Example 1",
            "# Example 2",
            "## Inputs\n{\"question\": \"2+2?\"}",
            "## Generated Outputs\nIt is 4, in 2 steps.",
            "## Reward\n0",
            "## Feedback\nexpected 4, got 2",
            "(no feedback beyond the reward)",
        ] {
            assert!(text.contains(needle), "{needle} missing:\n{text}");
        }
        let failed = Record {
            output: None,
            failure: Some("trap".into()),
            ..record(0.0, &[])
        };
        let shown = examples(&[failed], 100);
        assert!(
            shown.contains("(no answer)") && shown.contains("The run failed: trap"),
            "{shown}"
        );
        assert_eq!(cut("abcdef", 3), "abc… [cut]");
    }

    #[test]
    fn answers_are_read_robustly_and_malformed_ones_named() {
        let current = "Solve {question}";
        assert_eq!(
            parse(
                "Better:\n```\nSolve {question}. End with the number.\n```",
                current,
                "f-string"
            )
            .as_deref(),
            Ok("Solve {question}. End with the number.")
        );
        assert_eq!(
            parse("Solve {question} carefully.", current, "f-string").as_deref(),
            Ok("Solve {question} carefully.")
        );
        assert!(parse("```\n```", current, "f-string").unwrap_err().contains("no text"));
        assert!(parse("", current, "f-string").is_err());
        assert!(
            parse("```\nSolve {question}\n```", current, "f-string")
                .unwrap_err()
                .contains("repeats")
        );
        assert!(
            parse("```\nJust solve it.\n```", current, "f-string")
                .unwrap_err()
                .contains("dropped placeholder(s) question")
        );
        assert!(parse("```\nSolve {question:>3}\n```", current, "f-string").is_err());
        assert_eq!(
            parse("no placeholders", "{{ q }}", "jinja").as_deref(),
            Ok("no placeholders")
        );
    }
}
