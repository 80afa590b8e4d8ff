"""Agent-lightning 0.3.0 reads the LLM spans agl-host's LLM proxy records.

Usage: python proxy_triplets.py --url http://127.0.0.1:PORT

The store at URL runs `agl-host store --llm-proxy` before a scripted or real model. A rollout is
started with Agent-lightning's own `LightningStoreClient`; its `ProxyLLM` resource gives the
per-attempt base URL (`get_base_url`), which the `openai` client calls twice — once plain, once
streamed. The spans the proxy recorded are read back with the same client and turned into
triplets by `TracerTraceToTriplet`: one per call, each with the prompt and the completion.
Exits 1 when a check fails (run by runtime/host/tests/cli/llm_proxy.rs). Needs agentlightning==0.3.0
(its venv has `openai`) and LITELLM_LOCAL_MODEL_COST_MAP=True so that importing it stays offline.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from agentlightning.adapter.triplet import TracerTraceToTriplet
from agentlightning.store.client_server import LightningStoreClient
from agentlightning.types import ProxyLLM
from openai import AsyncOpenAI


async def run(url: str) -> None:
    client = LightningStoreClient(url, retry_delays=(), health_retry_delays=(), request_timeout=20.0)
    try:
        started = await client.start_rollout(input={"question": "2+2"}, mode="train")
        rollout_id, attempt_id = started.rollout_id, started.attempt.attempt_id
        resource = ProxyLLM(endpoint=f"{url}/v1", model="m")
        base_url = resource.get_base_url(rollout_id, attempt_id)
        assert base_url == f"{url}/rollout/{rollout_id}/attempt/{attempt_id}/v1", base_url

        llm = AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0)
        plain = await llm.chat.completions.create(model="m", messages=[{"role": "user", "content": "say four"}])
        assert plain.choices[0].message.content == "four", plain
        pieces = []
        stream = await llm.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "say five and six"}], stream=True
        )
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                pieces.append(chunk.choices[0].delta.content)
        assert "".join(pieces) == "five and six", pieces
        await llm.close()

        spans = (await client.query_spans(rollout_id, attempt_id)).items
        assert [span.name for span in spans] == ["openai.chat.completion"] * 2, [span.name for span in spans]
        triplets = TracerTraceToTriplet().adapt(spans)
        assert len(triplets) == 2, triplets
        for triplet, asked, answered in zip(triplets, ["say four", "say five and six"], ["four", "five and six"]):
            assert asked in str(triplet.prompt["raw_content"]), triplet.prompt
            assert answered in str(triplet.response["raw_content"]), triplet.response
        print(f"PASS {len(triplets)} triplets from the proxy's spans: {[t.response['raw_content'] for t in triplets]}")
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
