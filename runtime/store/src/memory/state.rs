//! The in-memory store's data: its records, indexes, queue, watchdog agenda and waiters, the
//! [`Storage`] primitives over them (run under the store's one lock by [`crate::transitions`],
//! which makes every decision), and the queries, answered from the indexes.

use super::waiters::Waiters;
use super::watchdog::Agenda;
use crate::error::{StoreError, StoreResult};
use crate::model::*;
use crate::query_exec::{Page, RolloutFilter, SortKey, Sortable, resources_match, span_matches, worker_matches};
use crate::storage::{Storage, StorageCounts};
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

    fn attempt_mut(&mut self, which: AttemptRef<'_>) -> Option<&mut Attempt> {
        match which {
            AttemptRef::Latest => self.attempts.last_mut(),
            AttemptRef::Id(id) => {
                let index = self.attempt_index(id)?;
                Some(&mut self.attempts[index])
            }
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
}

impl Sortable for RolloutEntry {
    const KIND: &'static str = Rollout::KIND;
    const SORTABLE: &'static [&'static str] = Rollout::SORTABLE;
    fn sort_key(&self, field: usize) -> SortKey<'_> {
        self.rollout.sort_key(field)
    }
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
    /// The slot found last: one operation looks its rollout up several times (once per storage
    /// primitive), and comparing an id is cheaper than hashing it.
    last_slot: std::cell::Cell<u32>,
}

impl State {
    pub fn slot(&self, rollout_id: &str) -> Option<u32> {
        let last = self.last_slot.get();
        if let Some(entry) = self.rollouts.get(last as usize)
            && entry.rollout.rollout_id == rollout_id
        {
            return Some(last);
        }
        let slot = self.index.get(rollout_id).copied()?;
        self.last_slot.set(slot);
        Some(slot)
    }

    fn entry_of(&mut self, rollout_id: &str) -> Option<&mut RolloutEntry> {
        let slot = self.slot(rollout_id)?;
        Some(&mut self.rollouts[slot as usize])
    }

    pub fn get_rollout(&self, rollout_id: &str) -> Option<RolloutView> {
        self.slot(rollout_id).map(|slot| self.rollouts[slot as usize].view())
    }

    pub fn latest_attempt_of(&self, rollout_id: &str) -> Option<Attempt> {
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
        let filter = RolloutFilter::of(query);
        let matches: Vec<&RolloutEntry> = candidates
            .into_iter()
            .filter(|entry| filter.matches(&entry.rollout))
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

    // ---- spans -------------------------------------------------------------------------------

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
        let matches: Vec<&ResourcesUpdate> = self.resources.values().filter(|r| resources_match(r, query)).collect();
        let (items, total) = page.apply(matches);
        Ok(page.result(items.into_iter().cloned().collect(), total))
    }

    // ---- workers ---------------------------------------------------------------------------

    pub fn query_workers(&self, query: &WorkerQuery) -> StoreResult<Paginated<Worker>> {
        let page = Page::<Worker>::of(query)?;
        let matches: Vec<&Worker> = self.workers.values().filter(|w| worker_matches(w, query)).collect();
        let (items, total) = page.apply(matches);
        Ok(page.result(items.into_iter().cloned().collect(), total))
    }

    pub fn totals(&self) -> [u64; 5] {
        [
            self.rollouts.len() as u64,
            self.total_attempts,
            self.total_spans,
            self.resources.len() as u64,
            self.workers.len() as u64,
        ]
    }
}

impl Storage for State {
    fn rollout(&mut self, rollout_id: &str) -> StoreResult<Option<Rollout>> {
        Ok(self
            .slot(rollout_id)
            .map(|slot| self.rollouts[slot as usize].rollout.clone()))
    }

    fn read_rollout<T>(&mut self, rollout_id: &str, read: impl FnOnce(&Rollout) -> T) -> StoreResult<Option<T>> {
        Ok(self
            .slot(rollout_id)
            .map(|slot| read(&self.rollouts[slot as usize].rollout)))
    }

    fn insert_rollout(&mut self, rollout: &Rollout) -> StoreResult<bool> {
        if self.index.contains_key(&rollout.rollout_id) {
            return Ok(false);
        }
        let slot = u32::try_from(self.rollouts.len())
            .map_err(|_| StoreError::Backend("the in-memory store holds 2^32 rollouts already".into()))?;
        let mut entry = RolloutEntry::new(rollout.clone());
        if let Some(issued) = self.orphan_span_sequences.remove(&rollout.rollout_id) {
            entry.last_span_sequence = issued;
        }
        self.rollouts.push(entry);
        self.index.insert(rollout.rollout_id.clone(), slot);
        Ok(true)
    }

    fn save_rollout(&mut self, rollout: &Rollout) -> StoreResult<()> {
        if let Some(entry) = self.entry_of(&rollout.rollout_id) {
            entry.rollout.clone_from(rollout);
        }
        Ok(())
    }

    fn save_rollout_status(
        &mut self,
        rollout_id: &str,
        status: RolloutStatus,
        end_time: Option<f64>,
    ) -> StoreResult<()> {
        if let Some(entry) = self.entry_of(rollout_id) {
            entry.rollout.status = status;
            entry.rollout.end_time = end_time;
        }
        Ok(())
    }

    fn push_queue(&mut self, rollout_id: &str) -> StoreResult<()> {
        if let Some(slot) = self.slot(rollout_id) {
            let entry = &mut self.rollouts[slot as usize];
            if !entry.in_queue {
                entry.in_queue = true;
                self.queue.push_back(slot);
            }
        }
        Ok(())
    }

    fn pop_queue(&mut self, limit: usize) -> StoreResult<Vec<Rollout>> {
        let mut out = Vec::with_capacity(limit.min(64));
        while out.len() < limit {
            let Some(slot) = self.queue.pop_front() else {
                break;
            };
            let entry = &mut self.rollouts[slot as usize];
            entry.in_queue = false;
            if entry.rollout.status.is_queuing() {
                out.push(entry.rollout.clone());
            }
        }
        Ok(out)
    }

    fn rollout_finished(&mut self, rollout_id: &str) {
        if let Some(slot) = self.slot(rollout_id) {
            self.waiters.finished(slot);
        }
    }

    fn attempt_count(&mut self, rollout_id: &str) -> StoreResult<u32> {
        Ok(self
            .slot(rollout_id)
            .map_or(0, |slot| self.rollouts[slot as usize].attempts.len() as u32))
    }

    fn latest_attempt(&mut self, rollout_id: &str) -> StoreResult<Option<Attempt>> {
        Ok(self.latest_attempt_of(rollout_id))
    }

    fn read_attempt<T>(
        &mut self,
        rollout_id: &str,
        which: AttemptRef<'_>,
        read: impl FnOnce(&Attempt) -> T,
    ) -> StoreResult<Option<T>> {
        Ok(self
            .entry_of(rollout_id)
            .and_then(|entry| entry.attempt_mut(which))
            .map(|attempt| read(attempt)))
    }

    fn modify_attempt<T>(
        &mut self,
        rollout_id: &str,
        which: AttemptRef<'_>,
        modify: impl FnOnce(&mut Attempt) -> T,
    ) -> StoreResult<Option<T>> {
        Ok(self
            .entry_of(rollout_id)
            .and_then(|entry| entry.attempt_mut(which))
            .map(modify))
    }

    fn insert_attempt(&mut self, attempt: &Attempt) -> StoreResult<()> {
        let entry = self
            .entry_of(&attempt.rollout_id)
            .ok_or_else(|| StoreError::RolloutNotFound(attempt.rollout_id.clone()))?;
        entry.attempts.push(attempt.clone());
        self.total_attempts += 1;
        Ok(())
    }

    fn schedule_watchdog(&mut self, attempt: &Attempt, at: f64) -> StoreResult<()> {
        if let Some(slot) = self.slot(&attempt.rollout_id) {
            self.agenda.schedule(at, slot, attempt.sequence_id);
        }
        Ok(())
    }

    fn watchdog_due(&mut self, now: f64) -> StoreResult<bool> {
        Ok(self.agenda.has_due(now))
    }

    fn pop_watchdog(&mut self, now: f64) -> StoreResult<Option<(String, u32)>> {
        Ok(self.agenda.pop_due(now).map(|due| {
            let rollout_id = self.rollouts[due.slot as usize].rollout.rollout_id.clone();
            (rollout_id, due.attempt_sequence)
        }))
    }

    fn insert_span(&mut self, span: Span, attempt_sequence: u32) -> StoreResult<Option<Arc<Span>>> {
        let entry = self
            .entry_of(&span.rollout_id)
            .ok_or_else(|| StoreError::RolloutNotFound(span.rollout_id.clone()))?;
        if !entry.claim_span_key(attempt_sequence, &span.span_id) {
            return Ok(None);
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
        Ok(Some(span))
    }

    fn next_span_sequence(&mut self, rollout_id: &str) -> StoreResult<u64> {
        let counter = match self.slot(rollout_id) {
            Some(slot) => &mut self.rollouts[slot as usize].last_span_sequence,
            None => self.orphan_span_sequences.entry(rollout_id.to_owned()).or_default(),
        };
        *counter += 1;
        Ok(*counter)
    }

    fn resources(&mut self, resources_id: &str) -> StoreResult<Option<ResourcesUpdate>> {
        Ok(self.resources.get(resources_id).cloned())
    }

    fn save_resources(&mut self, update: &ResourcesUpdate) -> StoreResult<()> {
        self.resources.insert(update.resources_id.clone(), update.clone());
        self.latest_resources = Some(update.resources_id.clone());
        Ok(())
    }

    fn latest_resources_id(&mut self) -> StoreResult<Option<String>> {
        Ok(self.latest_resources.clone())
    }

    fn modify_worker<T>(&mut self, worker_id: &str, modify: impl FnOnce(&mut Worker) -> T) -> StoreResult<T> {
        let index = match self.workers.get_index_of(worker_id) {
            Some(index) => index,
            None => self.workers.insert_full(worker_id.to_owned(), Worker::new(worker_id)).0,
        };
        Ok(modify(&mut self.workers[index]))
    }

    fn counts(&mut self) -> StoreResult<StorageCounts> {
        let [rollouts, attempts, spans, resources, workers] = self.totals();
        Ok(StorageCounts {
            rollouts,
            attempts,
            spans,
            resources,
            workers,
        })
    }
}
