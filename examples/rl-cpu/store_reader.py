"""Reads token-exact samples of finished rollouts from the store's tokens export.

`GET /v1/agl/export/tokens` on `agl-host store` (the rows of `agl-host export --format tokens`,
docs/src/reference/export-formats.md#tokens): per attempt, its LLM calls as `prompt_token_ids`,
`response_token_ids`, `loss_mask`, `logprobs`, the attempt's `reward` / `rewards`, the `model`
that answered and the `resources_id` the rollout ran with. The trainer asks for one resources
version and mode at a time (`resources_id=...&mode=train`): exactly the rollouts of one step."""

from __future__ import annotations

import dataclasses
import json
import urllib.parse
import urllib.request
from typing import Optional


@dataclasses.dataclass
class Sample:
    rollout_id: str
    attempt_id: str
    prompt_ids: list[int]
    response_ids: list[int]
    loss_mask: list[int]  # one per prompt + response token: 1 where the model wrote it
    logprobs: list[float]  # the sampler's, one per response token
    model: str  # the model (and so the weights version) that answered
    resources_id: str
    reward: Optional[float]


class Store:
    def __init__(self, url: str, token: str):
        self.url, self.token = url.rstrip("/"), token

    def request(self, method: str, path: str, body=None) -> bytes:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=300) as resp:
            return resp.read()

    def call(self, method: str, path: str, body=None):
        return json.loads(self.request(method, path, body) or b"null")


def export_tokens(store: Store, **filters) -> list[dict]:
    """The rows of `GET /v1/agl/export/tokens?FILTERS` (status, mode, resources_id, min_reward, ...)."""
    query = urllib.parse.urlencode({k: v for k, v in filters.items() if v is not None})
    text = store.request("GET", f"/v1/agl/export/tokens?{query}").decode()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def read_samples(store: Store, resources_id: str, mode: str, rollout_ids: list[str]) -> dict[str, Sample]:
    """The sample of each of these rollouts (by rollout id) that ran with `resources_id` in `mode`;
    a rollout whose attempt has no row with token ids (it failed before its LLM call) is absent.
    These agents make one LLM call per attempt, so one row each; a multi-turn agent's merged
    rows would carry their observation tokens masked out in `loss_mask`."""
    wanted = set(rollout_ids)
    samples: dict[str, Sample] = {}
    for row in export_tokens(store, resources_id=resources_id, mode=mode):
        if row["rollout_id"] not in wanted or row.get("missing_token_ids"):
            continue
        if row["rollout_id"] in samples:
            raise ValueError(f"rollout {row['rollout_id']}: more than one token row (one LLM call expected)")
        samples[row["rollout_id"]] = Sample(
            rollout_id=row["rollout_id"], attempt_id=row["attempt_id"],
            prompt_ids=[int(i) for i in row["prompt_token_ids"]],
            response_ids=[int(i) for i in row["response_token_ids"]],
            loss_mask=[int(m) for m in row["loss_mask"]],
            logprobs=[float(x) for x in row["logprobs"]] if row.get("logprobs") is not None else [],
            model=row.get("model") or "", resources_id=row.get("resources_id") or "",
            reward=None if row.get("reward") is None else float(row["reward"]),
        )
    return samples


def worker_ids(store: Store, rollout_ids: list[str]) -> dict[str, Optional[str]]:
    """The worker that ran each rollout's latest attempt (`POST /v1/agl/rollouts/search`, whose
    items carry their latest attempt): which runner, so which agent, made the sample."""
    page = store.call("POST", "/v1/agl/rollouts/search", {"rollout_id_in": rollout_ids, "limit": len(rollout_ids)})
    return {r["rollout_id"]: (r.get("attempt") or {}).get("worker_id") for r in page["items"]}
