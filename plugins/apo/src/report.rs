//! APO's result: the summary JSON (best prompt, score history, every candidate with its scores,
//! what was skipped) and its `report`, the text the host prints at the end of the run.

use serde::Serialize;
use serde_json::{Value, json};
use std::fmt::Write as _;

use crate::beam::Candidate;

/// One round's outcome (round 0: the seed's initial validation).
#[derive(Debug, Clone, Serialize)]
pub struct RoundRecord {
    pub round: u32,
    /// The round's leader (best on its val batch).
    pub leader: String,
    /// The leader's score on the round's val batch (none for round 0).
    pub leader_val_batch_score: Option<f64>,
    /// The leader's score on the full val set.
    pub leader_full_val_score: f64,
    /// The best version so far and its full-val score, after this round.
    pub best: String,
    pub best_score: f64,
    /// Candidates created this round.
    pub new_candidates: usize,
}

/// Branches that produced no candidate, by reason.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Skipped {
    pub critiques: u32,
    pub edits: u32,
    /// Edits that gave a template already tried (the parent's, say).
    pub duplicates: u32,
}

pub struct Summary<'a> {
    pub candidates: &'a [Candidate],
    pub best: usize,
    pub best_score: f64,
    pub history: &'a [RoundRecord],
    pub skipped: &'a Skipped,
    pub seed: u64,
    pub prompt_resource: &'a str,
}

fn score_text(score: Option<f64>) -> String {
    score.map_or_else(|| "-".to_owned(), |s| format!("{s:.4}"))
}

impl Summary<'_> {
    pub fn to_json(&self) -> Value {
        let best = &self.candidates[self.best];
        let seed = &self.candidates[0];
        json!({
            "best": {
                "resources_id": best.resources_id,
                "score": self.best_score,
                "template": best.template,
            },
            "seed_prompt": {
                "resources_id": seed.resources_id,
                "score": seed.full_val_score,
            },
            "prompt_resource": self.prompt_resource,
            "history": self.history,
            "candidates": self.candidates,
            "skipped": self.skipped,
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
            "APO: best prompt {} scores {:.4} on val (seed prompt {}: {})",
            best.resources_id,
            self.best_score,
            self.candidates[0].resources_id,
            score_text(self.candidates[0].full_val_score)
        );
        let _ = writeln!(out, "  round  leader  val batch  full val  best");
        for r in self.history {
            let _ = writeln!(
                out,
                "  {:>5}  {:<6}  {:>9}  {:>8.4}  {} {:.4}",
                r.round,
                r.leader,
                score_text(r.leader_val_batch_score),
                r.leader_full_val_score,
                r.best,
                r.best_score
            );
        }
        let _ = writeln!(
            out,
            "  {} candidates; branches without a new one: {} failed critiques, {} failed edits, {} duplicates",
            self.candidates.len(),
            self.skipped.critiques,
            self.skipped.edits,
            self.skipped.duplicates
        );
        let _ = writeln!(out, "  best `{}` template:", self.prompt_resource);
        for line in best.template.lines() {
            let _ = writeln!(out, "    {line}");
        }
        out
    }
}
