//! The in-memory store's data: its records, indexes, queue, watchdog agenda and recordings, the
//! [`Storage`] primitives over them (run under the store's one lock by [`crate::transitions`],
//! which makes every decision), and the [`Rows`] the reads load, taken from the indexes.

use super::watchdog::Agenda;
use crate::backend::RunRecord;
use crate::error::{StoreError, StoreResult};
use crate::model::*;
use crate::query_exec::RolloutFilter;
use crate::rows::{Rows, SpanRows, Window};
use crate::storage::{Storage, StorageCounts};
use crate::store::AttemptRef;
use indexmap::IndexMap;
use rustc_hash::{FxBuildHasher, FxHashMap, FxHashSet};
use std::collections::{HashSet, VecDeque};
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
    /// The recordings kept of its attempts, by attempt id: the tape and its blobs' addresses.
    pub(crate) recordings: FxHashMap<String, (String, Vec<String>)>,
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
            recordings: FxHashMap::default(),
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
}

fn parse_hex_u64(id: &str) -> Option<u64> {
    if id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
        u64::from_str_radix(id, 16).ok()
    } else {
        None
    }
}

/// The in-memory store's records: one transaction's view ([`Storage`] and [`Rows`]) is the
/// state itself, under the store's lock.
#[derive(Debug, Default)]
pub struct State {
    pub(crate) rollouts: Vec<RolloutEntry>,
    index: FxHashMap<String, u32>,
    pub(crate) queue: VecDeque<u32>,
    resources: IndexMap<String, ResourcesUpdate, FxBuildHasher>,
    latest_resources: Option<String>,
    pub(crate) workers: IndexMap<String, Worker, FxBuildHasher>,
    /// Span sequence counters of rollout ids the store does not hold: 0.3.0 issues sequence ids
    /// for any rollout id (its counters are a map keyed by id), so we do too. A rollout created
    /// later under such an id takes its counter over.
    orphan_span_sequences: FxHashMap<String, u64>,
    agenda: Agenda,
    /// Rollouts that finished in the current transaction: waiters are told once it is done.
    pub(crate) finished: Vec<String>,
    /// The run record kept.
    run: Option<RunRecord>,
    /// Every recording's blobs, by address, each once.
    pub(crate) blobs: FxHashMap<String, String>,
    total_attempts: u64,
    total_spans: u64,
    /// The slot found last: one operation looks its rollout up several times (once per storage
    /// primitive), and comparing an id is cheaper than hashing it.
    last_slot: std::cell::Cell<u32>,
}

impl State {
    pub(crate) fn slot(&self, rollout_id: &str) -> Option<u32> {
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

    pub(crate) fn totals(&self) -> [u64; 5] {
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
        self.finished.push(rollout_id.to_owned());
    }

    fn attempt_count(&mut self, rollout_id: &str) -> StoreResult<u32> {
        Ok(self
            .slot(rollout_id)
            .map_or(0, |slot| self.rollouts[slot as usize].attempts.len() as u32))
    }

    fn latest_attempt(&mut self, rollout_id: &str) -> StoreResult<Option<Attempt>> {
        self.find_latest_attempt(rollout_id)
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

    fn insert_blob(&mut self, address: &str, text: &str) -> StoreResult<bool> {
        if self.blobs.contains_key(address) {
            return Ok(false);
        }
        self.blobs.insert(address.to_owned(), text.to_owned());
        Ok(true)
    }

    fn save_recording(&mut self, rollout_id: &str, attempt_id: &str, tape: &str, blobs: &[String]) -> StoreResult<()> {
        let entry = self
            .entry_of(rollout_id)
            .ok_or_else(|| StoreError::RolloutNotFound(rollout_id.to_owned()))?;
        entry
            .recordings
            .insert(attempt_id.to_owned(), (tape.to_owned(), blobs.to_vec()));
        Ok(())
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

impl Rows for State {
    fn find_rollout(&mut self, rollout_id: &str) -> StoreResult<Option<Rollout>> {
        Storage::rollout(self, rollout_id)
    }

    fn find_latest_attempt(&mut self, rollout_id: &str) -> StoreResult<Option<Attempt>> {
        Ok(self
            .slot(rollout_id)
            .and_then(|slot| self.rollouts[slot as usize].attempts.last().cloned()))
    }

    fn select_rollouts(&mut self, query: &RolloutQuery, window: Option<Window>) -> StoreResult<(Vec<Rollout>, u64)> {
        let candidates: Vec<&RolloutEntry> = match (&query.rollout_id_in, query.filter_logic.unwrap_or_default()) {
            (Some(ids), FilterLogic::And) => {
                let mut slots: Vec<u32> = ids.iter().filter_map(|id| self.slot(id)).collect();
                slots.sort_unstable();
                slots.dedup();
                slots.into_iter().map(|s| &self.rollouts[s as usize]).collect()
            }
            _ => self.rollouts.iter().collect(),
        };
        let filter = RolloutFilter::of(query);
        let mut total = 0u64;
        let mut items = Vec::new();
        for entry in candidates {
            if filter.matches(&entry.rollout) {
                if window.is_none_or(|window| window.holds(total)) {
                    items.push(entry.rollout.clone());
                }
                total += 1;
            }
        }
        Ok((items, total))
    }

    fn latest_attempts(&mut self, rollout_ids: &[&str]) -> StoreResult<Vec<Attempt>> {
        Ok(rollout_ids
            .iter()
            .filter_map(|id| self.slot(id))
            .filter_map(|slot| self.rollouts[slot as usize].attempts.last().cloned())
            .collect())
    }

    fn attempts(&mut self, rollout_id: &str) -> StoreResult<Vec<Attempt>> {
        Ok(self
            .slot(rollout_id)
            .map(|slot| self.rollouts[slot as usize].attempts.clone())
            .unwrap_or_default())
    }

    fn attempt_sequence(&mut self, rollout_id: &str, which: AttemptRef<'_>) -> StoreResult<Option<u32>> {
        let Some(slot) = self.slot(rollout_id) else {
            return Ok(None);
        };
        let attempts = &self.rollouts[slot as usize].attempts;
        let attempt = match which {
            AttemptRef::Latest => attempts.last(),
            AttemptRef::Id(id) => attempts.iter().find(|a| a.attempt_id == id),
        };
        Ok(attempt.map(|a| a.sequence_id))
    }

    fn spans<T>(
        &mut self,
        rollout_id: &str,
        attempt_sequence: Option<u32>,
        read: impl FnOnce(SpanRows<'_>) -> T,
    ) -> StoreResult<T> {
        let Some(slot) = self.slot(rollout_id) else {
            return Ok(read(SpanRows::default()));
        };
        let entry = &self.rollouts[slot as usize];
        let spans = match attempt_sequence {
            None => entry.spans.iter().collect(),
            Some(wanted) => entry
                .spans
                .iter()
                .zip(&entry.span_attempts)
                .filter(|(_, attempt)| **attempt == wanted)
                .map(|(span, _)| span)
                .collect(),
        };
        Ok(read(SpanRows {
            spans,
            in_sequence_order: entry.spans_in_sequence_order,
        }))
    }

    fn all_resources(&mut self) -> StoreResult<Vec<ResourcesUpdate>> {
        Ok(self.resources.values().cloned().collect())
    }

    fn find_resources(&mut self, resources_id: &str) -> StoreResult<Option<ResourcesUpdate>> {
        Ok(self.resources.get(resources_id).cloned())
    }

    fn latest_resources(&mut self) -> StoreResult<Option<ResourcesUpdate>> {
        Ok(self
            .latest_resources
            .as_ref()
            .and_then(|id| self.resources.get(id))
            .cloned())
    }

    fn all_workers(&mut self) -> StoreResult<Vec<Worker>> {
        Ok(self.workers.values().cloned().collect())
    }

    fn find_worker(&mut self, worker_id: &str) -> StoreResult<Option<Worker>> {
        Ok(self.workers.get(worker_id).cloned())
    }

    fn unfinished_rollouts(&mut self, rollout_ids: &[String]) -> StoreResult<HashSet<String>> {
        Ok(rollout_ids
            .iter()
            .filter(|id| {
                self.slot(id)
                    .is_some_and(|slot| !self.rollouts[slot as usize].rollout.status.is_finished())
            })
            .cloned()
            .collect())
    }

    fn finished_rollouts(&mut self, rollout_ids: &[String]) -> StoreResult<Vec<Rollout>> {
        Ok(rollout_ids
            .iter()
            .filter_map(|id| self.slot(id))
            .map(|slot| &self.rollouts[slot as usize].rollout)
            .filter(|r| r.status.is_finished())
            .cloned()
            .collect())
    }

    fn queue_len(&mut self) -> StoreResult<usize> {
        Ok(self.queue.len())
    }

    fn recording(&mut self, rollout_id: &str, attempt_id: &str) -> StoreResult<Option<(String, Vec<String>)>> {
        Ok(self
            .slot(rollout_id)
            .and_then(|slot| self.rollouts[slot as usize].recordings.get(attempt_id))
            .cloned())
    }

    fn blob(&mut self, address: &str) -> StoreResult<Option<String>> {
        Ok(self.blobs.get(address).cloned())
    }

    fn run_record(&mut self) -> StoreResult<Option<RunRecord>> {
        Ok(self.run.clone())
    }

    fn save_run_record(&mut self, record: &RunRecord) -> StoreResult<()> {
        self.run = Some(record.clone());
        Ok(())
    }
}
