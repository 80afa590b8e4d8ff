//! Every store operation that changes something, written once over [`Storage`]: what a call
//! does to rollouts, attempts, the queue, spans, workers and resources, with each status decision
//! taken from [`crate::rules`]. A backend opens a transaction, reads its clock, and calls one of
//! these; it never decides a status itself.
//!
//! Each operation first lets the watchdog act on whatever is due by `now`
//! ([`run_watchdog_if_due`]), so a timeout lands before the call that would observe it.

use crate::error::{StoreError, StoreResult};
use crate::model::*;
use crate::rows::Rows;
use crate::rules;
use crate::storage::Storage;
use crate::store::AttemptRef;
use std::sync::Arc;

// ---- the status machine, applied -------------------------------------------------------------

/// Every rollout status change goes through here: end time, requeue, and waking waiters.
/// Returns the end time the rollout now has.
fn set_rollout_status<S: Storage + ?Sized>(
    storage: &mut S,
    rollout_id: &str,
    status: RolloutStatus,
    end_time: Option<f64>,
    now: f64,
) -> StoreResult<Option<f64>> {
    let end_time = if rules::rollout_ends(status) {
        Some(now)
    } else {
        end_time
    };
    storage.save_rollout_status(rollout_id, status, end_time)?;
    if status.is_queuing() {
        storage.push_queue(rollout_id)?;
    }
    if status.is_finished() {
        storage.rollout_finished(rollout_id);
    }
    Ok(end_time)
}

/// [`set_rollout_status`] on a rollout the caller holds a copy of, kept up to date.
fn set_status_of<S: Storage + ?Sized>(
    storage: &mut S,
    rollout: &mut Rollout,
    status: RolloutStatus,
    now: f64,
) -> StoreResult<()> {
    rollout.end_time = set_rollout_status(storage, &rollout.rollout_id, status, rollout.end_time, now)?;
    rollout.status = status;
    Ok(())
}

/// Re-derives the rollout's status after `attempt` changed, if it is the latest.
fn propagate_attempt<S: Storage + ?Sized>(storage: &mut S, attempt: &Attempt, now: f64) -> StoreResult<()> {
    if storage.attempt_count(&attempt.rollout_id)? != attempt.sequence_id {
        return Ok(());
    }
    let decision = storage.read_rollout(&attempt.rollout_id, |rollout| {
        rules::propagate_to_rollout(rollout.status, attempt, &rollout.config).map(|status| (status, rollout.end_time))
    })?;
    if let Some(Some((status, end_time))) = decision {
        set_rollout_status(storage, &attempt.rollout_id, status, end_time, now)?;
    }
    Ok(())
}

/// Schedules the watchdog for `attempt` if its rollout's config asks for one.
fn arm_watchdog<S: Storage + ?Sized>(storage: &mut S, attempt: &Attempt) -> StoreResult<()> {
    let deadline = storage.read_rollout(&attempt.rollout_id, |rollout| {
        rules::watchdog_deadline(attempt, &rollout.config)
    })?;
    match deadline.flatten() {
        Some(at) => storage.schedule_watchdog(attempt, at),
        None => Ok(()),
    }
}

/// Moves the attempt's worker (if it names one) along with the attempt.
fn sync_worker<S: Storage + ?Sized>(storage: &mut S, attempt: &Attempt, now: f64, dequeued: bool) -> StoreResult<()> {
    match attempt.worker_id.as_deref().filter(|w| !w.is_empty()) {
        Some(worker_id) => storage.modify_worker(worker_id, |worker| {
            rules::sync_worker_with_attempt(worker, attempt, now, dequeued)
        }),
        None => Ok(()),
    }
}

/// Creates attempt n+1 (`preparing`) and puts the rollout in `preparing`.
fn new_attempt<S: Storage + ?Sized>(
    storage: &mut S,
    rollout: &mut Rollout,
    worker_id: Option<&str>,
    now: f64,
    dequeued: bool,
) -> StoreResult<Attempt> {
    let sequence_id = storage.attempt_count(&rollout.rollout_id)? + 1;
    let mut attempt_id = new_attempt_id();
    // Ids are unique per rollout: a first attempt cannot collide, so only later ones look.
    while sequence_id > 1
        && storage
            .read_attempt(&rollout.rollout_id, AttemptRef::Id(&attempt_id), |_| ())?
            .is_some()
    {
        attempt_id = new_attempt_id();
    }
    let attempt = Attempt {
        rollout_id: rollout.rollout_id.clone(),
        attempt_id,
        sequence_id,
        start_time: now,
        end_time: None,
        status: AttemptStatus::Preparing,
        worker_id: worker_id.map(str::to_owned),
        last_heartbeat_time: None,
        metadata: None,
    };
    storage.insert_attempt(&attempt)?;
    if let Some(at) = rules::watchdog_deadline(&attempt, &rollout.config) {
        storage.schedule_watchdog(&attempt, at)?;
    }
    set_status_of(storage, rollout, RolloutStatus::Preparing, now)?;
    if worker_id.is_some() {
        sync_worker(storage, &attempt, now, dequeued)?;
    }
    Ok(attempt)
}

// ---- the watchdog ------------------------------------------------------------------------------

/// Applies the watchdog's verdicts on every attempt that is due; returns how many changed.
pub fn run_watchdog<S: Storage + ?Sized>(storage: &mut S, now: f64) -> StoreResult<usize> {
    let mut changed = 0;
    while let Some((rollout_id, attempt_sequence)) = storage.pop_watchdog(now)? {
        let Some((active, config)) = storage.read_rollout(&rollout_id, |r| (r.status.is_active(), r.config.clone()))?
        else {
            continue;
        };
        let Some(mut latest) = storage.latest_attempt(&rollout_id)? else {
            continue;
        };
        if !active
            || latest.sequence_id != attempt_sequence
            || !matches!(latest.status, AttemptStatus::Preparing | AttemptStatus::Running)
        {
            continue;
        }
        match rules::watchdog_verdict(now, &latest, &config) {
            Some(verdict) => {
                let end_time = rules::attempt_ends(verdict).then_some(now);
                storage.modify_attempt(&rollout_id, AttemptRef::Latest, |attempt| {
                    attempt.status = verdict;
                    attempt.end_time = end_time.or(attempt.end_time);
                })?;
                latest.status = verdict;
                latest.end_time = end_time.or(latest.end_time);
                propagate_attempt(storage, &latest, now)?;
                sync_worker(storage, &latest, now, false)?;
                changed += 1;
            }
            None => {
                if let Some(at) = rules::watchdog_deadline(&latest, &config) {
                    storage.schedule_watchdog(&latest, at)?;
                }
            }
        }
    }
    Ok(changed)
}

/// Runs the watchdog if anything is due: the check every operation starts with.
pub fn run_watchdog_if_due<S: Storage + ?Sized>(storage: &mut S, now: f64) -> StoreResult<()> {
    if storage.watchdog_due(now)? {
        run_watchdog(storage, now)?;
    }
    Ok(())
}

// ---- rollouts and attempts ---------------------------------------------------------------------

fn check_request<S: Storage + ?Sized>(storage: &mut S, request: &EnqueueRolloutRequest) -> StoreResult<()> {
    if let Some(config) = &request.config {
        config.validate().map_err(StoreError::InvalidArgument)?;
    }
    if let Some(id) = &request.resources_id {
        warn_if_unknown_resources(storage, id, "a new rollout")?;
    }
    if let Some(id) = &request.rollout_id {
        check_rollout_id(id)?;
    }
    Ok(())
}

/// Longest caller-chosen rollout id.
pub const MAX_ROLLOUT_ID_BYTES: usize = 256;

/// A caller-chosen rollout id: 1 to [`MAX_ROLLOUT_ID_BYTES`] bytes of visible ASCII, no `/`
/// (it is a path segment of both HTTP APIs).
fn check_rollout_id(id: &str) -> StoreResult<()> {
    let visible = id.bytes().all(|b| b.is_ascii_graphic() && b != b'/');
    if id.is_empty() || id.len() > MAX_ROLLOUT_ID_BYTES || !visible {
        return Err(StoreError::InvalidArgument(format!(
            "a rollout id must be 1 to {MAX_ROLLOUT_ID_BYTES} visible ASCII characters without `/`"
        )));
    }
    Ok(())
}

/// 0.3.0 stores any `resources_id` a rollout names without looking it up (`enqueue_rollout`,
/// `start_rollout`, `update_rollout` in `collection_based.py`), so we accept it too; a runner
/// asking for those resources later gets nothing, hence the warning.
fn warn_if_unknown_resources<S: Storage + ?Sized>(storage: &mut S, resources_id: &str, whose: &str) -> StoreResult<()> {
    if storage.resources(resources_id)?.is_none() {
        tracing::warn!(
            resources_id,
            "{whose} names resources that the store does not hold; accepted as Agent-lightning 0.3.0 does, \
             but fetching them will find nothing"
        );
    }
    Ok(())
}

/// Inserts the rollout `request` asks for; `Ok((rollout, false))` when it names an id the store
/// already holds: that rollout, unchanged.
fn insert_rollout<S: Storage + ?Sized>(
    storage: &mut S,
    request: EnqueueRolloutRequest,
    status: RolloutStatus,
    now: f64,
) -> StoreResult<(Rollout, bool)> {
    if let Some(id) = &request.rollout_id
        && let Some(existing) = storage.rollout(id)?
    {
        return Ok((existing, false));
    }
    let resources_id = match request.resources_id {
        Some(id) => Some(id),
        None => storage.latest_resources_id()?,
    };
    let chosen = request.rollout_id.is_some();
    let mut rollout = Rollout {
        rollout_id: request.rollout_id.unwrap_or_else(new_rollout_id),
        input: request.input,
        start_time: now,
        end_time: None,
        mode: request.mode,
        resources_id,
        status,
        config: request.config.unwrap_or_default(),
        metadata: Some(request.metadata.unwrap_or_default()),
    };
    while !storage.insert_rollout(&rollout)? {
        if chosen {
            return Err(StoreError::Backend(format!(
                "rollout {} could not be inserted",
                rollout.rollout_id
            )));
        }
        rollout.rollout_id = new_rollout_id();
    }
    Ok((rollout, true))
}

/// A rollout with its first attempt, bypassing the queue.
pub fn start_rollout<S: Storage + ?Sized>(
    storage: &mut S,
    request: StartRolloutRequest,
    now: f64,
) -> StoreResult<AttemptedRollout> {
    run_watchdog_if_due(storage, now)?;
    check_request(storage, &request.rollout)?;
    let (mut rollout, created) = insert_rollout(storage, request.rollout, RolloutStatus::Preparing, now)?;
    if !created {
        return Err(StoreError::InvalidArgument(format!(
            "rollout {} exists already; start_rollout creates a new one",
            rollout.rollout_id
        )));
    }
    let attempt = new_attempt(storage, &mut rollout, request.worker_id.as_deref(), now, false)?;
    Ok(AttemptedRollout { rollout, attempt })
}

/// Rollouts added to the queue in order; a bad request rejects the batch before anything is stored.
pub fn enqueue<S: Storage + ?Sized>(
    storage: &mut S,
    requests: Vec<EnqueueRolloutRequest>,
    now: f64,
) -> StoreResult<Vec<Rollout>> {
    run_watchdog_if_due(storage, now)?;
    for request in &requests {
        check_request(storage, request)?;
    }
    let mut out = Vec::with_capacity(requests.len());
    for request in requests {
        // Stored as queuing already: entering the queue is all `set_rollout_status` would add.
        let (rollout, created) = insert_rollout(storage, request, RolloutStatus::Queuing, now)?;
        if created {
            storage.push_queue(&rollout.rollout_id)?;
        }
        out.push(rollout);
    }
    Ok(out)
}

/// Up to `limit` queued rollouts, each with a fresh attempt; an empty poll marks the worker idle.
pub fn dequeue<S: Storage + ?Sized>(
    storage: &mut S,
    limit: usize,
    worker_id: Option<&str>,
    now: f64,
) -> StoreResult<Vec<AttemptedRollout>> {
    run_watchdog_if_due(storage, now)?;
    let mut out = Vec::with_capacity(limit.min(64));
    for mut rollout in storage.pop_queue(limit)? {
        let attempt = new_attempt(storage, &mut rollout, worker_id, now, true)?;
        out.push(AttemptedRollout { rollout, attempt });
    }
    if out.is_empty()
        && let Some(worker_id) = worker_id.filter(|w| !w.is_empty())
    {
        storage.modify_worker(worker_id, |worker| rules::mark_worker_polled_empty(worker, now))?;
    }
    Ok(out)
}

fn require_rollout<S: Storage + ?Sized>(storage: &mut S, rollout_id: &str) -> StoreResult<Rollout> {
    storage
        .rollout(rollout_id)?
        .ok_or_else(|| StoreError::RolloutNotFound(rollout_id.to_owned()))
}

/// A new attempt on a rollout, explicitly (may exceed `max_attempts`).
pub fn start_attempt<S: Storage + ?Sized>(
    storage: &mut S,
    rollout_id: &str,
    worker_id: Option<&str>,
    now: f64,
) -> StoreResult<AttemptedRollout> {
    run_watchdog_if_due(storage, now)?;
    let mut rollout = require_rollout(storage, rollout_id)?;
    let attempt = new_attempt(storage, &mut rollout, worker_id, now, false)?;
    Ok(AttemptedRollout { rollout, attempt })
}

/// Changes the keys present in `update`.
pub fn update_rollout<S: Storage + ?Sized>(
    storage: &mut S,
    rollout_id: &str,
    update: RolloutUpdate,
    now: f64,
) -> StoreResult<Rollout> {
    run_watchdog_if_due(storage, now)?;
    let mut rollout = require_rollout(storage, rollout_id)?;
    if let Some(config) = &update.config {
        config.validate().map_err(StoreError::InvalidArgument)?;
    }
    if let Some(Some(id)) = &update.resources_id {
        warn_if_unknown_resources(storage, id, &format!("the update of rollout {rollout_id}"))?;
    }
    if let Some(input) = update.input {
        rollout.input = input;
    }
    if let Some(mode) = update.mode {
        rollout.mode = mode;
    }
    if let Some(resources_id) = update.resources_id {
        rollout.resources_id = resources_id;
    }
    if let Some(metadata) = update.metadata {
        rollout.metadata = metadata;
    }
    let new_config = update.config.is_some();
    if let Some(config) = update.config {
        rollout.config = config;
    }
    storage.save_rollout(&rollout)?;
    if new_config && let Some(latest) = storage.latest_attempt(rollout_id)? {
        arm_watchdog(storage, &latest)?;
    }
    if let Some(status) = update.status {
        set_status_of(storage, &mut rollout, status, now)?;
    }
    Ok(rollout)
}

/// Changes an attempt; on the latest attempt the rollout status is re-derived.
pub fn update_attempt<S: Storage + ?Sized>(
    storage: &mut S,
    rollout_id: &str,
    which: AttemptRef<'_>,
    update: AttemptUpdate,
    now: f64,
) -> StoreResult<Attempt> {
    run_watchdog_if_due(storage, now)?;
    if storage.read_rollout(rollout_id, |_| ())?.is_none() {
        return Err(StoreError::RolloutNotFound(rollout_id.to_owned()));
    }
    let (mut sync, mut rearm) = (false, false);
    let changed = storage.modify_attempt(rollout_id, which, |attempt| {
        if let Some(worker_id) = update.worker_id {
            sync = !worker_id.is_empty();
            attempt.worker_id = Some(worker_id);
        }
        if let Some(status) = update.status {
            attempt.status = status;
            if rules::attempt_ends(status) {
                attempt.end_time = Some(now);
            }
            sync |= attempt.worker_id.is_some();
            rearm = true;
        }
        if let Some(heartbeat) = update.last_heartbeat_time {
            attempt.last_heartbeat_time = Some(heartbeat);
            rearm = true;
        }
        if let Some(metadata) = update.metadata {
            attempt.metadata = metadata;
        }
        attempt.clone()
    })?;
    let Some(attempt) = changed else {
        if storage.attempt_count(rollout_id)? == 0 {
            return Err(StoreError::NoAttempts(rollout_id.to_owned()));
        }
        return Err(match which {
            AttemptRef::Latest => StoreError::NoAttempts(rollout_id.to_owned()),
            AttemptRef::Id(id) => StoreError::AttemptNotFound {
                rollout_id: rollout_id.to_owned(),
                attempt_id: id.to_owned(),
            },
        });
    };
    if rearm {
        arm_watchdog(storage, &attempt)?;
    }
    propagate_attempt(storage, &attempt, now)?;
    if sync {
        sync_worker(storage, &attempt, now, false)?;
    }
    Ok(attempt)
}

// ---- spans -------------------------------------------------------------------------------------

/// Stores spans after checking all of them (an unknown rollout or attempt rejects the batch);
/// duplicates are skipped. Each stored span is a heartbeat of its attempt.
pub fn add_spans<S: Storage + ?Sized>(storage: &mut S, spans: Vec<Span>, now: f64) -> StoreResult<Vec<Arc<Span>>> {
    run_watchdog_if_due(storage, now)?;
    // The attempts the spans belong to, each looked up once (a batch is usually one attempt's),
    // and whether a span of theirs was stored.
    let mut attempts: Vec<SpanTarget> = Vec::new();
    let mut targets = Vec::with_capacity(spans.len());
    for span in &spans {
        let known = attempts
            .iter()
            .position(|t| t.attempt_id == span.attempt_id && t.rollout_id == span.rollout_id);
        let index = match known {
            Some(index) => index,
            None => {
                attempts.push(SpanTarget::find(storage, span)?);
                attempts.len() - 1
            }
        };
        targets.push(index);
    }
    let mut stored = Vec::with_capacity(spans.len());
    for (span, index) in spans.into_iter().zip(targets) {
        let target = &mut attempts[index];
        if let Some(span) = storage.insert_span(span, target.sequence_id)? {
            stored.push(span);
            target.heard = true;
        }
    }
    for target in attempts.iter().filter(|t| t.heard) {
        heartbeat(storage, &target.rollout_id, &target.attempt_id, now)?;
    }
    Ok(stored)
}

/// The attempt a span of a batch belongs to.
struct SpanTarget {
    rollout_id: String,
    attempt_id: String,
    sequence_id: u32,
    /// Whether a span of this batch was stored for it (then it had a heartbeat).
    heard: bool,
}

impl SpanTarget {
    /// The span's attempt; an unknown rollout or attempt is an error.
    fn find<S: Storage + ?Sized>(storage: &mut S, span: &Span) -> StoreResult<Self> {
        if storage.read_rollout(&span.rollout_id, |_| ())?.is_none() {
            return Err(StoreError::RolloutNotFound(span.rollout_id.clone()));
        }
        let sequence_id = storage
            .read_attempt(&span.rollout_id, AttemptRef::Id(&span.attempt_id), |a| a.sequence_id)?
            .ok_or_else(|| StoreError::AttemptNotFound {
                rollout_id: span.rollout_id.clone(),
                attempt_id: span.attempt_id.clone(),
            })?;
        Ok(Self {
            rollout_id: span.rollout_id.clone(),
            attempt_id: span.attempt_id.clone(),
            sequence_id,
            heard: false,
        })
    }
}

/// A span arrived for the attempt: it is alive, and if it is the latest and now runs, so does its
/// rollout. A late span of an ended attempt only refreshes its heartbeat time.
fn heartbeat<S: Storage + ?Sized>(storage: &mut S, rollout_id: &str, attempt_id: &str, now: f64) -> StoreResult<()> {
    let heard = storage.modify_attempt(rollout_id, AttemptRef::Id(attempt_id), |attempt| {
        attempt.last_heartbeat_time = Some(now);
        let before = attempt.status;
        attempt.status = rules::attempt_status_after_span(before);
        let revived = before == AttemptStatus::Unresponsive;
        (revived.then(|| attempt.clone()), attempt.status, attempt.sequence_id)
    })?;
    let Some((revived, status, sequence)) = heard else {
        return Ok(());
    };
    if let Some(attempt) = revived {
        arm_watchdog(storage, &attempt)?;
    }
    if status != AttemptStatus::Running || storage.attempt_count(rollout_id)? != sequence {
        return Ok(());
    }
    let change = storage.read_rollout(rollout_id, |rollout| {
        rules::rollout_status_after_span(rollout.status).map(|status| (status, rollout.end_time))
    })?;
    if let Some(Some((status, end_time))) = change {
        set_rollout_status(storage, rollout_id, status, end_time, now)?;
    }
    Ok(())
}

/// One sequence id per pair, from the rollout's counter. As in 0.3.0
/// (`_issue_many_span_sequence_ids` in `collection_based.py`, a counter map keyed by rollout id
/// alone), neither the rollout nor the attempt has to exist: an unknown rollout id gets a counter
/// of its own, an unknown attempt draws from its rollout's counter. Both are logged, since spans
/// for them will be refused.
pub fn next_span_sequence_ids<S: Storage + ?Sized>(
    storage: &mut S,
    pairs: &[(&str, &str)],
    now: f64,
) -> StoreResult<Vec<u64>> {
    run_watchdog_if_due(storage, now)?;
    let mut issued = Vec::with_capacity(pairs.len());
    for &(rollout_id, attempt_id) in pairs {
        if storage.read_rollout(rollout_id, |_| ())?.is_none() {
            tracing::warn!(
                rollout_id,
                attempt_id,
                "span sequence id asked for a rollout the store does not hold; issued from a counter of its own \
                 as Agent-lightning 0.3.0 does"
            );
        } else if storage
            .read_attempt(rollout_id, AttemptRef::Id(attempt_id), |_| ())?
            .is_none()
        {
            tracing::warn!(
                rollout_id,
                attempt_id,
                "span sequence id asked for an attempt the rollout does not have; issued from the rollout's \
                 counter as Agent-lightning 0.3.0 does"
            );
        }
        issued.push(storage.next_span_sequence(rollout_id)?);
    }
    Ok(issued)
}

// ---- resources ---------------------------------------------------------------------------------

/// A new bundle under a fresh `rs-` id, version 1; it becomes the latest.
pub fn add_resources<S: Storage + ?Sized>(
    storage: &mut S,
    resources: NamedResources,
    now: f64,
) -> StoreResult<ResourcesUpdate> {
    run_watchdog_if_due(storage, now)?;
    let mut resources_id = new_resources_id();
    while storage.resources(&resources_id)?.is_some() {
        resources_id = new_resources_id();
    }
    let update = ResourcesUpdate {
        resources_id,
        create_time: now,
        update_time: now,
        version: 1,
        resources,
    };
    storage.save_resources(&update)?;
    Ok(update)
}

/// Creates or replaces the bundle with this id (version + 1); it becomes the latest.
pub fn update_resources<S: Storage + ?Sized>(
    storage: &mut S,
    resources_id: &str,
    resources: NamedResources,
    now: f64,
) -> StoreResult<ResourcesUpdate> {
    run_watchdog_if_due(storage, now)?;
    if resources_id.is_empty() {
        return Err(StoreError::InvalidArgument("resources_id must not be empty".into()));
    }
    let update = match storage.resources(resources_id)? {
        Some(existing) => ResourcesUpdate {
            resources,
            update_time: now,
            version: existing.version + 1,
            ..existing
        },
        None => ResourcesUpdate {
            resources_id: resources_id.to_owned(),
            create_time: now,
            update_time: now,
            version: 1,
            resources,
        },
    };
    storage.save_resources(&update)?;
    Ok(update)
}

// ---- workers -----------------------------------------------------------------------------------

/// A worker heartbeat (creates the worker if new); never changes its status.
pub fn heartbeat_worker<S: Storage + ?Sized>(
    storage: &mut S,
    worker_id: &str,
    update: WorkerUpdate,
    now: f64,
) -> StoreResult<Worker> {
    run_watchdog_if_due(storage, now)?;
    if worker_id.is_empty() {
        return Err(StoreError::InvalidArgument("worker_id must not be empty".into()));
    }
    storage.modify_worker(worker_id, |worker| {
        worker.last_heartbeat_time = Some(now);
        if let Some(stats) = update.heartbeat_stats {
            worker.heartbeat_stats = Some(stats);
        }
        worker.clone()
    })
}

// ---- recordings --------------------------------------------------------------------------------

/// Keeps an attempt's recording (checked already: [`Recording::check`]), its blobs once across the
/// store. The attempt is looked up without a lock (rollouts and attempts are never deleted), so
/// writing a large recording holds no rollout's row.
pub fn add_recording<S: Storage + Rows + ?Sized>(
    storage: &mut S,
    recording: &Recording,
    now: f64,
) -> StoreResult<RecordingStored> {
    run_watchdog_if_due(storage, now)?;
    let (rollout_id, attempt_id) = (&recording.rollout_id, &recording.attempt_id);
    if storage.find_rollout(rollout_id)?.is_none() {
        return Err(StoreError::RolloutNotFound(rollout_id.clone()));
    }
    if storage
        .attempt_sequence(rollout_id, AttemptRef::Id(attempt_id))?
        .is_none()
    {
        return Err(StoreError::AttemptNotFound {
            rollout_id: rollout_id.clone(),
            attempt_id: attempt_id.clone(),
        });
    }
    let mut stored = RecordingStored {
        tape_bytes: recording.tape.len() as u64,
        blobs: u32::try_from(recording.blobs.len()).unwrap_or(u32::MAX),
        ..RecordingStored::default()
    };
    for (address, text) in &recording.blobs {
        if storage.insert_blob(address, text)? {
            stored.new_blobs += 1;
            stored.new_blob_bytes += text.len() as u64;
        }
    }
    let addresses: Vec<String> = recording.blobs.keys().cloned().collect();
    storage.save_recording(rollout_id, attempt_id, &recording.tape, &addresses)?;
    Ok(stored)
}
