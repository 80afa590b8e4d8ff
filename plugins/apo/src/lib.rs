//! APO — automatic prompt optimization, as Agent-lightning's APO does it (ProTeGi / TextGrad
//! style): beam search over prompt templates with textual gradients.
//!
//! The seed template is scored on the full val set. Each round, every parent of the beam (the
//! beam repeated up to `beam_width`) runs `branch_factor` train batches; for each batch the LLM
//! writes a critique from the runs (conversations, rewards, statuses) and then applies it to the
//! template, keeping its placeholders. The beam and the new candidates are scored on one shared
//! val batch, the best `beam_width` are kept, and the leader is scored on the full val set: it
//! becomes the best prompt only when strictly better. Every prompt version is a resources version
//! (`v0` the seed, `v1`, ...); its rollouts carry that resources id.

mod beam;
mod config;
mod critique;
mod prompts;
mod report;

use agl_algorithm_sdk::batches::BatchIterator;
use agl_algorithm_sdk::evaluate::{Job, Settings, run_jobs};
use agl_algorithm_sdk::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use beam::{Candidate, choose_parents, select_beam};
use config::Config;
use critique::{Editor, experiments};
use report::{RoundRecord, Skipped, Summary};

/// Publishes prompt versions as resources `v0`, `v1`, ...: the latest resources with the
/// optimised template replaced.
struct Versions<'a> {
    published: agl_algorithm_sdk::Versions<'a>,
    name: String,
    engine: String,
}

impl Versions<'_> {
    fn publish(&mut self, template: &str) -> Result<String> {
        let template = PromptTemplate {
            template: template.to_owned(),
            engine: self.engine.clone(),
        };
        self.published.publish([(self.name.as_str(), &template)])
    }
}

/// The template resource to optimise: as configured, else the only one, else `prompt`.
fn prompt_resource(config: &Config, resources: &Resources) -> Result<String> {
    if let Some(name) = &config.prompt_resource {
        return Ok(name.clone());
    }
    let templates: Vec<&str> = resources.prompt_template_names().collect();
    match templates.as_slice() {
        [only] => Ok((*only).to_owned()),
        _ if templates.contains(&"prompt") => Ok("prompt".to_owned()),
        [] => Err(Error::new(
            "apo: the resources have no prompt template to optimise (give --resources with one)",
        )),
        many => Err(Error::new(format!(
            "apo: the resources have several prompt templates ({}); choose one with prompt_resource",
            many.join(", ")
        ))),
    }
}

struct Apo<'a> {
    host: &'a Host,
    data: &'a Datasets,
    rng: StdRng,
    candidates: Vec<Candidate>,
    settings: Settings<'a>,
}

impl Apo<'_> {
    fn tasks<'s>(split: &'s [String], indices: &[usize]) -> Vec<&'s str> {
        indices.iter().map(|&i| split[i].as_str()).collect()
    }

    /// The full-val score of a candidate (measured once, then remembered).
    fn full_val_score(&mut self, index: usize, label: &str) -> Result<f64> {
        if let Some(score) = self.candidates[index].full_val_score {
            return Ok(score);
        }
        let job = Job {
            resources_id: &self.candidates[index].resources_id,
            tasks: self.data.val.iter().map(String::as_str).collect(),
            mode: Mode::Val,
        };
        let score = run_jobs(self.host, &[job], &self.settings, label)?[0].score();
        self.candidates[index].full_val_score = Some(score);
        Ok(score)
    }

    fn report_best(&self, index: usize, score: f64) -> Result<()> {
        let c = &self.candidates[index];
        self.host.best(
            score,
            Some(&c.resources_id),
            &json!({"template": c.template, "round": c.round, "parent": c.parent}),
        )
    }
}

fn run(config: Config, data: Datasets, host: &Host) -> Result<Value> {
    config.check()?;
    if data.train.is_empty() || data.val.is_empty() {
        return Err(Error::new(
            "apo: needs train tasks (for critiques) and val tasks (for scoring): give --train and --val",
        ));
    }
    let seed = match config.seed {
        Some(seed) => seed,
        None => StdRng::from_os_rng().random(),
    };
    let latest = host
        .latest_resources()?
        .ok_or_else(|| Error::new("apo: the store has no resources; give --resources with a prompt template"))?;
    let name = prompt_resource(&config, &latest.resources)?;
    let seed_prompt = latest.resources.prompt_template(&name)?;
    if seed_prompt.engine != "f-string" {
        host.warn(&format!(
            "apo: `{name}` is a {} template; only f-string templates have their placeholders checked",
            seed_prompt.engine
        ));
    }
    let mut versions = Versions {
        published: agl_algorithm_sdk::Versions::new(host, latest.resources.clone()),
        name: name.clone(),
        engine: seed_prompt.engine.clone(),
    };
    let seed_id = versions.publish(&seed_prompt.template)?;
    host.info(&format!(
        "apo: optimising `{name}` ({} train / {} val tasks; beam {} × {} branches × {} rounds; seed {seed})",
        data.train.len(),
        data.val.len(),
        config.beam_width,
        config.branch_factor,
        config.beam_rounds
    ));

    let mut apo = Apo {
        host,
        data: &data,
        rng: StdRng::seed_from_u64(seed),
        candidates: vec![Candidate::seed(seed_id, seed_prompt.template)],
        settings: Settings {
            who: "apo",
            rollout_config: config.rollout_config.as_ref(),
            timeout_seconds: config.rollout_batch_timeout,
        },
    };
    let editor = Editor::new(host, &config);
    let mut train_batches = BatchIterator::new(data.train.len(), config.gradient_batch_size);
    let mut val_batches = BatchIterator::new(data.val.len(), config.val_batch_size);
    let mut history = Vec::new();
    let mut skipped = Skipped::default();

    let (mut best, mut best_score) = (0, f64::NEG_INFINITY);
    if config.run_initial_validation {
        best_score = apo.full_val_score(0, "seed prompt on val")?;
        apo.report_best(0, best_score)?;
        host.info(&format!("apo: seed prompt v0 scores {best_score:.4} on val"));
        history.push(RoundRecord {
            round: 0,
            leader: "v0".into(),
            leader_val_batch_score: None,
            leader_full_val_score: best_score,
            best: "v0".into(),
            best_score,
            new_candidates: 0,
        });
    }

    let mut beam = vec![0];
    for round in 1..=config.beam_rounds {
        let label = format!("round {round}/{}", config.beam_rounds);
        // Parents run train batches: the material of the critiques.
        let parents = choose_parents(&beam, config.beam_width);
        let branches: Vec<(usize, Vec<usize>)> = parents
            .iter()
            .flat_map(|&parent| (0..config.branch_factor).map(move |_| parent))
            .map(|parent| (parent, train_batches.next_batch(&mut apo.rng)))
            .collect();
        let jobs: Vec<Job<'_>> = branches
            .iter()
            .map(|(parent, batch)| Job {
                resources_id: &apo.candidates[*parent].resources_id,
                tasks: Apo::tasks(&data.train, batch),
                mode: Mode::Train,
            })
            .collect();
        let evaluations = run_jobs(
            host,
            &jobs,
            &apo.settings,
            &format!("{label}: parents on train batches"),
        )?;

        // A critique and an edit per branch.
        let mut new_candidates = Vec::new();
        for (i, ((parent, _), evaluation)) in branches.iter().zip(&evaluations).enumerate() {
            host.status(&format!("{label}: critique and edit {}/{}", i + 1, branches.len()));
            let parent_template = apo.candidates[*parent].template.clone();
            let runs = experiments(host, evaluation);
            let critique = match editor.critique(&parent_template, &runs, &mut apo.rng) {
                Ok(critique) => critique,
                Err(problem) => {
                    host.warn(&format!("apo: {label}: critique skipped: {problem}"));
                    skipped.critiques += 1;
                    continue;
                }
            };
            let edited = match editor.edit(&parent_template, &critique) {
                Ok(edited) => edited,
                Err(problem) => {
                    host.warn(&format!("apo: {label}: edit skipped: {problem}"));
                    skipped.edits += 1;
                    continue;
                }
            };
            if let Some(same) = apo.candidates.iter().find(|c| c.template == edited) {
                host.debug(&format!(
                    "apo: {label}: the edit gave {}'s template again",
                    same.resources_id
                ));
                skipped.duplicates += 1;
                continue;
            }
            let id = versions.publish(&edited)?;
            apo.candidates.push(Candidate {
                resources_id: id,
                template: edited,
                parent: Some(apo.candidates[*parent].resources_id.clone()),
                round,
                val_batch_scores: Vec::new(),
                full_val_score: None,
                critique: Some(critique),
            });
            new_candidates.push(apo.candidates.len() - 1);
        }

        // The beam and the new candidates on one shared val batch.
        let pool: Vec<usize> = beam.iter().chain(&new_candidates).copied().collect();
        let val_batch = val_batches.next_batch(&mut apo.rng);
        let jobs: Vec<Job<'_>> = pool
            .iter()
            .map(|&c| Job {
                resources_id: &apo.candidates[c].resources_id,
                tasks: Apo::tasks(&data.val, &val_batch),
                mode: Mode::Val,
            })
            .collect();
        let scores: Vec<f64> = run_jobs(
            host,
            &jobs,
            &apo.settings,
            &format!("{label}: {} candidates on val", pool.len()),
        )?
        .iter()
        .map(|e| e.score())
        .collect();
        for (&c, score) in pool.iter().zip(scores) {
            apo.candidates[c].val_batch_scores.push(score);
        }
        beam = select_beam(&apo.candidates, &pool, config.beam_width);
        let leader = beam[0];
        let leader_full = apo.full_val_score(leader, &format!("{label}: leader on full val"))?;
        if leader_full > best_score {
            best = leader;
            best_score = leader_full;
            apo.report_best(leader, leader_full)?;
        }
        let record = RoundRecord {
            round,
            leader: apo.candidates[leader].resources_id.clone(),
            leader_val_batch_score: apo.candidates[leader].latest_score(),
            leader_full_val_score: leader_full,
            best: apo.candidates[best].resources_id.clone(),
            best_score,
            new_candidates: new_candidates.len(),
        };
        host.info(&format!(
            "apo: {label}: {} new candidates; leader {} {:.4} on the val batch, {:.4} on full val; best {} {:.4}",
            record.new_candidates,
            record.leader,
            record.leader_val_batch_score.unwrap_or_default(),
            leader_full,
            record.best,
            best_score
        ));
        history.push(record);
    }

    let summary = Summary {
        candidates: &apo.candidates,
        best,
        best_score,
        history: &history,
        skipped: &skipped,
        seed,
        prompt_resource: &name,
    };
    Ok(summary.to_json())
}

agl_algorithm_sdk::export_algorithm!(run);
