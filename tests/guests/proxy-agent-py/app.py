"""proxy-agent-py: the Python twin of tests/guests/proxy-agent. It calls the LLM through agl-host's
LLM proxy over HTTP (`ctx.http()`), as an agent with an OpenAI client would, instead of through the
host's `llm` interface. The `proxy_llm` resource `llm` gives the proxy's endpoint and model (a
model server registered through Agent-lightning 1.0's `/api/models` is that resource too); the
runner has pointed it at this attempt's capability. The per-attempt base URL is built as Agent-lightning's `ProxyLLM.get_base_url` builds it, so the proxy
records the call as an LLM span of this attempt. The task: {"question": "...", "answer": "..."};
the reward is 1 when the model's text ends with `answer`."""

from __future__ import annotations

import agl

def proxy_llm(ctx: agl.Ctx) -> agl.LlmEndpoint:
    """The `proxy_llm` resource `llm`."""
    resource = ctx.resource("llm")
    if isinstance(resource, agl.LlmEndpoint) and resource.proxy:
        return resource
    raise agl.AglError("the resources have no proxy_llm resource named `llm`")


def base_url(endpoint: str, rollout_id: str, attempt_id: str) -> str:
    """`ProxyLLM.get_base_url`: `/rollout/{rollout}/attempt/{attempt}` before the endpoint's `/v1`."""
    prefix = endpoint.rstrip("/")
    if prefix.endswith("/v1"):
        return f"{prefix[:-3]}/rollout/{rollout_id}/attempt/{attempt_id}/v1"
    return f"{prefix}/rollout/{rollout_id}/attempt/{attempt_id}"


@agl.rollout
def rollout(task: dict, ctx: agl.Ctx) -> float:
    llm = proxy_llm(ctx)
    url = base_url(llm.endpoint, ctx.rollout_id, ctx.attempt_id) + "/chat/completions"
    body = {"model": llm.model, "messages": [{"role": "user", "content": task["question"]}]}
    ctx.info(f"capability {llm.endpoint}")
    answer = ctx.http().post_json(url, body).error_for_status().json()
    text = answer["choices"][0]["message"]["content"] or ""
    ctx.info(f"the proxy answered: {text}")
    return 1.0 if text.strip().endswith(task["answer"]) else 0.0
