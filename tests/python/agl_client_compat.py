"""Drive an agl-host store server with Agent-lightning 0.3.0's own LightningStoreClient.

Usage: python agl_client_compat.py --url http://127.0.0.1:PORT

Every check runs against the same fresh server; each one makes its own rollouts, so a failure
in one does not hide the others. The script prints PASS/FAIL per check and exits 1 when any
check failed (run by runtime/host/tests/cli/python_client.rs). Needs agentlightning==0.3.0 and
opentelemetry-exporter-otlp-proto-http (tests/python/requirements-agl-0.3.txt), and
LITELLM_LOCAL_MODEL_COST_MAP=True in the environment so importing agentlightning stays offline.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
import traceback
from typing import Any, Awaitable, Callable, List, Optional, Sequence

from agentlightning.store.client_server import LightningStoreClient
from agentlightning.types import (
    LLM,
    AttemptedRollout,
    EnqueueRolloutRequest,
    OtelResource,
    PromptTemplate,
    Rollout,
    RolloutConfig,
    Span,
    TraceStatus,
)
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

Check = Callable[[LightningStoreClient, str], Awaitable[None]]
CHECKS: List[Check] = []

ROLLOUT_ID_ATTR = "agentlightning.rollout_id"
ATTEMPT_ID_ATTR = "agentlightning.attempt_id"


def check(fn: Check) -> Check:
    """Registers a check; they run in definition order."""
    CHECKS.append(fn)
    return fn


# ---------------------------------------------------------------- helpers


def expect_equal(actual: Any, expected: Any, what: str) -> None:
    assert actual == expected, f"{what}: expected {expected!r}, got {actual!r}"


def expect_prefixed_hex(value: str, prefix: str, hex_len: int, what: str) -> None:
    rest = value[len(prefix) :] if value.startswith(prefix) else None
    ok = rest is not None and len(rest) == hex_len and all(c in "0123456789abcdef" for c in rest)
    assert ok, f"{what}: expected {prefix!r} + {hex_len} hex digits, got {value!r}"


async def enqueue(client: LightningStoreClient, tag: str, config: Optional[RolloutConfig] = None) -> Rollout:
    rollout = await client.enqueue_rollout(input={"tag": tag}, mode="train", config=config)
    expect_equal(rollout.status, "queuing", f"status of the rollout just enqueued ({tag})")
    return rollout


async def dequeue_expecting(client: LightningStoreClient, rollout_id: str, worker_id: str) -> AttemptedRollout:
    """Dequeues one rollout and asserts it is `rollout_id` (the queue is FIFO, checks leave it empty)."""
    got = await client.dequeue_rollout(worker_id=worker_id)
    assert got is not None, (
        f"dequeue_rollout(worker_id={worker_id!r}) returned None while {rollout_id} was queued "
        "(the client also returns None when the dequeue request fails: see the log above)"
    )
    expect_equal(got.rollout_id, rollout_id, "dequeued rollout id (FIFO)")
    return got


async def start_one(client: LightningStoreClient, tag: str, worker_id: str, **kwargs: Any) -> AttemptedRollout:
    """Enqueues a rollout and dequeues it as `worker_id`: a rollout with a preparing attempt."""
    rollout = await enqueue(client, tag, **kwargs)
    return await dequeue_expecting(client, rollout.rollout_id, worker_id)


def make_span(
    rollout_id: str,
    attempt_id: str,
    sequence_id: int,
    span_id: str,
    name: str,
    parent_id: Optional[str],
    start_time: float = 1790000000.25,
) -> Span:
    """A span with fixed, exactly representable times (see floats_round_trip for arbitrary ones)."""
    return Span(
        rollout_id=rollout_id,
        attempt_id=attempt_id,
        sequence_id=sequence_id,
        trace_id="5" * 32,
        span_id=span_id,
        parent_id=parent_id,
        name=name,
        status=TraceStatus(status_code="OK"),
        attributes={"compat.kind": name, "compat.n": sequence_id},
        events=[],
        links=[],
        start_time=start_time,
        end_time=start_time + 0.5,
        context=None,
        parent=None,
        resource=OtelResource(attributes={"service.name": "agl-compat"}, schema_url=""),
        compat_extra={"kept": True},  # Span allows extra keys; the server must echo them back
    )


def without_times(span: Span) -> dict:
    return {k: v for k, v in span.model_dump().items() if k not in ("start_time", "end_time")}


def names_of(spans: Sequence[Span]) -> List[str]:
    return [span.name for span in spans]


# ---------------------------------------------------------------- checks


@check
async def resources(client: LightningStoreClient, url: str) -> None:
    first = {
        "prompt": PromptTemplate(template="Solve: {question}", engine="f-string"),
        "llm": LLM(endpoint="http://127.0.0.1:9/v1", model="compat-model", sampling_parameters={"temperature": 0.5}),
    }
    added = await client.add_resources(first)
    expect_prefixed_hex(added.resources_id, "rs-", 12, "add_resources id")
    expect_equal(added.version, 1, "version of new resources")
    expect_equal(added.resources["prompt"], first["prompt"], "prompt as stored")
    expect_equal(added.resources["llm"], first["llm"], "llm as stored")

    latest = await client.get_latest_resources()
    assert latest is not None, "get_latest_resources returned None after add_resources"
    expect_equal(latest.resources_id, added.resources_id, "latest resources id")

    by_id = await client.get_resources_by_id(added.resources_id)
    assert by_id is not None, f"get_resources_by_id({added.resources_id}) returned None"
    expect_equal(by_id.resources, added.resources, "resources got by id")

    second = {"prompt": PromptTemplate(template="Answer: {question}", engine="f-string")}
    updated = await client.update_resources(added.resources_id, second)
    expect_equal(updated.resources_id, added.resources_id, "update_resources keeps the id")
    expect_equal(updated.version, 2, "version after one update")
    expect_equal(updated.resources, second, "resources after update")
    assert updated.update_time >= added.create_time, (
        f"update_time {updated.update_time} < create_time {added.create_time}"
    )

    named = await client.update_resources("compat-named", second)
    expect_equal(named.resources_id, "compat-named", "update_resources with a new id creates it")
    expect_equal(named.version, 1, "version of resources created by update_resources")
    latest = await client.get_latest_resources()
    assert latest is not None and latest.resources_id == "compat-named", (
        f"the upserted resources should be the latest, got {latest and latest.resources_id}"
    )

    missing = await client.get_resources_by_id("rs-000000000000")
    assert missing is None, f"get_resources_by_id of an unknown id: expected None, got {missing!r}"
    listed = await client.query_resources(resources_id_contains="compat")
    expect_equal([r.resources_id for r in listed.items], ["compat-named"], "query_resources(resources_id_contains)")
    everything = await client.query_resources(sort_by="update_time", sort_order="desc")
    assert everything.total >= 2, f"query_resources total: expected >= 2, got {everything.total}"
    expect_equal(everything.items[0].resources_id, "compat-named", "newest resources first with sort desc")


@check
async def enqueue_one_and_many(client: LightningStoreClient, url: str) -> None:
    latest = await client.get_latest_resources()
    config = RolloutConfig(timeout_seconds=600.0, max_attempts=3, retry_condition=["failed", "timeout"])
    one = await client.enqueue_rollout(input={"q": 1}, mode="val", config=config, metadata={"k": "v"})
    expect_prefixed_hex(one.rollout_id, "ro-", 12, "enqueued rollout id")
    expect_equal(one.status, "queuing", "status after enqueue")
    expect_equal(one.input, {"q": 1}, "input")
    expect_equal(one.mode, "val", "mode")
    expect_equal(one.config, config, "config")
    expect_equal(one.metadata, {"k": "v"}, "metadata")
    expect_equal(one.resources_id, latest.resources_id if latest else None, "resources_id defaults to the latest")
    assert one.end_time is None, f"end_time of a queuing rollout: {one.end_time}"

    requests = [EnqueueRolloutRequest(input={"i": i}, mode="train") for i in range(3)]
    many = await client.enqueue_many_rollouts(requests)
    expect_equal([r.input for r in many], [{"i": i} for i in range(3)], "enqueue_many_rollouts keeps the order")
    ids = [r.rollout_id for r in many]
    expect_equal(len(set(ids + [one.rollout_id])), 4, "distinct rollout ids")
    expect_equal({r.status for r in many}, {"queuing"}, "statuses after enqueue_many_rollouts")

    fetched = await client.get_rollout_by_id(one.rollout_id)
    assert fetched is not None, f"get_rollout_by_id({one.rollout_id}) returned None"
    expect_equal(fetched.model_dump(), one.model_dump(), "rollout got by id")
    unknown = await client.get_rollout_by_id("ro-000000000000")
    assert unknown is None, f"get_rollout_by_id of an unknown id: expected None, got {unknown!r}"

    queued = await client.query_rollouts(rollout_id_in=ids, sort_by="start_time")
    expect_equal(queued.total, 3, "query_rollouts(rollout_id_in) total")
    expect_equal([r.rollout_id for r in queued.items], ids, "query_rollouts sorted by start_time")
    page = await client.query_rollouts(rollout_id_in=ids, sort_by="start_time", limit=1, offset=1)
    expect_equal((page.total, page.limit, page.offset), (3, 1, 1), "query_rollouts page (total, limit, offset)")
    expect_equal([r.rollout_id for r in page.items], ids[1:2], "query_rollouts second page")

    # Leave the queue empty for the other checks: cancelled rollouts are never dequeued.
    for rollout_id in [one.rollout_id] + ids:
        await client.update_rollout(rollout_id, status="cancelled")
    leftover = await client.dequeue_rollout()
    assert leftover is None, f"dequeue returned the cancelled rollout {leftover and leftover.rollout_id}"


@check
async def dequeue_with_worker(client: LightningStoreClient, url: str) -> None:
    rollout = await enqueue(client, "dequeue")
    got = await dequeue_expecting(client, rollout.rollout_id, "w-compat-dequeue")
    expect_equal(got.status, "preparing", "rollout status after dequeue")
    expect_equal(got.attempt.sequence_id, 1, "first attempt's sequence_id")
    expect_equal(got.attempt.status, "preparing", "attempt status after dequeue")
    expect_equal(got.attempt.worker_id, "w-compat-dequeue", "attempt worker_id")
    expect_prefixed_hex(got.attempt.attempt_id, "at-", 8, "attempt id")

    empty = await client.dequeue_rollout(worker_id="w-compat-dequeue")
    assert empty is None, f"dequeue on an empty queue: expected None, got {empty!r}"

    pair = [await enqueue(client, f"batch-{i}") for i in range(2)]
    batch = await client.dequeue_many_rollouts(limit=5, worker_id="w-compat-batch")
    expect_equal([r.rollout_id for r in batch], [r.rollout_id for r in pair], "dequeue_many_rollouts(limit=5)")

    latest = await client.get_latest_attempt(rollout.rollout_id)
    assert latest is not None, "get_latest_attempt returned None for a dequeued rollout"
    expect_equal(latest.attempt_id, got.attempt.attempt_id, "latest attempt id")
    attempts = await client.query_attempts(rollout.rollout_id)
    expect_equal([a.attempt_id for a in attempts.items], [got.attempt.attempt_id], "query_attempts")
    unknown = await client.get_latest_attempt("ro-000000000000")
    assert unknown is None, f"latest attempt of an unknown rollout: expected None, got {unknown!r}"

    # start_attempt on an existing rollout makes attempt 2.
    second = await client.start_attempt(rollout.rollout_id, worker_id="w-compat-dequeue")
    expect_equal(second.attempt.sequence_id, 2, "start_attempt's sequence_id")
    started = await client.start_rollout(input={"direct": True}, mode="test", worker_id="w-compat-dequeue")
    expect_equal((started.status, started.attempt.sequence_id), ("preparing", 1), "start_rollout (status, sequence_id)")


@check
async def spans(client: LightningStoreClient, url: str) -> None:
    got = await start_one(client, "spans", "w-compat-spans")
    rollout_id, attempt_id = got.rollout_id, got.attempt.attempt_id

    first_seq = await client.get_next_span_sequence_id(rollout_id, attempt_id)
    expect_equal(first_seq, 1, "first span sequence id of a rollout")
    second_seq = await client.get_next_span_sequence_id(rollout_id, attempt_id)
    expect_equal(second_seq, 2, "second span sequence id")

    root = make_span(rollout_id, attempt_id, first_seq, "00000000000000a1", "compat.root", None)
    stored = await client.add_span(root)
    assert stored is not None, "add_span returned None for a new span"
    expect_equal(stored.model_dump(), root.model_dump(), "span as stored (extra keys included)")
    child = make_span(rollout_id, attempt_id, second_seq, "00000000000000b2", "compat.child", root.span_id)
    await client.add_span(child)
    duplicate = await client.add_span(root)
    assert duplicate is None, f"add_span of a duplicate span_id: expected None, got {duplicate!r}"

    # An explicit sequence id above the counter raises it.
    high = make_span(rollout_id, attempt_id, 10, "00000000000000c3", "other.high", root.span_id)
    await client.add_span(high)
    expect_equal(await client.get_next_span_sequence_id(rollout_id, attempt_id), 11, "next id after an explicit 10")

    # A span is a heartbeat: the attempt and the rollout run.
    attempt = await client.get_latest_attempt(rollout_id)
    assert attempt is not None and attempt.status == "running", f"attempt after a span: {attempt!r}"
    assert attempt.last_heartbeat_time is not None, "a span should set the attempt's last_heartbeat_time"
    rollout = await client.get_rollout_by_id(rollout_id)
    assert rollout is not None and rollout.status == "running", f"rollout after a span: {rollout!r}"

    await expect_span_queries(client, rollout_id, attempt_id)


async def expect_span_queries(client: LightningStoreClient, rollout_id: str, attempt_id: str) -> None:
    all_spans = await client.query_spans(rollout_id)
    expect_equal(names_of(all_spans.items), ["compat.root", "compat.child", "other.high"], "query_spans by sequence_id")
    expect_equal(all_spans.total, 3, "query_spans total")
    latest = await client.query_spans(rollout_id, "latest")
    expect_equal(latest.total, 3, "query_spans(attempt_id='latest') total")
    by_attempt = await client.query_spans(rollout_id, attempt_id)
    expect_equal(by_attempt.total, 3, "query_spans(attempt_id) total")
    other_attempt = await client.query_spans(rollout_id, "at-00000000")
    expect_equal(other_attempt.total, 0, "query_spans of another attempt id")

    filters = [
        ({"name": "compat.child"}, ["compat.child"]),
        ({"name_contains": "compat"}, ["compat.root", "compat.child"]),
        ({"parent_id": "00000000000000a1"}, ["compat.child", "other.high"]),
        ({"span_id": "00000000000000c3"}, ["other.high"]),
        ({"span_id_contains": "b2"}, ["compat.child"]),
        ({"trace_id": "5" * 32, "name": "compat.root"}, ["compat.root"]),
        ({"name": "compat.root", "span_id": "00000000000000c3", "filter_logic": "or"}, ["compat.root", "other.high"]),
        ({"name": "compat.root", "span_id": "00000000000000c3"}, []),
        ({"sort_order": "desc"}, ["other.high", "compat.child", "compat.root"]),
        ({"sort_by": "name"}, ["compat.child", "compat.root", "other.high"]),
    ]
    for kwargs, expected in filters:
        result = await client.query_spans(rollout_id, **kwargs)
        expect_equal(names_of(result.items), expected, f"query_spans({kwargs})")
    page = await client.query_spans(rollout_id, limit=1, offset=1)
    expect_equal((names_of(page.items), page.total), (["compat.child"], 3), "query_spans(limit=1, offset=1)")


@check
async def add_otel_span(client: LightningStoreClient, url: str) -> None:
    got = await start_one(client, "otel-span", "w-compat-otel")
    readable = record_spans([("client.otel", {})])[0]
    stored = await client.add_otel_span(got.rollout_id, got.attempt.attempt_id, readable)
    assert stored is not None, "add_otel_span returned None"
    expect_equal(stored.sequence_id, 1, "add_otel_span's sequence id (from spans/next)")
    expect_equal(stored.trace_id, f"{readable.context.trace_id:032x}", "trace id of the otel span")
    found = await client.query_spans(got.rollout_id, span_id=stored.span_id)
    expect_equal(found.total, 1, "the otel span can be queried back")
    # Times from the SDK are arbitrary floats: floats_round_trip checks those.
    expect_equal(without_times(found.items[0]), without_times(stored), "otel span as stored")


@check
async def floats_round_trip(client: LightningStoreClient, url: str) -> None:
    """JSON numbers sent by the client come back as the same doubles: Python's json writes the
    shortest repr and 0.3.0's server keeps the value. This time.time() value is one a parser
    without correct rounding reads one ULP off (back as 1795314851.590526)."""
    tricky = 1795314851.5905259
    got = await client.start_rollout(input={"x": tricky}, metadata={"x": tricky}, worker_id="w-compat-floats")
    span = make_span(got.rollout_id, got.attempt.attempt_id, 1, "00000000000000f1", "floats", None, start_time=tricky)
    span.attributes["compat.float"] = tricky
    stored = await client.add_span(span)
    assert stored is not None, "add_span returned None"
    sent = {"input": tricky, "metadata": tricky, "span start_time": tricky, "span attribute": tricky}
    back = {
        "input": got.input["x"],
        "metadata": (got.metadata or {}).get("x"),
        "span start_time": stored.start_time,
        "span attribute": stored.attributes.get("compat.float"),
    }
    changed = {key: f"sent {sent[key]!r}, got {back[key]!r}" for key in sent if back[key] != sent[key]}
    assert not changed, (
        f"floats changed on the way through the server: {changed} (a JSON parser without correct rounding, "
        "e.g. serde_json without its `float_roundtrip` feature)"
    )


@check
async def update_attempt_and_retry(client: LightningStoreClient, url: str) -> None:
    config = RolloutConfig(max_attempts=2, retry_condition=["failed"])
    first = await start_one(client, "retry", "w-compat-retry", config=config)
    rollout_id = first.rollout_id

    failed = await client.update_attempt(rollout_id, first.attempt.attempt_id, status="failed", metadata={"why": "x"})
    expect_equal((failed.status, failed.metadata), ("failed", {"why": "x"}), "updated attempt (status, metadata)")
    assert failed.end_time is not None, "a failed attempt should have an end_time"
    rollout = await client.get_rollout_by_id(rollout_id)
    assert rollout is not None, "rollout vanished"
    expect_equal(rollout.status, "requeuing", "rollout after attempt 1 of 2 failed, retry_condition=[failed]")

    second = await dequeue_expecting(client, rollout_id, "w-compat-retry")
    expect_equal(second.attempt.sequence_id, 2, "retry attempt's sequence_id")
    assert second.attempt.attempt_id != first.attempt.attempt_id, "the retry must be a new attempt"
    expect_equal(second.status, "preparing", "rollout status after the retry is dequeued")

    await client.update_attempt(rollout_id, "latest", status="failed")
    rollout = await client.get_rollout_by_id(rollout_id)
    assert rollout is not None, "rollout vanished"
    expect_equal(rollout.status, "failed", "rollout status once max_attempts attempts failed")
    assert rollout.end_time is not None, "a failed rollout should have an end_time"
    attempts = await client.query_attempts(rollout_id)
    expect_equal([(a.sequence_id, a.status) for a in attempts.items], [(1, "failed"), (2, "failed")], "attempts")
    assert await client.dequeue_rollout() is None, "a failed rollout must not be requeued"

    ok = await start_one(client, "succeed", "w-compat-retry")
    done = await client.update_attempt(ok.rollout_id, ok.attempt.attempt_id, status="succeeded")
    expect_equal(done.status, "succeeded", "attempt status")
    rollout = await client.get_rollout_by_id(ok.rollout_id)
    assert rollout is not None and rollout.status == "succeeded", f"rollout after its attempt succeeded: {rollout!r}"


@check
async def update_rollout_cancel(client: LightningStoreClient, url: str) -> None:
    queued = await enqueue(client, "cancel-queued")
    changed = await client.update_rollout(queued.rollout_id, metadata={"note": "edited"}, mode="val")
    expect_equal(
        (changed.metadata, changed.mode, changed.status), ({"note": "edited"}, "val", "queuing"), "update_rollout"
    )
    cancelled = await client.update_rollout(queued.rollout_id, status="cancelled")
    expect_equal(cancelled.status, "cancelled", "status after cancel")
    assert cancelled.end_time is not None, "a cancelled rollout should have an end_time"
    assert await client.dequeue_rollout() is None, "a cancelled rollout must not be dequeued"

    running = await start_one(client, "cancel-running", "w-compat-cancel")
    cancelled = await client.update_rollout(running.rollout_id, status="cancelled")
    expect_equal(cancelled.status, "cancelled", "cancel of a preparing rollout")


@check
async def wait_for_rollouts(client: LightningStoreClient, url: str) -> None:
    done = await start_one(client, "wait-done", "w-compat-wait")
    await client.update_attempt(done.rollout_id, done.attempt.attempt_id, status="succeeded")
    pending = await enqueue(client, "wait-pending")

    started = time.monotonic()
    finished = await client.wait_for_rollouts(rollout_ids=[done.rollout_id, pending.rollout_id], timeout=0.1)
    elapsed = time.monotonic() - started
    expect_equal([r.rollout_id for r in finished], [done.rollout_id], "wait_for_rollouts returns finished ones only")
    expect_equal(finished[0].status, "succeeded", "status of the waited rollout")
    assert elapsed < 5.0, f"wait_for_rollouts(timeout=0.1) took {elapsed:.2f} s"
    immediate = await client.wait_for_rollouts(rollout_ids=[pending.rollout_id], timeout=0)
    expect_equal(immediate, [], "wait_for_rollouts(timeout=0) on an unfinished rollout")
    await client.update_rollout(pending.rollout_id, status="cancelled")
    cancelled = await client.wait_for_rollouts(rollout_ids=[pending.rollout_id], timeout=0.1)
    expect_equal([r.status for r in cancelled], ["cancelled"], "a cancelled rollout counts as finished")


@check
async def workers(client: LightningStoreClient, url: str) -> None:
    worker_id = "w-compat-workers"
    got = await start_one(client, "workers", worker_id)
    worker = await client.get_worker_by_id(worker_id)
    assert worker is not None, f"get_worker_by_id({worker_id}) returned None after it dequeued"
    expect_equal(worker.status, "busy", "worker status with a preparing attempt")
    expect_equal(worker.current_rollout_id, got.rollout_id, "worker's current rollout")
    expect_equal(worker.current_attempt_id, got.attempt.attempt_id, "worker's current attempt")
    assert worker.last_dequeue_time is not None, "a dequeue should stamp last_dequeue_time"

    beat = await client.update_worker(worker_id, heartbeat_stats={"cpu": 0.5})
    expect_equal(beat.heartbeat_stats, {"cpu": 0.5}, "heartbeat_stats after update_worker")
    assert beat.last_heartbeat_time is not None, "update_worker should set last_heartbeat_time"
    expect_equal(beat.status, "busy", "update_worker must not change the status")

    found = await client.query_workers(worker_id_contains="compat-workers")
    expect_equal([w.worker_id for w in found.items], [worker_id], "query_workers(worker_id_contains)")
    busy = await client.query_workers(status_in=["busy"])
    assert worker_id in [w.worker_id for w in busy.items], f"{worker_id} missing from busy workers {busy.items}"
    everyone = await client.query_workers()
    assert everyone.total >= 2, f"query_workers total: expected several workers, got {everyone.total}"

    await client.update_attempt(got.rollout_id, got.attempt.attempt_id, status="succeeded")
    idle = await client.get_worker_by_id(worker_id)
    assert idle is not None, "worker vanished"
    expect_equal((idle.status, idle.current_rollout_id), ("idle", None), "worker after its attempt succeeded")
    assert idle.last_idle_time is not None, "an idle worker should have last_idle_time"
    assert await client.get_worker_by_id("w-compat-nobody") is None, "an unknown worker should be None"


@check
async def statistics(client: LightningStoreClient, url: str) -> None:
    before = await client.statistics()
    for key in ("total_rollouts", "total_attempts", "total_spans", "total_resources", "total_workers"):
        assert isinstance(before.get(key), int), f"statistics[{key!r}] should be an int, got {before.get(key)!r}"
    assert isinstance(before.get("name"), str), f"statistics['name'] should be a string: {before!r}"
    assert isinstance(before.get("uptime"), (int, float)), f"statistics['uptime'] should be a number: {before!r}"
    got = await start_one(client, "statistics", "w-compat-stats")
    await client.add_span(make_span(got.rollout_id, got.attempt.attempt_id, 1, "00000000000000d4", "stats", None))
    after = await client.statistics()
    deltas = {key: after[key] - before[key] for key in ("total_rollouts", "total_attempts", "total_spans")}
    expect_equal(deltas, {"total_rollouts": 1, "total_attempts": 1, "total_spans": 1}, "statistics deltas")


# ---------------------------------------------------------------- OTLP


def record_spans(specs: Sequence[tuple], resource_attributes: Optional[dict] = None) -> List[ReadableSpan]:
    """Records spans (name, attributes) with the OpenTelemetry SDK; each one after the first is a
    child of the first. Returns the finished ReadableSpans."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create(resource_attributes or {"service.name": "agl-compat"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("agl-compat")
    name, attributes = specs[0]
    with tracer.start_as_current_span(name, attributes=attributes):
        for child_name, child_attributes in specs[1:]:
            with tracer.start_as_current_span(child_name, attributes=child_attributes):
                pass
    provider.shutdown()
    return list(memory.get_finished_spans())


def export_otlp(url: str, spans: Sequence[ReadableSpan], gzip: bool) -> None:
    compression = Compression.Gzip if gzip else Compression.NoCompression
    exporter = OTLPSpanExporter(endpoint=f"{url}/v1/traces", compression=compression, timeout=10)
    try:
        result = exporter.export(spans)
    finally:
        exporter.shutdown()
    expect_equal(result, SpanExportResult.SUCCESS, f"OTLPSpanExporter.export to {url}/v1/traces (gzip={gzip})")


@check
async def otlp_export(client: LightningStoreClient, url: str) -> None:
    got = await start_one(client, "otlp", "w-compat-otlp")
    ids = {ROLLOUT_ID_ATTR: got.rollout_id, ATTEMPT_ID_ATTR: got.attempt.attempt_id}
    before = await client.statistics()

    # The orphan has no ids anywhere: the server drops it.
    span_level = record_spans(
        [("otlp.root", {**ids, "gen_ai.system": "compat"}), ("otlp.child", ids), ("otlp.orphan", {})]
    )
    export_otlp(url, span_level, gzip=False)
    resource_level = record_spans([("otlp.resource", {"k": 1})], resource_attributes={"service.name": "x", **ids})
    export_otlp(url, resource_level, gzip=True)

    stored = await client.query_spans(got.rollout_id)
    by_name = {span.name: span for span in stored.items}
    expect_equal(sorted(by_name), ["otlp.child", "otlp.resource", "otlp.root"], "OTLP spans stored for the rollout")
    # The SDK lists children before the root (they end first): look spans up by name.
    root = {span.name: span for span in span_level}["otlp.root"]
    expect_equal(by_name["otlp.root"].trace_id, f"{root.context.trace_id:032x}", "trace_id of an OTLP span")
    expect_equal(by_name["otlp.root"].span_id, f"{root.context.span_id:016x}", "span_id of an OTLP span")
    expect_equal(by_name["otlp.child"].parent_id, f"{root.context.span_id:016x}", "parent_id of the OTLP child")
    expect_equal(by_name["otlp.root"].parent_id, None, "parent_id of the OTLP root")
    expect_equal(by_name["otlp.root"].attributes.get("gen_ai.system"), "compat", "a string attribute")
    expect_equal(by_name["otlp.resource"].attributes.get("k"), 1, "an int attribute")
    expect_equal({span.attempt_id for span in stored.items}, {got.attempt.attempt_id}, "attempt ids of OTLP spans")
    seqs = [span.sequence_id for span in stored.items]
    assert len(set(seqs)) == 3 and min(seqs) >= 1, f"OTLP spans need distinct sequence ids >= 1, got {seqs}"

    after = await client.statistics()
    added = after["total_spans"] - before["total_spans"]
    expect_equal(added, 3, "spans added by OTLP (the one without ids is dropped)")
    rollout = await client.get_rollout_by_id(got.rollout_id)
    assert rollout is not None and rollout.status == "running", f"OTLP spans are heartbeats too: {rollout!r}"


@check
async def unknown_ids_accepted_as_0_3_0_does(client: LightningStoreClient, url: str) -> None:
    """0.3.0 stores any resources_id without a lookup and issues span sequence ids for any
    rollout id (agentlightning/store/collection_based.py): so does agl-host (with a warning)."""
    queued = await client.enqueue_rollout(input={"q": "unknown-resources"}, resources_id="rs-compat-nowhere")
    expect_equal(queued.resources_id, "rs-compat-nowhere", "enqueue_rollout keeps an unknown resources_id")
    updated = await client.update_rollout(queued.rollout_id, resources_id="rs-compat-elsewhere", status="cancelled")
    expect_equal(updated.resources_id, "rs-compat-elsewhere", "update_rollout takes an unknown resources_id")
    started = await client.start_rollout(input={"q": "unknown-resources"}, resources_id="rs-compat-nowhere")
    expect_equal(started.resources_id, "rs-compat-nowhere", "start_rollout keeps an unknown resources_id")
    await client.update_rollout(started.rollout_id, status="cancelled")

    first = await client.get_next_span_sequence_id("ro-compat-nowhere", "at-compat-nowhere")
    second = await client.get_next_span_sequence_id("ro-compat-nowhere", "at-compat-other")
    expect_equal((first, second), (1, 2), "span sequence ids of an unknown rollout count from 1")
    stray = await client.get_next_span_sequence_id(started.rollout_id, "at-compat-nowhere")
    expect_equal(stray, 1, "an unknown attempt draws from its rollout's counter")


# ---------------------------------------------------------------- main


async def drain_queue(client: LightningStoreClient) -> None:
    """After a failed check: dequeue and cancel whatever it left queued, so later checks (which
    expect an empty FIFO queue) are not affected."""
    while leftovers := await client.dequeue_many_rollouts(limit=100, worker_id="w-compat-drain"):
        for rollout in leftovers:
            await client.update_rollout(rollout.rollout_id, status="cancelled")


async def run_checks(url: str, selected: Sequence[str]) -> int:
    # No retries: a 5xx or a dropped connection should fail the check now, not after 8 s of backoff.
    client = LightningStoreClient(url, retry_delays=(), health_retry_delays=(), request_timeout=20.0)
    failures = 0
    try:
        for fn in CHECKS:
            if selected and fn.__name__ not in selected:
                continue
            started = time.monotonic()
            try:
                await fn(client, url)
            except Exception:  # noqa: BLE001 - report every failing check, then exit 1
                failures += 1
                print(f"FAIL {fn.__name__} ({time.monotonic() - started:.2f} s)", flush=True)
                traceback.print_exc(file=sys.stdout)
                await drain_queue(client)
            else:
                print(f"PASS {fn.__name__} ({time.monotonic() - started:.2f} s)", flush=True)
    finally:
        await client.close()
    ran = len([fn for fn in CHECKS if not selected or fn.__name__ in selected])
    print(f"{ran - failures}/{ran} checks passed", flush=True)
    return 1 if failures else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the store server's base URL, e.g. http://127.0.0.1:4747")
    parser.add_argument("checks", nargs="*", help=f"run only these checks: {', '.join(fn.__name__ for fn in CHECKS)}")
    args = parser.parse_args()
    unknown = set(args.checks) - {fn.__name__ for fn in CHECKS}
    assert not unknown, f"unknown checks: {sorted(unknown)}"
    # The client logs why a request failed at DEBUG (and swallows errors in dequeue/get_* calls).
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s", stream=sys.stdout)
    logging.getLogger("agentlightning.store.client").setLevel(logging.DEBUG)
    return asyncio.run(run_checks(args.url.rstrip("/"), args.checks))


if __name__ == "__main__":
    sys.exit(main())
