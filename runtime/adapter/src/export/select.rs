//! Which attempts an export takes, the one definition `agl-host export` and the store server's
//! export route share: rollouts of the statuses, splits and resources asked for (the finished ones
//! by default, never an algorithm's own, forks only when asked for), by start time; each one's
//! latest attempt or all of them; attempts whose final reward is in range (a fork's lineage is
//! [`Rollout::fork_lineage`]).

use agl_store::{
    Attempt, AttemptQuery, LightningStore, Mode, Rollout, RolloutQuery, RolloutStatus, RolloutView, SortOrder, Span,
    SpanQuery, StoreResult,
};
use std::sync::Arc;

/// Rows fetched per page.
const PAGE: i64 = 10_000;

/// The rollout statuses exported when none is asked for: the finished ones.
pub const FINISHED: [RolloutStatus; 3] = [
    RolloutStatus::Succeeded,
    RolloutStatus::Failed,
    RolloutStatus::Cancelled,
];

/// What to export: empty lists mean any (statuses: [`FINISHED`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    pub statuses: Vec<RolloutStatus>,
    pub modes: Vec<Mode>,
    /// Resources ids: the rollouts that ran with one of them.
    pub resources: Vec<String>,
    /// Every attempt of each rollout rather than its latest.
    pub all_attempts: bool,
    /// The final rewards an exported attempt may have, bounds included; with either, an attempt
    /// without a reward is left out.
    pub min_reward: Option<f64>,
    pub max_reward: Option<f64>,
    /// Fork rollouts ([`is_fork_rollout`]) too; left out by default, so that a run's training data
    /// stays what the run made.
    pub include_forks: bool,
}

impl Filter {
    /// Whether an attempt with this final reward is exported.
    pub fn admits(&self, reward: Option<f64>) -> bool {
        if self.min_reward.is_none() && self.max_reward.is_none() {
            return true;
        }
        reward.is_some_and(|reward| {
            self.min_reward.is_none_or(|min| reward >= min) && self.max_reward.is_none_or(|max| reward <= max)
        })
    }

    /// Whether `rollout` (of a status asked for) is exported: not an algorithm's own, not a fork
    /// unless forks are asked for, of a mode and resources asked for.
    pub fn takes(&self, rollout: &Rollout) -> bool {
        !rollout.is_algorithm_rollout()
            && (self.include_forks || !is_fork_rollout(rollout))
            && (self.modes.is_empty() || rollout.mode.is_some_and(|mode| self.modes.contains(&mode)))
            && (self.resources.is_empty()
                || rollout
                    .resources_id
                    .as_ref()
                    .is_some_and(|id| self.resources.contains(id)))
    }
}

/// Whether `rollout` was made by `agl-host fork` from another rollout (it has a
/// [`Rollout::fork_lineage`]).
pub fn is_fork_rollout(rollout: &Rollout) -> bool {
    rollout.fork_lineage().is_some()
}

/// The rollouts to export: of the statuses, modes and resources asked for, not the algorithm's
/// own, forks only when asked for, by start time (then id).
pub async fn rollouts(store: &dyn LightningStore, filter: &Filter) -> StoreResult<Vec<RolloutView>> {
    let statuses = if filter.statuses.is_empty() {
        FINISHED.to_vec()
    } else {
        filter.statuses.clone()
    };
    let mut views: Vec<RolloutView> = Vec::new();
    loop {
        // Pages in id order, so that no rollout is seen twice or missed between pages.
        let query = RolloutQuery::default()
            .status_in(statuses.iter().copied())
            .sort_by("rollout_id", SortOrder::Asc)
            .limit(PAGE)
            .offset(views.len() as i64);
        let page = store.query_rollouts(&query).await?;
        let fetched = page.items.len();
        views.extend(page.items);
        if fetched == 0 || views.len() as u64 >= page.total {
            break;
        }
    }
    views.retain(|view| filter.takes(&view.rollout));
    views.sort_by(|a, b| {
        a.rollout
            .start_time
            .total_cmp(&b.rollout.start_time)
            .then_with(|| a.rollout.rollout_id.cmp(&b.rollout.rollout_id))
    });
    Ok(views)
}

/// The rollout's latest attempt, or all of them in order; none when it never ran.
pub async fn attempts(store: &dyn LightningStore, view: &RolloutView, all: bool) -> StoreResult<Vec<Attempt>> {
    if !all {
        return Ok(view.attempt.clone().into_iter().collect());
    }
    let mut attempts = store
        .query_attempts(&view.rollout.rollout_id, &AttemptQuery::default())
        .await?
        .items;
    attempts.sort_by_key(|attempt| attempt.sequence_id);
    Ok(attempts)
}

/// The spans of one attempt, in sequence order.
pub async fn spans(store: &dyn LightningStore, rollout_id: &str, attempt_id: &str) -> StoreResult<Vec<Arc<Span>>> {
    let query = SpanQuery::for_rollout(rollout_id.to_owned()).attempt(attempt_id);
    let mut spans = Vec::new();
    loop {
        let page = store
            .query_spans(&query.clone().limit(PAGE).offset(spans.len() as i64))
            .await?;
        let fetched = page.items.len();
        spans.extend(page.items);
        if fetched == 0 || spans.len() as u64 >= page.total {
            return Ok(spans);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agl_store::semconv::FORK;
    use serde_json::Value;
    use serde_json::json;

    fn rollout(metadata: Value) -> Rollout {
        serde_json::from_value(json!({
            "rollout_id": "ro-1", "input": {"q": 1}, "start_time": 1.0, "mode": "train",
            "resources_id": "rs-1", "status": "succeeded", "metadata": metadata,
        }))
        .expect("a rollout")
    }

    fn lineage() -> Value {
        json!({"parent_rollout_id": "ro-0", "parent_attempt_id": "at-0", "at_llm_call": 2,
               "branch": 1, "branches": 3})
    }

    #[test]
    fn a_fork_is_a_rollout_whose_agl_fork_metadata_is_an_object() {
        let fork = rollout(json!({ FORK: lineage(), "other": 1 }));
        assert!(is_fork_rollout(&fork));
        assert_eq!(
            fork.fork_lineage().map(|map| Value::Object(map.clone())),
            Some(lineage())
        );
        // Its fields are not checked: what is stored is what the lines carry.
        let odd = rollout(json!({ FORK: {"parent_rollout_id": "<img src=x onerror=alert(1)>"} }));
        assert_eq!(
            odd.fork_lineage().and_then(|map| map.get("parent_rollout_id")),
            Some(&json!("<img src=x onerror=alert(1)>"))
        );
        for not_a_fork in [
            Value::Null,
            json!({}),
            json!({"agl.kind": "algorithm"}),
            json!({ FORK: null }),
            json!({ FORK: "ro-0" }),
            json!({ FORK: [lineage()] }),
            json!({"agl": {"fork": lineage()}}),
        ] {
            let plain = rollout(not_a_fork.clone());
            assert!(!is_fork_rollout(&plain), "{not_a_fork}");
            assert_eq!(plain.fork_lineage(), None, "{not_a_fork}");
        }
    }

    #[test]
    fn forks_are_left_out_unless_asked_for_and_the_other_filters_still_apply() {
        let fork = rollout(json!({ FORK: lineage() }));
        let plain = rollout(Value::Null);
        let default = Filter::default();
        assert!(default.takes(&plain));
        assert!(!default.takes(&fork), "forks are left out by default");
        let with_forks = Filter {
            include_forks: true,
            ..Filter::default()
        };
        assert!(with_forks.takes(&plain) && with_forks.takes(&fork));
        // The other filters still apply to forks.
        let other_mode = Filter {
            include_forks: true,
            modes: vec![Mode::Val],
            ..Filter::default()
        };
        assert!(!other_mode.takes(&fork));
        let other_resources = Filter {
            include_forks: true,
            resources: vec!["rs-2".to_owned()],
            ..Filter::default()
        };
        assert!(!other_resources.takes(&fork));
        let same_resources = Filter {
            include_forks: true,
            resources: vec!["rs-1".to_owned()],
            modes: vec![Mode::Train],
            ..Filter::default()
        };
        assert!(same_resources.takes(&fork));
        // An algorithm's own rollout is never exported, forks asked for or not.
        let algorithm = rollout(json!({"agl.kind": "algorithm", FORK: lineage()}));
        assert!(!with_forks.takes(&algorithm));
    }
}
