#!/usr/bin/env python3
"""The anchor of the run_throughput benchmark: rollouts per second of Agent-lightning 0.3.0's own
unsandboxed Python runner with a trivial agent, or (`--llm`) an agent that makes one
chat-completion call per rollout, on this machine.

What runs, per repetition (all repetitions in this one Python process):

* a fresh `agl.Trainer` over a fresh `InMemoryLightningStore`, with the stock `LitAgentRunner`
  and the shared-memory execution strategy (`"shm"`: the algorithm on the main thread, the
  runner on a thread of its own, each with its own asyncio loop, the store behind the strategy's
  thread-safe facade). `--strategy cs` uses the client-server strategy instead, `Trainer()`'s
  default: the store served over HTTP by the main process, each runner a process of its own;
* the agent: a `LitAgent` whose rollout returns the reward 1.0 at once (no LLM, no tools); the
  runner stores that reward as a span, as it does for any agent that returns a float. With
  `--llm URL` (an OpenAI-compatible base URL, e.g. http://127.0.0.1:PORT/v1) it is instead an agent
  as Agent-lightning users write one: an async function made a `LitAgent` by `@agl.rollout`, given
  the task and the `agl.LLM` resource (endpoint URL, model "scripted", API key "dummy"), that makes
  ONE chat-completion call with the official `openai` client (`AsyncOpenAI`, a client per rollout
  as Agent-lightning's examples make one, `max_retries=0` so that a failed call fails the rollout),
  asking a grade-school question from a built-in list (all with the answer 19), and returns the
  reward 1.0 if the reply contains the expected number, else 0.0. The client's lazily imported API
  modules (0.5 s per process) are imported before the runner processes are forked, so that every
  runner's first rollout does not pay for them (the AgentOps tracer imports them anyway, to
  instrument them); what each rollout pays, a fresh client included, is counted;
* the tracer: Agent-lightning's default, the AgentOps tracer (`AgentOpsTracer` as `Trainer()`
  builds it when given none: AgentOps initialised with a dummy key, all instrumentations applied,
  one AgentOps trace, hence one more span, per rollout). This is the anchor. `--tracer otel`
  measures the plain OpenTelemetry tracer (`OtelTracer`) instead; there is no no-op tracer a
  runner can use (`DummyTracer` has no `trace_context`). Spans per rollout, as printed: with
  `--llm`, 3 under AgentOps with `shm` (its trace, the openai call, the reward); 1 (the reward)
  with `otel`, which does not instrument openai, and with AgentOps under `cs`, whose runner
  processes fail to export its spans ("'BypassableAuthenticatedOTLPExporter' object has no
  attribute '_headers'" on stderr), the trivial agent's as well;
* the algorithm: a minimal `agl.Algorithm` that registers empty resources (a runner skips a
  rollout without any; with `--llm`, the one `agl.LLM` resource "main_llm"), waits until the
  runners have polled the empty queue once (so their start-up is not counted), enqueues the N rollouts with one `enqueue_many_rollouts` call, waits
  for each with `wait_for_rollouts`, and checks that all N succeeded (with `--llm`, and after the
  time counted, that each stored a reward; their mean is printed).

The time counted is from the moment a runner claimed the first rollout (its attempt's
`start_time`) to the latest `end_time` the store recorded on the N rollouts. Not counted: imports,
Trainer and tracer set-up, the shutdown, and the wait between the enqueue and that first claim:
an idle runner polls the queue on a timer (5 s by default, lowered here to 0.01 s; even so it
sleeps in steps of 0.1 s), so the enqueue lands while it sleeps and is seen up to 0.1 s later,
several per cent of a run of the defaults. The rate counted from the enqueue is printed too.

With the shared-memory strategy Agent-lightning 0.3.0 runs one runner only: its threads share the
Trainer's one runner and tracer, and the active tracer is global to the process, so with two
threads most rollouts fail ("An active tracer is already set"). More runners need `--strategy cs`:
`--runners N` then gives `Trainer(n_runners=N)` N runner processes, forked from the main process,
Agent-lightning's way to have N agents in flight (one rollout at a time each). With `--llm` and an
endpoint that answers in 1 s, that is what bounds the rate: at most N rollouts/s. Memory: the
runners' summed RSS is about 0.33 GB each (16 GB for 50), but most of it is pages shared with the
main process since the fork; the memory available fell by 0.5 to 2.6 GB during 50-runner runs here.

Run, from anywhere (any python3: the script re-runs itself with the venv's python; the venv is
made by `python3 tests/python/prepare_venv.py target/py/agl-0.3` or by
`cargo test -p agl-host --test cli python_client`):

    python3 runtime/host/benches/agl_python_runner.py [--rollouts 500] [--runners 1] [--repeat 3]
        [--strategy shm|cs] [--tracer agentops|otel] [--llm URL] [--result-file PATH]

e.g. `--strategy cs --runners 10 --rollouts 30 --repeat 1 --tracer otel
--llm http://127.0.0.1:PORT/v1 --result-file /tmp/r.txt`.

It prints a line per repetition, then the median counted from the enqueue, and last
`anchor_rollouts_per_second <median>`, which the run_throughput bench reads; `--result-file PATH`
also writes that last line to PATH (removed first, so that a failed run leaves none), for a caller
that discards the script's stdout and stderr. AgentOps writes two "Session Replay" lines per
rollout to stderr; they are part of what the default tracer costs.
The defaults take about 20 s here, most of it importing Agent-lightning.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import re
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
# The questions the `--llm` agent asks, rollout i the question i modulo their number. Every answer
# is 19, so that a scripted model whose one reply is "12 + 7 = 19. Tom has 19" earns 1.0 on each.
QUESTIONS = (
    ("Tom has 12 apples and buys 7 more. How many apples does Tom have?", 19),
    ("A shelf holds 25 books and 6 are taken away. How many books are left?", 19),
    ("What is 4 * 4 + 3?", 19),
    ("Ann is 11 years old. How old will she be in 8 years?", 19),
    ("A bus carries 40 people; 21 get off. How many are still on it?", 19),
)
# The model name the `--llm` agent asks for, and its API key (the endpoint checks neither).
LLM_MODEL = "scripted"
LLM_API_KEY = "dummy"


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
            "or `cargo test -p agl-host --test cli python_client` (needs PyPI the first time)"
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
    parser.add_argument(
        "--llm",
        metavar="URL",
        help="an OpenAI-compatible base URL (e.g. http://127.0.0.1:PORT/v1): the agent then makes one "
        "chat-completion call per rollout there with the openai client, model 'scripted'",
    )
    parser.add_argument(
        "--result-file",
        metavar="PATH",
        type=Path,
        help="also write the last line, `anchor_rollouts_per_second <median>`, to this file",
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


def math_agent() -> Any:
    """The `--llm` agent, written as Agent-lightning's examples write one: a function made a
    `LitAgent` by `@agl.rollout`, given the task and the `agl.LLM` resource the algorithm
    registered, that asks that LLM the task's question with the openai client (one
    chat-completion call: `max_retries=0`, so that a failed call fails the rollout rather than
    being made again) and returns the reward: 1.0 if the reply contains the expected number."""
    import agentlightning as agl
    from openai import AsyncOpenAI

    # The client imports its API's modules on first use, 0.5 s here, per process: import them now,
    # before the runner processes are forked, so that their start-up is not counted in the first
    # rollouts (the AgentOps tracer's instrumentation of openai imports them as well).
    AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key=LLM_API_KEY).chat.completions.create

    @agl.rollout
    async def solve_math(task: dict[str, Any], llm: agl.LLM) -> float:
        async with AsyncOpenAI(base_url=llm.endpoint, api_key=llm.api_key or LLM_API_KEY, max_retries=0) as client:
            response = await client.chat.completions.create(
                model=llm.model,
                messages=[
                    {"role": "system", "content": "Solve the problem. End with the number alone."},
                    {"role": "user", "content": task["question"]},
                ],
                **llm.sampling_parameters,
            )
        reply = response.choices[0].message.content or ""
        numbers = re.findall(r"-?\d+(?:\.\d+)?", reply.replace(",", ""))
        return 1.0 if any(float(number) == task["answer"] for number in numbers) else 0.0

    return solve_math


def measure(rollouts: int, runners: int, tracer: Any, strategy: str, llm: Optional[str] = None) -> dict[str, float]:
    """One repetition: a fresh Trainer and store; returns the times of the enqueue, the first claim
    of a rollout by a runner, and the end of the last rollout (seconds since the epoch), the spans
    of the last rollout and, with an LLM, the mean reward of the rollouts."""
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
            patience = 60.0 + 2.0 * expected  # runner processes start slowly on few cores
            deadline = time.monotonic() + patience
            while True:
                workers = await store.query_workers()
                polled = sum(worker.last_dequeue_time is not None for worker in workers)
                if polled >= expected:
                    return
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{polled} of {expected} runners polled the store within {patience:.0f} s")
                await asyncio.sleep(0.01)

        async def run(self, train_dataset: Any = None, val_dataset: Any = None) -> None:
            store = self.get_store()
            if llm is None:
                # A runner skips a rollout without resources, so register some (none are needed).
                resources = await store.add_resources({})
                inputs: list[dict[str, Any]] = [{"index": i} for i in range(self.count)]
            else:
                # The LLM the agent calls, given to it as Agent-lightning gives one: a resource.
                resources = await store.add_resources(
                    {"main_llm": agl.LLM(endpoint=llm, model=LLM_MODEL, api_key=LLM_API_KEY)}
                )
                inputs = [
                    {"index": i, "question": QUESTIONS[i % len(QUESTIONS)][0], "answer": QUESTIONS[i % len(QUESTIONS)][1]}
                    for i in range(self.count)
                ]
            requests = [
                agl.EnqueueRolloutRequest(input=task, mode="train", resources_id=resources.resources_id)
                for task in inputs
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
            if llm is not None:
                # After the time counted: the rewards the runners stored, one per rollout.
                rewards = [agl.find_final_reward(await store.query_spans(rollout.rollout_id)) for rollout in finished]
                missing = sum(reward is None for reward in rewards)
                if missing:
                    raise RuntimeError(f"{missing} of {self.count} rollouts stored no reward")
                self.timings["mean_reward"] = statistics.fmean(rewards)

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
    trainer.fit(TrivialAgent() if llm is None else math_agent())
    if algorithm.timings is None:
        raise RuntimeError("the algorithm did not finish")
    return algorithm.timings


def main() -> int:
    args = parse_args()
    if args.result_file is not None:
        # No file, rather than an earlier run's, if this run fails.
        args.result_file.unlink(missing_ok=True)
    # LiteLLM (imported by Agent-lightning) fetches a price list from GitHub at import, for seconds
    # of retries offline; its bundled copy does as well here (no LLM is called).
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    require_agentlightning()
    import agentlightning as agl

    if args.llm is None:
        agent = "trivial rollouts"
    else:
        import openai

        agent = f"rollouts of one chat completion each (openai {openai.__version__}, {args.llm}, model {LLM_MODEL})"
    print(
        f"Agent-lightning {agl.__version__}, python {sys.version.split()[0]}: {args.rollouts} {agent}, "
        f"{args.runners} runner(s), strategy {args.strategy}, in-memory store, tracer {args.tracer}",
        flush=True,
    )
    tracer = make_tracer(args.tracer)
    rates, rates_from_enqueue = [], []
    for repetition in range(1, args.repeat + 1):
        timings = measure(args.rollouts, args.runners, tracer, args.strategy, args.llm)
        rate = args.rollouts / (timings["end"] - timings["first_claim"])
        rate_from_enqueue = args.rollouts / (timings["end"] - timings["enqueue"])
        rates.append(rate)
        rates_from_enqueue.append(rate_from_enqueue)
        seconds = timings["end"] - timings["first_claim"]
        print(
            f"run {repetition}: {rate:.1f} rollouts/s ({args.rollouts} in {seconds:.3f} s "
            f"from the first claim; {rate_from_enqueue:.1f}/s counting the runner's wake-up "
            f"{(timings['first_claim'] - timings['enqueue']) * 1000:.0f} ms after the enqueue; "
            f"{timings['spans']:.0f} span(s) in the last rollout"
            + (f"; mean reward {timings['mean_reward']:.2f})" if "mean_reward" in timings else ")"),
            flush=True,
        )
    print(f"median from the enqueue: {statistics.median(rates_from_enqueue):.1f} rollouts/s", flush=True)
    result = f"anchor_rollouts_per_second {statistics.median(rates):.1f}"
    print(result, flush=True)
    if args.result_file is not None:
        args.result_file.write_text(result + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
