//! APO's configuration (the `--algo-config` JSON object; every key optional) and its checks.

use agl_algorithm_sdk::prelude::*;
use agl_algorithm_sdk::prompt_text::lacks_markers;
use serde::Deserialize;

use crate::prompts;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Prompts kept after each round.
    pub beam_width: usize,
    /// New candidates edited from each parent per round.
    pub branch_factor: usize,
    /// Rounds of critique, edit and selection.
    pub beam_rounds: u32,
    /// Train tasks a parent runs before its critique.
    pub gradient_batch_size: usize,
    /// Val tasks every candidate of a round is scored on.
    pub val_batch_size: usize,
    /// Sampling temperature of the edit calls (diversity of the candidates).
    pub diversity_temperature: f32,
    /// Model of the critique calls (`None`: the host's default).
    pub gradient_model: Option<String>,
    /// Model of the edit calls (`None`: the host's default).
    pub apply_edit_model: Option<String>,
    /// Score the seed prompt on the full val set first (the baseline to beat).
    pub run_initial_validation: bool,
    /// Seconds to wait for one batch of rollouts; unfinished ones are cancelled and score 0.
    pub rollout_batch_timeout: f64,
    /// Seed of APO's choices (batches, critique variants); `None`: drawn from the host's random
    /// source (itself seeded by `agl-host run --seed`).
    pub seed: Option<u64>,
    /// The prompt-template resource to optimise; `None`: the only prompt template there is, else
    /// the one called `prompt`.
    pub prompt_resource: Option<String>,
    /// Critique prompts (one is drawn per critique) with `{prompt_template}` and `{experiments}`;
    /// `None`: APO's own (plugins/apo/prompts/critique-*.md).
    pub critique_prompts: Option<Vec<String>>,
    /// The edit prompt with `{prompt_template}` and `{critique}`; `None`: prompts/apply-edit.md.
    pub edit_prompt: Option<String>,
    /// Further edit calls when an edit drops a placeholder or comes back empty.
    pub edit_retries: u32,
    /// Retry and timeout policy of APO's rollouts (Agent-lightning's RolloutConfig).
    pub rollout_config: Option<RolloutConfig>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            beam_width: 4,
            branch_factor: 4,
            beam_rounds: 3,
            gradient_batch_size: 4,
            val_batch_size: 16,
            diversity_temperature: 1.0,
            gradient_model: None,
            apply_edit_model: None,
            run_initial_validation: true,
            rollout_batch_timeout: 3600.0,
            seed: None,
            prompt_resource: None,
            critique_prompts: None,
            edit_prompt: None,
            edit_retries: 1,
            rollout_config: None,
        }
    }
}

impl Config {
    /// Rejects settings that cannot work, naming the key.
    pub fn check(&self) -> Result<()> {
        let positive = [
            ("beam_width", self.beam_width),
            ("branch_factor", self.branch_factor),
            ("gradient_batch_size", self.gradient_batch_size),
            ("val_batch_size", self.val_batch_size),
        ];
        for (key, value) in positive {
            if value == 0 {
                return Err(Error::new(format!("apo config: {key} must be at least 1")));
            }
        }
        if !(self.diversity_temperature.is_finite() && self.diversity_temperature >= 0.0) {
            return Err(Error::new("apo config: diversity_temperature must be a number ≥ 0"));
        }
        if !(self.rollout_batch_timeout.is_finite() && self.rollout_batch_timeout > 0.0) {
            return Err(Error::new(
                "apo config: rollout_batch_timeout must be a positive number of seconds",
            ));
        }
        if let Some(critiques) = &self.critique_prompts {
            if critiques.is_empty() {
                return Err(Error::new("apo config: critique_prompts must not be empty"));
            }
            for (i, text) in critiques.iter().enumerate() {
                let missing = lacks_markers(text, &["prompt_template", "experiments"]);
                if !missing.is_empty() {
                    return Err(Error::new(format!(
                        "apo config: critique_prompts[{i}] lacks {}",
                        markers(&missing)
                    )));
                }
            }
        }
        if let Some(edit) = &self.edit_prompt {
            let missing = lacks_markers(edit, &["prompt_template", "critique"]);
            if !missing.is_empty() {
                return Err(Error::new(format!(
                    "apo config: edit_prompt lacks {}",
                    markers(&missing)
                )));
            }
        }
        Ok(())
    }

    /// The critique prompt variants in use.
    pub fn critique_prompts(&self) -> Vec<String> {
        match &self.critique_prompts {
            Some(custom) => custom.clone(),
            None => prompts::CRITIQUES.iter().map(|p| (*p).to_owned()).collect(),
        }
    }

    /// The edit prompt in use.
    pub fn edit_prompt(&self) -> &str {
        self.edit_prompt.as_deref().unwrap_or(prompts::APPLY_EDIT)
    }
}

fn markers(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("{{{n}}}"))
        .collect::<Vec<_>>()
        .join(" and ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_agent_lightnings() {
        let config: Config = serde_json::from_str("{}").expect("empty config");
        assert_eq!((config.beam_width, config.branch_factor, config.beam_rounds), (4, 4, 3));
        assert_eq!((config.gradient_batch_size, config.val_batch_size), (4, 16));
        assert!(config.run_initial_validation);
        assert!(config.check().is_ok());
        assert_eq!(config.critique_prompts().len(), 3);
    }

    #[test]
    fn bad_settings_are_named() {
        let unknown = serde_json::from_str::<Config>(r#"{"beam_widht": 2}"#).unwrap_err();
        assert!(unknown.to_string().contains("beam_widht"), "{unknown}");
        let zero: Config = serde_json::from_str(r#"{"branch_factor": 0}"#).expect("parses");
        assert!(zero.check().unwrap_err().to_string().contains("branch_factor"));
        let edit: Config = serde_json::from_str(r#"{"edit_prompt": "fix {prompt_template}"}"#).expect("parses");
        assert!(edit.check().unwrap_err().to_string().contains("{critique}"));
    }
}
