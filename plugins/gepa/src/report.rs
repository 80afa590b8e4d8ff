//! GEPA's result: the candidates with their lineage (parents, the mutated component or the merge,
//! minibatch and val scores), every proposal tried, the per-val-task Pareto front, the budgets,
//! and the `report` the host prints at the end of the run.

use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::budget::Budget;
use crate::merge::Components;

/// How a candidate came to be.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Origin {
    Seed,
    /// A reflective mutation of `component`.
    Mutation {
        component: String,
    },
    /// A merge of its two parents over `ancestor`.
    Merge {
        ancestor: String,
    },
}

/// One candidate of the pool (accepted proposals only).
#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    pub index: usize,
    /// Its resources version, e.g. `v3`.
    pub resources_id: String,
    /// Its parents' resources versions (none for the seed, two for a merge).
    pub parents: Vec<String>,
    #[serde(skip)]
    pub parent_indices: Vec<usize>,
    pub origin: Origin,
    /// The iteration that created it (0: the seed).
    pub iteration: u32,
    pub components: Components,
    /// Its score on each val task, in val order, and their mean.
    pub val_scores: Vec<f64>,
    pub val_score: f64,
    /// The component the next mutation of this candidate rewrites (round robin).
    #[serde(skip)]
    pub next_component: usize,
}

/// One proposal, kept or not.
#[derive(Debug, Clone, Serialize)]
pub struct Proposal {
    pub iteration: u32,
    /// `mutation` or `merge`.
    pub kind: &'static str,
    pub parents: Vec<String>,
    /// The mutated component (mutations).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    /// The merge's common ancestor (merges).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ancestor: Option<String>,
    /// `train` (a mutation's minibatch) or `val` (a merge's subsample).
    pub split: &'static str,
    /// The minibatch (or subsample): task indices into the split.
    pub minibatch: Vec<usize>,
    /// Each parent's scores on it, then the proposal's (`None`: a task it was not run on, when
    /// it was rejected early).
    pub parent_scores: Vec<Vec<f64>>,
    pub scores: Vec<Option<f64>>,
    /// The proposal's resources version.
    pub resources_id: String,
    pub accepted: bool,
    /// Its mean val score, when accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub val_score: Option<f64>,
}

/// Iterations or reflections that produced no proposal, by reason.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Skipped {
    /// The parent solved every minibatch task: nothing to reflect on.
    pub perfect_minibatch: u32,
    /// The reflection call failed (an LLM error).
    pub reflection_errors: u32,
    /// The answer held no text, repeated the current one or dropped a placeholder.
    pub malformed_answers: u32,
    /// A scheduled merge found no pair to merge.
    pub no_merge_found: u32,
    /// Children rejected before running the minibatch tasks their parent solved
    /// (`early_rejection`): they gained nothing where the parent fell short.
    pub early_rejections: u32,
}

pub struct Summary<'a> {
    pub candidates: &'a [Candidate],
    pub proposals: &'a [Proposal],
    pub front: &'a [BTreeSet<usize>],
    pub best: usize,
    pub budget: &'a Budget,
    pub skipped: &'a Skipped,
    /// Rollouts answered from the evaluation cache instead of run (and paid for).
    pub cache_hits: usize,
    pub iterations: u32,
    pub stopped_because: &'a str,
    pub seed: u64,
}

impl Summary<'_> {
    pub fn to_json(&self) -> Value {
        let best = &self.candidates[self.best];
        let seed = &self.candidates[0];
        let front: Vec<Value> = self
            .front
            .iter()
            .enumerate()
            .map(|(task, best)| {
                let score = best.first().map(|&c| self.candidates[c].val_scores[task]);
                let ids: Vec<&str> = best.iter().map(|&c| self.candidates[c].resources_id.as_str()).collect();
                json!({"val_task": task, "score": score, "candidates": ids})
            })
            .collect();
        json!({
            "best": {
                "resources_id": best.resources_id,
                "score": best.val_score,
                "components": best.components,
            },
            "seed_candidate": {"resources_id": seed.resources_id, "score": seed.val_score},
            "components": seed.components.keys().collect::<Vec<_>>(),
            "candidates": self.candidates,
            "proposals": self.proposals,
            "pareto_front": front,
            "budget": self.budget,
            "skipped": self.skipped,
            "cache_hits": self.cache_hits,
            "iterations": self.iterations,
            "stopped_because": self.stopped_because,
            "seed": self.seed,
            "report": self.text(),
        })
    }

    /// The report printed by the host at the end of the run.
    pub fn text(&self) -> String {
        let best = &self.candidates[self.best];
        let mut out = String::new();
        let _ = writeln!(
            out,
            "GEPA: best candidate {} scores {:.4} on val (seed {}: {:.4}); {} iterations, stopped: {}",
            best.resources_id,
            best.val_score,
            self.candidates[0].resources_id,
            self.candidates[0].val_score,
            self.iterations,
            self.stopped_because
        );
        let _ = writeln!(out, "  candidate  parents  origin                val");
        for c in self.candidates {
            let origin = match &c.origin {
                Origin::Seed => "seed".to_owned(),
                Origin::Mutation { component } => format!("mutation of {component}"),
                Origin::Merge { ancestor } => format!("merge over {ancestor}"),
            };
            let _ = writeln!(
                out,
                "  {:<9}  {:<7}  {:<20}  {:.4}",
                c.resources_id,
                if c.parents.is_empty() {
                    "-".to_owned()
                } else {
                    c.parents.join(",")
                },
                origin,
                c.val_score
            );
        }
        let accepted = self.proposals.iter().filter(|p| p.accepted).count();
        let _ = writeln!(
            out,
            "  {} proposals, {} accepted; rollouts {}/{} ({} more from the cache), reflection calls {}/{}",
            self.proposals.len(),
            accepted,
            self.budget.rollouts_used,
            self.budget.max_rollouts,
            self.cache_hits,
            self.budget.reflection_calls_used,
            self.budget.max_reflection_calls
        );
        let _ = writeln!(
            out,
            "  skipped: {} perfect minibatches, {} failed reflections, {} malformed answers, {} merges not found; {} children rejected early",
            self.skipped.perfect_minibatch,
            self.skipped.reflection_errors,
            self.skipped.malformed_answers,
            self.skipped.no_merge_found,
            self.skipped.early_rejections
        );
        for (name, text) in &best.components {
            let _ = writeln!(out, "  best `{name}`:");
            for line in text.lines() {
                let _ = writeln!(out, "    {line}");
            }
        }
        out
    }
}
