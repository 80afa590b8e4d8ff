//! Textual gradients: a critique of a prompt template written by the LLM from the runs of an
//! agent with it (conversations, rewards, statuses), and the edit that applies a critique to the
//! template. A failed call, an empty critique, or an edit that is empty or drops a placeholder is
//! a skipped branch (logged), never the end of the run.

use agl_algorithm_sdk::evaluate::Evaluation;
use agl_algorithm_sdk::prelude::*;
use agl_algorithm_sdk::prompt_text::{edit_problem, extract_edited, fill};
use rand::Rng;
use std::fmt::Write as _;

use crate::config::Config;

/// Longest message text quoted in a critique prompt.
const MAX_QUOTED_CHARS: usize = 1500;

fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

fn quoted(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTED_CHARS) {
        Some((cut, _)) => format!("{}… [cut]", &text[..cut]),
        None => text.to_owned(),
    }
}

/// The runs of an evaluation as the critique prompt shows them.
pub fn experiments(host: &Host, evaluation: &Evaluation) -> String {
    let mut text = String::new();
    for (i, outcome) in evaluation.outcomes.iter().enumerate() {
        let _ = writeln!(text, "### Run {}", i + 1);
        let _ = writeln!(text, "Status: {}", outcome.status);
        if let Some(failure) = &outcome.failure {
            let _ = writeln!(text, "Failure: {}", quoted(failure));
        }
        let _ = writeln!(text, "Reward: {}", outcome.reward);
        match host.messages(&outcome.rollout_id, None) {
            Ok(calls) if calls.is_empty() => text.push_str("(no LLM call)\n"),
            Ok(calls) => {
                for call in calls {
                    for message in call {
                        let _ = writeln!(text, "[{}] {}", role_name(message.role), quoted(&message.content));
                    }
                }
            }
            Err(e) => {
                let _ = writeln!(text, "(conversation unavailable: {e})");
            }
        }
        text.push('\n');
    }
    text
}

/// Asks the LLM for critiques and edits with APO's prompts and models.
pub struct Editor<'a> {
    host: &'a Host,
    config: &'a Config,
    critique_prompts: Vec<String>,
}

impl<'a> Editor<'a> {
    pub fn new(host: &'a Host, config: &'a Config) -> Self {
        Self {
            host,
            config,
            critique_prompts: config.critique_prompts(),
        }
    }

    fn ask(
        &self,
        text: String,
        model: Option<&String>,
        temperature: Option<f32>,
    ) -> std::result::Result<String, String> {
        let mut request = ChatRequest::user(text);
        if let Some(model) = model {
            request = request.with_model(model.clone());
        }
        if let Some(t) = temperature {
            request = request.with_temperature(t);
        }
        match self.host.llm().chat(request) {
            Ok(reply) => Ok(reply.content),
            Err(e) => Err(format!("LLM call failed: {}", Error::from(e))),
        }
    }

    /// A critique of `template` from `experiments`, with a critique prompt drawn by `rng`.
    pub fn critique(
        &self,
        template: &str,
        experiments: &str,
        rng: &mut impl Rng,
    ) -> std::result::Result<String, String> {
        let variant = rng.random_range(0..self.critique_prompts.len());
        let prompt = fill(
            &self.critique_prompts[variant],
            &[("prompt_template", template), ("experiments", experiments)],
        );
        let critique = self.ask(prompt, self.config.gradient_model.as_ref(), None)?;
        let critique = critique.trim();
        if critique.is_empty() {
            return Err("the critique came back empty".into());
        }
        Ok(critique.to_owned())
    }

    /// `template` rewritten to address `critique`, keeping its placeholders; retried up to
    /// `edit_retries` times when the reply is empty, loses a placeholder or is no longer a template.
    pub fn edit(&self, template: &str, critique: &str) -> std::result::Result<String, String> {
        let prompt = fill(
            self.config.edit_prompt(),
            &[("prompt_template", template), ("critique", critique)],
        );
        let mut last_problem = String::new();
        for attempt in 0..=self.config.edit_retries {
            let reply = self.ask(
                prompt.clone(),
                self.config.apply_edit_model.as_ref(),
                Some(self.config.diversity_temperature),
            )?;
            let problem = match extract_edited(&reply) {
                None => "the edit came back empty".to_owned(),
                Some(edited) => match edit_problem(template, &edited) {
                    None => return Ok(edited),
                    Some(problem) => problem,
                },
            };
            self.host.debug(&format!(
                "apo: edit attempt {} of {} rejected: {problem}",
                attempt + 1,
                self.config.edit_retries + 1
            ));
            last_problem = problem;
        }
        Err(last_problem)
    }
}
