"""What the SDK needs from the host: the :class:`Host` protocol, with plain-Python types.

Inside a component the host is agl-host, reached through the WIT imports (``agl._wit.WitHost``);
in a unit test it is :class:`agl.testing.LocalHost`. The core calls are methods of the protocol;
a capability in a module of its own (:mod:`agl._capability`) is reached through its backend,
:meth:`Host.backend`. Only ``agl._wit`` and the capabilities' bridges touch the generated
bindings, so the SDK runs in plain CPython.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Optional, Protocol, Sequence, Union

from .llm import ChatRequest, ChatResponse

__all__ = ["Host", "Level", "Mode", "RolloutContext", "PromptTemplate", "LlmEndpoint", "Resource"]


class Level(enum.Enum):
    """A log level."""

    TRACE = "trace"
    DEBUG = "debug"
    INFO = "info"
    WARN = "warn"
    ERROR = "error"


class Mode(enum.Enum):
    """The split a rollout belongs to."""

    TRAIN = "train"
    VAL = "val"
    TEST = "test"


@dataclass(frozen=True)
class RolloutContext:
    """Who is running: the rollout and attempt of this call."""

    rollout_id: str
    attempt_id: str
    #: 1 for the first attempt, 2 for the first retry, ...
    attempt_number: int
    mode: Optional[Mode] = None
    #: The version of the resources this attempt uses (e.g. "rs-1a2b3c4d5e6f").
    resources_id: Optional[str] = None


@dataclass(frozen=True)
class PromptTemplate:
    """A prompt template resource."""

    template: str
    #: "f-string", "jinja" or "poml".
    engine: str = "f-string"

    kind = "a prompt template"


@dataclass(frozen=True)
class LlmEndpoint:
    """An LLM endpoint resource (its API key is never shown to the agent)."""

    endpoint: str
    model: str
    sampling_parameters_json: str = "{}"
    #: True for a ``proxy_llm`` resource.
    proxy: bool = False

    @property
    def kind(self) -> str:
        """What kind of resource this is, in words."""
        return "a proxy LLM endpoint" if self.proxy else "an LLM endpoint"


Resource = Union[PromptTemplate, LlmEndpoint]


class Host(Protocol):
    """The calls an attempt makes to its host; each is recorded by agl-host as a span."""

    def chat(self, request: ChatRequest) -> ChatResponse:
        """Sends a chat request; raises an :class:`~agl.LlmError` subclass when refused or failed."""
        ...

    def emit_reward(self, value: float) -> None:
        """Records the primary reward."""
        ...

    def emit_named_reward(self, name: str, value: float) -> None:
        """Records a named reward."""
        ...

    def give_feedback(self, text: str) -> None:
        """Appends textual feedback on the attempt (recorded on its final reward span)."""
        ...

    def resource(self, name: str) -> Optional[Resource]:
        """The resource called ``name``, if any."""
        ...

    def format_prompt(self, name: str, values: Sequence[tuple[str, str]]) -> str:
        """Fills the template resource ``name``; raises :class:`~agl.PromptError` on failure."""
        ...

    def log(self, level: Level, message: str) -> None:
        """A log line at ``level``."""
        ...

    def message(self, text: str) -> None:
        """A free-form message span."""
        ...

    def object(self, json_text: str) -> None:
        """A structured object span (JSON text)."""
        ...

    def start_operation(self, name: str) -> int:
        """Opens an operation span; returns its handle."""
        ...

    def end_operation(self, handle: int, error: Optional[str]) -> None:
        """Closes an operation span, failed when ``error`` is given."""
        ...

    def backend(self, name: str) -> Any:
        """The backend of the capability called ``name`` (:mod:`agl._capability`): its bridge to
        the WIT imports, or its fake in a test."""
        ...
