"""agl: write an agl-host agent in Python as one function.

An agent is a WebAssembly component of world ``agent`` (``wit/agent.wit``); ``agl-host build DIR``
(or ``agl-host run --agent DIR``) builds one from a folder with an ``app.py`` like::

    import agl

    @agl.rollout
    def rollout(task: dict, ctx: agl.Ctx) -> float | None:
        prompt = ctx.prompt("prompt").format(question=task["question"])
        reply = ctx.llm.ask(prompt)
        ctx.info(f"reply: {reply}")
        return 1.0 if reply.strip() == task["answer"] else 0.0

The function gets the rollout's input (parsed JSON) and a :class:`Ctx`; it returns the final
reward, or ``None`` to leave it to ``ctx.reward``. An exception fails the attempt with its message.
Every ``ctx`` call is a host call, recorded by agl-host as a span; ``ctx.http()`` (:mod:`agl.http`)
reaches the hosts the sandbox grants. See ``sdk/python/README.md``.

Importing the package imports every public module of it, so that each capability module
(:mod:`agl._capability`) registers itself; the ``__all__`` of those modules is exported here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _capability
from .agent import rollout
from .ctx import Ctx, Prompt
from .errors import (
    AglError,
    Backend,
    BudgetExceeded,
    InvalidRequest,
    LlmError,
    ModelNotAllowed,
    PromptError,
    ResourceError,
    TaskError,
    Timeout,
)
from .host import Level, LlmEndpoint, Mode, PromptTemplate, Resource, RolloutContext
from .llm import ChatResponse, Llm, Message, Tool, ToolCall, Usage

__version__ = "0.3.0"

__all__ = [
    "rollout",
    "Ctx",
    "Prompt",
    "Llm",
    "Message",
    "Tool",
    "ToolCall",
    "ChatResponse",
    "Usage",
    "Level",
    "Mode",
    "RolloutContext",
    "PromptTemplate",
    "LlmEndpoint",
    "Resource",
    "AglError",
    "TaskError",
    "PromptError",
    "ResourceError",
    "LlmError",
    "ModelNotAllowed",
    "BudgetExceeded",
    "Timeout",
    "InvalidRequest",
    "Backend",
]

if TYPE_CHECKING:  # what the capability modules export, for type checkers (see below)
    from .http import (
        Http,
        HttpBodyTooLarge,
        HttpConnectError,
        HttpDenied,
        HttpError,
        HttpRequest,
        HttpResponse,
        HttpStatusError,
        HttpTimeout,
    )



def _discover() -> None:
    """Imports every public module of the package, so that each capability module registers
    itself (no list to edit), and exports the ``__all__`` of the capability modules."""
    import importlib
    import pkgutil
    import sys

    for module in pkgutil.iter_modules(__path__):
        if not module.name.startswith("_"):
            importlib.import_module(f"{__name__}.{module.name}")
    for found in _capability.registered():
        if found.module.startswith(f"{__name__}."):
            names = sys.modules[found.module].__all__
            globals().update((name, getattr(sys.modules[found.module], name)) for name in names)
            __all__.extend(names)


_discover()
