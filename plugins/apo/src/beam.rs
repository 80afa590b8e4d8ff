//! The beam: prompt candidates, choosing parents for a round (the beam repeated when it is
//! shorter than the beam width), and keeping the best `beam_width` of a scored pool (higher
//! score first, older candidate first on ties, one candidate per distinct template).

use serde::Serialize;
use std::collections::BTreeSet;

/// One prompt version APO has tried.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    /// Its resources version, e.g. `v3`.
    pub resources_id: String,
    pub template: String,
    /// The version it was edited from (`None` for the seed).
    pub parent: Option<String>,
    /// The round that created it (0 for the seed).
    pub round: u32,
    /// Its mean reward on each val batch it was scored on, in order.
    pub val_batch_scores: Vec<f64>,
    /// Its mean reward on the full val set, when it was measured (as a round's leader).
    pub full_val_score: Option<f64>,
    /// The critique its edit was based on.
    pub critique: Option<String>,
}

impl Candidate {
    pub fn seed(resources_id: String, template: String) -> Self {
        Self {
            resources_id,
            template,
            parent: None,
            round: 0,
            val_batch_scores: Vec::new(),
            full_val_score: None,
            critique: None,
        }
    }

    /// Its score on the latest val batch.
    pub fn latest_score(&self) -> Option<f64> {
        self.val_batch_scores.last().copied()
    }
}

/// `width` parents for a round: the beam in order, repeated as often as needed.
pub fn choose_parents(beam: &[usize], width: usize) -> Vec<usize> {
    if beam.is_empty() {
        return Vec::new();
    }
    beam.iter().copied().cycle().take(width.max(beam.len())).collect()
}

/// The indices (into `candidates`) of the best `width` of `pool` by latest score; ties keep the
/// older candidate (lower index); a template already kept is not kept twice.
pub fn select_beam(candidates: &[Candidate], pool: &[usize], width: usize) -> Vec<usize> {
    let mut ranked: Vec<usize> = pool.to_vec();
    ranked.sort_by(|&a, &b| {
        let score = |i: usize| candidates[i].latest_score().unwrap_or(f64::NEG_INFINITY);
        score(b).total_cmp(&score(a)).then(a.cmp(&b))
    });
    let mut templates = BTreeSet::new();
    ranked
        .into_iter()
        .filter(|&i| templates.insert(candidates[i].template.as_str()))
        .take(width.max(1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scored(id: &str, template: &str, score: f64) -> Candidate {
        let mut c = Candidate::seed(id.into(), template.into());
        c.val_batch_scores.push(score);
        c
    }

    #[test]
    fn a_short_beam_is_repeated_to_the_beam_width() {
        assert_eq!(choose_parents(&[3, 5], 4), [3, 5, 3, 5]);
        assert_eq!(choose_parents(&[1, 2, 3, 4], 4), [1, 2, 3, 4]);
        assert_eq!(choose_parents(&[7], 3), [7, 7, 7]);
        assert!(choose_parents(&[], 4).is_empty());
    }

    #[test]
    fn the_best_scores_are_kept_ties_to_the_older() {
        let candidates = vec![
            scored("v0", "a", 0.5),
            scored("v1", "b", 0.75),
            scored("v2", "c", 0.5),
            scored("v3", "d", 0.25),
            scored("v4", "e", 1.0),
        ];
        assert_eq!(select_beam(&candidates, &[0, 1, 2, 3, 4], 3), [4, 1, 0]);
        assert_eq!(select_beam(&candidates, &[3, 2], 4), [2, 3]);
    }

    #[test]
    fn a_template_is_kept_once_and_unscored_candidates_rank_last() {
        let mut candidates = vec![
            scored("v0", "same", 0.5),
            scored("v1", "same", 0.9),
            scored("v2", "x", 0.1),
        ];
        candidates.push(Candidate::seed("v3".into(), "y".into()));
        assert_eq!(select_beam(&candidates, &[0, 1, 2, 3], 4), [1, 2, 3]);
    }
}
