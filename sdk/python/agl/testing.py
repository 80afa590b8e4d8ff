"""Testing an agent in plain CPython, without agl-host or WebAssembly.

:class:`LocalHost` plays the host: resources from a dict, LLM replies from a function, a record of
every call (logs, rewards, feedback, operations), and each capability's fake (:mod:`agl._capability`):
``LocalHost(http=...)`` answers HTTP requests with a function, or sends them for real to the hosts
you grant (:func:`urllib_http`). :func:`run` runs one attempt of a rollout function the way the
component does, exceptions included::

    from agl.testing import LocalHost, run
    import app

    host = LocalHost(prompts={"prompt": "Q: {question}"}, reply=lambda request: "19")
    outcome = run(app.rollout, {"question": "12+7?", "answer": "19"}, host)
    assert outcome.reward == 1.0
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence, Union

from . import _capability
from .agent import Outcome, run_attempt
from .errors import LlmError, PromptError
from .host import Level, Mode, PromptTemplate, Resource, RolloutContext
from .llm import ChatRequest, ChatResponse
from .template import format_template

if TYPE_CHECKING:  # what capability modules add, for type checkers (see __getattr__)
    from .http import HttpAnswer, urllib_http

__all__ = ["LocalHost", "run", "Operation"]

Reply = Callable[[ChatRequest], Union[str, ChatResponse]]


@dataclass
class Operation:
    """An operation span as :class:`LocalHost` saw it."""

    name: str
    ended: bool = False
    error: Optional[str] = None


@dataclass(init=False)
class LocalHost:
    """A host in plain Python, for unit tests of agents.

    ``prompts`` become f-string prompt-template resources and ``resources`` adds any others;
    ``reply`` answers each chat request (a string, a :class:`~agl.ChatResponse`, or an
    :class:`~agl.LlmError` raised). Every call is recorded in the lists below.

    Each capability has a fake, given its option by name: ``LocalHost(http=answer)`` answers each
    HTTP request (see ``agl.http.HttpAnswer``, or :func:`urllib_http` for real requests); without
    it every request is denied, as the sandbox denies every host it was not told to grant.
    ``host.http`` is that fake, and ``host.http_requests`` its record of requests.
    """

    prompts: Mapping[str, str]
    resources: Mapping[str, Resource]
    reply: Optional[Reply]
    requests: list[ChatRequest]
    logs: list[tuple[Level, str]]
    messages: list[str]
    objects: list[Any]
    rewards: list[tuple[Optional[str], float]]
    feedback: list[str]
    operations: list[Operation]

    def __init__(
        self,
        prompts: Optional[Mapping[str, str]] = None,
        resources: Optional[Mapping[str, Resource]] = None,
        reply: Optional[Reply] = None,
        **options: Any,
    ) -> None:
        self.prompts = {} if prompts is None else prompts
        self.resources = {} if resources is None else resources
        self.reply = reply
        self.requests = []
        self.logs = []
        self.messages = []
        self.objects = []
        self.rewards = []
        self.feedback = []
        self.operations = []
        found = _capability.registered()
        unknown = sorted(set(options) - {c.name for c in found})
        if unknown:
            names = ", ".join(c.name for c in found) or "none"
            raise TypeError(f"LocalHost got unknown option(s) {', '.join(unknown)} (capabilities: {names})")
        self._fakes = {c.name: c.local(options.get(c.name)) for c in found}

    def backend(self, name: str) -> Any:
        """The fake of the capability called ``name``."""
        fake = self._fakes.get(name)
        if fake is None:  # a capability registered after this host was made
            fake = self._fakes[name] = _capability.find(name).local(None)
        return fake

    def __getattr__(self, attribute: str) -> Any:
        # Only for names not found otherwise: `host.<capability>` is its fake, and
        # `host.<capability>_<name>` the fake's `<name>` (`host.http_requests`).
        if not attribute.startswith("_"):
            for found in _capability.registered():
                if attribute == found.name:
                    return self.backend(found.name)
                if attribute.startswith(found.name + "_"):
                    fake = self.backend(found.name)
                    rest = attribute[len(found.name) + 1 :]
                    if not rest.startswith("_") and hasattr(fake, rest):
                        return getattr(fake, rest)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {attribute!r}")

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

    def give_feedback(self, text: str) -> None:
        self.feedback.append(text)

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


def __getattr__(name: str) -> Any:
    # What capability modules add to agl.testing (their `testing=` names): `urllib_http`, ...
    for found in _capability.registered():
        if name in found.testing:
            return getattr(sys.modules[found.module], name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | {name for found in _capability.registered() for name in found.testing})
