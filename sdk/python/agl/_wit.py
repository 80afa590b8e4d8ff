"""The bridge to the bindings componentize-py generates for world ``agent-python`` (world
``agent`` plus ``wasi:http``; the ``wit_world`` package): :class:`WitHost`, the
:class:`~agl.host.Host` of a real component, and :func:`export`, which builds the ``WitWorld``
class the component exports. A capability in a module of its own (``agl.http``) brings its own
bridge, which :class:`WitHost` makes (:mod:`agl._capability`).

Only importable inside a component build; every other module of the SDK imports in plain Python.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from componentize_py_types import Err
from wit_world.imports import llm as wit_llm
from wit_world.imports import resources as wit_resources
from wit_world.imports import reward as wit_reward
from wit_world.imports import trace as wit_trace

from . import _capability, agent
from .errors import Backend, BudgetExceeded, InvalidRequest, LlmError, ModelNotAllowed, PromptError, Timeout
from .host import Level, LlmEndpoint, PromptTemplate, Resource, RolloutContext
from .llm import ChatRequest, ChatResponse, Message, ToolCall, Usage

_ROLES = {
    "system": wit_llm.Role.SYSTEM,
    "user": wit_llm.Role.USER,
    "assistant": wit_llm.Role.ASSISTANT,
    "tool": wit_llm.Role.TOOL,
}
_LEVELS = {
    Level.TRACE: wit_trace.Level.TRACE,
    Level.DEBUG: wit_trace.Level.DEBUG,
    Level.INFO: wit_trace.Level.INFO,
    Level.WARN: wit_trace.Level.WARN,
    Level.ERROR: wit_trace.Level.ERROR,
}


def _wit_call(call: ToolCall) -> Any:
    return wit_llm.ToolCall(id=call.id, name=call.name, arguments_json=call.arguments_json)


def _wit_message(message: Message) -> Any:
    return wit_llm.Message(
        role=_ROLES[message.role],
        content=message.content,
        tool_call_id=message.tool_call_id,
        tool_calls=[_wit_call(c) for c in message.tool_calls],
    )


def _llm_error(error: Any) -> LlmError:
    if isinstance(error, wit_llm.LlmError_ModelNotAllowed):
        return ModelNotAllowed(error.value)
    if isinstance(error, wit_llm.LlmError_BudgetExceeded):
        return BudgetExceeded(error.value)
    if isinstance(error, wit_llm.LlmError_Timeout):
        return Timeout()
    if isinstance(error, wit_llm.LlmError_InvalidRequest):
        return InvalidRequest(error.value)
    return Backend(str(getattr(error, "value", error)))


class WitHost:
    """agl-host, through the component's WIT imports."""

    def __init__(self) -> None:
        # Made now, while the component is built: each imports its bindings.
        self._backends = {found.name: found.wit() for found in _capability.registered()}

    def chat(self, request: ChatRequest) -> ChatResponse:
        wit_request = wit_llm.ChatRequest(
            messages=[_wit_message(m) for m in request.messages],
            model=request.model,
            temperature=request.temperature,
            max_tokens=request.max_tokens,
            stop=list(request.stop),
            tools=[
                wit_llm.Tool(name=t.name, description=t.description, parameters_json=t.parameters_json)
                for t in request.tools
            ],
        )
        try:
            reply = wit_llm.chat(wit_request)
        except Err as err:
            raise _llm_error(err.value) from None
        return ChatResponse(
            content=reply.content,
            tool_calls=[ToolCall(c.id, c.name, c.arguments_json) for c in reply.tool_calls],
            finish_reason=reply.finish_reason,
            usage=Usage(reply.usage.input_tokens, reply.usage.output_tokens),
            model=reply.model,
        )

    def emit_reward(self, value: float) -> None:
        wit_reward.emit(value)

    def emit_named_reward(self, name: str, value: float) -> None:
        wit_reward.emit_named(name, value)

    def give_feedback(self, text: str) -> None:
        wit_reward.feedback(text)

    def resource(self, name: str) -> Optional[Resource]:
        found = wit_resources.get(name)
        if found is None:
            return None
        value = found.value
        if isinstance(found, wit_resources.Resource_PromptTemplate):
            return PromptTemplate(value.template, value.engine)
        return LlmEndpoint(
            value.endpoint,
            value.model,
            value.sampling_parameters_json,
            proxy=isinstance(found, wit_resources.Resource_ProxyLlm),
        )

    def format_prompt(self, name: str, values: Sequence[tuple[str, str]]) -> str:
        try:
            return wit_resources.format_prompt(name, list(values))
        except Err as err:
            raise PromptError(f"prompt `{name}`: {err.value}") from None

    def log(self, level: Level, message: str) -> None:
        wit_trace.log(_LEVELS[level], message)

    def message(self, text: str) -> None:
        wit_trace.message(text)

    def object(self, json_text: str) -> None:
        wit_trace.object(json_text)

    def start_operation(self, name: str) -> int:
        return wit_trace.start_operation(name)

    def end_operation(self, handle: int, error: Optional[str]) -> None:
        wit_trace.end_operation(handle, error)

    def backend(self, name: str) -> Any:
        made = self._backends.get(name)
        if made is None:
            made = self._backends[name] = _capability.find(name).wit()
        return made


def export(module_name: str) -> type:
    """Imports the agent's module and returns the ``WitWorld`` class that exports its rollout
    function (the one decorated with ``@agl.rollout``, else a module-level ``rollout``).

    Runs while the component is built, so a module that fails to import, or has no agent, fails
    the build with this error.
    """
    function = agent.find_agent(module_name)
    host = WitHost()
    chosen = function
    # Resolved now, while the build runs, so that no rollout pays for it (see `_task_type`); a
    # function that cannot take a task still fails each rollout with the reason.
    try:
        agent.task_type(chosen)
    except agent.AglError:
        pass

    class WitWorld:
        """The component's export of world ``agent``."""

        def rollout(self, ctx: Any, task_json: str) -> Optional[float]:
            # The WIT's rollout-context record has RolloutContext's fields (its mode is read by
            # name): passed as it is, since every object a rollout builds or touches in a fresh
            # instance costs memory pages (see `agent.run_attempt`).
            outcome = agent.run_attempt(chosen, host, ctx, task_json)
            if outcome.error is not None:
                raise Err(outcome.error)
            return outcome.reward

    _warm_up()
    return WitWorld


def _warm_up() -> None:
    """Runs the SDK's attempt path a few times on a stand-in agent while the component is built,
    so the snapshot holds CPython's specialised bytecode and type caches for it: a fresh instance
    then writes to fewer pages of its heap per rollout."""
    from .testing import LocalHost

    context = RolloutContext(rollout_id="ro-warm-up", attempt_id="at-warm-up", attempt_number=1)
    for _ in range(8):
        agent.run_attempt(lambda task, ctx: 1.0, LocalHost(), context, '{"warm": "up"}')
