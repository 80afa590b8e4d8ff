"""Reads token-exact samples of finished rollouts from the store.

One function picks the route: `read_samples = read_samples_from_spans` today (the store's HTTP
API: each attempt's LLM span carries `prompt_token_ids`, `response_token_ids`, `logprobs.content`,
its completion text and model; the reward is the attempt's final reward). When
`agl-host export --format tokens` lands, `read_samples_from_tokens_export` is the one line to
switch to; both return the same `Sample`s."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import urllib.parse
import urllib.request
from typing import Optional


@dataclasses.dataclass
class Sample:
    rollout_id: str
    attempt_id: str
    worker_id: Optional[str]
    prompt_ids: list[int]
    response_ids: list[int]
    logprobs: list[float]  # the sampler's, one per response token
    tokens: list[str]  # the sampler's token strings (from logprobs.content)
    text: str  # the completion text the proxy recorded
    model: str  # the model (and so the weights version) that answered
    reward: float


class Store:
    def __init__(self, url: str, token: str):
        self.url, self.token = url.rstrip("/"), token

    def call(self, method: str, path: str, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=300) as resp:
            return json.loads(resp.read() or b"null")


def _ids(value) -> list[int]:
    if isinstance(value, str):
        value = json.loads(value)
    return [int(v) for v in value or []]


def _llm_span(spans: list[dict]) -> Optional[dict]:
    for span in spans:
        attrs = span.get("attributes") or {}
        if "response_token_ids" in attrs or "prompt_token_ids" in attrs:
            return span
    return None


def _reward(spans: list[dict]) -> Optional[float]:
    """The attempt's final reward: the primary value of its last reward annotation span
    (`agentlightning.reward.0.value`, as Agent-lightning and `agl-host export` read it)."""
    value = None
    for span in spans:
        attrs = span.get("attributes") or {}
        if attrs.get("agentlightning.reward.0.value") is not None:
            value = float(attrs["agentlightning.reward.0.value"])
    return value


def read_samples_from_spans(store: Store, rollouts: list[dict]) -> list[Sample]:
    samples = []
    for rollout in rollouts:
        attempt = store.call("GET", f"/v1/agl/rollouts/{rollout['rollout_id']}/attempts/latest")
        query = urllib.parse.urlencode({"rollout_id": rollout["rollout_id"], "attempt_id": attempt["attempt_id"]})
        spans = store.call("GET", f"/v1/agl/spans?{query}")["items"]
        llm = _llm_span(spans)
        reward = _reward(spans)
        if llm is None or reward is None or attempt.get("status") != "succeeded":
            continue
        attrs = llm["attributes"]
        content = json.loads(attrs.get("logprobs.content") or "[]")
        samples.append(Sample(
            rollout_id=rollout["rollout_id"], attempt_id=attempt["attempt_id"], worker_id=attempt.get("worker_id"),
            prompt_ids=_ids(attrs.get("prompt_token_ids")), response_ids=_ids(attrs.get("response_token_ids")),
            logprobs=[float(c["logprob"]) for c in content], tokens=[c.get("token") for c in content],
            text=attrs.get("gen_ai.completion.0.content") or "",
            model=attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model") or "",
            reward=reward,
        ))
    return samples


def read_samples_from_tokens_export(agl_host: str, store: Store, rollouts: list[dict]) -> list[Sample]:
    """`agl-host export --store URL --format tokens` (being built): one line per LLM call with its
    token ids, logprobs and final reward. Field names follow `--format triplets` plus `logprobs`;
    adjust here once the format is documented."""
    out = subprocess.run([agl_host, "export", "--store", store.url, "--token", store.token, "--format", "tokens"],
                         check=True, capture_output=True, text=True).stdout
    wanted = {r["rollout_id"] for r in rollouts}
    samples = []
    for line in out.splitlines():
        row = json.loads(line)
        if row["rollout_id"] not in wanted or row.get("final_reward") is None:
            continue
        samples.append(Sample(row["rollout_id"], row["attempt_id"], None, row["prompt_token_ids"],
                              row["response_token_ids"], [float(x) for x in row.get("logprobs") or []],
                              [], row.get("response") or "", row.get("model") or "", float(row["final_reward"])))
    return samples


def read_samples(store: Store, rollouts: list[dict]) -> list[Sample]:
    """The one switch: spans today, `--format tokens` once it lands."""
    return read_samples_from_spans(store, rollouts)
