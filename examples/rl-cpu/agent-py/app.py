"""The RL example's Python agent: one chat call through agl-host's LLM proxy (the `proxy_llm`
resource `llm`, whose endpoint is this attempt's own capability), graded by the first word of the
reply. The proxy records the call as an LLM span with the policy server's token ids and logprobs;
the trainer learns from those."""

from __future__ import annotations

import agl


@agl.rollout
def rollout(task: dict, ctx: agl.Ctx) -> float:
    llm = ctx.resource("llm")
    if llm is None or not getattr(llm, "proxy", False):
        raise ValueError("the resources have no proxy_llm resource named `llm`")
    body = {"model": llm.model, "max_tokens": 2,
            "messages": [{"role": "user", "content": task["question"]}]}
    answer = ctx.http().post_json(llm.endpoint.rstrip("/") + "/chat/completions", body).error_for_status().json()
    text = answer["choices"][0]["message"]["content"] or ""
    words = text.split()
    return 1.0 if words and words[0] == task["answer"] else 0.0
