"""A plain Python agent (no WebAssembly, no tracing code) traced through agl-host's LLM proxy.

Usage: python proxy_agent_loop.py --url http://127.0.0.1:PORT

The store at URL runs `agl-host store --llm-proxy` before the echo model of
runtime/host/tests/cli/llm_proxy.rs ("say X" is answered "X"). As an algorithm would, this script
publishes a `ProxyLLM` resource naming the proxy and enqueues three rollouts; then, as a runner,
it dequeues each with Agent-lightning 0.3.0's `LightningStoreClient`, asks the `openai` client
pointed at the per-attempt URL its rollout's resources give (`ProxyLLM.get_base_url`), grades the
answer, records the reward as an annotation span and finishes the attempt. The agent sends no
LLM span itself: the proxy records them. Last, `TracerTraceToTriplet` must turn each attempt's
spans into one (prompt, response, reward) triplet with that reward. Exits 1 when a check fails.
Needs agentlightning==0.3.0 (its venv has `openai`) and LITELLM_LOCAL_MODEL_COST_MAP=True.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from agentlightning.adapter.triplet import TracerTraceToTriplet
from agentlightning.store.client_server import LightningStoreClient
from agentlightning.types import ProxyLLM, Span
from openai import AsyncOpenAI

TASKS = [
    {"say": "four", "expected": "four"},
    {"say": "five", "expected": "five"},
    {"say": "six", "expected": "seven"},  # the model is right, the task is not: reward 0
]


async def agent(client: LightningStoreClient, rollout_id: str, attempt_id: str, task: dict, llm: ProxyLLM) -> float:
    """One rollout: one LLM call through the proxy, graded; the reward recorded as a span."""
    openai = AsyncOpenAI(base_url=llm.get_base_url(rollout_id, attempt_id), api_key="unused", max_retries=0)
    try:
        reply = await openai.chat.completions.create(
            model=llm.model, messages=[{"role": "user", "content": f"say {task['say']}"}]
        )
    finally:
        await openai.close()
    reward = 1.0 if reply.choices[0].message.content == task["expected"] else 0.0
    sequence_id = await client.get_next_span_sequence_id(rollout_id, attempt_id)
    now = time.time()
    await client.add_span(
        Span.from_attributes(
            name="agentlightning.annotation",
            attributes={"agentlightning.reward.0.name": "primary", "agentlightning.reward.0.value": reward},
            rollout_id=rollout_id,
            attempt_id=attempt_id,
            sequence_id=sequence_id,
            start_time=now,
            end_time=now,
        )
    )
    return reward


async def run(url: str) -> None:
    client = LightningStoreClient(url, retry_delays=(), health_retry_delays=(), request_timeout=20.0)
    try:
        # The algorithm's part: the proxy as a resource, the tasks as rollouts.
        published = await client.add_resources({"main_llm": ProxyLLM(endpoint=f"{url}/v1", model="m")})
        enqueued = [await client.enqueue_rollout(input=task, mode="train") for task in TASKS]
        assert all(r.resources_id == published.resources_id for r in enqueued), enqueued

        # The runner's part, with the agent above.
        rewards = {}
        while (attempted := await client.dequeue_rollout(worker_id="py-agent")) is not None:
            rollout_id, attempt_id = attempted.rollout_id, attempted.attempt.attempt_id
            resources = await client.get_resources_by_id(attempted.resources_id)
            llm = resources.resources["main_llm"]
            assert isinstance(llm, ProxyLLM), llm
            await client.update_attempt(rollout_id, attempt_id, status="running")
            rewards[rollout_id] = await agent(client, rollout_id, attempt_id, attempted.input, llm)
            await client.update_attempt(rollout_id, attempt_id, status="succeeded")
        assert len(rewards) == len(TASKS), rewards

        # (The client refuses to wait longer than 0.1 s; every attempt has finished already.)
        finished = await client.wait_for_rollouts(rollout_ids=[r.rollout_id for r in enqueued], timeout=0.05)
        assert sorted(r.status for r in finished) == ["succeeded"] * len(TASKS), finished

        # What a trainer reads: each attempt's spans, as triplets.
        for rollout in enqueued:
            spans = (await client.query_spans(rollout.rollout_id)).items
            names = [span.name for span in spans]
            assert names == ["openai.chat.completion", "agentlightning.annotation"], names
            triplets = TracerTraceToTriplet().adapt(spans)
            assert len(triplets) == 1, triplets
            triplet = triplets[0]
            assert f"say {rollout.input['say']}" in str(triplet.prompt["raw_content"]), triplet.prompt
            assert rollout.input["say"] in str(triplet.response["raw_content"]), triplet.response
            assert triplet.reward == rewards[rollout.rollout_id], (triplet.reward, rewards)
        print(f"PASS {len(rewards)} rollouts through the proxy, rewards {sorted(rewards.values())}")
    finally:
        await client.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    args = parser.parse_args()
    asyncio.run(run(args.url.rstrip("/")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
