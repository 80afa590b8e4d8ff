"""Example agent (Python): solves a grade-school word problem with one LLM call and grades itself
by the last number of the reply. The prompt is the tunable `prompt` resource (a template with a
`{question}` placeholder), so a prompt-optimization algorithm can improve it. The same agent as
the Rust `examples/math-agent`: same prompt use, log and grading, so the same scripted LLM rules
give the same results."""

from __future__ import annotations

import agl
from grading import last_number, same_number, shown

#: Used when the rollout's resources have no `prompt` template.
FALLBACK_PROMPT = "Solve the problem and end with the number.\nProblem: {question}"


@agl.rollout
def rollout(task: dict, ctx: agl.Ctx) -> float:
    """One attempt: ask the model, grade its last number against `task["answer"]`."""
    # The tunable prompt, filled by the host (which records which version was used).
    prompt = ctx.prompt("prompt", FALLBACK_PROMPT).format(question=task["question"])
    reply = ctx.llm.ask(prompt)

    # Exact match of the final number: "... so she has 27 left." -> 27.
    extracted = last_number(reply)
    correct = extracted is not None and same_number(extracted, task["answer"])
    ctx.info(f"extracted answer: {shown(extracted)} (expected {task['answer']})")
    if not correct:
        # Textual feedback beside the reward, for algorithms that learn from text: what went
        # wrong on this task. The reward stays 0.
        ctx.feedback(f"expected {task['answer']}, got {shown(extracted)}")

    # The final reward; an algorithm reads it from the rollout.
    return 1.0 if correct else 0.0
