//! Query parameters of the `query_*` calls (the bodies of the wire's `*/search` routes) and the
//! paginated result. Every field is optional exactly as on the wire; the accessors give defaults.

use super::{RolloutStatus, WorkerStatus};
use serde::{Deserialize, Serialize};

/// A page of results; `total` counts every match, before limit/offset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Paginated<T> {
    pub items: Vec<T>,
    pub limit: i64,
    pub offset: i64,
    pub total: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SortOrder {
    #[default]
    Asc,
    Desc,
}

/// How several filter conditions combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum FilterLogic {
    #[default]
    And,
    Or,
}

/// Pagination and ordering shared by every query.
pub trait PageParams {
    fn limit_opt(&self) -> Option<i64>;
    fn offset_opt(&self) -> Option<i64>;
    /// The field to sort by, after applying the query's default.
    fn effective_sort_by(&self) -> Option<&str>;
    fn sort_order_opt(&self) -> Option<SortOrder>;

    /// `-1` (everything) unless set.
    fn limit(&self) -> i64 {
        self.limit_opt().unwrap_or(-1)
    }
    fn offset(&self) -> i64 {
        self.offset_opt().unwrap_or(0)
    }
    fn sort_order(&self) -> SortOrder {
        self.sort_order_opt().unwrap_or_default()
    }
}

macro_rules! page_params {
    ($t:ty, default_sort = $default:expr) => {
        impl PageParams for $t {
            fn limit_opt(&self) -> Option<i64> {
                self.limit
            }
            fn offset_opt(&self) -> Option<i64> {
                self.offset
            }
            fn effective_sort_by(&self) -> Option<&str> {
                self.sort_by.as_deref().or($default)
            }
            fn sort_order_opt(&self) -> Option<SortOrder> {
                self.sort_order
            }
        }
        impl $t {
            pub fn limit(mut self, limit: i64) -> Self {
                self.limit = Some(limit);
                self
            }
            pub fn offset(mut self, offset: i64) -> Self {
                self.offset = Some(offset);
                self
            }
            pub fn sort_by(mut self, field: impl Into<String>, order: SortOrder) -> Self {
                self.sort_by = Some(field.into());
                self.sort_order = Some(order);
                self
            }
        }
    };
}

/// Filters for `query_rollouts` (`POST /v1/agl/rollouts/search`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct RolloutQuery {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_in: Option<Vec<RolloutStatus>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout_id_in: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout_id_contains: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_order: Option<SortOrder>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter_logic: Option<FilterLogic>,
}
page_params!(RolloutQuery, default_sort = None);

impl RolloutQuery {
    pub fn status_in(mut self, statuses: impl IntoIterator<Item = RolloutStatus>) -> Self {
        self.status_in = Some(statuses.into_iter().collect());
        self
    }
    pub fn rollout_id_in(mut self, ids: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.rollout_id_in = Some(ids.into_iter().map(Into::into).collect());
        self
    }
    pub fn filter_logic(mut self, logic: FilterLogic) -> Self {
        self.filter_logic = Some(logic);
        self
    }
}

/// Ordering for `query_attempts` (`POST /v1/agl/rollouts/{id}/attempts/search`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct AttemptQuery {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_order: Option<SortOrder>,
}
page_params!(AttemptQuery, default_sort = Some("sequence_id"));

/// Filters for `query_spans` (`POST /v1/agl/spans/search`); always scoped to one rollout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SpanQuery {
    pub rollout_id: String,
    /// An attempt id, `"latest"`, or absent for every attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id_contains: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_id_contains: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id_contains: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_contains: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter_logic: Option<FilterLogic>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_order: Option<SortOrder>,
}
page_params!(SpanQuery, default_sort = Some("sequence_id"));

impl SpanQuery {
    /// Every span of a rollout, in sequence order.
    pub fn for_rollout(rollout_id: impl Into<String>) -> Self {
        Self {
            rollout_id: rollout_id.into(),
            ..Self::default()
        }
    }
    pub fn attempt(mut self, attempt_id: impl Into<String>) -> Self {
        self.attempt_id = Some(attempt_id.into());
        self
    }
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
    pub fn filter_logic(mut self, logic: FilterLogic) -> Self {
        self.filter_logic = Some(logic);
        self
    }
}

/// Filters for `query_resources` (`GET /v1/agl/resources`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ResourcesQuery {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_id_contains: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_order: Option<SortOrder>,
}
page_params!(ResourcesQuery, default_sort = None);

/// Filters for `query_workers` (`POST /v1/agl/workers/search`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct WorkerQuery {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_in: Option<Vec<WorkerStatus>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_id_contains: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_order: Option<SortOrder>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter_logic: Option<FilterLogic>,
}
page_params!(WorkerQuery, default_sort = None);

impl WorkerQuery {
    pub fn status_in(mut self, statuses: impl IntoIterator<Item = WorkerStatus>) -> Self {
        self.status_in = Some(statuses.into_iter().collect());
        self
    }
}
