//! Waiting for many rollouts: [`Host::wait_all`] calls the store's `wait` in short slices until
//! every rollout has finished or a total time limit is spent, reporting progress after each slice
//! that finished some. Time is counted as the sum of the slices' timeouts (a slice ends early only
//! when everything it waited for has finished), so no clock is read: an algorithm's clocks may be
//! virtual.

use std::collections::{BTreeMap, BTreeSet};

use crate::{Error, Host, Result, Rollout};

/// How [`Host::wait_all`] waits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WaitOptions {
    /// The timeout of each `wait` call, in seconds: how often progress can be reported
    /// (default 1.0; must be positive).
    pub poll_seconds: f64,
    /// The most time to wait in all, in seconds; `None` (the default) waits until every rollout
    /// has finished.
    pub timeout_seconds: Option<f64>,
}

impl Default for WaitOptions {
    fn default() -> Self {
        WaitOptions {
            poll_seconds: 1.0,
            timeout_seconds: None,
        }
    }
}

impl WaitOptions {
    /// Waits `poll_seconds` per `wait` call.
    pub fn with_poll_seconds(mut self, poll_seconds: f64) -> Self {
        self.poll_seconds = poll_seconds;
        self
    }

    /// Gives up after `timeout_seconds` in all.
    pub fn with_timeout_seconds(mut self, timeout_seconds: f64) -> Self {
        self.timeout_seconds = Some(timeout_seconds);
        self
    }

    fn check(&self) -> Result<()> {
        if !(self.poll_seconds.is_finite() && self.poll_seconds > 0.0) {
            return Err(Error::new(format!(
                "wait: poll_seconds must be a positive number of seconds, not {}",
                self.poll_seconds
            )));
        }
        if let Some(timeout) = self.timeout_seconds
            && (timeout.is_nan() || timeout < 0.0)
        {
            return Err(Error::new(format!(
                "wait: timeout_seconds must be zero or more seconds, not {timeout}"
            )));
        }
        Ok(())
    }
}

/// What [`Host::wait_all`] saw.
#[derive(Debug, Clone, Default)]
pub struct WaitOutcome {
    /// The rollouts that finished (succeeded, failed or cancelled), by id, as the store returned
    /// them when they finished. (Ordered maps throughout: no `HashMap`, whose random seed would be
    /// one more WASI import.)
    pub finished: BTreeMap<String, Rollout>,
    /// The ids that had not finished when the time limit was spent, in the order given.
    pub unfinished: Vec<String>,
}

impl WaitOutcome {
    /// The finished rollout `rollout_id`, if it finished.
    pub fn get(&self, rollout_id: &str) -> Option<&Rollout> {
        self.finished.get(rollout_id)
    }

    /// Whether every rollout finished.
    pub fn all_finished(&self) -> bool {
        self.unfinished.is_empty()
    }
}

impl Host {
    /// Waits until every rollout of `rollout_ids` has finished, or `options.timeout_seconds` are
    /// spent, in `wait` calls of `options.poll_seconds`. Calls `on_progress(finished, total)` once
    /// at the start and again whenever more have finished, e.g. to show
    /// `host.status(&format!("{finished}/{total} rollouts finished"))`.
    ///
    /// Rollouts that had not finished are listed in [`WaitOutcome::unfinished`]; they keep running
    /// (cancel them with [`Host::cancel`] if their results no longer matter).
    pub fn wait_all(
        &self,
        rollout_ids: &[String],
        options: &WaitOptions,
        on_progress: impl FnMut(usize, usize),
    ) -> Result<WaitOutcome> {
        wait_loop(
            rollout_ids,
            options,
            |ids, timeout| self.wait(ids, timeout),
            on_progress,
        )
    }
}

/// [`Host::wait_all`] with the store's `wait` passed in, so that it can be tested without a host.
pub(crate) fn wait_loop(
    rollout_ids: &[String],
    options: &WaitOptions,
    mut wait: impl FnMut(&[String], f64) -> Result<Vec<Rollout>>,
    mut on_progress: impl FnMut(usize, usize),
) -> Result<WaitOutcome> {
    options.check()?;
    let mut seen = BTreeSet::new();
    let mut pending: Vec<String> = rollout_ids
        .iter()
        .filter(|id| seen.insert(id.as_str()))
        .cloned()
        .collect();
    let mut waiting: BTreeSet<String> = pending.iter().cloned().collect();
    let total = pending.len();
    let mut finished = BTreeMap::new();
    let mut spent = 0.0;
    on_progress(0, total);
    while !pending.is_empty() {
        let slice = match options.timeout_seconds {
            Some(limit) if limit - spent <= 0.0 => break,
            Some(limit) => options.poll_seconds.min(limit - spent),
            None => options.poll_seconds,
        };
        let before = finished.len();
        for rollout in wait(&pending, slice)? {
            if rollout.is_finished() && waiting.remove(&rollout.rollout_id) {
                finished.insert(rollout.rollout_id.clone(), rollout);
            }
        }
        spent += slice;
        if finished.len() > before {
            pending.retain(|id| waiting.contains(id));
            on_progress(finished.len(), total);
        }
    }
    Ok(WaitOutcome {
        finished,
        unfinished: pending,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use crate::{Mode, RolloutStatus};

    fn rollout(id: &str, status: RolloutStatus) -> Rollout {
        Rollout {
            rollout_id: id.into(),
            input_json: "{}".into(),
            mode: Some(Mode::Train),
            resources_id: None,
            status,
            attempts: 1,
            failure: None,
            start_time: 0.0,
            end_time: Some(1.0),
        }
    }

    fn ids(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    /// A fake store: each `wait` call returns the next scripted answer and records what it was
    /// asked.
    struct Script {
        answers: VecDeque<Vec<Rollout>>,
        calls: Vec<(Vec<String>, f64)>,
    }

    impl Script {
        fn new(answers: Vec<Vec<Rollout>>) -> Self {
            Script {
                answers: answers.into(),
                calls: Vec::new(),
            }
        }

        fn wait(&mut self, ids: &[String], timeout: f64) -> Result<Vec<Rollout>> {
            self.calls.push((ids.to_vec(), timeout));
            Ok(self.answers.pop_front().unwrap_or_default())
        }
    }

    #[test]
    fn waits_until_all_finish_and_reports_each_step() {
        let mut script = Script::new(vec![
            vec![rollout("a", RolloutStatus::Succeeded)],
            vec![],
            vec![
                rollout("c", RolloutStatus::Failed),
                rollout("b", RolloutStatus::Cancelled),
            ],
        ]);
        let mut progress = Vec::new();
        let outcome = wait_loop(
            &ids(&["a", "b", "c"]),
            &WaitOptions::default().with_poll_seconds(0.5),
            |ids, t| script.wait(ids, t),
            |done, total| progress.push((done, total)),
        )
        .unwrap();
        assert!(outcome.all_finished());
        assert_eq!(outcome.finished.len(), 3);
        assert_eq!(outcome.get("c").map(|r| r.status), Some(RolloutStatus::Failed));
        assert_eq!(progress, [(0, 3), (1, 3), (3, 3)]);
        let asked: Vec<Vec<String>> = script.calls.iter().map(|(ids, _)| ids.clone()).collect();
        assert_eq!(asked, [ids(&["a", "b", "c"]), ids(&["b", "c"]), ids(&["b", "c"])]);
        assert!(script.calls.iter().all(|(_, t)| *t == 0.5));
    }

    #[test]
    fn the_total_timeout_is_the_sum_of_the_slices() {
        let mut script = Script::new(vec![vec![rollout("b", RolloutStatus::Succeeded)]]);
        let outcome = wait_loop(
            &ids(&["a", "b", "c"]),
            &WaitOptions::default().with_timeout_seconds(2.5),
            |ids, t| script.wait(ids, t),
            |_, _| {},
        )
        .unwrap();
        let slices: Vec<f64> = script.calls.iter().map(|(_, t)| *t).collect();
        assert_eq!(slices, [1.0, 1.0, 0.5]);
        assert_eq!(outcome.unfinished, ids(&["a", "c"]));
        assert!(outcome.get("b").is_some());
    }

    #[test]
    fn unfinished_rollouts_and_strangers_in_an_answer_are_ignored() {
        let mut script = Script::new(vec![
            vec![
                rollout("a", RolloutStatus::Running),
                rollout("zz", RolloutStatus::Succeeded),
            ],
            vec![rollout("a", RolloutStatus::Succeeded)],
        ]);
        let mut progress = Vec::new();
        let outcome = wait_loop(
            &ids(&["a"]),
            &WaitOptions::default(),
            |ids, t| script.wait(ids, t),
            |done, total| progress.push((done, total)),
        )
        .unwrap();
        assert_eq!(outcome.finished.keys().collect::<Vec<_>>(), ["a"]);
        assert_eq!(progress, [(0, 1), (1, 1)]);
        assert_eq!(script.calls.len(), 2);
    }

    #[test]
    fn duplicate_ids_are_waited_for_once() {
        let mut script = Script::new(vec![vec![rollout("a", RolloutStatus::Succeeded)]]);
        let mut progress = Vec::new();
        let outcome = wait_loop(
            &ids(&["a", "a"]),
            &WaitOptions::default(),
            |ids, t| script.wait(ids, t),
            |done, total| progress.push((done, total)),
        )
        .unwrap();
        assert!(outcome.all_finished());
        assert_eq!(progress, [(0, 1), (1, 1)]);
        assert_eq!(script.calls[0].0, ids(&["a"]));
    }

    #[test]
    fn nothing_to_wait_for_makes_no_call() {
        let mut script = Script::new(vec![]);
        let outcome = wait_loop(&[], &WaitOptions::default(), |ids, t| script.wait(ids, t), |_, _| {}).unwrap();
        assert!(outcome.all_finished() && outcome.finished.is_empty());
        assert!(script.calls.is_empty());
    }

    #[test]
    fn a_zero_timeout_makes_no_call() {
        let mut script = Script::new(vec![]);
        let options = WaitOptions::default().with_timeout_seconds(0.0);
        let outcome = wait_loop(&ids(&["a"]), &options, |ids, t| script.wait(ids, t), |_, _| {}).unwrap();
        assert_eq!(outcome.unfinished, ids(&["a"]));
        assert!(script.calls.is_empty());
    }

    #[test]
    fn host_errors_stop_the_wait() {
        let err = wait_loop(
            &ids(&["a"]),
            &WaitOptions::default(),
            |_, _| Err(Error::new("store.wait: gone")),
            |_, _| {},
        )
        .unwrap_err();
        assert_eq!(err.message(), "store.wait: gone");
    }

    #[test]
    fn bad_options_are_refused() {
        for options in [
            WaitOptions::default().with_poll_seconds(0.0),
            WaitOptions::default().with_poll_seconds(f64::NAN),
            WaitOptions::default().with_poll_seconds(f64::INFINITY),
            WaitOptions::default().with_timeout_seconds(-1.0),
            WaitOptions::default().with_timeout_seconds(f64::NAN),
        ] {
            let result = wait_loop(&ids(&["a"]), &options, |_, _| Ok(vec![]), |_, _| {});
            assert!(result.unwrap_err().message().starts_with("wait: "), "{options:?}");
        }
    }
}
