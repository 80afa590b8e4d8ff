//! What the user sees while a run goes: one progress line (attempts done / failed, mean reward,
//! the algorithm's status) fed by the runners' hooks and the algorithm's reports, and the
//! algorithm's log lines above it. Hidden when stderr is not a terminal or with --no-progress.
//! What the algorithm says (status, logs) is shown on one line, safe to print.
//!
//! The line ends with an ETA ("ETA 1m20s") once there is enough data: the rollouts enqueued and
//! not yet finished (read from the store, so runners anywhere count) over the smoothed rate at
//! which rollouts finish (`eta`). Nothing enqueued and unfinished, or no rate yet: no ETA.

use crate::output::{Lines, one_line, terminal_safe};
use agl_runner::{Hook, HookContext};
use agl_store::{AttemptStatus, LightningStore, RolloutQuery, RolloutStatus};
use agl_wasm::{AlgorithmObserver, AttemptOutcome, BestResult, LogLevel};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tallies::Tallies;

/// How often the store is asked how many rollouts are finished and still to go.
const ETA_POLL: Duration = Duration::from_secs(1);

/// Lock-free tallies (atomics): runners on several threads update them.
mod tallies {
    use std::sync::atomic::{AtomicU64, Ordering};

    #[derive(Default)]
    pub struct Tallies {
        done: AtomicU64,
        failed: AtomicU64,
        /// Sum of rewards in millionths (atomics have no f64 add).
        reward_micros: AtomicU64,
    }

    impl Tallies {
        pub fn record(&self, failed: bool, reward: Option<f64>) {
            self.done.fetch_add(1, Ordering::Relaxed);
            if failed {
                self.failed.fetch_add(1, Ordering::Relaxed);
            }
            // As the run's mean reward counts it: a failed attempt's reward (emitted before it
            // failed) counts 0.
            if let Some(r) = reward.filter(|r| r.is_finite() && !failed) {
                // Rewards below zero are clamped for the display only (results use the store).
                let micros = (r.max(0.0) * 1e6).round() as u64;
                self.reward_micros.fetch_add(micros, Ordering::Relaxed);
            }
        }

        /// (done, failed, mean reward over done attempts).
        pub fn snapshot(&self) -> (u64, u64, f64) {
            let done = self.done.load(Ordering::Relaxed);
            let failed = self.failed.load(Ordering::Relaxed);
            let sum = self.reward_micros.load(Ordering::Relaxed) as f64 / 1e6;
            (done, failed, if done > 0 { sum / done as f64 } else { 0.0 })
        }
    }
}

pub struct Progress {
    bar: ProgressBar,
    tallies: Tallies,
    status: std::sync::Mutex<String>,
    best: std::sync::Mutex<Option<BestResult>>,
    /// The ETA as shown ("ETA 1m20s"), empty when there is none.
    eta: std::sync::Mutex<String>,
    /// The task that keeps `eta` up to date, stopped by `finish`.
    eta_task: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    log_level: LogLevel,
}

impl Progress {
    pub fn new(show: bool, log_level: LogLevel) -> Self {
        let target = if show {
            ProgressDrawTarget::stderr_with_hz(10)
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(None, target);
        let style = ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        bar.set_style(style);
        bar.enable_steady_tick(Duration::from_millis(100));
        Self {
            bar,
            tallies: Tallies::default(),
            status: std::sync::Mutex::new(String::new()),
            best: std::sync::Mutex::new(None),
            eta: std::sync::Mutex::new(String::new()),
            eta_task: std::sync::Mutex::new(None),
            log_level,
        }
    }

    fn refresh(&self) {
        let (done, failed, mean) = self.tallies.snapshot();
        let status = self.status.lock().map(|s| s.clone()).unwrap_or_default();
        let eta = self.eta.lock().map(|s| s.clone()).unwrap_or_default();
        let mut line = format!("{done} attempts done · {failed} failed · mean reward {mean:.3}");
        for part in [status, eta] {
            if !part.is_empty() {
                line.push_str(" · ");
                line.push_str(&part);
            }
        }
        self.bar.set_message(line);
    }

    /// Keeps the line's ETA up to date from `store`'s rollouts until `finish`: how many are
    /// finished and how many are enqueued and not yet finished. Nothing when the line is hidden.
    /// Call from within the tokio runtime.
    pub fn watch_store(self: &Arc<Self>, store: Arc<dyn LightningStore>) {
        if self.bar.is_hidden() {
            return;
        }
        let progress = Arc::clone(self);
        let task = tokio::spawn(async move {
            let started = Instant::now();
            let mut estimator = eta::Estimator::default();
            let mut ticks = tokio::time::interval(ETA_POLL);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                let shown = match rollout_counts(store.as_ref()).await {
                    Some((finished, to_go)) => estimator
                        .observe(started.elapsed(), finished, Some(to_go))
                        .map(|left| format!("ETA {}", eta::short(left))),
                    // The store did not say: no ETA rather than a stale one.
                    None => None,
                };
                if let Ok(mut eta) = progress.eta.lock() {
                    *eta = shown.unwrap_or_default();
                }
                progress.refresh();
            }
        });
        if let Ok(mut slot) = self.eta_task.lock()
            && let Some(previous) = slot.replace(task)
        {
            previous.abort();
        }
    }

    /// Prints a line above the bar (or plainly when the bar is hidden), safe to print
    /// (`output::terminal_safe`).
    pub fn println(&self, line: &str) {
        if self.bar.is_hidden() {
            crate::output::stderr_line(line);
        } else {
            self.bar.println(terminal_safe(line, Lines::Many));
        }
    }

    pub fn finish(&self) {
        if let Some(task) = self.eta_task.lock().ok().and_then(|mut slot| slot.take()) {
            task.abort();
        }
        self.bar.finish_and_clear();
    }

    /// The algorithm's last reported best result.
    pub fn best(&self) -> Option<BestResult> {
        self.best.lock().ok().and_then(|b| b.clone())
    }
}

impl Hook for Progress {
    fn on_rollout_end(&self, _ctx: &HookContext<'_>, outcome: &AttemptOutcome) {
        self.tallies
            .record(outcome.status != AttemptStatus::Succeeded, outcome.reward);
        self.refresh();
    }
}

impl AlgorithmObserver for Progress {
    fn status(&self, text: &str) {
        if let Ok(mut status) = self.status.lock() {
            *status = one_line(text);
        }
        self.refresh();
    }

    fn best(&self, best: &BestResult) {
        if let Ok(mut slot) = self.best.lock() {
            *slot = Some(best.clone());
        }
        let version = best.resources_id.as_deref().unwrap_or("-");
        self.println(&format!(
            "algorithm: best so far {:.4} (resources {version})",
            best.score
        ));
    }

    fn log(&self, level: LogLevel, message: &str) {
        if level >= self.log_level {
            self.println(&format!("algorithm {}: {}", level_name(level), one_line(message)));
        }
    }
}

/// How many of the store's rollouts are finished, and how many are enqueued and not yet
/// finished; `None` when the store cannot say.
async fn rollout_counts(store: &dyn LightningStore) -> Option<(u64, u64)> {
    let count = |statuses: &[RolloutStatus]| {
        let query = RolloutQuery::default().status_in(statuses.iter().copied()).limit(0);
        async move { store.query_rollouts(&query).await.ok().map(|page| page.total) }
    };
    let finished = count(&[
        RolloutStatus::Succeeded,
        RolloutStatus::Failed,
        RolloutStatus::Cancelled,
    ])
    .await?;
    let to_go = count(&[
        RolloutStatus::Queuing,
        RolloutStatus::Preparing,
        RolloutStatus::Running,
        RolloutStatus::Requeuing,
    ])
    .await?;
    Some((finished, to_go))
}

fn level_name(level: LogLevel) -> &'static str {
    match level {
        LogLevel::Trace => "trace",
        LogLevel::Debug => "debug",
        LogLevel::Info => "info",
        LogLevel::Warn => "warn",
        LogLevel::Error => "error",
    }
}

/// The ETA: the rate at which rollouts finish, smoothed, and the time the rollouts still to go
/// take at that rate; and how it is written.
mod eta {
    use std::time::Duration;

    /// Finished rollouts seen before the first estimate (fewer say little about the rate).
    const MIN_FINISHED: u64 = 3;
    /// Time watched before the first estimate.
    const MIN_WATCHED: Duration = Duration::from_secs(3);
    /// The rate's time constant: a change in pace shows in the ETA over about this long.
    const SMOOTHING_SECS: f64 = 20.0;

    /// Feeds on (time since start, rollouts finished, rollouts to go) observations.
    #[derive(Debug, Default)]
    pub struct Estimator {
        /// The first observation: where the rate is measured from until it is smoothed.
        first: Option<(Duration, u64)>,
        /// The last observation.
        last: Option<(Duration, u64)>,
        /// Rollouts finished per second, smoothed; `None` until there is enough data.
        rate: Option<f64>,
    }

    impl Estimator {
        /// Takes one observation; returns the time left, when there is enough data and a
        /// known, non-zero number of rollouts to go.
        pub fn observe(&mut self, at: Duration, finished: u64, to_go: Option<u64>) -> Option<Duration> {
            let (first_at, first_finished) = *self.first.get_or_insert((at, finished));
            match (self.rate, self.last) {
                (None, _) => {
                    let watched = at.saturating_sub(first_at);
                    let seen = finished.saturating_sub(first_finished);
                    if seen >= MIN_FINISHED && watched >= MIN_WATCHED {
                        self.rate = Some(seen as f64 / watched.as_secs_f64());
                    }
                }
                (Some(rate), Some((last_at, last_finished))) if at > last_at => {
                    let dt = (at - last_at).as_secs_f64();
                    let now = finished.saturating_sub(last_finished) as f64 / dt;
                    // Exponential smoothing over time (not over samples): uneven polls weigh alike.
                    let weight = 1.0 - (-dt / SMOOTHING_SECS).exp();
                    self.rate = Some(rate + weight * (now - rate));
                }
                _ => {}
            }
            self.last = Some((at, finished));
            let rate = self.rate.filter(|r| *r > 0.0 && r.is_finite())?;
            let to_go = to_go.filter(|n| *n > 0)?;
            let secs = to_go as f64 / rate;
            // Beyond a few days an ETA says nothing useful.
            (secs < 1e6).then(|| round(Duration::from_secs_f64(secs)))
        }
    }

    /// Rounded so that the line does not flicker: to 5 s under a minute, 10 s under ten
    /// minutes, to the minute beyond.
    fn round(left: Duration) -> Duration {
        let secs = left.as_secs_f64();
        let step = match secs {
            s if s < 60.0 => 5.0,
            s if s < 600.0 => 10.0,
            _ => 60.0,
        };
        Duration::from_secs_f64(((secs / step).ceil() * step).max(step))
    }

    /// Short: "45s", "1m20s", "2h05m".
    pub fn short(left: Duration) -> String {
        let secs = left.as_secs();
        let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
        match (h, m) {
            (0, 0) => format!("{s}s"),
            (0, _) => format!("{m}m{s:02}s"),
            _ => format!("{h}h{m:02}m"),
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn secs(s: u64) -> Duration {
            Duration::from_secs(s)
        }

        #[test]
        fn nothing_until_enough_rollouts_finished_over_enough_time() {
            let mut eta = Estimator::default();
            assert_eq!(eta.observe(secs(0), 0, Some(100)), None);
            assert_eq!(eta.observe(secs(1), 2, Some(98)), None, "two rollouts say little");
            assert_eq!(eta.observe(secs(2), 5, Some(95)), None, "two seconds say little");
            // 6 finished in 3 s: 2 a second; 94 to go take 47 s, shown as 50 s.
            assert_eq!(eta.observe(secs(3), 6, Some(94)), Some(secs(50)));
        }

        #[test]
        fn no_eta_when_nothing_is_to_go_or_the_total_is_unknown() {
            let mut eta = Estimator::default();
            eta.observe(secs(0), 0, Some(10));
            assert_eq!(eta.observe(secs(5), 10, Some(0)), None);
            assert_eq!(eta.observe(secs(6), 12, None), None);
            assert!(eta.observe(secs(7), 14, Some(10)).is_some(), "the rate was kept");
        }

        #[test]
        fn a_steady_pace_counts_down_and_a_burst_does_not_make_it_jump() {
            let mut eta = Estimator::default();
            // One rollout a second, 200 in all.
            let mut shown = Vec::new();
            for t in 0..=60u64 {
                shown.push(eta.observe(secs(t), t, Some(200 - t)));
            }
            assert_eq!(shown[60], Some(secs(140)), "{shown:?}");
            // A burst of 20 rollouts in one second, then the pace again.
            let burst = eta.observe(secs(61), 80, Some(120)).expect("an ETA");
            let left = burst.as_secs_f64();
            // The raw estimate would be 120 s at 20/s... 6 s; the smoothed rate keeps it near 2 min.
            assert!((60.0..=120.0).contains(&left), "{burst:?}");
            // No rollouts finishing for a while: the ETA grows, gradually.
            let stalled = eta.observe(secs(63), 80, Some(120)).expect("an ETA");
            assert!(
                stalled >= burst && stalled.as_secs_f64() < left * 1.5,
                "{burst:?} -> {stalled:?}"
            );
        }

        #[test]
        fn rounding_keeps_the_line_still() {
            assert_eq!(round(Duration::from_millis(100)), secs(5));
            assert_eq!(round(Duration::from_secs_f64(41.2)), secs(45));
            assert_eq!(round(secs(79)), secs(80));
            assert_eq!(round(secs(601)), secs(660));
        }

        #[test]
        fn written_short() {
            assert_eq!(short(secs(45)), "45s");
            assert_eq!(short(secs(80)), "1m20s");
            assert_eq!(short(secs(65)), "1m05s");
            assert_eq!(short(secs(7500)), "2h05m");
            assert_eq!(short(secs(0)), "0s");
        }
    }
}
