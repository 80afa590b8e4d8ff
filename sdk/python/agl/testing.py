"""Testing an agent in plain CPython, without agl-host or WebAssembly.

:class:`LocalHost` plays the host: resources from a dict, LLM replies from a function, and a
record of every call (logs, rewards, operations, requests). :func:`run` runs one attempt of a
rollout function the way the component does, exceptions included::

    from agl.testing import LocalHost, run
    import app

    host = LocalHost(prompts={"prompt": "Q: {question}"}, reply=lambda request: "19")
    outcome = run(app.rollout, {"question": "12+7?", "answer": "19"}, host)
    assert outcome.reward == 1.0
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from .agent import Outcome, run_attempt
from .errors import LlmError, PromptError
from .host import Level, Mode, PromptTemplate, Resource, RolloutContext
from .llm import ChatRequest, ChatResponse
from .template import format_template

__all__ = ["LocalHost", "run", "Operation"]

Reply = Callable[[ChatRequest], Union[str, ChatResponse]]


@dataclass
class Operation:
    """An operation span as :class:`LocalHost` saw it."""

    name: str
    ended: bool = False
    error: Optional[str] = None


@dataclass
class LocalHost:
    """A host in plain Python, for unit tests of agents.

    ``prompts`` become f-string prompt-template resources and ``resources`` adds any others;
    ``reply`` answers each chat request (a string, a :class:`~agl.ChatResponse`, or an
    :class:`~agl.LlmError` raised). Every call is recorded in the lists below.
    """

    prompts: Mapping[str, str] = field(default_factory=dict)
    resources: Mapping[str, Resource] = field(default_factory=dict)
    reply: Optional[Reply] = None
    requests: list[ChatRequest] = field(default_factory=list)
    logs: list[tuple[Level, str]] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    objects: list[Any] = field(default_factory=list)
    rewards: list[tuple[Optional[str], float]] = field(default_factory=list)
    operations: list[Operation] = field(default_factory=list)

    def chat(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        if self.reply is None:
            raise LlmError("LocalHost has no reply function")
        answer = self.reply(request)
        return answer if isinstance(answer, ChatResponse) else ChatResponse(content=str(answer), model="local")

    def emit_reward(self, value: float) -> None:
        self.rewards.append((None, value))

    def emit_named_reward(self, name: str, value: float) -> None:
        self.rewards.append((name, value))

    def resource(self, name: str) -> Optional[Resource]:
        if name in self.prompts:
            return PromptTemplate(self.prompts[name])
        return self.resources.get(name)

    def format_prompt(self, name: str, values: Sequence[tuple[str, str]]) -> str:
        found = self.resource(name)
        if not isinstance(found, PromptTemplate):
            raise PromptError(f"prompt `{name}`: no prompt template resource named `{name}`")
        try:
            return format_template(found.template, dict(values))
        except PromptError as err:
            raise PromptError(f"prompt `{name}`: {err}") from None

    def log(self, level: Level, message: str) -> None:
        self.logs.append((level, message))

    def message(self, text: str) -> None:
        self.messages.append(text)

    def object(self, json_text: str) -> None:
        self.objects.append(json.loads(json_text))

    def start_operation(self, name: str) -> int:
        self.operations.append(Operation(name))
        return len(self.operations)

    def end_operation(self, handle: int, error: Optional[str]) -> None:
        if 1 <= handle <= len(self.operations) and not self.operations[handle - 1].ended:
            self.operations[handle - 1].ended = True
            self.operations[handle - 1].error = error

    def logged(self, level: Optional[Level] = None) -> list[str]:
        """The logged messages (of ``level`` only, when given)."""
        return [text for lvl, text in self.logs if level is None or lvl == level]


def run(
    function: Callable[..., Any],
    task: Any,
    host: Optional[LocalHost] = None,
    *,
    attempt_number: int = 1,
    mode: Optional[Mode] = Mode.TRAIN,
    resources_id: Optional[str] = "local",
) -> Outcome:
    """Runs one attempt of ``function`` on ``task`` (a JSON value, or JSON text) against ``host``,
    as the component would; returns its :class:`~agl.agent.Outcome`."""
    task_json = task if isinstance(task, str) else json.dumps(task)
    context = RolloutContext(
        rollout_id="ro-local",
        attempt_id=f"at-local-{attempt_number}",
        attempt_number=attempt_number,
        mode=mode,
        resources_id=resources_id,
    )
    return run_attempt(function, host if host is not None else LocalHost(), context, task_json)
