"""Chat completions through the host: messages, tools, replies and the :class:`Llm` handle.

The host holds the keys, picks the backend, enforces the attempt's budget and records every call
as a span; the agent only describes the conversation. Messages may be given as :class:`Message`
objects or as OpenAI-style dicts (``{"role": "user", "content": "..."}``, with ``tool_calls`` and
``tool_call_id`` where they apply); tools as :class:`Tool` objects or dicts with ``name``,
``description`` and ``parameters`` (a JSON schema, as a dict or as JSON text).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional, Sequence, Union

from .errors import InvalidRequest

if TYPE_CHECKING:
    from .host import Host

__all__ = [
    "ROLES",
    "Message",
    "Tool",
    "ToolCall",
    "Usage",
    "ChatRequest",
    "ChatResponse",
    "Llm",
    "MessageLike",
    "ToolLike",
]

#: The roles a message may have.
ROLES = ("system", "user", "assistant", "tool")


@dataclass
class ToolCall:
    """One tool call the model made: its id, the tool's name and its arguments both ways, as in
    every SDK: ``arguments_json`` is the JSON text exactly as the model wrote it, ``arguments`` is
    that text parsed (raising :class:`ValueError` when read if the model wrote invalid JSON)."""

    id: str
    name: str
    arguments_json: str

    @property
    def arguments(self) -> Any:
        """The arguments, parsed. Raises :class:`ValueError` when the model wrote invalid JSON."""
        return json.loads(self.arguments_json)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ToolCall":
        """A tool call from ``{"id", "name", "arguments"}`` or OpenAI's
        ``{"id", "type": "function", "function": {"name", "arguments"}}``."""
        source = data.get("function", data)
        arguments = source.get("arguments", source.get("arguments_json", "{}"))
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        return cls(id=str(data.get("id", "")), name=str(source.get("name", "")), arguments_json=arguments)


@dataclass
class Message:
    """One message of a conversation.

    ``role`` is ``"system"``, ``"user"``, ``"assistant"`` or ``"tool"``. An assistant message that
    called tools carries its ``tool_calls``; a tool's answer is a ``"tool"`` message whose
    ``tool_call_id`` names the call it answers.
    """

    role: str
    content: str
    tool_call_id: Optional[str] = None
    tool_calls: list[ToolCall] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise InvalidRequest(f"unknown message role {self.role!r} (expected one of {', '.join(ROLES)})")

    @classmethod
    def system(cls, content: str) -> "Message":
        """A system message."""
        return cls("system", content)

    @classmethod
    def user(cls, content: str) -> "Message":
        """A user message."""
        return cls("user", content)

    @classmethod
    def assistant(cls, content: str, tool_calls: Sequence[ToolCall] = ()) -> "Message":
        """An assistant message (an earlier model turn), with the tool calls it made."""
        return cls("assistant", content, tool_calls=list(tool_calls))

    @classmethod
    def tool(cls, tool_call_id: str, content: str) -> "Message":
        """A tool's answer to the tool call ``tool_call_id``."""
        return cls("tool", content, tool_call_id=tool_call_id)

    @classmethod
    def coerce(cls, value: "MessageLike") -> "Message":
        """A :class:`Message` from a message or an OpenAI-style dict."""
        if isinstance(value, Message):
            return value
        if not isinstance(value, Mapping):
            raise InvalidRequest(f"a message must be an agl.Message or a dict, not {type(value).__name__}")
        content = value.get("content")
        calls = [c if isinstance(c, ToolCall) else ToolCall.from_dict(c) for c in value.get("tool_calls") or ()]
        return cls(
            role=str(value.get("role", "")),
            content="" if content is None else str(content),
            tool_call_id=value.get("tool_call_id"),
            tool_calls=calls,
        )


@dataclass
class Tool:
    """A tool the model may call; ``parameters_json`` is the JSON schema of its arguments."""

    name: str
    description: str
    parameters_json: str = '{"type": "object", "properties": {}}'

    @classmethod
    def coerce(cls, value: "ToolLike") -> "Tool":
        """A :class:`Tool` from a tool, a ``{"name", "description", "parameters"}`` dict, or
        OpenAI's ``{"type": "function", "function": {...}}``."""
        if isinstance(value, Tool):
            return value
        if not isinstance(value, Mapping):
            raise InvalidRequest(f"a tool must be an agl.Tool or a dict, not {type(value).__name__}")
        source = value.get("function", value)
        parameters = source.get("parameters", source.get("parameters_json", {"type": "object", "properties": {}}))
        if not isinstance(parameters, str):
            parameters = json.dumps(parameters)
        return cls(name=str(source.get("name", "")), description=str(source.get("description", "")), parameters_json=parameters)


@dataclass
class Usage:
    """Tokens the call used, as the backend counted them."""

    input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class ChatRequest:
    """A chat request as the host receives it (built by :meth:`Llm.chat`)."""

    messages: list[Message]
    model: Optional[str] = None
    temperature: Optional[float] = None
    max_tokens: Optional[int] = None
    stop: list[str] = field(default_factory=list)
    tools: list[Tool] = field(default_factory=list)


@dataclass
class ChatResponse:
    """The model's reply."""

    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    #: "stop", "length", "tool_calls", ...
    finish_reason: str = "stop"
    usage: Usage = field(default_factory=Usage)
    model: str = ""

    @property
    def wants_tools(self) -> bool:
        """Whether the model stopped to call tools (``tool_calls`` is then non-empty)."""
        return bool(self.tool_calls)

    @property
    def message(self) -> Message:
        """This reply as an assistant message, to append to the conversation before the tools'
        answers."""
        return Message.assistant(self.content, self.tool_calls)


MessageLike = Union[Message, Mapping[str, Any]]
ToolLike = Union[Tool, Mapping[str, Any]]


class Llm:
    """The host's LLM, as one attempt sees it (``ctx.llm``)."""

    def __init__(self, host: "Host") -> None:
        self._host = host

    def chat(
        self,
        messages: Iterable[MessageLike],
        *,
        tools: Iterable[ToolLike] = (),
        model: Optional[str] = None,
        temperature: Optional[float] = None,
        max_tokens: Optional[int] = None,
        stop: Union[str, Iterable[str]] = (),
    ) -> ChatResponse:
        """Sends a conversation and returns the reply.

        Raises a subclass of :class:`~agl.LlmError` when the host refuses or the backend fails:
        :class:`~agl.ModelNotAllowed`, :class:`~agl.BudgetExceeded`, :class:`~agl.Timeout`,
        :class:`~agl.InvalidRequest` or :class:`~agl.Backend`.
        """
        if isinstance(messages, (str, bytes)):
            raise InvalidRequest("messages must be a list of messages; use ctx.llm.ask(text) for one prompt")
        request = ChatRequest(
            messages=[Message.coerce(m) for m in messages],
            model=model,
            temperature=None if temperature is None else float(temperature),
            max_tokens=max_tokens,
            stop=[stop] if isinstance(stop, str) else list(stop),
            tools=[Tool.coerce(t) for t in tools],
        )
        return self._host.chat(request)

    def ask(self, prompt: str, *, system: Optional[str] = None, model: Optional[str] = None, **options: Any) -> str:
        """One user message in (after ``system``, if given), the reply's text out.

        ``options`` are those of :meth:`chat` (``temperature``, ``max_tokens``, ``stop``).
        """
        messages = [Message.system(system)] if system is not None else []
        messages.append(Message.user(prompt))
        return self.chat(messages, model=model, **options).content
