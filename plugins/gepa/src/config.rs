//! GEPA's configuration (the `--algo-config` JSON object; every key optional) and its checks.
//! Defaults follow the `gepa` package's `optimize()` where it has one.

use agl_algorithm_sdk::prelude::*;
use agl_algorithm_sdk::prompt_text::lacks_markers;
use serde::Deserialize;

/// The reflection prompt, compiled in from `plugins/gepa/prompts/reflection.md`.
pub const REFLECTION_PROMPT: &str = include_str!("../prompts/reflection.md");

/// How the parent of a reflective mutation is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CandidateSelection {
    /// Sampled from the per-val-task Pareto front, by how many tasks each candidate is best on.
    Pareto,
    /// Always the candidate with the best mean val score.
    CurrentBest,
}

/// When a mutated candidate is kept, comparing its minibatch scores with its parent's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Acceptance {
    /// The sum of the child's minibatch scores is higher than the parent's.
    StrictImprovement,
    /// ... or equal.
    ImprovementOrEqual,
}

impl Acceptance {
    pub fn accepts(self, parent_sum: f64, child_sum: f64) -> bool {
        match self {
            Acceptance::StrictImprovement => child_sum > parent_sum,
            Acceptance::ImprovementOrEqual => child_sum >= parent_sum,
        }
    }

    /// Whether a child run on part of the minibatch (`child[i]`: `None` where not run yet) could
    /// still be accepted: at best it scores `perfect_score` (or its parent's score, if higher) on
    /// every task not run.
    pub fn could_accept(self, parent: &[f64], child: &[Option<f64>], perfect_score: f64) -> bool {
        let best_case: f64 = parent
            .iter()
            .zip(child)
            .map(|(&p, c)| c.unwrap_or(p.max(perfect_score)))
            .sum();
        self.accepts(parent.iter().sum(), best_case)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// The most rollouts in all (GEPA's `max_metric_calls`); never exceeded: an iteration starts
    /// only when its worst case fits.
    pub max_rollouts: usize,
    /// The most reflection (LLM) calls in all, malformed answers and failed calls included.
    pub max_reflection_calls: u32,
    /// The most iterations; `None`: until a budget is spent.
    pub max_iterations: Option<u32>,
    /// Train tasks per reflection minibatch.
    pub minibatch_size: usize,
    /// The reward of a solved task.
    pub perfect_score: f64,
    /// Skip the reflection when the parent scores `perfect_score` on every minibatch task.
    pub skip_perfect_score: bool,
    pub candidate_selection: CandidateSelection,
    pub acceptance: Acceptance,
    /// Merge two descendants of a common ancestor (GEPA's system-aware merge).
    pub use_merge: bool,
    /// The most merges accepted.
    pub max_merge_invocations: u32,
    /// Val tasks a merged candidate is first scored on (against both parents).
    pub merge_subsample_size: usize,
    /// Never run a candidate twice on the same task: reuse the outcome already paid for (the
    /// package's `cache_evaluation`, off there by default). A mutation's worst case then counts
    /// only the parent's minibatch tasks not yet run.
    pub cache_evaluation: bool,
    /// Run a child first on the minibatch tasks its parent fell short of `perfect_score` on, and
    /// on the tasks the parent solved only when it could still be accepted (there it can at most
    /// tie, a reward being at most `perfect_score`): a child that gains nothing costs only the
    /// tasks it had to fix. Turn off for rewards above `perfect_score`.
    pub early_rejection: bool,
    /// Fill a parent's reflection minibatch first with train tasks it is known to fail (its
    /// recorded outcomes below `perfect_score`; at most `minibatch_size - 1` of them, drawn at
    /// random), the rest from the usual epoch-shuffled draw: a reflection on failures has more to
    /// read, and where the parent already succeeds its child can at best tie. Off: the usual
    /// draw alone, as the `gepa` package.
    pub failure_focused_minibatches: bool,
    /// The prompt templates to optimise; `None`: every prompt template of the seed resources.
    pub components: Option<Vec<String>>,
    /// Model of the reflection calls (`None`: the host's default).
    pub reflection_model: Option<String>,
    /// Temperature of the reflection calls (`None`: the backend's default).
    pub reflection_temperature: Option<f32>,
    /// Your own reflection prompt, with `{current_instruction}` and `{examples}` (and optionally
    /// `{component}`); `None`: prompts/reflection.md.
    pub reflection_prompt: Option<String>,
    /// Characters of one input, output or feedback quoted in the reflection prompt.
    pub max_quoted_chars: usize,
    /// Seed of GEPA's choices (minibatches, parents, merges); `None`: drawn from the host's random
    /// source (itself seeded by `agl-host run --seed`).
    pub seed: Option<u64>,
    /// Seconds to wait for one batch of rollouts; unfinished ones are cancelled and score 0.
    pub rollout_batch_timeout: f64,
    /// Retry and timeout policy of GEPA's rollouts (Agent-lightning's RolloutConfig).
    pub rollout_config: Option<RolloutConfig>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            max_rollouts: 500,
            max_reflection_calls: 100,
            max_iterations: None,
            minibatch_size: 3,
            perfect_score: 1.0,
            skip_perfect_score: true,
            candidate_selection: CandidateSelection::Pareto,
            acceptance: Acceptance::StrictImprovement,
            use_merge: false,
            max_merge_invocations: 5,
            merge_subsample_size: 5,
            cache_evaluation: true,
            early_rejection: true,
            failure_focused_minibatches: true,
            components: None,
            reflection_model: None,
            reflection_temperature: None,
            reflection_prompt: None,
            max_quoted_chars: 2000,
            seed: None,
            rollout_batch_timeout: 3600.0,
            rollout_config: None,
        }
    }
}

impl Config {
    /// Rejects settings that cannot work, naming the key.
    pub fn check(&self) -> Result<()> {
        for (key, value) in [
            ("max_rollouts", self.max_rollouts),
            ("minibatch_size", self.minibatch_size),
            ("merge_subsample_size", self.merge_subsample_size),
            ("max_quoted_chars", self.max_quoted_chars),
        ] {
            if value == 0 {
                return Err(Error::new(format!("gepa config: {key} must be at least 1")));
            }
        }
        if !self.perfect_score.is_finite() {
            return Err(Error::new("gepa config: perfect_score must be a number"));
        }
        if let Some(t) = self.reflection_temperature
            && !(t.is_finite() && t >= 0.0)
        {
            return Err(Error::new("gepa config: reflection_temperature must be a number ≥ 0"));
        }
        if !(self.rollout_batch_timeout.is_finite() && self.rollout_batch_timeout > 0.0) {
            return Err(Error::new(
                "gepa config: rollout_batch_timeout must be a positive number of seconds",
            ));
        }
        if let Some(components) = &self.components
            && components.is_empty()
        {
            return Err(Error::new(
                "gepa config: components must name at least one prompt template",
            ));
        }
        if let Some(prompt) = &self.reflection_prompt {
            let missing = lacks_markers(prompt, &["current_instruction", "examples"]);
            if !missing.is_empty() {
                let names: Vec<String> = missing.iter().map(|m| format!("{{{m}}}")).collect();
                return Err(Error::new(format!(
                    "gepa config: reflection_prompt lacks {}",
                    names.join(" and ")
                )));
            }
        }
        Ok(())
    }

    /// The reflection prompt in use.
    pub fn reflection_prompt(&self) -> &str {
        self.reflection_prompt.as_deref().unwrap_or(REFLECTION_PROMPT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_gepas() {
        let config: Config = serde_json::from_str("{}").expect("empty config");
        assert_eq!(config.minibatch_size, 3);
        assert_eq!(config.candidate_selection, CandidateSelection::Pareto);
        assert_eq!(config.acceptance, Acceptance::StrictImprovement);
        assert!(config.skip_perfect_score && !config.use_merge);
        assert!(config.early_rejection && config.failure_focused_minibatches && config.cache_evaluation);
        assert_eq!(config.max_merge_invocations, 5);
        assert!(config.check().is_ok());
        assert!(config.reflection_prompt().contains("{current_instruction}"));
        assert!(config.reflection_prompt().contains("{examples}"));
    }

    #[test]
    fn bad_settings_are_named() {
        let unknown = serde_json::from_str::<Config>(r#"{"max_rollout": 2}"#).unwrap_err();
        assert!(unknown.to_string().contains("max_rollout"), "{unknown}");
        let zero: Config = serde_json::from_str(r#"{"minibatch_size": 0}"#).expect("parses");
        assert!(zero.check().unwrap_err().to_string().contains("minibatch_size"));
        let prompt: Config = serde_json::from_str(r#"{"reflection_prompt": "{examples}"}"#).expect("parses");
        assert!(
            prompt
                .check()
                .unwrap_err()
                .to_string()
                .contains("{current_instruction}")
        );
        let selection = serde_json::from_str::<Config>(r#"{"candidate_selection": "best"}"#).unwrap_err();
        assert!(selection.to_string().contains("current_best"), "{selection}");
    }

    #[test]
    fn acceptance_compares_minibatch_sums() {
        assert!(Acceptance::StrictImprovement.accepts(1.0, 2.0));
        assert!(!Acceptance::StrictImprovement.accepts(2.0, 2.0));
        assert!(Acceptance::ImprovementOrEqual.accepts(2.0, 2.0));
        assert!(!Acceptance::ImprovementOrEqual.accepts(2.0, 1.0));
    }

    #[test]
    fn a_child_that_gained_nothing_where_its_parent_failed_cannot_be_accepted() {
        let parent = [1.0, 0.0, 1.0];
        // Run only on the task its parent failed: the solved ones can at best tie.
        let (gained, not_gained) = ([None, Some(1.0), None], [None, Some(0.0), None]);
        assert!(Acceptance::StrictImprovement.could_accept(&parent, &gained, 1.0));
        assert!(!Acceptance::StrictImprovement.could_accept(&parent, &not_gained, 1.0));
        assert!(Acceptance::ImprovementOrEqual.could_accept(&parent, &not_gained, 1.0));
        // Partial credit: 0.25 -> 0.5 is a gain, 0.25 -> 0.25 is not.
        let partial = [0.25, 1.0];
        assert!(Acceptance::StrictImprovement.could_accept(&partial, &[Some(0.5), None], 1.0));
        assert!(!Acceptance::StrictImprovement.could_accept(&partial, &[Some(0.25), None], 1.0));
        // A parent above perfect_score there: the child may match it.
        assert!(Acceptance::ImprovementOrEqual.could_accept(&[2.0, 0.0], &[None, Some(0.0)], 1.0));
        // Nothing run yet: a parent that solved everything cannot be strictly beaten.
        assert!(!Acceptance::StrictImprovement.could_accept(&[1.0, 1.0], &[None, None], 1.0));
    }
}
