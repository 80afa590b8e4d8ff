//! What the user sees while a run goes: one progress line (attempts done / failed, mean reward,
//! the algorithm's status) fed by the runners' hooks and the algorithm's reports, and the
//! algorithm's log lines above it. Hidden when stderr is not a terminal or with --no-progress.
//! What the algorithm says (status, logs) is shown on one line, safe to print.

use crate::output::{Lines, one_line, terminal_safe};
use agl_runner::{Hook, HookContext};
use agl_store::AttemptStatus;
use agl_wasm::{AlgorithmObserver, AttemptOutcome, BestResult, LogLevel};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::Duration;
use tallies::Tallies;

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
            log_level,
        }
    }

    fn refresh(&self) {
        let (done, failed, mean) = self.tallies.snapshot();
        let status = self.status.lock().map(|s| s.clone()).unwrap_or_default();
        self.bar.set_message(format!(
            "{done} attempts done · {failed} failed · mean reward {mean:.3}{}{status}",
            if status.is_empty() { "" } else { " · " }
        ));
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

fn level_name(level: LogLevel) -> &'static str {
    match level {
        LogLevel::Trace => "trace",
        LogLevel::Debug => "debug",
        LogLevel::Info => "info",
        LogLevel::Warn => "warn",
        LogLevel::Error => "error",
    }
}
