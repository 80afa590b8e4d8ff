//! GEPA — reflective prompt evolution (Agrawal et al. 2025, arXiv 2507.19457), as the `gepa`
//! package runs it: a candidate is a set of named texts (every prompt template of the seed
//! resources). The seed is scored on every val task. Each iteration a parent is sampled from the
//! per-val-task Pareto front, runs a train minibatch, and the reflection model rewrites one of its
//! components (round robin) from the minibatch's input, output, reward and feedback; the child
//! runs the same minibatch and is kept only when it does better there, then is scored on every val
//! task and joins the front. With `use_merge`, after an accepted mutation the next iteration first
//! tries a system-aware merge of two front candidates over a common ancestor. Rollouts and
//! reflection calls are budgeted; every choice comes from one seeded generator, so the same seed
//! gives the same run, and a resumed run (a replayed store) retraces the stopped one.

mod budget;
mod cache;
mod config;
mod front;
mod merge;
mod minibatch;
mod reflect;
mod report;

use agl_algorithm_sdk::batches::BatchIterator;
use agl_algorithm_sdk::evaluate::{Job, Outcome, Settings, run_jobs};
use agl_algorithm_sdk::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

use budget::Budget;
use cache::{EvalCache, Split};
use config::{CandidateSelection, Config};
use merge::{Components, MergesTried, Pool};
use reflect::Record;
use report::{Candidate, Origin, Proposal, Skipped, Summary};

/// The components to optimise and their template engines.
fn components(config: &Config, resources: &Resources) -> Result<BTreeMap<String, PromptTemplate>> {
    let names: Vec<String> = match &config.components {
        Some(names) => names.clone(),
        None => resources.prompt_template_names().map(str::to_owned).collect(),
    };
    if names.is_empty() {
        return Err(Error::new(
            "gepa: the resources have no prompt template to optimise (give --resources with one)",
        ));
    }
    names
        .into_iter()
        .map(|name| {
            let template = resources
                .prompt_template(&name)
                .map_err(|e| e.context("gepa: components"))?;
            Ok((name, template))
        })
        .collect()
}

struct Gepa<'a> {
    host: &'a Host,
    data: &'a Datasets,
    config: &'a Config,
    rng: StdRng,
    engines: BTreeMap<String, String>,
    versions: agl_algorithm_sdk::Versions<'a>,
    settings: Settings<'a>,
    budget: Budget,
    cache: EvalCache,
    candidates: Vec<Candidate>,
    proposals: Vec<Proposal>,
    skipped: Skipped,
    best: usize,
}

impl Gepa<'_> {
    fn component_names(&self) -> Vec<String> {
        self.engines.keys().cloned().collect()
    }

    fn publish(&mut self, components: &Components) -> Result<String> {
        let templates: Vec<(String, PromptTemplate)> = components
            .iter()
            .map(|(name, text)| {
                let engine = self.engines[name].clone();
                (
                    name.clone(),
                    PromptTemplate {
                        template: text.clone(),
                        engine,
                    },
                )
            })
            .collect();
        self.versions.publish(templates.iter().map(|(n, t)| (n.as_str(), t)))
    }

    /// The outcomes of `indices` of `split` for the candidate `components` (published as
    /// `resources_id`): those already paid for come from the cache, the rest are run and count
    /// against the budget.
    fn evaluate(
        &mut self,
        resources_id: &str,
        components: &Components,
        mode: Mode,
        indices: &[usize],
        label: &str,
    ) -> Result<Vec<Outcome>> {
        let (tasks, split) = if mode == Mode::Val {
            (&self.data.val, Split::Val)
        } else {
            (&self.data.train, Split::Train)
        };
        let missing = self.cache.missing(components, split, indices);
        self.cache.hits += indices.len() - missing.len();
        let mut fresh: BTreeMap<usize, Outcome> = BTreeMap::new();
        if !missing.is_empty() {
            let job = Job {
                resources_id,
                tasks: missing.iter().map(|&i| tasks[i].as_str()).collect(),
                mode,
            };
            self.budget.spend_rollouts(missing.len());
            let mut evaluations = run_jobs(self.host, &[job], &self.settings, label)?;
            let outcomes = evaluations.pop().map(|e| e.outcomes).unwrap_or_default();
            for (&task, outcome) in missing.iter().zip(outcomes) {
                self.cache.put(components, split, task, &outcome);
                fresh.insert(task, outcome);
            }
        }
        Ok(indices
            .iter()
            .filter_map(|&task| {
                fresh
                    .get(&task)
                    .or_else(|| self.cache.get(components, split, task))
                    .cloned()
            })
            .collect())
    }

    fn val_indices(&self) -> Vec<usize> {
        (0..self.data.val.len()).collect()
    }

    fn means(&self) -> Vec<f64> {
        self.candidates.iter().map(|c| c.val_score).collect()
    }

    fn front(&self) -> Vec<BTreeSet<usize>> {
        let scores: Vec<Vec<f64>> = self.candidates.iter().map(|c| c.val_scores.clone()).collect();
        front::per_task_best(&scores, self.data.val.len())
    }

    /// Scores a new candidate on every val task and adds it to the pool; reports a new best.
    fn add_candidate(
        &mut self,
        resources_id: String,
        components: Components,
        parents: Vec<usize>,
        origin: Origin,
        iteration: u32,
        label: &str,
    ) -> Result<usize> {
        let outcomes = self.evaluate(&resources_id, &components, Mode::Val, &self.val_indices(), label)?;
        let val_scores: Vec<f64> = outcomes.iter().map(|o| o.reward).collect();
        let val_score = agl_algorithm_sdk::evaluate::mean(val_scores.iter().copied());
        let next_component = parents
            .iter()
            .map(|&p| self.candidates[p].next_component)
            .max()
            .unwrap_or(0);
        let index = self.candidates.len();
        self.candidates.push(Candidate {
            index,
            resources_id,
            parents: parents
                .iter()
                .map(|&p| self.candidates[p].resources_id.clone())
                .collect(),
            parent_indices: parents,
            origin,
            iteration,
            components,
            val_scores,
            val_score,
            next_component,
        });
        if index == 0 || val_score > self.candidates[self.best].val_score {
            self.best = index;
            let c = &self.candidates[index];
            self.host.best(
                val_score,
                Some(&c.resources_id),
                &json!({"components": c.components, "iteration": iteration, "parents": c.parents}),
            )?;
        }
        Ok(index)
    }

    fn select_parent(&mut self) -> usize {
        let means = self.means();
        match self.config.candidate_selection {
            CandidateSelection::CurrentBest => front::best_mean(&means),
            CandidateSelection::Pareto => {
                front::sample_parent(&self.front(), &means, &mut self.rng).unwrap_or_else(|| front::best_mean(&means))
            }
        }
    }

    /// One reflective mutation: whether a child was accepted, or `None` when its worst case —
    /// the parent's minibatch tasks not yet paid for, the child's minibatch and the child's val
    /// run — does not fit the rollouts left (nothing is spent then).
    fn mutate(&mut self, iteration: u32, batches: &mut BatchIterator) -> Result<Option<bool>> {
        let label = format!("iteration {iteration}");
        let parent = self.select_parent();
        let usual = batches.next_batch(&mut self.rng);
        let parent_id = self.candidates[parent].resources_id.clone();
        let parent_components = self.candidates[parent].components.clone();
        let minibatch = if self.config.failure_focused_minibatches {
            let failures = self
                .cache
                .known_failures(&parent_components, Split::Train, self.config.perfect_score);
            minibatch::focus_on_failures(usual, failures, &mut self.rng)
        } else {
            usual
        };
        let unpaid = self.cache.missing(&parent_components, Split::Train, &minibatch).len();
        let worst_case = Budget::mutation_rollouts(unpaid, minibatch.len(), self.data.val.len());
        if !self.budget.can_afford(worst_case, 1) {
            return Ok(None);
        }
        let outcomes = self.evaluate(
            &parent_id,
            &parent_components,
            Mode::Train,
            &minibatch,
            &format!("{label}: {parent_id} on a minibatch"),
        )?;
        let parent_scores: Vec<f64> = outcomes.iter().map(|o| o.reward).collect();
        if self.config.skip_perfect_score && parent_scores.iter().all(|&s| s >= self.config.perfect_score) {
            self.host.debug(&format!(
                "gepa: {label}: {parent_id} solved its minibatch; nothing to reflect on"
            ));
            self.skipped.perfect_minibatch += 1;
            return Ok(Some(false));
        }
        let names = self.component_names();
        let component = names[self.candidates[parent].next_component % names.len()].clone();
        self.candidates[parent].next_component += 1;
        let current = self.candidates[parent].components[&component].clone();
        let records: Vec<Record> = outcomes
            .iter()
            .zip(&minibatch)
            .map(|(o, &i)| Record::read(self.host, o, &self.data.train[i]))
            .collect();
        self.host
            .status(&format!("{label}: reflecting on `{component}` of {parent_id}"));
        let prompt = reflect::prompt(self.config, &component, &current, &records);
        self.budget.spend_reflection();
        let answer = match reflect::ask(self.host, self.config, prompt) {
            Ok(answer) => answer,
            Err(problem) => {
                self.host.warn(&format!("gepa: {label}: reflection skipped: {problem}"));
                self.skipped.reflection_errors += 1;
                return Ok(Some(false));
            }
        };
        let text = match reflect::parse(&answer, &current, &self.engines[&component]) {
            Ok(text) => text,
            Err(problem) => {
                self.host.warn(&format!(
                    "gepa: {label}: malformed reflection answer skipped: {problem}"
                ));
                self.skipped.malformed_answers += 1;
                return Ok(Some(false));
            }
        };
        let mut child = self.candidates[parent].components.clone();
        child.insert(component.clone(), text);
        let child_id = self.publish(&child)?;
        let (scores, after) = self.child_on_minibatch(&child_id, &child, &minibatch, &parent_scores, &label)?;
        let before = parent_scores.iter().sum::<f64>();
        let accepted = after.is_some_and(|after| self.config.acceptance.accepts(before, after));
        let mut proposal = Proposal {
            iteration,
            kind: "mutation",
            parents: vec![parent_id.clone()],
            component: Some(component.clone()),
            ancestor: None,
            split: "train",
            minibatch,
            parent_scores: vec![parent_scores],
            scores,
            resources_id: child_id.clone(),
            accepted,
            val_score: None,
        };
        let verdict = match after {
            Some(after) => format!(
                "{after} vs {before} on the minibatch: {}",
                if accepted { "accepted" } else { "rejected" }
            ),
            None => format!("rejected early: too little gain on the tasks {parent_id} fell short on"),
        };
        self.host.info(&format!(
            "gepa: {label}: {child_id} (`{component}` of {parent_id}) {verdict}"
        ));
        if accepted {
            let index = self.add_candidate(
                child_id.clone(),
                child,
                vec![parent],
                Origin::Mutation { component },
                iteration,
                &format!("{label}: {child_id} on val"),
            )?;
            proposal.val_score = Some(self.candidates[index].val_score);
        }
        self.proposals.push(proposal);
        Ok(Some(accepted))
    }

    /// The child's scores on the minibatch (`None` for a task not run) and their sum (`None`
    /// when it was rejected early). With `early_rejection`, the child first runs the tasks its
    /// parent fell short on; the tasks the parent solved run only when the child could still be
    /// accepted, since on those it can at most tie (a reward is at most `perfect_score`).
    fn child_on_minibatch(
        &mut self,
        child_id: &str,
        child: &Components,
        minibatch: &[usize],
        parent_scores: &[f64],
        label: &str,
    ) -> Result<(Vec<Option<f64>>, Option<f64>)> {
        let perfect = self.config.perfect_score;
        let positions: Vec<usize> = (0..minibatch.len()).collect();
        let (first, second): (Vec<usize>, Vec<usize>) = if self.config.early_rejection {
            positions.into_iter().partition(|&i| parent_scores[i] < perfect)
        } else {
            (positions, Vec::new())
        };
        let mut scores: Vec<Option<f64>> = vec![None; minibatch.len()];
        for (stage, part) in [first, second].into_iter().enumerate() {
            if part.is_empty() {
                continue;
            }
            if stage == 1 && !self.config.acceptance.could_accept(parent_scores, &scores, perfect) {
                self.skipped.early_rejections += 1;
                return Ok((scores, None));
            }
            let tasks: Vec<usize> = part.iter().map(|&i| minibatch[i]).collect();
            let outcomes = self.evaluate(
                child_id,
                child,
                Mode::Train,
                &tasks,
                &format!("{label}: {child_id} on the minibatch"),
            )?;
            for (&i, outcome) in part.iter().zip(outcomes) {
                scores[i] = Some(outcome.reward);
            }
        }
        let sum = scores.iter().flatten().sum();
        Ok((scores, Some(sum)))
    }

    /// One merge attempt: `None` when no pair was found (the iteration goes on to a mutation),
    /// else whether the merge was accepted.
    fn merge(&mut self, iteration: u32, tried: &mut MergesTried) -> Result<Option<bool>> {
        let label = format!("iteration {iteration}");
        let means = self.means();
        let merge_candidates = front::dominators(&self.front(), &means);
        let all_components: Vec<Components> = self.candidates.iter().map(|c| c.components.clone()).collect();
        let parents: Vec<Vec<usize>> = self.candidates.iter().map(|c| c.parent_indices.clone()).collect();
        let pool = Pool {
            components: &all_components,
            parents: &parents,
            means: &means,
        };
        let Some(found) = merge::propose(&pool, &merge_candidates, tried, &mut self.rng) else {
            self.skipped.no_merge_found += 1;
            return Ok(None);
        };
        let (first, second) = (&self.candidates[found.first], &self.candidates[found.second]);
        let subsample = merge::subsample(
            &first.val_scores,
            &second.val_scores,
            self.config.merge_subsample_size,
            &mut self.rng,
        );
        let parent_scores: Vec<Vec<f64>> = [first, second]
            .iter()
            .map(|c| subsample.iter().map(|&t| c.val_scores[t]).collect())
            .collect();
        let parent_ids = vec![first.resources_id.clone(), second.resources_id.clone()];
        let ancestor_id = self.candidates[found.ancestor].resources_id.clone();
        let merged_id = self.publish(&found.components)?;
        let outcomes = self.evaluate(
            &merged_id,
            &found.components,
            Mode::Val,
            &subsample,
            &format!("{label}: merge {merged_id} on a val subsample"),
        )?;
        let scores: Vec<f64> = outcomes.iter().map(|o| o.reward).collect();
        let best_parent = parent_scores
            .iter()
            .map(|s| s.iter().sum::<f64>())
            .fold(f64::NEG_INFINITY, f64::max);
        let accepted = scores.iter().sum::<f64>() >= best_parent;
        self.host.info(&format!(
            "gepa: {label}: merge {merged_id} of {} and {} over {ancestor_id}: {}",
            parent_ids[0],
            parent_ids[1],
            if accepted { "accepted" } else { "rejected" }
        ));
        let mut proposal = Proposal {
            iteration,
            kind: "merge",
            parents: parent_ids,
            component: None,
            ancestor: Some(ancestor_id.clone()),
            split: "val",
            minibatch: subsample,
            parent_scores,
            scores: scores.into_iter().map(Some).collect(),
            resources_id: merged_id.clone(),
            accepted,
            val_score: None,
        };
        if accepted {
            let index = self.add_candidate(
                merged_id.clone(),
                found.components,
                vec![found.first, found.second],
                Origin::Merge { ancestor: ancestor_id },
                iteration,
                &format!("{label}: merge {merged_id} on val"),
            )?;
            proposal.val_score = Some(self.candidates[index].val_score);
        }
        self.proposals.push(proposal);
        Ok(Some(accepted))
    }
}

fn run(config: Config, data: Datasets, host: &Host) -> Result<Value> {
    config.check()?;
    if data.train.is_empty() || data.val.is_empty() {
        return Err(Error::new(
            "gepa: needs train tasks (for reflection) and val tasks (for the Pareto front): give --train and --val",
        ));
    }
    if config.max_rollouts < data.val.len() {
        return Err(Error::new(format!(
            "gepa config: max_rollouts ({}) does not cover the seed's scoring on the {} val tasks",
            config.max_rollouts,
            data.val.len()
        )));
    }
    let seed = match config.seed {
        Some(seed) => seed,
        None => StdRng::from_os_rng().random(),
    };
    let latest = host
        .latest_resources()?
        .ok_or_else(|| Error::new("gepa: the store has no resources; give --resources with a prompt template"))?;
    let seed_templates = components(&config, &latest.resources)?;
    let minibatch_size = config.minibatch_size.min(data.train.len());
    host.info(&format!(
        "gepa: optimising {} ({} train / {} val tasks; minibatch {minibatch_size}; budget {} rollouts, {} reflection calls; seed {seed})",
        seed_templates.keys().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "),
        data.train.len(),
        data.val.len(),
        config.max_rollouts,
        config.max_reflection_calls,
    ));
    let mut gepa = Gepa {
        host,
        data: &data,
        config: &config,
        rng: StdRng::seed_from_u64(seed),
        engines: seed_templates
            .iter()
            .map(|(n, t)| (n.clone(), t.engine.clone()))
            .collect(),
        versions: agl_algorithm_sdk::Versions::new(host, latest.resources.clone()),
        settings: Settings {
            who: "gepa",
            rollout_config: config.rollout_config.as_ref(),
            timeout_seconds: config.rollout_batch_timeout,
        },
        budget: Budget::new(config.max_rollouts, config.max_reflection_calls),
        cache: EvalCache::new(config.cache_evaluation),
        candidates: Vec::new(),
        proposals: Vec::new(),
        skipped: Skipped::default(),
        best: 0,
    };
    let seed_components: Components = seed_templates.into_iter().map(|(n, t)| (n, t.template)).collect();
    let seed_id = gepa.publish(&seed_components)?;
    gepa.add_candidate(seed_id, seed_components, Vec::new(), Origin::Seed, 0, "the seed on val")?;
    host.info(&format!(
        "gepa: seed v0 scores {:.4} on val",
        gepa.candidates[0].val_score
    ));

    let mut batches = BatchIterator::new(data.train.len(), minibatch_size);
    let mut tried = MergesTried::default();
    let (mut merges_due, mut merges_accepted, mut last_found_new) = (0u32, 0u32, false);
    // The least a mutation can cost: the parent's minibatch already paid for (cached).
    let mutation_cost = Budget::mutation_rollouts(0, minibatch_size, data.val.len());
    let merge_cost = Budget::merge_rollouts(config.merge_subsample_size.min(data.val.len()), data.val.len());
    let mut iteration = 0;
    // Iterations in a row that spent nothing (a parent's cached minibatch, all solved): with the
    // cache, a run whose every draw is already solved would otherwise never end.
    let mut idle = 0usize;
    let stopped_because = loop {
        let spent_before = (gepa.budget.rollouts_used, gepa.budget.reflection_calls_used);
        if idle > 2 * data.train.len().div_ceil(minibatch_size) * gepa.candidates.len() {
            break "every minibatch drawn lately was already solved (nothing to reflect on)";
        }
        if config.max_iterations.is_some_and(|max| iteration >= max) {
            break "max_iterations reached";
        }
        if !gepa.budget.can_afford(0, 1) {
            break "reflection-call budget spent";
        }
        if !gepa.budget.can_afford(mutation_cost, 1) {
            break "rollout budget spent";
        }
        iteration += 1;
        host.status(&format!(
            "iteration {iteration}: best {:.4}; {}/{} rollouts",
            gepa.candidates[gepa.best].val_score, gepa.budget.rollouts_used, config.max_rollouts
        ));
        if config.use_merge && merges_due > 0 && last_found_new && gepa.budget.can_afford(merge_cost, 0) {
            last_found_new = false;
            match gepa.merge(iteration, &mut tried)? {
                Some(true) => {
                    merges_due -= 1;
                    merges_accepted += 1;
                    continue;
                }
                // A rejected merge ends the iteration, as in GEPA.
                Some(false) => continue,
                None => {}
            }
        }
        last_found_new = false;
        match gepa.mutate(iteration, &mut batches)? {
            Some(true) => {
                last_found_new = true;
                if config.use_merge && merges_accepted < config.max_merge_invocations {
                    merges_due += 1;
                }
            }
            Some(false) => {}
            None => {
                iteration -= 1;
                break "rollout budget spent";
            }
        }
        if (gepa.budget.rollouts_used, gepa.budget.reflection_calls_used) == spent_before {
            idle += 1;
        } else {
            idle = 0;
        }
    };
    host.info(&format!(
        "gepa: stopped after {iteration} iterations: {stopped_because}"
    ));

    let front = gepa.front();
    let summary = Summary {
        candidates: &gepa.candidates,
        proposals: &gepa.proposals,
        front: &front,
        best: gepa.best,
        budget: &gepa.budget,
        skipped: &gepa.skipped,
        cache_hits: gepa.cache.hits,
        iterations: iteration,
        stopped_because,
        seed,
    };
    Ok(summary.to_json())
}

agl_algorithm_sdk::export_algorithm!(run);
