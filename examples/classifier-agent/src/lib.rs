//! Example agent: classifies the sentiment of a short text with one LLM call; the reward is 1.0
//! when the first word of the reply is the expected label. The prompt is the tunable `prompt`
//! resource, a template with `{text}` and `{labels}` placeholders.

use agl_sdk::prelude::*;
use serde::Deserialize;

/// The labels a task may carry, in the order the prompt lists them.
const LABELS: [&str; 3] = ["positive", "negative", "neutral"];

/// Used when the rollout's resources have no `prompt` template.
const FALLBACK_PROMPT: &str = "Classify the sentiment of the text. Answer with one word: {labels}.\nText: {text}";

/// One line of `data/train.jsonl` or `data/val.jsonl`.
#[derive(Deserialize)]
struct Task {
    text: String,
    label: String,
}

fn rollout(task: Task, ctx: &Ctx) -> Result<Option<f64>> {
    let expected = task.label.to_lowercase();
    if !LABELS.contains(&expected.as_str()) {
        return Err(Error::new(format!(
            "task label `{}` is not one of {}",
            task.label,
            LABELS.join(", ")
        )));
    }

    let labels = LABELS.join(", ");
    let vars = [("text", task.text.as_str()), ("labels", labels.as_str())];
    let prompt = ctx.prompt_or("prompt", FALLBACK_PROMPT)?.format(&vars)?;
    let reply = ctx.llm().ask(prompt)?;

    let predicted = first_word(&reply);
    ctx.info(&format!("predicted {predicted:?}, expected {expected:?}"));
    Ok(Some(if predicted == expected { 1.0 } else { 0.0 }))
}

/// The first word of the first non-empty line, lower-cased, without surrounding punctuation:
/// "**Positive.**\nBecause..." reads "positive".
fn first_word(reply: &str) -> String {
    let line = reply.lines().map(str::trim).find(|line| !line.is_empty()).unwrap_or("");
    let word = line.split_whitespace().next().unwrap_or("");
    word.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase()
}

agl_sdk::export_agent!(rollout);

#[cfg(test)]
mod tests {
    use super::first_word;

    #[test]
    fn the_first_word_of_the_first_line_is_the_prediction() {
        assert_eq!(first_word("Positive"), "positive");
        assert_eq!(first_word("  negative.  "), "negative");
        assert_eq!(first_word("\n\n**Neutral**\nThe text states a fact."), "neutral");
        assert_eq!(first_word("positive, mostly"), "positive");
    }

    #[test]
    fn an_empty_reply_predicts_nothing() {
        assert_eq!(first_word(""), "");
        assert_eq!(first_word("  \n "), "");
    }
}
