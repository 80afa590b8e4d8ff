//! What an algorithm tells the host while it runs: progress lines, its best result so far, and
//! its log. The CLI shows these on its progress bar; tests collect them.

use serde::Serialize;

/// Severity of an algorithm's log line (the WIT `trace.level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

/// The best result an algorithm has reported (`progress.best`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BestResult {
    pub score: f64,
    pub resources_id: Option<String>,
    /// The algorithm's detail (e.g. the prompt); `null` when it sent text that is not JSON.
    pub detail: serde_json::Value,
}

/// Receives an algorithm's reports. Called from the algorithm's task: keep it quick.
pub trait AlgorithmObserver: Send + Sync {
    fn status(&self, text: &str);
    fn best(&self, best: &BestResult);
    fn log(&self, level: LogLevel, message: &str);
}

/// An observer that keeps only the last status and best result (for tests and libraries).
#[derive(Debug, Default)]
pub struct RecordingObserver {
    inner: parking_lot::Mutex<Recorded>,
}

/// What a [`RecordingObserver`] has heard.
#[derive(Debug, Default, Clone)]
pub struct Recorded {
    pub statuses: Vec<String>,
    pub best: Option<BestResult>,
    pub logs: Vec<(LogLevel, String)>,
}

impl RecordingObserver {
    pub fn recorded(&self) -> Recorded {
        self.inner.lock().clone()
    }
}

impl AlgorithmObserver for RecordingObserver {
    fn status(&self, text: &str) {
        self.inner.lock().statuses.push(text.to_owned());
    }
    fn best(&self, best: &BestResult) {
        self.inner.lock().best = Some(best.clone());
    }
    fn log(&self, level: LogLevel, message: &str) {
        self.inner.lock().logs.push((level, message.to_owned()));
    }
}
