//! The results of a run: the JSON file (`--output`) and the summary printed at the end, with why
//! rollouts failed (the most frequent reasons in the summary, every failed rollout in the file),
//! and what the sandbox refused the agents, with the flag that grants it (a refusal the agent
//! caught still lets its rollout succeed, and would otherwise go unseen).
//! What agents and algorithms wrote is shown through `output`'s sanitizer.

use crate::output::{one_line, reason_line};
use agl_runner::{FailedRollout, FailureReason, FitReport, FitStatus, RunReport, SandboxRefusal, SplitReport};
use agl_store::{NamedResources, Resource};
use agl_wasm::BestResult;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

#[derive(Debug, Serialize)]
pub struct Best {
    pub score: f64,
    pub resources_id: Option<String>,
    /// The resources of that version (API keys removed).
    pub resources: Option<NamedResources>,
    /// What the algorithm said about it (e.g. the prompt).
    pub detail: serde_json::Value,
}

#[derive(Debug, Serialize)]
pub struct Attempts {
    pub succeeded: u64,
    pub failed: u64,
}

#[derive(Debug, Serialize)]
pub struct Results {
    /// `completed`, `algorithm_failed` or `interrupted`.
    pub status: &'static str,
    /// The run's id (`agl-host show RUN_ID`).
    pub run_id: Option<String>,
    /// The run's name (`--name`), if given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Where the run is kept (the database file or URL); `null` in memory or with a remote store.
    pub db: Option<String>,
    /// Why the algorithm failed, when it did.
    pub failure: Option<String>,
    pub agent: String,
    pub algorithm: String,
    pub best: Option<Best>,
    pub splits: BTreeMap<String, SplitReport>,
    pub total: SplitReport,
    /// The distinct reasons rollouts failed for, with their counts, most frequent first.
    pub failure_reasons: Vec<FailureReason>,
    /// Every failed rollout and why its last attempt failed.
    pub failures: Vec<FailedRollout>,
    /// What the sandbox refused the agents (HTTP not granted, an LLM model not allowed, a budget
    /// spent), with the flag that grants it, and in how many calls and rollouts; most frequent first.
    pub sandbox_refusals: Vec<SandboxRefusal>,
    /// Attempts finished by this process's runners (`null` when the runners were other processes).
    pub attempts: Option<Attempts>,
    /// Spans recorded in the store (agents' host calls, rewards, root spans).
    pub spans: u64,
    /// Resources versions in the store at the end.
    pub resources_versions: u64,
    /// The algorithm's own summary.
    pub algorithm_summary: Option<serde_json::Value>,
    pub algorithm_llm_calls: u32,
    pub algorithm_llm_tokens: u64,
    /// Runners in this process (0 when the runners were other processes).
    pub runners: u16,
    pub elapsed_seconds: f64,
    pub rollouts_per_second: f64,
    /// Whether running attempts had to be abandoned at the end.
    pub forced_stop: bool,
    /// The OTLP export (`--otlp-endpoint`): spans sent and dropped; `null` without one.
    pub otlp_export: Option<crate::otlp_export::OtlpReport>,
}

/// Resources as the results file shows them: without API keys.
pub fn without_keys(mut resources: NamedResources) -> NamedResources {
    for resource in resources.values_mut() {
        if let Resource::Llm(llm) | Resource::ProxyLlm(llm) = resource {
            llm.api_key = None;
        }
    }
    resources
}

pub struct ResultsInput {
    pub agent: String,
    pub algorithm: String,
    pub fit: FitReport,
    pub report: RunReport,
    pub best: Option<BestResult>,
    pub best_resources: Option<NamedResources>,
    pub runners: u16,
    pub statistics: agl_store::Statistics,
}

impl Results {
    pub fn new(input: ResultsInput) -> Self {
        let ResultsInput {
            agent,
            algorithm,
            fit,
            report,
            best,
            best_resources,
            runners,
            statistics,
        } = input;
        let (status, failure) = match &fit.status {
            FitStatus::Completed => ("completed", None),
            FitStatus::AlgorithmFailed(reason) => ("algorithm_failed", Some(reason.clone())),
            FitStatus::Interrupted => ("interrupted", None),
        };
        let elapsed = fit.elapsed.as_secs_f64();
        let finished = report.total.succeeded + report.total.failed + report.total.cancelled;
        let outcome = fit.algorithm.as_ref();
        let failure_reasons = report.failure_reasons();
        Self {
            status,
            run_id: None,
            name: None,
            db: None,
            failure,
            agent,
            algorithm,
            best: best.map(|b| Best {
                score: b.score,
                resources_id: b.resources_id,
                resources: best_resources.map(without_keys),
                detail: b.detail,
            }),
            rollouts_per_second: if elapsed > 0.0 { finished as f64 / elapsed } else { 0.0 },
            splits: report.splits,
            total: report.total,
            failure_reasons,
            failures: report.failures,
            sandbox_refusals: report.refusals,
            attempts: fit.attempts.map(|(succeeded, failed)| Attempts { succeeded, failed }),
            spans: statistics.total_spans,
            resources_versions: statistics.total_resources,
            algorithm_summary: outcome.and_then(|o| o.result.as_ref().ok().cloned()),
            algorithm_llm_calls: outcome.map_or(0, |o| o.llm_calls),
            algorithm_llm_tokens: outcome.map_or(0, |o| o.llm_tokens),
            runners,
            elapsed_seconds: elapsed,
            forced_stop: fit.forced,
            otlp_export: None,
        }
    }

    /// Names the split of the rollouts of `mode` `split` (`agl-host eval`: its test rollouts are
    /// the split it was given), in the summary and the results file.
    pub fn label_split(&mut self, mode: &str, split: &str) {
        if let Some(report) = self.splits.remove(mode) {
            self.splits.insert(split.to_owned(), report);
        }
    }

    /// Whether rollouts ran and not one succeeded: nothing was learnt.
    pub fn every_rollout_failed(&self) -> bool {
        self.total.failed > 0 && self.total.succeeded == 0
    }

    /// The readable summary printed at the end of a run.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        let headline = match self.status {
            "completed" => "completed".to_owned(),
            "interrupted" => "interrupted (partial results)".to_owned(),
            _ => format!(
                "algorithm failed: {}",
                reason_line(self.failure.as_deref().unwrap_or("unknown reason"))
            ),
        };
        let runners = match self.runners {
            0 => "remote runners".to_owned(),
            n => format!("{n} runner(s)"),
        };
        let _ = writeln!(
            out,
            "{headline} in {:.2} s — {} rollouts, {:.0} rollouts/s, {runners}",
            self.elapsed_seconds, self.total.rollouts, self.rollouts_per_second
        );
        let _ = writeln!(
            out,
            "  agent {}   algorithm {}",
            one_line(&self.agent),
            one_line(&self.algorithm)
        );
        if let Some(name) = &self.name {
            let _ = writeln!(out, "  run name {}", one_line(name));
        }
        // Split names are train, val, test, or the one `eval --split` was given.
        let width = self.splits.keys().map(|name| name.chars().count()).fold(6, usize::max);
        let _ = writeln!(
            out,
            "  {:<width$} {:>9} {:>10} {:>7} {:>10} {:>8} {:>12}",
            "split", "rollouts", "succeeded", "failed", "cancelled", "retried", "mean reward"
        );
        let rows = self.splits.iter().map(|(name, r)| (one_line(name), r));
        for (name, r) in rows.chain(std::iter::once(("all".to_owned(), &self.total))) {
            let _ = writeln!(
                out,
                "  {:<width$} {:>9} {:>10} {:>7} {:>10} {:>8} {:>12.4}",
                name, r.rollouts, r.succeeded, r.failed, r.cancelled, r.retried, r.mean_reward
            );
        }
        self.write_failures(&mut out);
        self.write_refusals(&mut out);
        // An algorithm may give its own report (APO: score history, best prompt).
        if let Some(report) = self
            .algorithm_summary
            .as_ref()
            .and_then(|s| s.get("report"))
            .and_then(|r| r.as_str())
        {
            out.push_str(report);
            if !report.ends_with('\n') {
                out.push('\n');
            }
            return out;
        }
        if let Some(best) = &self.best {
            let _ = writeln!(
                out,
                "  best score {:.4} with resources {}",
                best.score,
                best.resources_id.as_deref().unwrap_or("(none)")
            );
            if let Some(resources) = &best.resources {
                for (name, resource) in resources {
                    if let Resource::PromptTemplate(t) = resource {
                        let _ = writeln!(out, "    {name}: {}", t.template.replace('\n', "\n      "));
                    }
                }
            }
        }
        out
    }

    /// The most frequent failure reasons with their counts; a loud line when nothing succeeded.
    fn write_failures(&self, out: &mut String) {
        if self.failure_reasons.is_empty() {
            return;
        }
        if self.every_rollout_failed() {
            let _ = writeln!(
                out,
                "  EVERY ROLLOUT FAILED ({} of {}): nothing was learnt; the agent, its tasks, resources or LLM setup need fixing",
                self.total.failed, self.total.rollouts
            );
        }
        let _ = writeln!(out, "  why rollouts failed (most frequent first):");
        for reason in self.failure_reasons.iter().take(SHOWN_REASONS) {
            let _ = writeln!(out, "  {:>6}×  {}", reason.count, reason_line(&reason.reason));
        }
        let more = self.failure_reasons.len().saturating_sub(SHOWN_REASONS);
        if more > 0 {
            let _ = writeln!(
                out,
                "          ... and {more} other reason(s): see `failures` in the results file"
            );
        }
    }
}

impl Results {
    /// What the sandbox refused, most frequent first, with the grant (partly the guests' text,
    /// hence sanitised).
    fn write_refusals(&self, out: &mut String) {
        for refusal in self.sandbox_refusals.iter().take(SHOWN_REASONS) {
            let _ = writeln!(
                out,
                "  sandbox refused: {} in {} rollout{} ({}×) — grant: {}",
                reason_line(&refusal.refused),
                refusal.rollouts,
                if refusal.rollouts == 1 { "" } else { "s" },
                refusal.count,
                reason_line(&refusal.grant)
            );
        }
        let more = self.sandbox_refusals.len().saturating_sub(SHOWN_REASONS);
        if more > 0 {
            let _ = writeln!(
                out,
                "  ... and {more} other refusal(s): see `sandbox_refusals` in the results file"
            );
        }
    }
}

/// Failure reasons shown in the summary.
const SHOWN_REASONS: usize = 5;
