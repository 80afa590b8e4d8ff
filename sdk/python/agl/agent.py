"""The glue between the WIT export and the agent's function: the :func:`rollout` decorator that
registers it, and :func:`run_attempt`, which parses the task, builds the :class:`~agl.Ctx`, calls
the function and turns what it returned or raised into the WIT ``result<option<f64>, string>``.

An exception leaving the function fails the attempt: the failure reason is its message, and its
traceback (the last 4 KiB) is logged at error level first, so the attempt's trace keeps it.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import json
import traceback
import typing
from dataclasses import dataclass
from typing import Any, Callable, Optional, TypeVar

from .ctx import Ctx, describe
from .errors import AglError, TaskError
from .host import Host, Level, RolloutContext

__all__ = ["rollout", "registered", "find_agent", "run_attempt", "Outcome", "TRACEBACK_LIMIT"]

#: How much of a traceback (UTF-8 bytes, its end) is logged when a rollout raises.
TRACEBACK_LIMIT = 4096

F = TypeVar("F", bound=Callable[..., Any])

_registered: Optional[Callable[..., Any]] = None


def rollout(function: F) -> F:
    """Makes ``function(task, ctx)`` this component's agent. Use it once, on a module-level
    function of the agent's module::

        @agl.rollout
        def rollout(task: dict, ctx: agl.Ctx) -> float | None:
            ...

    ``task`` is the rollout's input parsed from JSON (a dict for the usual JSON object); annotate
    it with a dataclass to get one built from the object's fields. Return the final reward (a
    number), or ``None`` to leave it to :meth:`Ctx.reward`. Raise to fail the attempt. The
    function is returned unchanged, so tests can call it directly.
    """
    global _registered
    if not callable(function):
        raise TypeError("@agl.rollout decorates a function")
    if _registered is not None and _registered is not function:
        raise AglError(
            f"two @agl.rollout functions: {_name(_registered)} and {_name(function)}; a component has one agent"
        )
    _registered = function
    return function


def registered() -> Optional[Callable[..., Any]]:
    """The function registered with :func:`rollout`, if any."""
    return _registered


def find_agent(module_name: str) -> Callable[..., Any]:
    """Imports the agent's module and returns its rollout function: the one decorated with
    :func:`rollout`, else a module-level function named ``rollout``. Raises :class:`AglError` when
    there is none (the component build shows it)."""
    module = importlib.import_module(module_name)
    function = registered()
    if function is None:
        candidate = getattr(module, "rollout", None)
        if callable(candidate) and candidate is not rollout:
            function = candidate
    if function is None:
        raise AglError(f"module `{module_name}` defines no agent: decorate its rollout function with @agl.rollout")
    return function


def _name(function: Callable[..., Any]) -> str:
    module = getattr(function, "__module__", "?")
    return f"{module}.{getattr(function, '__qualname__', repr(function))}"


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs pages (see run_attempt)
class Outcome:
    """How an attempt ended: ``error`` is the failure reason, else ``reward`` the final reward."""

    reward: Optional[float] = None
    error: Optional[str] = None


def run_attempt(function: Callable[..., Any], host: Host, context: RolloutContext, task_json: str) -> Outcome:
    """Runs ``function`` on one attempt and never raises: every exception becomes a failed
    :class:`Outcome` whose reason is the exception's message (its traceback logged first).

    Kept lean: a component runs each attempt in a fresh instance, where every Python object the
    path builds or touches (its refcount written, its type looked up) dirties a page of the
    snapshot heap, and page faults are most of a trivial rollout's cost. So the task is parsed
    by the JSON scanner directly, and the outcome and contexts are plain objects.
    """
    try:
        task = parse_task(function, task_json)
        result = function(task, Ctx(host, context))
        return Outcome(reward=final_reward(result))
    except BaseException as exc:  # noqa: BLE001 - any escape would trap the component
        _log_traceback(host, exc)
        return Outcome(error=describe(exc))


def _log_traceback(host: Host, exc: BaseException) -> None:
    try:
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        encoded = text.encode("utf-8", "replace")
        if len(encoded) > TRACEBACK_LIMIT:
            text = "..." + encoded[-TRACEBACK_LIMIT:].decode("utf-8", "ignore")
        host.log(Level.ERROR, f"rollout raised {type(exc).__name__}:\n{text}")
    except BaseException:  # noqa: BLE001 - the failure itself is what must come back
        pass


def final_reward(result: object) -> Optional[float]:
    """What the function returned, as the WIT's final reward."""
    if result is None:
        return None
    if isinstance(result, bool) or not isinstance(result, (int, float)):
        raise AglError(f"the rollout returned {type(result).__name__}; return a number (the reward) or None")
    return float(result)


def task_type(function: Callable[..., Any]) -> Optional[type]:
    """The dataclass ``function``'s task is built into, if any (cached)."""
    return _task_type(function)


def parse_task(function: Callable[..., Any], task_json: str) -> Any:
    """The rollout's input for ``function``: JSON-parsed, and built into the dataclass its first
    parameter is annotated with, if any."""
    try:
        value = _loads(task_json)
    except ValueError as err:
        raise TaskError(f"task is not JSON: {err}") from None
    task_type = _task_type(function)
    if task_type is None:
        return value
    if not isinstance(value, dict):
        raise TaskError(f"task does not match {task_type.__name__}: expected a JSON object, got {type(value).__name__}")
    fields = {f.name: f for f in dataclasses.fields(task_type) if f.init}
    missing = [
        name
        for name, f in fields.items()
        if name not in value and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise TaskError(f"task does not match {task_type.__name__}: missing field(s) {', '.join(missing)}")
    return task_type(**{name: v for name, v in value.items() if name in fields})


_scan_json = json.JSONDecoder().scan_once


def _loads(text: str) -> Any:
    """``json.loads(text)``, by the decoder's scanner straight away when ``text`` is one JSON value
    with no surrounding whitespace (what the host sends): ``json.loads`` first matches a regular
    expression, and in a fresh instance every object a rollout touches costs a page of memory.
    Anything else goes through ``json.loads``, which gives its usual result or error."""
    try:
        value, end = _scan_json(text, 0)
    except (StopIteration, ValueError):
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


@functools.lru_cache(maxsize=None)
def _task_type(function: Callable[..., Any]) -> Optional[type]:
    """The dataclass ``function``'s task parameter is annotated with, if any. Cached: resolving
    string annotations compiles them, a cost every rollout of a fresh instance would pay again
    (the component's build primes it, so the answer is part of the snapshot)."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return None
    if not parameters:
        raise AglError(f"the rollout function {_name(function)} must take (task, ctx)")
    try:
        hints = typing.get_type_hints(function)
    except Exception:  # noqa: BLE001 - an unresolvable annotation means plain JSON
        return None
    annotation = hints.get(parameters[0].name)
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return annotation
    return None
