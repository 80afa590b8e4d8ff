#!/usr/bin/env python3
"""The anchor of the run_throughput benchmark: rollouts per second of Agent-lightning 0.3.0's own
unsandboxed Python runner with a trivial agent, on this machine.

What runs, per repetition (all repetitions in this one Python process):

* a fresh `agl.Trainer` over a fresh `InMemoryLightningStore`, with the stock `LitAgentRunner`
  and the shared-memory execution strategy (`"shm"`: the algorithm on the main thread, the
  runner on a thread of its own, each with its own asyncio loop, the store behind the strategy's
  thread-safe facade). `--strategy cs` uses the client-server strategy instead, `Trainer()`'s
  default: the store served over HTTP by the main process, each runner a process of its own;
* the agent: a `LitAgent` whose rollout returns the reward 1.0 at once (no LLM, no tools); the
  runner stores that reward as a span, as it does for any agent that returns a float;
* the tracer: Agent-lightning's default, the AgentOps tracer (`AgentOpsTracer` as `Trainer()`
  builds it when given none: AgentOps initialised with a dummy key, all instrumentations applied,
  one AgentOps trace, hence one more span, per rollout). This is the anchor. `--tracer otel`
  measures the plain OpenTelemetry tracer (`OtelTracer`) instead; there is no no-op tracer a
  runner can use (`DummyTracer` has no `trace_context`);
* the algorithm: a minimal `agl.Algorithm` that registers empty resources (a runner skips a
  rollout without any), waits until the runners have polled the empty queue once (so their
  start-up is not counted), enqueues the N rollouts with one `enqueue_many_rollouts` call, waits
  for each with `wait_for_rollouts`, and checks that all N succeeded.

The time counted is from the moment a runner claimed the first rollout (its attempt's
`start_time`) to the latest `end_time` the store recorded on the N rollouts. Not counted: imports,
Trainer and tracer set-up, the shutdown, and the wait between the enqueue and that first claim:
an idle runner polls the queue on a timer (5 s by default, lowered here to 0.01 s; even so it
sleeps in steps of 0.1 s), so the enqueue lands while it sleeps and is seen up to 0.1 s later,
several per cent of a run of the defaults. The rate counted from the enqueue is printed too.

With the shared-memory strategy Agent-lightning 0.3.0 runs one runner only: its threads share the
Trainer's one runner and tracer, and the active tracer is global to the process, so with two
threads most rollouts fail ("An active tracer is already set"). More runners need `--strategy cs`.

Run, from anywhere (any python3: the script re-runs itself with the venv's python; the venv is
made by `python3 tests/python/prepare_venv.py target/py/agl-0.3` or by
`cargo test -p agl-host --test python_client`):

    python3 runtime/cli/benches/agl_python_runner.py [--rollouts 500] [--runners 1] [--repeat 3]
        [--strategy shm|cs] [--tracer agentops|otel]

It prints a line per repetition, then the median counted from the enqueue, and last
`anchor_rollouts_per_second <median>`, which the run_throughput bench reads. AgentOps writes two
"Session Replay" lines per rollout to stderr; they are part of what the default tracer costs.
The defaults take about 20 s here, most of it importing Agent-lightning.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Optional

REPO = Path(__file__).resolve().parents[3]
VENV = REPO / "target" / "py" / "agl-0.3"
VENV_PYTHON = VENV / "bin" / "python"
WANTED_VERSION = "0.3.0"
# Set when this script re-runs itself in the venv, so that it does so at most once.
REEXEC_MARK = "AGL_PYTHON_RUNNER_REEXEC"


def require_agentlightning() -> None:
    """Make sure Agent-lightning 0.3.0 is importable, re-running in the venv if need be."""
    try:
        import agentlightning
    except ImportError:
        if VENV_PYTHON.is_file() and not os.environ.get(REEXEC_MARK):
            os.environ[REEXEC_MARK] = "1"
            os.execv(VENV_PYTHON, [str(VENV_PYTHON), str(Path(__file__).resolve()), *sys.argv[1:]])
        raise SystemExit(
            f"agl_python_runner: no venv with agentlightning {WANTED_VERSION} at {VENV} "
            f"(python {VENV_PYTHON} missing or without it); create it with "
            f"`python3 tests/python/prepare_venv.py {VENV.relative_to(REPO)}` "
            "or `cargo test -p agl-host --test python_client` (needs PyPI the first time)"
        ) from None
    if agentlightning.__version__ != WANTED_VERSION:
        raise SystemExit(
            f"agl_python_runner: agentlightning {agentlightning.__version__} found, {WANTED_VERSION} wanted"
        )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rollouts", type=int, default=500, help="rollouts per repetition (default 500)")
    parser.add_argument("--runners", type=int, default=1, help="runners (default 1)")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions; the median is reported (default 3)")
    parser.add_argument(
        "--strategy",
        choices=("shm", "cs"),
        default="shm",
        help="shm: shared memory, runners on threads (default); cs: client-server, runners in processes over HTTP",
    )
    parser.add_argument(
        "--tracer",
        choices=("agentops", "otel"),
        default="agentops",
        help="agentops: Agent-lightning's default tracer, the anchor (default); otel: its OtelTracer",
    )
    args = parser.parse_args()
    for name in ("rollouts", "runners", "repeat"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if args.strategy == "shm" and args.runners > 1:
        parser.error(
            "Agent-lightning 0.3.0's shared-memory strategy runs one runner only (its threads share one "
            "runner and the process-wide active tracer, and most rollouts fail); use --strategy cs"
        )
    return args


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def make_tracer(name: str) -> Any:
    """The tracer, one per process: OpenTelemetry's tracer provider can be set only once."""
    import agentlightning as agl

    if name == "agentops":
        # What `agl.Trainer` builds when it is given no tracer.
        return agl.AgentOpsTracer(agentops_managed=True, instrument_managed=True, daemon=True)
    return agl.OtelTracer()


def measure(rollouts: int, runners: int, tracer: Any, strategy: str) -> dict[str, float]:
    """One repetition: a fresh Trainer and store; returns the times of the enqueue, the first claim
    of a rollout by a runner, and the end of the last rollout (seconds since the epoch)."""
    import agentlightning as agl

    class TrivialAgent(agl.LitAgent[Any]):
        """An agent whose every rollout returns the final reward 1.0 at once."""

        def rollout(self, task: Any, resources: agl.NamedResources, rollout: agl.Rollout) -> float:
            return 1.0

    class EnqueueAndWait(agl.Algorithm):
        """Enqueues `count` rollouts at once and waits until every one of them has finished."""

        def __init__(self, count: int) -> None:
            super().__init__()
            self.count = count
            self.timings: Optional[dict[str, float]] = None

        async def wait_for_idle_runners(self, store: agl.LightningStore) -> None:
            """Waits until the runners have set up their tracer and polled the (empty) queue once.

            The shared-memory strategy gives all its threads the Trainer's one runner object, whose
            worker id is the last thread's, so the store sees one worker there whatever K is.
            """
            expected = runners if strategy == "cs" else 1
            deadline = time.monotonic() + 60.0
            while True:
                workers = await store.query_workers()
                polled = sum(worker.last_dequeue_time is not None for worker in workers)
                if polled >= expected:
                    return
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{polled} of {expected} runners polled the store within 60 s")
                await asyncio.sleep(0.01)

        async def run(self, train_dataset: Any = None, val_dataset: Any = None) -> None:
            store = self.get_store()
            # A runner skips a rollout without resources, so register some (none are needed).
            resources = await store.add_resources({})
            requests = [
                agl.EnqueueRolloutRequest(input={"index": i}, mode="train", resources_id=resources.resources_id)
                for i in range(self.count)
            ]
            await self.wait_for_idle_runners(store)
            start = time.time()
            enqueued = await store.enqueue_many_rollouts(requests)
            finished: list[agl.Rollout] = []
            for rollout in enqueued:
                # Returns at once for a rollout that has already finished.
                finished.extend(await store.wait_for_rollouts(rollout_ids=[rollout.rollout_id], timeout=60.0))
            statuses = [rollout.status for rollout in finished]
            if len(finished) != self.count or any(status != "succeeded" for status in statuses):
                raise RuntimeError(
                    f"{len(finished)} of {self.count} rollouts finished, "
                    f"{statuses.count('succeeded')} succeeded"
                )
            end = max(rollout.end_time or 0.0 for rollout in finished)
            attempts = [await store.get_latest_attempt(rollout.rollout_id) for rollout in finished]
            first_claim = min(attempt.start_time for attempt in attempts if attempt is not None)
            spans = await store.query_spans(finished[-1].rollout_id)
            self.timings = {"enqueue": start, "first_claim": first_claim, "end": end, "spans": len(spans)}

    algorithm = EnqueueAndWait(rollouts)
    if strategy == "shm":
        strategy_spec = {"type": "shm", "n_runners": runners, "main_thread": "algorithm"}
    else:
        strategy_spec = {"type": "cs", "n_runners": runners, "server_host": "127.0.0.1", "server_port": free_port()}
    trainer = agl.Trainer(
        n_runners=runners,
        algorithm=algorithm,
        tracer=tracer,
        store=agl.InMemoryLightningStore(),
        strategy=strategy_spec,
        runner={"type": "agentlightning.LitAgentRunner", "poll_interval": 0.01, "interval_jitter": 0.0},
    )
    trainer.fit(TrivialAgent())
    if algorithm.timings is None:
        raise RuntimeError("the algorithm did not finish")
    return algorithm.timings


def main() -> int:
    args = parse_args()
    # LiteLLM (imported by Agent-lightning) fetches a price list from GitHub at import, for seconds
    # of retries offline; its bundled copy does as well here (no LLM is called).
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    require_agentlightning()
    import agentlightning as agl

    print(
        f"Agent-lightning {agl.__version__}, python {sys.version.split()[0]}: {args.rollouts} trivial rollouts, "
        f"{args.runners} runner(s), strategy {args.strategy}, in-memory store, tracer {args.tracer}",
        flush=True,
    )
    tracer = make_tracer(args.tracer)
    rates, rates_from_enqueue = [], []
    for repetition in range(1, args.repeat + 1):
        timings = measure(args.rollouts, args.runners, tracer, args.strategy)
        rate = args.rollouts / (timings["end"] - timings["first_claim"])
        rate_from_enqueue = args.rollouts / (timings["end"] - timings["enqueue"])
        rates.append(rate)
        rates_from_enqueue.append(rate_from_enqueue)
        seconds = timings["end"] - timings["first_claim"]
        print(
            f"run {repetition}: {rate:.1f} rollouts/s ({args.rollouts} in {seconds:.3f} s "
            f"from the first claim; {rate_from_enqueue:.1f}/s counting the runner's wake-up "
            f"{(timings['first_claim'] - timings['enqueue']) * 1000:.0f} ms after the enqueue; "
            f"{timings['spans']:.0f} span(s) in the last rollout)",
            flush=True,
        )
    print(f"median from the enqueue: {statistics.median(rates_from_enqueue):.1f} rollouts/s", flush=True)
    print(f"anchor_rollouts_per_second {statistics.median(rates):.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
