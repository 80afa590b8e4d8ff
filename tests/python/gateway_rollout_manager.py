"""Agent-lightning 1.0's verl rollout manager builds its batch from agl-host's gateway API.

Usage: python gateway_rollout_manager.py --url http://127.0.0.1:PORT --key KEY

The store at URL runs `agl-host store --llm-proxy --llm-token-ids --token KEY` before a scripted
model that returns token ids and logprobs. `AglRolloutManager` (agentlightning==1.0.2, from
`agentlightning.verl.agl_rollout_manager`; it imports numpy and httpx_retries, not torch or verl)
registers a model server, creates two rollouts per sample, and polls them until they end. A
stand-in runner here plays the agent over the 0.3.0 routes: it dequeues each rollout, calls the
1.0 proxy route for its attempt, posts a 1.0 `reward` event and ends the attempt. The manager's
`CompletedRollout`s must carry one triplet each with the model's token ids, logprobs and the
reward. Exits 1 when a check fails. A draft: not yet run by CI.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time

import httpx
from agentlightning.verl.agl_rollout_manager import AglRolloutManager


def runner(url: str, key: str, expected: int, stop: threading.Event) -> None:
    """Takes rollouts until `expected` are done: one LLM call, a reward, the attempt succeeded."""
    headers = {"Authorization": f"Bearer {key}"}
    done = 0
    with httpx.Client(base_url=url, headers=headers, timeout=30.0) as client:
        while done < expected and not stop.is_set():
            taken = client.post("/v1/agl/queues/rollouts/dequeue", json={"limit": 1, "worker_id": "py"})
            taken.raise_for_status()
            if not taken.json():
                time.sleep(0.05)
                continue
            rollout = taken.json()[0]
            rid, aid = rollout["rollout_id"], rollout["attempt"]["attempt_id"]
            call = client.post(
                f"/proxy/rollout/{rid}/attempt/{aid}/mode/train/openai/v1/chat/completions",
                json={"messages": [{"role": "user", "content": f"question {rollout['input']}"}]},
            )
            call.raise_for_status()
            posted = client.post(
                f"/api/rollouts/{rid}/attempt/{aid}/events",
                json={"event_type": "reward", "data": {"value": 1.0, "source": "agent"}},
            )
            posted.raise_for_status()
            ended = client.post(f"/v1/agl/rollouts/{rid}/attempts/{aid}", json={"status": "succeeded"})
            ended.raise_for_status()
            done += 1


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--key", required=True)
    args = parser.parse_args()

    manager = AglRolloutManager(
        agl_base_url=args.url,
        agl_key=args.key,
        model="policy",
        step=1,
        train_rollout_n=2,
        poll_interval_seconds=0.1,
    )
    registered = manager.register_model(["127.0.0.1:8000"])
    assert [m.endpoint for m in registered] == ["http://127.0.0.1:8000/v1"], registered

    stop = threading.Event()
    worker = threading.Thread(target=runner, args=(args.url, args.key, 4, stop), daemon=True)
    worker.start()
    try:
        completed = manager.enqueue_and_wait_until_completed({"q": ["a", "b"]}, is_train=True)
    finally:
        stop.set()
        worker.join(timeout=10)

    failures = []
    if len(completed) != 4:
        failures.append(f"{len(completed)} completed rollouts, expected 4")
    for rollout in completed:
        triplets = rollout.triplets or []
        if rollout.rollout_state != "succeeded":
            failures.append(f"{rollout.rollout_id}: {rollout.rollout_state}")
        if len(triplets) != 1:
            failures.append(f"{rollout.rollout_id}: {len(triplets)} triplets")
            continue
        triplet = triplets[0]
        if not triplet.prompt.get("token_ids") or not triplet.response.get("token_ids"):
            failures.append(f"{rollout.rollout_id}: no token ids in {triplet}")
        if not triplet.response.get("log_probs"):
            failures.append(f"{rollout.rollout_id}: no log probs in {triplet}")
        if triplet.reward != 1.0 or rollout.final_reward != 1.0:
            failures.append(f"{rollout.rollout_id}: reward {triplet.reward} / {rollout.final_reward}")
    groups = {rollout.data_id for rollout in completed}
    if len(groups) != 2:
        failures.append(f"{len(groups)} samples, expected 2")
    # The manager deleted what it read: the gateway no longer shows them.
    left = httpx.get(
        f"{args.url}/api/rollouts",
        params={"state_in": ["queuing", "running", "succeeded", "failed"]},
        headers={"x-api-key": args.key},
    ).json()
    if left:
        failures.append(f"{len(left)} rollouts left after the manager deleted them")
    manager.delete_model()
    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    if not failures:
        print(f"ok: {len(completed)} rollouts, {sum(len(r.triplets or []) for r in completed)} triplets")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
