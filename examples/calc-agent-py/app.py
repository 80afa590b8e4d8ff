"""Example agent (Python, with a PyPI dependency): solves a word problem with the model and a
calculator tool. The model answers with tool calls (`calculate` with an arithmetic expression);
the agent evaluates each with `calculator.py` (a pyparsing grammar: the dependency bundled into
the component), sends the results back, and grades the model's final answer by its last number."""

from __future__ import annotations

import re
from typing import Any

import agl
from calculator import CalculatorError, calculate, show

#: Used when the rollout's resources have no `prompt` template.
FALLBACK_PROMPT = "Use the calculate tool for the arithmetic, then give the result.\nProblem: {question}"

#: The tool offered to the model.
CALCULATE = agl.Tool(
    name="calculate",
    description="Evaluates an arithmetic expression: numbers, + - * /, parentheses.",
    parameters_json='{"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}',
)

#: Model turns allowed before the agent gives up.
MAX_TURNS = 4


def last_number(text: str) -> float | None:
    """The last number in ``text`` ("1,200" is 1200), if any."""
    found = re.findall(r"-?\d[\d,]*(?:\.\d+)?", text)
    return float(found[-1].replace(",", "")) if found else None


def run_tool(call: agl.ToolCall) -> str:
    """One tool call's answer, as text; a bad call is answered with its error, not raised."""
    if call.name != "calculate":
        return f"error: unknown tool {call.name!r}"
    try:
        arguments: Any = call.arguments
        return show(calculate(str(arguments["expression"])))
    except (CalculatorError, ValueError, KeyError, TypeError) as err:
        return f"error: {err}"


@agl.rollout
def rollout(task: dict, ctx: agl.Ctx) -> float:
    """One attempt: converse with the model, answering its tool calls, and grade the final reply."""
    prompt = ctx.prompt("prompt", FALLBACK_PROMPT).format(question=task["question"])
    messages: list[agl.Message] = [agl.Message.user(prompt)]
    for _ in range(MAX_TURNS):
        reply = ctx.llm.chat(messages, tools=[CALCULATE])
        if not reply.wants_tools:
            break
        messages.append(reply.message)
        with ctx.operation("tools"):
            for call in reply.tool_calls:
                result = run_tool(call)
                ctx.info(f"{call.name}({call.arguments_json}) = {result}")
                messages.append(agl.Message.tool(call.id, result))
    else:
        ctx.warn(f"no final answer after {MAX_TURNS} turns")
        return 0.0
    answer = last_number(reply.content)
    ctx.object({"final": reply.content, "extracted": answer, "expected": task["answer"], "turns": len(messages)})
    return 1.0 if answer is not None and abs(answer - float(task["answer"])) < 1e-9 else 0.0
