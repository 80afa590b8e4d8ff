//! The baseline algorithm: runs every train and val task once with the initial resources (the
//! latest version in the store) and reports the mean reward of each split. It changes nothing; it
//! is the score an optimizing algorithm has to beat. See README.md for its config and summary.

mod config;
mod evaluate;
mod report;
mod stats;
mod tasks;

use agl_algorithm_sdk::prelude::*;
use serde_json::Value;

use config::Config;
use evaluate::{Settings, Split};
use report::Report;
use stats::SplitStats;

fn run(config: Config, data: Datasets, host: &Host) -> Result<Value> {
    config.check()?;
    if data.is_empty() {
        return Err(Error::new(
            "baseline: the datasets are empty: give train and/or val tasks to evaluate",
        ));
    }
    let resources_id = host.latest_resources()?.map(|version| version.id);
    let (train_name, train_mode) = config.train_split();
    host.info(&format!(
        "baseline: {} {train_name} and {} val tasks, resources {}",
        data.train.len(),
        data.val.len(),
        resources_id.as_deref().unwrap_or("none (the store has no resources)")
    ));

    let settings = Settings {
        resources_id: resources_id.as_deref(),
        rollout_config: config.rollout_config.as_ref(),
    };
    let splits = [
        Split {
            name: train_name,
            mode: train_mode,
            tasks: &data.train,
        },
        Split {
            name: "val",
            mode: Mode::Val,
            tasks: &data.val,
        },
    ];
    let mut enqueued = Vec::with_capacity(splits.len());
    for split in splits.into_iter().filter(|split| !split.tasks.is_empty()) {
        host.status(&format!("enqueuing {} {} tasks", split.tasks.len(), split.name));
        enqueued.push((split, evaluate::enqueue(host, split, settings)?));
    }

    let all_ids: Vec<String> = enqueued.iter().flat_map(|(_, ids)| ids.iter().cloned()).collect();
    let waited = host.wait_all(&all_ids, &config.wait_options(), |finished, total| {
        host.status(&format!("{finished}/{total} rollouts finished"));
    })?;
    if !waited.all_finished() {
        host.warn(&format!(
            "baseline: {} of {} rollouts had not finished within wait_timeout_seconds ({} s); \
             they count as failed and are cancelled",
            waited.unfinished.len(),
            all_ids.len(),
            config.wait_timeout_seconds.unwrap_or_default()
        ));
        for id in &waited.unfinished {
            if let Err(err) = host.cancel(id) {
                host.warn(&format!("baseline: could not cancel {id}: {err}"));
            }
        }
    }

    let stats_of = |mode: Mode| -> Result<Option<SplitStats>> {
        let Some((split, ids)) = enqueued.iter().find(|(split, _)| split.mode == mode) else {
            return Ok(None);
        };
        let stats = SplitStats::from_outcomes(&evaluate::outcomes(host, ids, &waited)?);
        host.info(&format!(
            "baseline: {}: mean reward {:.4} over {} rollouts ({} failed)",
            split.name, stats.mean_reward, stats.count, stats.failed
        ));
        Ok(Some(stats))
    };
    let report = Report {
        train_name,
        train: stats_of(train_mode)?,
        val: stats_of(Mode::Val)?,
        resources_id,
    };
    if let Some((score, detail)) = report.best() {
        host.best(score, report.resources_id.as_deref(), &detail)?;
    }
    let mut summary = report.summary();
    if config.task_views
        && let Value::Object(fields) = &mut summary
    {
        let splits = enqueued.iter().map(|(split, ids)| (split.name, ids.as_slice()));
        fields.insert("tasks".to_string(), tasks::views(host, splits)?);
    }
    Ok(summary)
}

agl_algorithm_sdk::export_algorithm!(run);
