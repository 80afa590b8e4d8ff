//! GEPA's system-aware merge: two undominated candidates that are not each other's ancestors, and
//! a common ancestor no better than either (drawn weighted by its mean val score), give a new
//! candidate that takes, component by component, the text that changed: where one descendant
//! kept the ancestor's text and the other changed it, the changed one; where both changed it, the
//! text of the descendant with the higher mean (a coin flip on ties); where both agree, theirs.
//! A triplet, or a merged description, is tried once. The merged candidate is first scored on a
//! val subsample drawn from the tasks where one parent beats the other, then the reverse, then
//! ties.

use rand::Rng;
use rand::seq::index::sample;
use std::collections::{BTreeMap, BTreeSet};

/// A candidate's texts, by component name.
pub type Components = BTreeMap<String, String>;

/// How many pairs are drawn before giving up, per attempt (GEPA's 10).
const MAX_ATTEMPTS: usize = 10;

/// Merges already tried: (first, second, ancestor) triplets and (first, second, description).
#[derive(Debug, Clone, Default)]
pub struct MergesTried {
    triplets: BTreeSet<(usize, usize, usize)>,
    descriptions: BTreeSet<(usize, usize, Vec<usize>)>,
}

/// What the merge step sees of the candidates.
pub struct Pool<'a> {
    pub components: &'a [Components],
    /// Each candidate's parents (none for the seed; two for a merge).
    pub parents: &'a [Vec<usize>],
    pub means: &'a [f64],
}

/// A merge found: the new components, its two parents (`first < second`) and their ancestor.
#[derive(Debug, Clone, PartialEq)]
pub struct Merge {
    pub components: Components,
    pub first: usize,
    pub second: usize,
    pub ancestor: usize,
}

/// Every ancestor of `node`.
pub fn ancestors(parents: &[Vec<usize>], node: usize) -> BTreeSet<usize> {
    let mut found = BTreeSet::new();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        for &p in &parents[n] {
            if found.insert(p) {
                stack.push(p);
            }
        }
    }
    found
}

/// Whether merging `a` and `b` over `ancestor` changes something: a component one of them kept
/// from the ancestor while the other changed it.
fn has_desirable_component(pool: &Pool<'_>, ancestor: usize, a: usize, b: usize) -> bool {
    pool.components[ancestor].iter().any(|(name, anc)| {
        let (x, y) = (&pool.components[a][name], &pool.components[b][name]);
        (anc == x || anc == y) && x != y
    })
}

/// A weighted draw (uniform when every weight is 0).
fn weighted_choice(items: &[usize], weights: &[f64], rng: &mut impl Rng) -> usize {
    let total: f64 = weights.iter().map(|w| w.max(0.0)).sum();
    if total <= 0.0 {
        return items[rng.random_range(0..items.len())];
    }
    let mut pick = rng.random::<f64>() * total;
    for (&item, &w) in items.iter().zip(weights) {
        let w = w.max(0.0);
        if pick < w {
            return item;
        }
        pick -= w;
    }
    items[items.len() - 1]
}

/// A pair of `candidates` and a common ancestor worth merging over, if one is found.
fn find_triplet(
    pool: &Pool<'_>,
    candidates: &[usize],
    tried: &MergesTried,
    rng: &mut impl Rng,
) -> Option<(usize, usize, usize)> {
    for _ in 0..MAX_ATTEMPTS {
        if candidates.len() < 2 {
            return None;
        }
        let picked = sample(rng, candidates.len(), 2);
        let (mut i, mut j) = (candidates[picked.index(0)], candidates[picked.index(1)]);
        if j < i {
            std::mem::swap(&mut i, &mut j);
        }
        let (ancestors_i, ancestors_j) = (ancestors(pool.parents, i), ancestors(pool.parents, j));
        if ancestors_i.contains(&j) || ancestors_j.contains(&i) {
            continue;
        }
        let common: Vec<usize> = ancestors_i
            .intersection(&ancestors_j)
            .copied()
            .filter(|&a| !tried.triplets.contains(&(i, j, a)))
            .filter(|&a| pool.means[a] <= pool.means[i] && pool.means[a] <= pool.means[j])
            .filter(|&a| has_desirable_component(pool, a, i, j))
            .collect();
        if !common.is_empty() {
            let weights: Vec<f64> = common.iter().map(|&a| pool.means[a]).collect();
            return Some((i, j, weighted_choice(&common, &weights, rng)));
        }
    }
    None
}

/// The merged components of `first` and `second` over `ancestor`, and the description GEPA
/// remembers it by (which candidate each component came from, in component order).
pub fn merge_components(
    pool: &Pool<'_>,
    first: usize,
    second: usize,
    ancestor: usize,
    rng: &mut impl Rng,
) -> (Components, Vec<usize>) {
    let mut merged = pool.components[ancestor].clone();
    let mut description = Vec::new();
    for (name, anc) in &pool.components[ancestor] {
        let (x, y) = (&pool.components[first][name], &pool.components[second][name]);
        let from = if (anc == x || anc == y) && x != y {
            // One kept the ancestor's text: take the other's change.
            if anc == x { second } else { first }
        } else if anc != x && anc != y {
            // Both changed it (differently or not): the better one's, a coin flip on ties.
            let (mx, my) = (pool.means[first], pool.means[second]);
            if mx > my {
                first
            } else if my > mx {
                second
            } else if rng.random_bool(0.5) {
                first
            } else {
                second
            }
        } else {
            // Both kept it.
            first
        };
        merged.insert(name.clone(), pool.components[from][name].clone());
        description.push(from);
    }
    (merged, description)
}

/// A merge of two of `candidates` (the front's undominated candidates), if one is found that was
/// not tried before; it is remembered as tried.
pub fn propose(pool: &Pool<'_>, candidates: &[usize], tried: &mut MergesTried, rng: &mut impl Rng) -> Option<Merge> {
    if candidates.len() < 2 || pool.components.len() < 3 {
        return None;
    }
    for _ in 0..MAX_ATTEMPTS {
        let Some((first, second, ancestor)) = find_triplet(pool, candidates, tried, rng) else {
            continue;
        };
        let (components, description) = merge_components(pool, first, second, ancestor, rng);
        if !tried.descriptions.insert((first, second, description)) {
            continue;
        }
        tried.triplets.insert((first, second, ancestor));
        return Some(Merge {
            components,
            first,
            second,
            ancestor,
        });
    }
    None
}

/// Up to `n` val tasks to score a merge on: from the tasks where `a` beats `b`, where `b` beats
/// `a`, and where they tie, about a third each, the rest from any task.
pub fn subsample(a: &[f64], b: &[f64], n: usize, rng: &mut impl Rng) -> Vec<usize> {
    let tasks = a.len().min(b.len());
    let buckets: [Vec<usize>; 3] = [
        (0..tasks).filter(|&t| a[t] > b[t]).collect(),
        (0..tasks).filter(|&t| b[t] > a[t]).collect(),
        (0..tasks).filter(|&t| a[t] == b[t]).collect(),
    ];
    let each = n.div_ceil(3).max(1);
    let mut selected: Vec<usize> = Vec::new();
    for bucket in &buckets {
        if selected.len() >= n {
            break;
        }
        let take = bucket.len().min(each).min(n - selected.len());
        selected.extend(sample(rng, bucket.len(), take).into_iter().map(|i| bucket[i]));
    }
    let unused: Vec<usize> = (0..tasks).filter(|t| !selected.contains(t)).collect();
    let remaining = n.saturating_sub(selected.len()).min(unused.len());
    selected.extend(sample(rng, unused.len(), remaining).into_iter().map(|i| unused[i]));
    selected
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn components(pairs: &[(&str, &str)]) -> Components {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    /// Seed 0 (a, b); 1 changed a; 2 changed b; 3 changed a again from 1.
    fn family() -> (Vec<Components>, Vec<Vec<usize>>, Vec<f64>) {
        (
            vec![
                components(&[("a", "A0"), ("b", "B0")]),
                components(&[("a", "A1"), ("b", "B0")]),
                components(&[("a", "A0"), ("b", "B2")]),
                components(&[("a", "A3"), ("b", "B0")]),
            ],
            vec![vec![], vec![0], vec![0], vec![1]],
            vec![0.25, 0.5, 0.5, 0.75],
        )
    }

    #[test]
    fn ancestors_follow_every_parent() {
        let (_, parents, _) = family();
        assert_eq!(ancestors(&parents, 3), [0, 1].into());
        assert!(ancestors(&parents, 0).is_empty());
        let with_merge = vec![vec![], vec![0], vec![0], vec![1, 2]];
        assert_eq!(ancestors(&with_merge, 3), [0, 1, 2].into());
    }

    #[test]
    fn each_component_comes_from_the_descendant_that_changed_it() {
        let (comps, parents, means) = family();
        let pool = Pool {
            components: &comps,
            parents: &parents,
            means: &means,
        };
        let mut rng = StdRng::seed_from_u64(1);
        let (merged, description) = merge_components(&pool, 1, 2, 0, &mut rng);
        assert_eq!(merged, components(&[("a", "A1"), ("b", "B2")]));
        assert_eq!(description, [1, 2]);
        // 2 kept `a` and 3 changed it; 3 kept `b` and 2 changed it.
        let (merged, _) = merge_components(&pool, 2, 3, 0, &mut rng);
        assert_eq!(merged, components(&[("a", "A3"), ("b", "B2")]));
    }

    #[test]
    fn both_changed_takes_the_better_descendants_text() {
        let comps = vec![
            components(&[("a", "A0")]),
            components(&[("a", "A1")]),
            components(&[("a", "A2")]),
        ];
        let parents = vec![vec![], vec![0], vec![0]];
        let means = vec![0.0, 0.4, 0.6];
        let pool = Pool {
            components: &comps,
            parents: &parents,
            means: &means,
        };
        let (merged, description) = merge_components(&pool, 1, 2, 0, &mut StdRng::seed_from_u64(0));
        assert_eq!(merged["a"], "A2");
        assert_eq!(description, [2]);
        // One component changed by both: no component a descendant kept, so nothing to merge.
        assert!(!has_desirable_component(&pool, 0, 1, 2));
        let mut tried = MergesTried::default();
        assert_eq!(propose(&pool, &[1, 2], &mut tried, &mut StdRng::seed_from_u64(0)), None);
    }

    #[test]
    fn a_merge_is_proposed_once_and_never_between_ancestor_and_descendant() {
        let (comps, parents, means) = family();
        let pool = Pool {
            components: &comps,
            parents: &parents,
            means: &means,
        };
        let mut tried = MergesTried::default();
        let mut rng = StdRng::seed_from_u64(5);
        // 1 is 3's parent: never merged with it.
        assert_eq!(propose(&pool, &[1, 3], &mut tried, &mut rng), None);
        let merge = propose(&pool, &[1, 2], &mut tried, &mut rng).expect("1 and 2 over 0");
        assert_eq!((merge.first, merge.second, merge.ancestor), (1, 2, 0));
        assert_eq!(merge.components, components(&[("a", "A1"), ("b", "B2")]));
        assert_eq!(propose(&pool, &[1, 2], &mut tried, &mut rng), None, "tried already");
        // An ancestor better than a descendant is not merged over.
        let better_seed = vec![0.9, 0.5, 0.5, 0.75];
        let pool = Pool {
            components: &comps,
            parents: &parents,
            means: &better_seed,
        };
        assert_eq!(propose(&pool, &[2, 3], &mut MergesTried::default(), &mut rng), None);
    }

    #[test]
    fn the_subsample_mixes_wins_losses_and_ties() {
        let a = [1.0, 1.0, 0.0, 0.0, 0.5, 0.5, 1.0, 0.0];
        let b = [0.0, 0.0, 1.0, 1.0, 0.5, 0.5, 0.0, 1.0];
        let mut rng = StdRng::seed_from_u64(2);
        let picked = subsample(&a, &b, 5, &mut rng);
        assert_eq!(picked.len(), 5);
        assert_eq!(picked.iter().collect::<BTreeSet<_>>().len(), 5, "{picked:?}");
        let wins = picked.iter().filter(|&&t| a[t] > b[t]).count();
        let losses = picked.iter().filter(|&&t| b[t] > a[t]).count();
        let ties = picked.iter().filter(|&&t| a[t] == b[t]).count();
        assert_eq!((wins, losses, ties), (2, 2, 1));
        assert_eq!(
            subsample(&a[..3], &b[..3], 5, &mut rng).len(),
            3,
            "at most the tasks there are"
        );
        let again = subsample(&a, &b, 5, &mut StdRng::seed_from_u64(2));
        assert_eq!(again, picked, "same seed, same subsample");
    }
}
