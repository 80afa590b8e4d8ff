//! The in-memory store's data and every mutation on it, run under the store's one lock.
//! Status decisions come from [`crate::rules`]; this module only stores, indexes and applies them.

use super::waiters::Waiters;
use super::watchdog::Agenda;
use crate::error::{StoreError, StoreResult};
use crate::model::*;
use crate::query_exec::{Page, SortKey, Sortable, combine, string_conditions};
use crate::rules;
use crate::store::AttemptRef;
use indexmap::IndexMap;
use rustc_hash::{FxBuildHasher, FxHashMap, FxHashSet};
use std::collections::VecDeque;
use std::sync::Arc;

/// One rollout with everything that hangs off it.
#[derive(Debug)]
pub(crate) struct RolloutEntry {
    pub rollout: Rollout,
    /// In sequence order; the last one is the latest.
    pub attempts: Vec<Attempt>,
    /// This rollout's spans in arrival order (the per-rollout span index).
    pub spans: Vec<Arc<Span>>,
    /// The attempt sequence of each span, beside `spans`: filtering by attempt reads no span.
    span_attempts: Vec<u32>,
    /// Whether `spans` arrived in non-decreasing sequence id order (then sorting by it is a no-op).
    spans_in_sequence_order: bool,
    /// Duplicate detection: (attempt sequence, span id as u64) for well-formed 16-hex ids...
    span_keys: FxHashSet<(u32, u64)>,
    /// ...and the raw id for anything else.
    odd_span_keys: FxHashSet<(u32, Box<str>)>,
    /// The highest span sequence id issued or seen.
    pub last_span_sequence: u64,
    /// Whether the queue holds this rollout's slot (possibly stale: dequeue skips non-queuing).
    pub in_queue: bool,
}

impl RolloutEntry {
    fn new(rollout: Rollout) -> Self {
        Self {
            rollout,
            attempts: Vec::new(),
            spans: Vec::new(),
            span_attempts: Vec::new(),
            spans_in_sequence_order: true,
            span_keys: FxHashSet::default(),
            odd_span_keys: FxHashSet::default(),
            last_span_sequence: 0,
            in_queue: false,
        }
    }

    fn attempt_index(&self, attempt_id: &str) -> Option<usize> {
        self.attempts.iter().rposition(|a| a.attempt_id == attempt_id)
    }

    /// Records the span key; false when this attempt already has a span with this id.
    fn claim_span_key(&mut self, attempt_sequence: u32, span_id: &str) -> bool {
        match parse_hex_u64(span_id) {
            Some(bits) => self.span_keys.insert((attempt_sequence, bits)),
            None => self.odd_span_keys.insert((attempt_sequence, span_id.into())),
        }
    }

    fn view(&self) -> RolloutView {
        RolloutView {
            rollout: self.rollout.clone(),
            attempt: self.attempts.last().cloned(),
        }
    }

    fn attempted(&self) -> AttemptedRollout {
        let attempt = self
            .attempts
            .last()
            .cloned()
            .expect("called right after an attempt was added");
        AttemptedRollout {
            rollout: self.rollout.clone(),
            attempt,
        }
    }
}

impl Sortable for RolloutEntry {
    const KIND: &'static str = Rollout::KIND;
    const SORTABLE: &'static [&'static str] = Rollout::SORTABLE;
    fn sort_key(&self, field: usize) -> SortKey<'_> {
        self.rollout.sort_key(field)
    }
}

/// The string conditions of a span query (besides its rollout and attempt).
fn span_matches(s: &Span, query: &SpanQuery, logic: FilterLogic) -> bool {
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

fn parse_hex_u64(id: &str) -> Option<u64> {
    if id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
        u64::from_str_radix(id, 16).ok()
    } else {
        None
    }
}

#[derive(Debug, Default)]
pub(crate) struct State {
    pub rollouts: Vec<RolloutEntry>,
    index: FxHashMap<String, u32>,
    pub queue: VecDeque<u32>,
    resources: IndexMap<String, ResourcesUpdate, FxBuildHasher>,
    latest_resources: Option<String>,
    pub workers: IndexMap<String, Worker, FxBuildHasher>,
    /// Span sequence counters of rollout ids the store does not hold: 0.3.0 issues sequence ids
    /// for any rollout id (its counters are a map keyed by id), so we do too. A rollout created
    /// later under such an id takes its counter over.
    orphan_span_sequences: FxHashMap<String, u64>,
    agenda: Agenda,
    pub waiters: Waiters,
    total_attempts: u64,
    total_spans: u64,
}

impl State {
    pub fn slot(&self, rollout_id: &str) -> Option<u32> {
        self.index.get(rollout_id).copied()
    }

    fn require_slot(&self, rollout_id: &str) -> StoreResult<u32> {
        self.slot(rollout_id)
            .ok_or_else(|| StoreError::RolloutNotFound(rollout_id.to_owned()))
    }

    fn entry(&mut self, slot: u32) -> &mut RolloutEntry {
        &mut self.rollouts[slot as usize]
    }

    // ---- the status machine, applied ------------------------------------------------------

    /// Every rollout status change goes through here: end time, requeue, and waking waiters.
    fn set_rollout_status(&mut self, slot: u32, status: RolloutStatus, now: f64) {
        let entry = &mut self.rollouts[slot as usize];
        entry.rollout.status = status;
        if rules::rollout_ends(status) {
            entry.rollout.end_time = Some(now);
        }
        if status.is_queuing() && !entry.in_queue {
            entry.in_queue = true;
            self.queue.push_back(slot);
        }
        if status.is_finished() {
            self.waiters.finished(slot);
        }
    }

    /// Re-derives the rollout's status after its attempt `index` changed (only the latest counts).
    fn propagate_attempt(&mut self, slot: u32, index: usize, now: f64) {
        let entry = &self.rollouts[slot as usize];
        if index + 1 != entry.attempts.len() {
            return;
        }
        let latest = &entry.attempts[index];
        if let Some(status) = rules::propagate_to_rollout(entry.rollout.status, latest, &entry.rollout.config) {
            self.set_rollout_status(slot, status, now);
        }
    }

    /// Arms the watchdog for attempt `index` if its rollout's config asks for one.
    fn arm_watchdog(&mut self, slot: u32, index: usize) {
        let entry = &self.rollouts[slot as usize];
        let attempt = &entry.attempts[index];
        if let Some(at) = rules::watchdog_deadline(attempt, &entry.rollout.config) {
            self.agenda.schedule(at, slot, attempt.sequence_id);
        }
    }

    fn sync_worker(&mut self, attempt: &Attempt, now: f64, dequeued: bool) {
        let Some(worker_id) = attempt.worker_id.as_deref().filter(|w| !w.is_empty()) else {
            return;
        };
        let worker = self
            .workers
            .entry(worker_id.to_owned())
            .or_insert_with(|| Worker::new(worker_id));
        rules::sync_worker_with_attempt(worker, attempt, now, dequeued);
    }

    /// Creates attempt n+1 (`preparing`) and puts the rollout in `preparing`.
    fn new_attempt(&mut self, slot: u32, worker_id: Option<&str>, now: f64, dequeued: bool) {
        let entry = self.entry(slot);
        let mut attempt_id = new_attempt_id();
        while entry.attempt_index(&attempt_id).is_some() {
            attempt_id = new_attempt_id();
        }
        let attempt = Attempt {
            rollout_id: entry.rollout.rollout_id.clone(),
            attempt_id,
            sequence_id: entry.attempts.len() as u32 + 1,
            start_time: now,
            end_time: None,
            status: AttemptStatus::Preparing,
            worker_id: worker_id.map(str::to_owned),
            last_heartbeat_time: None,
            metadata: None,
        };
        entry.attempts.push(attempt);
        let index = entry.attempts.len() - 1;
        self.total_attempts += 1;
        self.arm_watchdog(slot, index);
        self.set_rollout_status(slot, RolloutStatus::Preparing, now);
        if worker_id.is_some() {
            let attempt = self.rollouts[slot as usize].attempts[index].clone();
            self.sync_worker(&attempt, now, dequeued);
        }
    }

    /// Applies the watchdog's verdicts on every attempt that is due; returns how many changed.
    pub fn run_watchdog(&mut self, now: f64) -> usize {
        let mut changed = 0;
        while let Some(due) = self.agenda.pop_due(now) {
            let entry = &self.rollouts[due.slot as usize];
            let Some(latest) = entry.attempts.last() else {
                continue;
            };
            if !entry.rollout.status.is_active()
                || latest.sequence_id != due.attempt_sequence
                || !matches!(latest.status, AttemptStatus::Preparing | AttemptStatus::Running)
            {
                continue;
            }
            let index = entry.attempts.len() - 1;
            match rules::watchdog_verdict(now, latest, &entry.rollout.config) {
                Some(verdict) => {
                    let attempt = &mut self.entry(due.slot).attempts[index];
                    attempt.status = verdict;
                    if rules::attempt_ends(verdict) {
                        attempt.end_time = Some(now);
                    }
                    let attempt = attempt.clone();
                    self.propagate_attempt(due.slot, index, now);
                    self.sync_worker(&attempt, now, false);
                    changed += 1;
                }
                None => self.arm_watchdog(due.slot, index),
            }
        }
        changed
    }

    pub fn watchdog_has_due(&self, now: f64) -> bool {
        self.agenda.has_due(now)
    }

    // ---- rollouts and attempts -------------------------------------------------------------

    fn check_request(&self, request: &EnqueueRolloutRequest) -> StoreResult<()> {
        if let Some(config) = &request.config {
            config.validate().map_err(StoreError::InvalidArgument)?;
        }
        if let Some(id) = &request.resources_id {
            self.warn_if_unknown_resources(id, "a new rollout");
        }
        Ok(())
    }

    /// 0.3.0 stores any `resources_id` a rollout names without looking it up (`enqueue_rollout`,
    /// `start_rollout`, `update_rollout` in `collection_based.py`), so we accept it too; a runner
    /// asking for those resources later gets nothing, hence the warning.
    fn warn_if_unknown_resources(&self, resources_id: &str, whose: &str) {
        if !self.resources.contains_key(resources_id) {
            tracing::warn!(
                resources_id,
                "{whose} names resources that the store does not hold; accepted as Agent-lightning 0.3.0 does, \
                 but fetching them will find nothing"
            );
        }
    }

    fn insert_rollout(&mut self, request: EnqueueRolloutRequest, status: RolloutStatus, now: f64) -> u32 {
        let mut rollout_id = new_rollout_id();
        while self.index.contains_key(&rollout_id) {
            rollout_id = new_rollout_id();
        }
        let rollout = Rollout {
            rollout_id: rollout_id.clone(),
            input: request.input,
            start_time: now,
            end_time: None,
            mode: request.mode,
            resources_id: request.resources_id.or_else(|| self.latest_resources.clone()),
            status,
            config: request.config.unwrap_or_default(),
            metadata: Some(request.metadata.unwrap_or_default()),
        };
        let slot = u32::try_from(self.rollouts.len()).expect("fewer than 2^32 rollouts");
        let mut entry = RolloutEntry::new(rollout);
        if let Some(issued) = self.orphan_span_sequences.remove(&rollout_id) {
            entry.last_span_sequence = issued;
        }
        self.rollouts.push(entry);
        self.index.insert(rollout_id, slot);
        slot
    }

    pub fn start_rollout(&mut self, request: StartRolloutRequest, now: f64) -> StoreResult<AttemptedRollout> {
        self.check_request(&request.rollout)?;
        let slot = self.insert_rollout(request.rollout, RolloutStatus::Preparing, now);
        self.new_attempt(slot, request.worker_id.as_deref(), now, false);
        Ok(self.rollouts[slot as usize].attempted())
    }

    pub fn enqueue(&mut self, requests: Vec<EnqueueRolloutRequest>, now: f64) -> StoreResult<Vec<Rollout>> {
        for request in &requests {
            self.check_request(request)?;
        }
        let mut out = Vec::with_capacity(requests.len());
        for request in requests {
            let slot = self.insert_rollout(request, RolloutStatus::Queuing, now);
            self.set_rollout_status(slot, RolloutStatus::Queuing, now);
            out.push(self.rollouts[slot as usize].rollout.clone());
        }
        Ok(out)
    }

    pub fn dequeue(&mut self, limit: usize, worker_id: Option<&str>, now: f64) -> Vec<AttemptedRollout> {
        let mut out = Vec::with_capacity(limit.min(64));
        while out.len() < limit {
            let Some(slot) = self.queue.pop_front() else {
                break;
            };
            let entry = self.entry(slot);
            entry.in_queue = false;
            if !entry.rollout.status.is_queuing() {
                continue;
            }
            self.new_attempt(slot, worker_id, now, true);
            out.push(self.rollouts[slot as usize].attempted());
        }
        if out.is_empty()
            && let Some(worker_id) = worker_id.filter(|w| !w.is_empty())
        {
            let worker = self
                .workers
                .entry(worker_id.to_owned())
                .or_insert_with(|| Worker::new(worker_id));
            rules::mark_worker_polled_empty(worker, now);
        }
        out
    }

    pub fn start_attempt(
        &mut self,
        rollout_id: &str,
        worker_id: Option<&str>,
        now: f64,
    ) -> StoreResult<AttemptedRollout> {
        let slot = self.require_slot(rollout_id)?;
        self.new_attempt(slot, worker_id, now, false);
        Ok(self.rollouts[slot as usize].attempted())
    }

    pub fn update_rollout(&mut self, rollout_id: &str, update: RolloutUpdate, now: f64) -> StoreResult<Rollout> {
        let slot = self.require_slot(rollout_id)?;
        if let Some(config) = &update.config {
            config.validate().map_err(StoreError::InvalidArgument)?;
        }
        if let Some(Some(id)) = &update.resources_id {
            self.warn_if_unknown_resources(id, &format!("the update of rollout {rollout_id}"));
        }
        let entry = self.entry(slot);
        if let Some(input) = update.input {
            entry.rollout.input = input;
        }
        if let Some(mode) = update.mode {
            entry.rollout.mode = mode;
        }
        if let Some(resources_id) = update.resources_id {
            entry.rollout.resources_id = resources_id;
        }
        if let Some(metadata) = update.metadata {
            entry.rollout.metadata = metadata;
        }
        if let Some(config) = update.config {
            entry.rollout.config = config;
            if let Some(index) = entry.attempts.len().checked_sub(1) {
                self.arm_watchdog(slot, index);
            }
        }
        if let Some(status) = update.status {
            self.set_rollout_status(slot, status, now);
        }
        Ok(self.rollouts[slot as usize].rollout.clone())
    }

    pub fn update_attempt(
        &mut self,
        rollout_id: &str,
        which: AttemptRef<'_>,
        update: AttemptUpdate,
        now: f64,
    ) -> StoreResult<Attempt> {
        let slot = self.require_slot(rollout_id)?;
        let entry = self.entry(slot);
        if entry.attempts.is_empty() {
            return Err(StoreError::NoAttempts(rollout_id.to_owned()));
        }
        let index = match which {
            AttemptRef::Latest => entry.attempts.len() - 1,
            AttemptRef::Id(id) => entry.attempt_index(id).ok_or_else(|| StoreError::AttemptNotFound {
                rollout_id: rollout_id.to_owned(),
                attempt_id: id.to_owned(),
            })?,
        };
        let attempt = &mut entry.attempts[index];
        let mut sync_worker = false;
        let mut rearm = false;
        if let Some(worker_id) = update.worker_id {
            sync_worker = !worker_id.is_empty();
            attempt.worker_id = Some(worker_id);
        }
        if let Some(status) = update.status {
            attempt.status = status;
            if rules::attempt_ends(status) {
                attempt.end_time = Some(now);
            }
            sync_worker |= attempt.worker_id.is_some();
            rearm = true;
        }
        if let Some(heartbeat) = update.last_heartbeat_time {
            attempt.last_heartbeat_time = Some(heartbeat);
            rearm = true;
        }
        if let Some(metadata) = update.metadata {
            attempt.metadata = metadata;
        }
        let attempt = attempt.clone();
        if rearm {
            self.arm_watchdog(slot, index);
        }
        self.propagate_attempt(slot, index, now);
        if sync_worker {
            self.sync_worker(&attempt, now, false);
        }
        Ok(attempt)
    }

    pub fn get_rollout(&self, rollout_id: &str) -> Option<RolloutView> {
        self.slot(rollout_id).map(|slot| self.rollouts[slot as usize].view())
    }

    pub fn latest_attempt(&self, rollout_id: &str) -> Option<Attempt> {
        let slot = self.slot(rollout_id)?;
        self.rollouts[slot as usize].attempts.last().cloned()
    }

    pub fn finished_rollouts(&self, rollout_ids: &[String]) -> Vec<Rollout> {
        rollout_ids
            .iter()
            .filter_map(|id| self.slot(id))
            .map(|slot| &self.rollouts[slot as usize].rollout)
            .filter(|r| r.status.is_finished())
            .cloned()
            .collect()
    }

    pub fn query_rollouts(&self, query: &RolloutQuery) -> StoreResult<Paginated<RolloutView>> {
        let page = Page::<RolloutEntry>::of(query)?;
        let logic = query.filter_logic.unwrap_or_default();
        let candidates: Vec<&RolloutEntry> = match (&query.rollout_id_in, logic) {
            (Some(ids), FilterLogic::And) => {
                let mut slots: Vec<u32> = ids.iter().filter_map(|id| self.slot(id)).collect();
                slots.sort_unstable();
                slots.dedup();
                slots.into_iter().map(|s| &self.rollouts[s as usize]).collect()
            }
            _ => self.rollouts.iter().collect(),
        };
        let wanted_ids: Option<FxHashSet<&str>> = query
            .rollout_id_in
            .as_ref()
            .map(|ids| ids.iter().map(String::as_str).collect());
        let matches: Vec<&RolloutEntry> = candidates
            .into_iter()
            .filter(|entry| {
                let r = &entry.rollout;
                combine(
                    logic,
                    &[
                        query.status_in.as_ref().map(|s| s.contains(&r.status)),
                        wanted_ids.as_ref().map(|ids| ids.contains(r.rollout_id.as_str())),
                        query.rollout_id_contains.as_deref().map(|c| r.rollout_id.contains(c)),
                    ],
                )
            })
            .collect();
        let (items, total) = page.apply(matches);
        Ok(page.result(items.into_iter().map(RolloutEntry::view).collect(), total))
    }

    pub fn query_attempts(&self, rollout_id: &str, query: &AttemptQuery) -> StoreResult<Paginated<Attempt>> {
        let page = Page::<Attempt>::of(query)?;
        let attempts: Vec<&Attempt> = match self.slot(rollout_id) {
            Some(slot) => self.rollouts[slot as usize].attempts.iter().collect(),
            None => Vec::new(),
        };
        let (items, total) = page.apply(attempts);
        Ok(page.result(items.into_iter().cloned().collect(), total))
    }

    // ---- spans -----------------------------------------------------------------------------

    /// Stores spans after checking all of them; each stored span is a heartbeat.
    pub fn add_spans(&mut self, spans: Vec<Span>, now: f64) -> StoreResult<Vec<Arc<Span>>> {
        let targets = spans
            .iter()
            .map(|span| self.span_target(span))
            .collect::<StoreResult<Vec<_>>>()?;
        let mut stored = Vec::with_capacity(spans.len());
        for (span, target) in spans.into_iter().zip(targets) {
            stored.extend(self.store_span(span, target, now));
        }
        Ok(stored)
    }

    pub fn add_span(&mut self, span: Span, now: f64) -> StoreResult<Option<Arc<Span>>> {
        let target = self.span_target(&span)?;
        Ok(self.store_span(span, target, now))
    }

    /// The rollout slot and attempt index a span belongs to.
    fn span_target(&self, span: &Span) -> StoreResult<(u32, usize)> {
        let slot = self.require_slot(&span.rollout_id)?;
        let index = self.rollouts[slot as usize]
            .attempt_index(&span.attempt_id)
            .ok_or_else(|| StoreError::AttemptNotFound {
                rollout_id: span.rollout_id.clone(),
                attempt_id: span.attempt_id.clone(),
            })?;
        Ok((slot, index))
    }

    /// Stores one span unless its attempt already has one with this id; it is a heartbeat.
    fn store_span(&mut self, span: Span, (slot, index): (u32, usize), now: f64) -> Option<Arc<Span>> {
        let entry = self.entry(slot);
        let attempt_sequence = entry.attempts[index].sequence_id;
        if !entry.claim_span_key(attempt_sequence, &span.span_id) {
            return None;
        }
        if entry
            .spans
            .last()
            .is_some_and(|last| last.sequence_id > span.sequence_id)
        {
            entry.spans_in_sequence_order = false;
        }
        entry.last_span_sequence = entry.last_span_sequence.max(span.sequence_id);
        let span = Arc::new(span);
        entry.spans.push(Arc::clone(&span));
        entry.span_attempts.push(attempt_sequence);
        self.total_spans += 1;
        self.heartbeat(slot, index, now);
        Some(span)
    }

    /// A span arrived for attempt `index`: it is alive, and if it is the latest and now runs, so
    /// does its rollout. A late span of an ended attempt only refreshes its heartbeat time.
    fn heartbeat(&mut self, slot: u32, index: usize, now: f64) {
        let entry = self.entry(slot);
        let attempt = &mut entry.attempts[index];
        attempt.last_heartbeat_time = Some(now);
        let before = attempt.status;
        attempt.status = rules::attempt_status_after_span(before);
        let runs = attempt.status == AttemptStatus::Running;
        let is_latest = index + 1 == entry.attempts.len();
        if before == AttemptStatus::Unresponsive {
            self.arm_watchdog(slot, index);
        }
        let rollout_status = self.rollouts[slot as usize].rollout.status;
        if is_latest
            && runs
            && let Some(status) = rules::rollout_status_after_span(rollout_status)
        {
            self.set_rollout_status(slot, status, now);
        }
    }

    /// One sequence id per pair, from the rollout's counter. As in 0.3.0
    /// (`_issue_many_span_sequence_ids` in `collection_based.py`, a counter map keyed by rollout
    /// id alone), neither the rollout nor the attempt has to exist: an unknown rollout id gets a
    /// counter of its own, an unknown attempt draws from its rollout's counter. Both are logged,
    /// since spans for them will be refused.
    pub fn next_span_sequence_ids(&mut self, pairs: &[(&str, &str)]) -> StoreResult<Vec<u64>> {
        let mut issued = Vec::with_capacity(pairs.len());
        for &(rollout_id, attempt_id) in pairs {
            let counter = match self.slot(rollout_id) {
                Some(slot) => {
                    let entry = self.entry(slot);
                    if entry.attempt_index(attempt_id).is_none() {
                        tracing::warn!(
                            rollout_id,
                            attempt_id,
                            "span sequence id asked for an attempt the rollout does not have; issued from the \
                             rollout's counter as Agent-lightning 0.3.0 does"
                        );
                    }
                    &mut entry.last_span_sequence
                }
                None => {
                    tracing::warn!(
                        rollout_id,
                        attempt_id,
                        "span sequence id asked for a rollout the store does not hold; issued from a counter \
                         of its own as Agent-lightning 0.3.0 does"
                    );
                    self.orphan_span_sequences.entry(rollout_id.to_owned()).or_default()
                }
            };
            *counter += 1;
            issued.push(*counter);
        }
        Ok(issued)
    }

    pub fn query_spans(&self, query: &SpanQuery) -> StoreResult<Paginated<Arc<Span>>> {
        let page = Page::<Arc<Span>>::of(query)?;
        let Some(slot) = self.slot(&query.rollout_id) else {
            return Ok(page.result(Vec::new(), 0));
        };
        let entry = &self.rollouts[slot as usize];
        let attempt_sequence: Option<u32> = match query.attempt_id.as_deref() {
            None => None,
            Some(wanted) => {
                let attempt = match wanted {
                    "latest" => entry.attempts.last(),
                    id => entry.attempts.iter().find(|a| a.attempt_id == id),
                };
                match attempt {
                    Some(attempt) => Some(attempt.sequence_id),
                    None => return Ok(page.result(Vec::new(), 0)),
                }
            }
        };
        let logic = query.filter_logic.unwrap_or_default();
        let has_conditions = [
            &query.trace_id,
            &query.trace_id_contains,
            &query.span_id,
            &query.span_id_contains,
            &query.parent_id,
            &query.parent_id_contains,
            &query.name,
            &query.name_contains,
        ]
        .iter()
        .any(|c| c.is_some());
        let matches: Vec<&Arc<Span>> = entry
            .spans
            .iter()
            .zip(&entry.span_attempts)
            .filter(|(_, attempt)| attempt_sequence.is_none_or(|wanted| **attempt == wanted))
            .map(|(span, _)| span)
            .filter(|s| !has_conditions || span_matches(s, query, logic))
            .collect();
        let page = if entry.spans_in_sequence_order && page.sorts_by("sequence_id", SortOrder::Asc) {
            page.keeping_order()
        } else {
            page
        };
        let (items, total) = page.apply(matches);
        Ok(page.result(items.into_iter().map(Arc::clone).collect(), total))
    }

    // ---- resources -------------------------------------------------------------------------

    pub fn add_resources(&mut self, resources: NamedResources, now: f64) -> ResourcesUpdate {
        let mut id = new_resources_id();
        while self.resources.contains_key(&id) {
            id = new_resources_id();
        }
        let update = ResourcesUpdate {
            resources_id: id.clone(),
            create_time: now,
            update_time: now,
            version: 1,
            resources,
        };
        self.resources.insert(id.clone(), update.clone());
        self.latest_resources = Some(id);
        update
    }

    pub fn update_resources(
        &mut self,
        resources_id: &str,
        resources: NamedResources,
        now: f64,
    ) -> StoreResult<ResourcesUpdate> {
        if resources_id.is_empty() {
            return Err(StoreError::InvalidArgument("resources_id must not be empty".into()));
        }
        let update = match self.resources.get_mut(resources_id) {
            Some(existing) => {
                existing.resources = resources;
                existing.update_time = now;
                existing.version += 1;
                existing.clone()
            }
            None => {
                let update = ResourcesUpdate {
                    resources_id: resources_id.to_owned(),
                    create_time: now,
                    update_time: now,
                    version: 1,
                    resources,
                };
                self.resources.insert(resources_id.to_owned(), update.clone());
                update
            }
        };
        self.latest_resources = Some(resources_id.to_owned());
        Ok(update)
    }

    pub fn latest_resources(&self) -> Option<ResourcesUpdate> {
        self.latest_resources
            .as_ref()
            .and_then(|id| self.resources.get(id))
            .cloned()
    }

    pub fn resources_by_id(&self, resources_id: &str) -> Option<ResourcesUpdate> {
        self.resources.get(resources_id).cloned()
    }

    pub fn query_resources(&self, query: &ResourcesQuery) -> StoreResult<Paginated<ResourcesUpdate>> {
        let page = Page::<ResourcesUpdate>::of(query)?;
        let matches: Vec<&ResourcesUpdate> = self
            .resources
            .values()
            .filter(|r| {
                combine(
                    FilterLogic::And,
                    &string_conditions(
                        Some(&r.resources_id),
                        query.resources_id.as_deref(),
                        query.resources_id_contains.as_deref(),
                    ),
                )
            })
            .collect();
        let (items, total) = page.apply(matches);
        Ok(page.result(items.into_iter().cloned().collect(), total))
    }

    // ---- workers ---------------------------------------------------------------------------

    pub fn heartbeat_worker(&mut self, worker_id: &str, update: WorkerUpdate, now: f64) -> StoreResult<Worker> {
        if worker_id.is_empty() {
            return Err(StoreError::InvalidArgument("worker_id must not be empty".into()));
        }
        let worker = self
            .workers
            .entry(worker_id.to_owned())
            .or_insert_with(|| Worker::new(worker_id));
        worker.last_heartbeat_time = Some(now);
        if let Some(stats) = update.heartbeat_stats {
            worker.heartbeat_stats = Some(stats);
        }
        Ok(worker.clone())
    }

    pub fn query_workers(&self, query: &WorkerQuery) -> StoreResult<Paginated<Worker>> {
        let page = Page::<Worker>::of(query)?;
        let logic = query.filter_logic.unwrap_or_default();
        let matches: Vec<&Worker> = self
            .workers
            .values()
            .filter(|w| {
                combine(
                    logic,
                    &[
                        query.status_in.as_ref().map(|s| s.contains(&w.status)),
                        query.worker_id_contains.as_deref().map(|c| w.worker_id.contains(c)),
                    ],
                )
            })
            .collect();
        let (items, total) = page.apply(matches);
        Ok(page.result(items.into_iter().cloned().collect(), total))
    }

    pub fn counts(&self) -> [u64; 5] {
        [
            self.rollouts.len() as u64,
            self.total_attempts,
            self.total_spans,
            self.resources.len() as u64,
            self.workers.len() as u64,
        ]
    }
}
