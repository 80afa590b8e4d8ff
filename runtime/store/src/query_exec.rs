//! What the queries mean, for every backend: each query's filters, filter combination (and/or),
//! validation of limit/offset/sort field, stable sorting with the 0.3.0 null rules, and
//! pagination, over records held in memory ([`crate::reads`] applies them; a database backend
//! writes the rollout filters as SQL to the same effect).

use crate::error::{StoreError, StoreResult};
use crate::model::*;
use std::cmp::Ordering;

/// A value to sort by. Missing `*_time` values sort as +∞, other missing values as ""/0.
#[derive(Debug, Clone, Copy)]
pub enum SortKey<'a> {
    Str(&'a str),
    Num(f64),
}

impl SortKey<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (SortKey::Str(a), SortKey::Str(b)) => a.cmp(b),
            (SortKey::Num(a), SortKey::Num(b)) => a.total_cmp(b),
            (SortKey::Str(_), SortKey::Num(_)) => Ordering::Greater,
            (SortKey::Num(_), SortKey::Str(_)) => Ordering::Less,
        }
    }
}

fn time(value: Option<f64>) -> SortKey<'static> {
    SortKey::Num(value.unwrap_or(f64::INFINITY))
}

fn text(value: Option<&str>) -> SortKey<'_> {
    SortKey::Str(value.unwrap_or(""))
}

/// A record type that queries can sort.
pub trait Sortable {
    /// What the error message calls these records.
    const KIND: &'static str;
    /// Field names accepted by `sort_by`.
    const SORTABLE: &'static [&'static str];
    /// The key of the field at this position in [`Self::SORTABLE`].
    fn sort_key(&self, field: usize) -> SortKey<'_>;
}

impl Sortable for Rollout {
    const KIND: &'static str = "rollouts";
    const SORTABLE: &'static [&'static str] =
        &["rollout_id", "start_time", "end_time", "mode", "resources_id", "status"];
    fn sort_key(&self, field: usize) -> SortKey<'_> {
        match field {
            0 => SortKey::Str(&self.rollout_id),
            1 => SortKey::Num(self.start_time),
            2 => time(self.end_time),
            3 => text(self.mode.map(Mode::as_str)),
            4 => text(self.resources_id.as_deref()),
            _ => SortKey::Str(self.status.as_str()),
        }
    }
}

impl Sortable for Attempt {
    const KIND: &'static str = "attempts";
    const SORTABLE: &'static [&'static str] = &[
        "rollout_id",
        "attempt_id",
        "sequence_id",
        "start_time",
        "end_time",
        "status",
        "worker_id",
        "last_heartbeat_time",
    ];
    fn sort_key(&self, field: usize) -> SortKey<'_> {
        match field {
            0 => SortKey::Str(&self.rollout_id),
            1 => SortKey::Str(&self.attempt_id),
            2 => SortKey::Num(f64::from(self.sequence_id)),
            3 => SortKey::Num(self.start_time),
            4 => time(self.end_time),
            5 => SortKey::Str(self.status.as_str()),
            6 => text(self.worker_id.as_deref()),
            _ => time(self.last_heartbeat_time),
        }
    }
}

impl Sortable for Span {
    const KIND: &'static str = "spans";
    const SORTABLE: &'static [&'static str] = &[
        "rollout_id",
        "attempt_id",
        "sequence_id",
        "trace_id",
        "span_id",
        "parent_id",
        "name",
        "start_time",
        "end_time",
    ];
    fn sort_key(&self, field: usize) -> SortKey<'_> {
        match field {
            0 => SortKey::Str(&self.rollout_id),
            1 => SortKey::Str(&self.attempt_id),
            2 => SortKey::Num(self.sequence_id as f64),
            3 => SortKey::Str(&self.trace_id),
            4 => SortKey::Str(&self.span_id),
            5 => text(self.parent_id.as_deref()),
            6 => SortKey::Str(&self.name),
            7 => time(self.start_time),
            _ => time(self.end_time),
        }
    }
}

impl Sortable for ResourcesUpdate {
    const KIND: &'static str = "resources";
    const SORTABLE: &'static [&'static str] = &["resources_id", "create_time", "update_time", "version"];
    fn sort_key(&self, field: usize) -> SortKey<'_> {
        match field {
            0 => SortKey::Str(&self.resources_id),
            1 => SortKey::Num(self.create_time),
            2 => SortKey::Num(self.update_time),
            _ => SortKey::Num(self.version as f64),
        }
    }
}

impl Sortable for Worker {
    const KIND: &'static str = "workers";
    const SORTABLE: &'static [&'static str] = &[
        "worker_id",
        "status",
        "last_heartbeat_time",
        "last_dequeue_time",
        "last_busy_time",
        "last_idle_time",
        "current_rollout_id",
        "current_attempt_id",
    ];
    fn sort_key(&self, field: usize) -> SortKey<'_> {
        match field {
            0 => SortKey::Str(&self.worker_id),
            1 => SortKey::Str(self.status.as_str()),
            2 => time(self.last_heartbeat_time),
            3 => time(self.last_dequeue_time),
            4 => time(self.last_busy_time),
            5 => time(self.last_idle_time),
            6 => text(self.current_rollout_id.as_deref()),
            _ => text(self.current_attempt_id.as_deref()),
        }
    }
}

impl<T: Sortable> Sortable for std::sync::Arc<T> {
    const KIND: &'static str = T::KIND;
    const SORTABLE: &'static [&'static str] = T::SORTABLE;
    fn sort_key(&self, field: usize) -> SortKey<'_> {
        self.as_ref().sort_key(field)
    }
}

/// Validated pagination of one query over records of type `T`.
#[derive(Debug, Clone)]
pub struct Page<T> {
    pub limit: i64,
    pub offset: i64,
    /// Position of the sort field in the record type's `SORTABLE`.
    pub sort_by: Option<usize>,
    pub order: SortOrder,
    records: std::marker::PhantomData<fn() -> T>,
}

impl<T: Sortable> Page<T> {
    /// Checks limit (-1 or ≥ 1), offset (≥ 0) and that the sort field exists on `T`.
    pub fn of(params: &impl PageParams) -> StoreResult<Self> {
        let (limit, offset) = (params.limit(), params.offset());
        if limit == 0 || limit < -1 {
            return Err(StoreError::InvalidArgument(format!(
                "limit must be -1 (no limit) or a positive number, got {limit}"
            )));
        }
        if offset < 0 {
            return Err(StoreError::InvalidArgument(format!("offset must be ≥ 0, got {offset}")));
        }
        let sort_by = match params.effective_sort_by() {
            None => None,
            Some(field) => Some(T::SORTABLE.iter().position(|f| *f == field).ok_or_else(|| {
                StoreError::InvalidArgument(format!(
                    "cannot sort {} by '{field}': sortable fields are {}",
                    T::KIND,
                    T::SORTABLE.join(", ")
                ))
            })?),
        };
        Ok(Self {
            limit,
            offset,
            sort_by,
            order: params.sort_order(),
            records: std::marker::PhantomData,
        })
    }

    /// Whether this page sorts by `field` in `order`.
    pub fn sorts_by(&self, field: &str, order: SortOrder) -> bool {
        self.sort_by.is_some_and(|i| T::SORTABLE[i] == field) && self.order == order
    }

    /// The same page without sorting: for records the caller knows are already in order.
    pub fn keeping_order(self) -> Self {
        Self { sort_by: None, ..self }
    }

    /// Sorts (stably) and slices matching records; returns the page and the total match count.
    pub fn apply<'a>(&self, mut matches: Vec<&'a T>) -> (Vec<&'a T>, u64) {
        let total = matches.len() as u64;
        if let Some(field) = self.sort_by {
            match self.order {
                SortOrder::Asc => matches.sort_by(|a, b| a.sort_key(field).cmp(&b.sort_key(field))),
                SortOrder::Desc => matches.sort_by(|a, b| b.sort_key(field).cmp(&a.sort_key(field))),
            }
        }
        let start = usize::try_from(self.offset).unwrap_or(usize::MAX).min(matches.len());
        let end = if self.limit < 0 {
            matches.len()
        } else {
            start
                .saturating_add(usize::try_from(self.limit).unwrap_or(usize::MAX))
                .min(matches.len())
        };
        matches.truncate(end);
        matches.drain(..start);
        (matches, total)
    }

    /// Wraps a page of owned items.
    pub fn result<U>(&self, items: Vec<U>, total: u64) -> Paginated<U> {
        Paginated {
            items,
            limit: self.limit,
            offset: self.offset,
            total,
        }
    }
}

/// Combines optional conditions: `None` is a condition not asked for. With no condition asked,
/// everything matches (under either logic).
pub fn combine(logic: FilterLogic, conditions: &[Option<bool>]) -> bool {
    let mut asked = conditions.iter().flatten().peekable();
    if asked.peek().is_none() {
        return true;
    }
    match logic {
        FilterLogic::And => asked.all(|c| *c),
        FilterLogic::Or => asked.any(|c| *c),
    }
}

/// `exact` and `contains` on one optional string field, as two conditions.
pub fn string_conditions(value: Option<&str>, exact: Option<&str>, contains: Option<&str>) -> [Option<bool>; 2] {
    [
        exact.map(|e| value == Some(e)),
        contains.map(|c| value.is_some_and(|v| v.contains(c))),
    ]
}

// ---- the filters of each query, shared by every backend -------------------------------------------

/// The string conditions of a span query (besides its rollout and attempt).
pub fn span_matches(s: &Span, query: &SpanQuery, logic: FilterLogic) -> bool {
    let [trace, trace_in] = string_conditions(
        Some(&s.trace_id),
        query.trace_id.as_deref(),
        query.trace_id_contains.as_deref(),
    );
    let [span, span_in] = string_conditions(
        Some(&s.span_id),
        query.span_id.as_deref(),
        query.span_id_contains.as_deref(),
    );
    let [parent, parent_in] = string_conditions(
        s.parent_id.as_deref(),
        query.parent_id.as_deref(),
        query.parent_id_contains.as_deref(),
    );
    let [name, name_in] = string_conditions(Some(&s.name), query.name.as_deref(), query.name_contains.as_deref());
    combine(
        logic,
        &[trace, trace_in, span, span_in, parent, parent_in, name, name_in],
    )
}

/// The conditions of a rollout query.
pub struct RolloutFilter<'q> {
    query: &'q RolloutQuery,
    logic: FilterLogic,
    wanted_ids: Option<rustc_hash::FxHashSet<&'q str>>,
}

impl<'q> RolloutFilter<'q> {
    pub fn of(query: &'q RolloutQuery) -> Self {
        Self {
            query,
            logic: query.filter_logic.unwrap_or_default(),
            wanted_ids: query
                .rollout_id_in
                .as_ref()
                .map(|ids| ids.iter().map(String::as_str).collect()),
        }
    }

    pub fn matches(&self, rollout: &Rollout) -> bool {
        combine(
            self.logic,
            &[
                self.query.status_in.as_ref().map(|s| s.contains(&rollout.status)),
                self.wanted_ids
                    .as_ref()
                    .map(|ids| ids.contains(rollout.rollout_id.as_str())),
                self.query
                    .rollout_id_contains
                    .as_deref()
                    .map(|c| rollout.rollout_id.contains(c)),
            ],
        )
    }
}

/// The conditions of a resources query.
pub fn resources_match(resources: &ResourcesUpdate, query: &ResourcesQuery) -> bool {
    combine(
        FilterLogic::And,
        &string_conditions(
            Some(&resources.resources_id),
            query.resources_id.as_deref(),
            query.resources_id_contains.as_deref(),
        ),
    )
}

/// The conditions of a worker query.
pub fn worker_matches(worker: &Worker, query: &WorkerQuery) -> bool {
    combine(
        query.filter_logic.unwrap_or_default(),
        &[
            query.status_in.as_ref().map(|s| s.contains(&worker.status)),
            query
                .worker_id_contains
                .as_deref()
                .map(|c| worker.worker_id.contains(c)),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combine_treats_unasked_conditions_as_absent() {
        assert!(combine(FilterLogic::And, &[None, None]));
        assert!(combine(FilterLogic::Or, &[None, None]));
        assert!(!combine(FilterLogic::And, &[Some(true), Some(false)]));
        assert!(combine(FilterLogic::Or, &[Some(false), None, Some(true)]));
        assert!(!combine(FilterLogic::Or, &[Some(false), None]));
    }

    #[test]
    fn page_rejects_bad_limit_offset_and_sort_field() {
        for query in [
            WorkerQuery::default().limit(0),
            WorkerQuery::default().limit(-2),
            WorkerQuery::default().offset(-1),
            WorkerQuery::default().sort_by("nope", SortOrder::Asc),
        ] {
            let err = Page::<Worker>::of(&query).unwrap_err();
            assert!(matches!(err, StoreError::InvalidArgument(_)), "{err}");
        }
        assert!(Page::<Worker>::of(&WorkerQuery::default().limit(-1)).is_ok());
    }

    #[test]
    fn missing_times_sort_last_ascending_and_pagination_slices_after_sorting() {
        let mut workers: Vec<Worker> = (0..5).map(|i| Worker::new(format!("w{i}"))).collect();
        workers[0].last_busy_time = Some(3.0);
        workers[2].last_busy_time = Some(1.0);
        workers[4].last_busy_time = Some(2.0);
        let query = WorkerQuery::default()
            .sort_by("last_busy_time", SortOrder::Asc)
            .limit(3)
            .offset(1);
        let page = Page::<Worker>::of(&query).unwrap();
        let (items, total) = page.apply(workers.iter().collect());
        assert_eq!(total, 5);
        let ids: Vec<_> = items.iter().map(|w| w.worker_id.as_str()).collect();
        assert_eq!(ids, ["w4", "w0", "w1"]);
    }

    #[test]
    fn offset_past_the_end_gives_an_empty_page() {
        let workers: Vec<Worker> = (0..3).map(|i| Worker::new(format!("w{i}"))).collect();
        let query = WorkerQuery::default().offset(10);
        let page = Page::<Worker>::of(&query).unwrap();
        let (items, total) = page.apply(workers.iter().collect());
        assert!(items.is_empty());
        assert_eq!(total, 3);
    }
}
