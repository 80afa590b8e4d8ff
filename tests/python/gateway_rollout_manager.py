"""Agent-lightning 1.0's verl rollout manager builds its batch from agl-host's gateway API.

Usage: python gateway_rollout_manager.py --url http://127.0.0.1:PORT --key KEY
           --model-server HOST:PORT --samples JSON --workers PREFIX,PREFIX

Run by runtime/host/tests/cli/gateway_rollout_manager.rs in the venv `target/py/agl-1.0`
(`agentlightning==1.0.2` and numpy, see prepare_venv.py). The store at URL is `agl-host store
--token KEY --llm-proxy --llm-token-ids` before a scripted model that answers with token ids and
logprobs; two `agl-host runner` processes take its rollouts, one with the sandboxed Rust agent
`tests/guests/proxy-agent`, one with its Python twin `tests/guests/proxy-agent-py`, their worker
ids the `--workers` prefixes (`PREFIX`, or `PREFIX-N` for a runner process with several). Each agent calls the model over HTTP through the
proxy (its attempt's capability, the endpoint of the registered model's `proxy_llm` resource) and
returns its reward: 1 when the reply ends with the task's answer.

Agent-lightning's own `AglRolloutManager` (`agentlightning.verl.agl_rollout_manager`) registers
the model server at `--model-server` (`register_model`), enqueues one batch of the `--samples`
(`{"question", "answer"}` each, `train_rollout_n=2`: two rollouts per sample), polls until all
have ended and deletes them. Every `CompletedRollout` must have succeeded, with one triplet whose
prompt and response token ids and log probs are those the model gave for its question (the
sample's `prompt_token_ids`, `response_token_ids`, `logprobs`), the agent's reward on the triplet
and as the final reward, and the right sample group. Through the 0.3.0 routes (which keep deleted
rollouts): each rollout's latest attempt ran on a worker of one of the `--workers` prefixes, each
prefix ran some, and the LLM span's `agl.llm.proxy.upstream` (printed) names the server the proxy
forwarded to. The gateway must no longer show the deleted rollouts, and `delete_model` leaves no
model registered. Prints `ok: ...` and exits 0, or prints each failure and exits 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

import httpx
from agentlightning.verl.agl_rollout_manager import AglRolloutManager, CompletedRollout

UPSTREAM = "agl.llm.proxy.upstream"


def check_rollout(rollout: CompletedRollout, samples: dict[str, dict], failures: list[str]) -> None:
    """The manager's view of one rollout against what the model answered for its question."""
    name = rollout.rollout_id
    sample = samples.get((rollout.input or {}).get("question"))
    if sample is None:
        failures.append(f"{name}: input {rollout.input!r} is none of the samples")
        return
    if rollout.rollout_state != "succeeded":
        failures.append(f"{name}: {rollout.rollout_state} ({rollout.error_message})")
    triplets = rollout.triplets or []
    if len(triplets) != 1:
        failures.append(f"{name}: {len(triplets)} triplets, expected 1: {rollout.triplet_events}")
        return
    triplet = triplets[0]
    if triplet.prompt.get("token_ids") != sample["prompt_token_ids"]:
        failures.append(f"{name}: prompt token ids {triplet.prompt} != {sample['prompt_token_ids']}")
    if triplet.response.get("token_ids") != sample["response_token_ids"]:
        failures.append(f"{name}: response token ids {triplet.response} != {sample['response_token_ids']}")
    if triplet.response.get("log_probs") != sample["logprobs"]:
        failures.append(f"{name}: log probs {triplet.response.get('log_probs')} != {sample['logprobs']}")
    if triplet.reward != 1.0 or rollout.final_reward != 1.0:
        failures.append(f"{name}: reward {triplet.reward} on the triplet, final {rollout.final_reward}, expected 1.0")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--model-server", required=True, help="HOST:PORT of the model server to register")
    parser.add_argument("--samples", required=True, help="JSON list of {question, answer, prompt_token_ids, ...}")
    parser.add_argument("--workers", required=True, help="worker id prefixes of the runners, comma-separated")
    args = parser.parse_args()
    samples = {sample["question"]: sample for sample in json.loads(args.samples)}
    prefixes = args.workers.split(",")
    store = httpx.Client(base_url=args.url, headers={"Authorization": f"Bearer {args.key}"}, timeout=30.0)

    manager = AglRolloutManager(
        agl_base_url=args.url,
        agl_key=args.key,
        model="policy",
        step=1,
        train_rollout_n=2,
        rollout_timeout_seconds=120,
        poll_interval_seconds=0.2,
    )
    registered = manager.register_model([args.model_server])
    failures: list[str] = []
    if [m.endpoint for m in registered] != [f"http://{args.model_server}/v1"]:
        failures.append(f"registered {registered}")

    batch = {
        "question": [sample["question"] for sample in samples.values()],
        "answer": [sample["answer"] for sample in samples.values()],
    }
    completed = manager.enqueue_and_wait_until_completed(batch, is_train=True)

    if len(completed) != 2 * len(samples):
        failures.append(f"{len(completed)} completed rollouts, expected {2 * len(samples)}")
    for rollout in completed:
        check_rollout(rollout, samples, failures)
    groups = Counter(rollout.data_id for rollout in completed)
    if sorted(groups.values()) != [2] * len(samples):
        failures.append(f"sample groups {dict(groups)}, expected {len(samples)} of 2")

    # Who ran each rollout, and where the proxy sent its call: the 0.3.0 routes keep deleted rollouts.
    ran_by: Counter[str] = Counter()
    upstreams: Counter[str] = Counter()
    for rollout in completed:
        attempt = store.get(f"/v1/agl/rollouts/{rollout.rollout_id}/attempts/latest").json() or {}
        worker = attempt.get("worker_id") or ""
        prefix = next((p for p in prefixes if worker == p or worker.startswith(f"{p}-")), None)
        if prefix is None:
            failures.append(f"{rollout.rollout_id}: ran on worker {worker!r}, none of {prefixes}")
        else:
            ran_by[prefix] += 1
        spans = store.get("/v1/agl/spans", params={"rollout_id": rollout.rollout_id}).json()["items"]
        upstreams.update(s["attributes"][UPSTREAM] for s in spans if UPSTREAM in s.get("attributes", {}))
    for prefix in prefixes:
        if not ran_by[prefix]:
            failures.append(f"no rollout ran on the {prefix} runner: {dict(ran_by)}")
    if sum(upstreams.values()) != len(completed):
        failures.append(f"{sum(upstreams.values())} proxied LLM calls for {len(completed)} rollouts: {dict(upstreams)}")

    # The manager deleted what it read: the gateway no longer shows them.
    left = manager.client.get(
        "/api/rollouts", params={"state_in": ["queuing", "running", "succeeded", "failed"]}
    ).json()
    ours = {rollout.rollout_id for rollout in completed}
    if any(item["rollout_id"] in ours for item in left):
        failures.append(f"rollouts left after the manager deleted them: {left}")
    for rollout_id in sorted(ours)[:1]:
        status = manager.client.get(f"/api/rollouts/{rollout_id}").status_code
        if status != 404:
            failures.append(f"GET /api/rollouts/{rollout_id} after its deletion: {status}")
    manager.delete_model()
    models = manager.client.get("/api/models").json()
    if models:
        failures.append(f"models left after delete_model: {models}")

    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    if failures:
        return 1
    triplets = sum(len(r.triplets or []) for r in completed)
    print(f"ok: {len(completed)} rollouts, {triplets} triplets; ran by {dict(ran_by)}; upstreams {dict(upstreams)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
