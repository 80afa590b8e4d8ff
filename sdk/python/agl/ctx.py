"""The context of one attempt (:class:`Ctx`) and prompt templates (:class:`Prompt`).

Everything an agent reaches goes through ``ctx``: who is running, the LLM, rewards, the rollout's
resources, logs and the agent's own operation spans, and the capabilities of modules of their own
(``ctx.http()``), whose accessors those modules install (:mod:`agl._capability`). Every call is a
host call, which agl-host records as a span of the attempt: agents write no tracing code.
"""

from __future__ import annotations

import contextlib
import json
import math
from typing import TYPE_CHECKING, Any, Iterator, Optional, Union, overload

from .errors import PromptError, ResourceError
from .host import Host, Level, Mode, PromptTemplate, Resource, RolloutContext
from .llm import Llm
from .template import format_template

if TYPE_CHECKING:
    from .http import Http

__all__ = ["Ctx", "Prompt"]


class Prompt:
    """A prompt template: from the rollout's resources (:meth:`Ctx.prompt`) or inline."""

    def __init__(self, template: str, *, engine: str = "f-string", resource: Optional[str] = None,
                 host: Optional[Host] = None) -> None:
        self.template = template
        self.engine = engine
        #: The resource name; ``None`` for an inline template.
        self.resource_name = resource
        self._host = host

    @classmethod
    def inline(cls, template: str) -> "Prompt":
        """A template the agent carries itself, formatted in the agent (f-string rules)."""
        return cls(template)

    def format(self, **values: Any) -> str:
        """Fills the placeholders with ``values`` (each converted with ``str``).

        A resource template is formatted by the host (``resources.format-prompt``, so the trace
        shows the prompt used); an inline one here, by the same rules. Raises
        :class:`~agl.PromptError` when a placeholder has no value; unused values are fine.
        """
        if self.resource_name is not None and self._host is not None:
            pairs = [(name, str(value)) for name, value in values.items()]
            return self._host.format_prompt(self.resource_name, pairs)
        try:
            return format_template(self.template, values)
        except PromptError as err:
            shown = self.template[:60] + ("..." if len(self.template) > 60 else "")
            raise PromptError(f"prompt template {json.dumps(shown)}: {err}") from None

    def __repr__(self) -> str:
        source = f"resource {self.resource_name!r}" if self.resource_name else "inline"
        return f"Prompt({source}, engine={self.engine!r}, template={self.template!r})"


class Ctx:
    """What one attempt of a rollout can reach. Handed to the rollout function."""

    def __init__(self, host: Host, context: RolloutContext) -> None:
        self._host = host
        self._context = context
        self._llm: Optional[Llm] = None

    @property
    def llm(self) -> Llm:
        """The host's LLM: ``ctx.llm.ask(prompt)``, ``ctx.llm.chat(messages, tools=...)``. Made on
        first use, so that a rollout which never asks pays nothing for it."""
        if self._llm is None:
            self._llm = Llm(self._host)
        return self._llm

    if TYPE_CHECKING:
        # Stubs for type checkers only: each capability module installs its accessor when it is
        # imported (agl._capability).

        def http(self) -> Http:
            """The agent's HTTP client: ``ctx.http().get(url)``, ``.post_json(url, obj)``,
            ``.send(agl.HttpRequest(...))``. Only the hosts the sandbox grants are reached; any
            other request raises :class:`~agl.HttpDenied`, saying how to grant it."""
            ...

    # --- who is running -------------------------------------------------------------------

    @property
    def rollout_id(self) -> str:
        """The rollout this attempt belongs to."""
        return self._context.rollout_id

    @property
    def attempt_id(self) -> str:
        """This attempt's id."""
        return self._context.attempt_id

    @property
    def attempt_number(self) -> int:
        """1 for the first attempt, 2 for the first retry, ..."""
        return self._context.attempt_number

    @property
    def mode(self) -> Optional[Mode]:
        """The split of the rollout (train, val, test), when the algorithm set one."""
        mode = self._context.mode
        # By name: the context is a RolloutContext, or in a component the WIT's own record, whose
        # mode is the bindings' enum with the same names.
        return None if mode is None else Mode[mode.name]

    @property
    def resources_id(self) -> Optional[str]:
        """The version of the resources this attempt uses."""
        return self._context.resources_id

    # --- rewards --------------------------------------------------------------------------

    @overload
    def reward(self, value: float, /) -> None: ...

    @overload
    def reward(self, name: str, value: float, /) -> None: ...

    def reward(self, *args: Union[str, float]) -> None:
        """``ctx.reward(value)`` records the primary reward (a later one replaces an earlier one
        as final); ``ctx.reward(name, value)`` one of several named rewards. A reward must be a
        finite number within ±1e15."""
        if len(args) == 1 and not isinstance(args[0], str):
            self._host.emit_reward(_reward_value(args[0]))
        elif len(args) == 2 and isinstance(args[0], str):
            self._host.emit_named_reward(args[0], _reward_value(args[1]))
        else:
            raise TypeError("use ctx.reward(value) or ctx.reward(name, value)")

    def feedback(self, text: str) -> None:
        """Textual feedback on this attempt beside its reward: what went wrong on this task
        (``"expected 27, got 2.7: units"``, a compiler error, a failed check), for algorithms
        that learn from text. Several calls append, in order; the host keeps up to 16 KiB in all
        (the rest is dropped and counted, never failing the attempt) and records them on the
        attempt's final reward span."""
        if not isinstance(text, str):
            raise TypeError(f"feedback must be a str, not {type(text).__name__}")
        self._host.give_feedback(text)

    # --- resources ------------------------------------------------------------------------

    def resource(self, name: str) -> Optional[Resource]:
        """The resource called ``name`` in this attempt's resources, if there is one."""
        return self._host.resource(name)

    def prompt(self, name: str, default: Optional[str] = None) -> Prompt:
        """The prompt template resource called ``name``.

        Without it, ``default`` (an inline f-string template) when given, else
        :class:`~agl.ResourceError`; a resource of another kind is always an error.
        """
        resource = self._host.resource(name)
        if resource is None:
            if default is not None:
                return Prompt.inline(default)
            version = f"version {self.resources_id}" if self.resources_id else "the rollout has no resources"
            raise ResourceError(f"no resource named `{name}` in this rollout's resources ({version})")
        if not isinstance(resource, PromptTemplate):
            raise ResourceError(f"resource `{name}` is {resource.kind}, not a prompt template")
        return Prompt(resource.template, engine=resource.engine, resource=name, host=self._host)

    # --- logs, messages, objects, operations ----------------------------------------------

    def log(self, level: Union[Level, str], message: str) -> None:
        """Logs ``message`` at ``level`` (a :class:`~agl.Level` or its name)."""
        self._host.log(Level(level) if isinstance(level, str) else level, str(message))

    def trace(self, message: str) -> None:
        """Logs at trace level."""
        self.log(Level.TRACE, message)

    def debug(self, message: str) -> None:
        """Logs at debug level."""
        self.log(Level.DEBUG, message)

    def info(self, message: str) -> None:
        """Logs at info level."""
        self.log(Level.INFO, message)

    def warn(self, message: str) -> None:
        """Logs at warn level."""
        self.log(Level.WARN, message)

    def error(self, message: str) -> None:
        """Logs at error level (the attempt goes on; raise to fail it)."""
        self.log(Level.ERROR, message)

    def message(self, text: str) -> None:
        """Records a free-form message (an ``agentlightning.message`` span)."""
        self._host.message(str(text))

    def object(self, value: Any) -> None:
        """Records ``value`` as a structured object (an ``agentlightning.object`` span).

        Raises :class:`TypeError` when ``value`` cannot be written as JSON.
        """
        self._host.object(json.dumps(value, ensure_ascii=False, allow_nan=False))

    @contextlib.contextmanager
    def operation(self, name: str) -> Iterator[None]:
        """An operation span around a block: host calls in the block become its children, and an
        exception leaving the block marks the span failed with its message (then goes on)::

            with ctx.operation("retrieve"):
                docs = search(task["question"])
        """
        handle = self._host.start_operation(name)
        try:
            yield
        except BaseException as exc:
            self._host.end_operation(handle, describe(exc))
            raise
        self._host.end_operation(handle, None)


def _reward_value(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"a reward must be a number, not {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number) or abs(number) > 1e15:
        raise ValueError(f"a reward must be a finite number within ±1e15, not {number}")
    return number


def describe(exc: BaseException) -> str:
    """An exception as a failure reason: the SDK's errors by their message, others as
    ``TypeName: message``."""
    from .errors import AglError

    if isinstance(exc, AglError):
        return str(exc)
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
