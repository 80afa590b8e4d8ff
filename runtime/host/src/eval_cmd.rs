//! `agl-host eval --agent A (--resources R.json | --run RUN [--version V]) --data split.jsonl
//! [--split NAME]`: one resources version evaluated on one split. It is `dev` (the built-in
//! baseline over every task once, `run::run`), with the split's rollouts in mode `test` (the
//! baseline's `train_mode`) and its figures labelled by the split's name, not `train`.

use crate::args::EvalArgs;
use crate::inputs::InputError;
use crate::output::stderr_line;
use crate::run::{self, Target};
use agl_store::NamedResources;
use std::path::Path;
use std::process::ExitCode;

/// The store mode of an evaluation's rollouts (Agent-lightning's train / val / test).
pub const MODE: &str = "test";

/// The baseline's config for an evaluation: the tasks, given as its train split, run as `test`.
pub const ALGO_CONFIG: &str = r#"{"train_mode":"test"}"#;

/// What makes a run an evaluation (`CommonArgs::eval`).
#[derive(Debug)]
pub struct EvalSplit {
    /// The split's name in the summary, the results and the run record.
    pub split: String,
    /// The resources to evaluate, when they come from a kept run (else `--resources`).
    pub resources: Option<NamedResources>,
}

pub async fn run(args: EvalArgs, verbose: u8) -> anyhow::Result<ExitCode> {
    let EvalArgs {
        agent,
        run,
        version,
        runs_dir,
        split,
        mut common,
    } = args;
    let refused = [
        (common.val.is_some(), "--val"),
        (common.algo_config.is_some(), "--algo-config"),
        (common.resume.is_some(), "--resume"),
    ];
    if let Some((_, flag)) = refused.iter().find(|(given, _)| *given) {
        return Err(InputError(format!(
            "{flag} is for optimising runs (`agl-host run`); eval runs one split (--data) with one resources version"
        ))
        .into());
    }
    let split = match split {
        Some(split) => split,
        None => split_of(&common.train)?,
    };
    let resources = match &run {
        Some(run) => {
            let (resources, id) =
                crate::best_cmd::kept_resources(None, Some(run), &runs_dir, version.as_deref()).await?;
            stderr_line(&format!(
                "evaluating resources version {} of run {}",
                crate::output::one_line(&id),
                crate::output::one_line(run)
            ));
            Some(resources)
        }
        None => None,
    };
    common.eval = Some(EvalSplit { split, resources });
    run::run(common, Target::Agent(&agent), Path::new("baseline"), verbose).await
}

/// The default split name: the data file's name without its extension (`data/test.jsonl` ->
/// `test`), when that makes a valid name.
fn split_of(data: &Path) -> Result<String, InputError> {
    let stem = data
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    agl_runs::record::run_name(&stem).map_err(|why| {
        InputError(format!(
            "{}: its name does not make a split name ({why}): give --split NAME",
            data.display()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_split_is_named_after_its_file() {
        assert_eq!(split_of(Path::new("data/test.jsonl")).ok().as_deref(), Some("test"));
        assert_eq!(split_of(Path::new("holdout")).ok().as_deref(), Some("holdout"));
        assert!(split_of(Path::new("/")).is_err());
    }
}
