"""The capability registry: a host capability joins the SDK from one module, ``agl/<name>.py``.

That module holds the wrapper the agent uses, its bridge to the WIT bindings, its
:class:`~agl.testing.LocalHost` fake, and one call that registers them (``agl/http.py`` is the
example)::

    capability("clock", Clock, wit=WitClock, local=LocalClock, testing=("fake_time",))

- ``Clock(host)``: the wrapper, ``ctx.clock`` (made once per attempt), or ``ctx.clock()`` (a new
  one per call) with ``call=True``. It reaches its backend with ``host.backend("clock")``.
- ``WitClock()``: the backend inside a component. It imports ``wit_world.imports.<iface>`` in its
  ``__init__``, so that the module imports in plain CPython; ``agl._wit.WitHost`` makes it while
  the component is built.
- ``LocalClock(option)``: the backend of ``LocalHost``: ``LocalHost(clock=x)`` passes ``x``
  (``None`` when not given); ``host.clock`` is the fake and ``host.clock_calls`` its ``calls``.
- ``testing``: names in the module that ``agl.testing`` exports too.

``agl/__init__.py`` imports every public module of the package, so a new module is found with no
list to edit, and re-exports the ``__all__`` of each capability module. For type checkers, which
cannot see what is added at run time, a capability may add a stub to ``Ctx`` and an import to
``agl/__init__.py``, both under ``TYPE_CHECKING`` (as ``http`` does); nothing needs them to run.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any, Callable, Optional

from .errors import AglError

__all__ = ["Capability", "capability", "registered", "find"]


@dataclass(frozen=True)
class Capability:
    """One registered capability: see the module's documentation."""

    name: str
    #: Built from the host: the object ``ctx.<name>`` (or ``ctx.<name>()``) gives the agent.
    wrapper: Callable[[Any], Any]
    #: The backend inside a component (imports the bindings).
    wit: Callable[[], Any]
    #: The backend of ``LocalHost``, from its ``<name>=`` option (``None`` when not given).
    local: Callable[[Any], Any]
    #: ``ctx.<name>()`` rather than ``ctx.<name>``.
    call: bool = False
    #: Names of the module that ``agl.testing`` exports.
    testing: tuple[str, ...] = ()
    #: The module that registered it.
    module: str = ""


_registry: dict[str, Capability] = {}


def capability(
    name: str,
    wrapper: Callable[[Any], Any],
    *,
    wit: Callable[[], Any],
    local: Callable[[Any], Any],
    call: bool = False,
    testing: tuple[str, ...] = (),
) -> Capability:
    """Registers a capability and gives :class:`~agl.Ctx` its accessor, ``ctx.<name>``. Called
    once, at the end of the capability's module; registering the same name from another module
    is an error."""
    if not name.isidentifier() or name.startswith("_"):
        raise ValueError(f"a capability name is a public identifier, not {name!r}")
    module = getattr(wrapper, "__module__", "") or ""
    found = Capability(name, wrapper, wit, local, call, tuple(testing), module)
    previous = _registry.get(name)
    if previous is not None and previous.module != module:
        raise AglError(f"two capabilities named `{name}`: in {previous.module} and in {module}")
    from .ctx import Ctx  # here: ctx's module does not know about capabilities
    from .testing import LocalHost

    taken = set(dir(Ctx)) | set(dir(LocalHost)) | {f.name for f in dataclasses.fields(LocalHost)}
    if previous is None and name in taken:
        raise AglError(f"capability `{name}` would hide an attribute of agl.Ctx or agl.testing.LocalHost")
    _registry[name] = found
    setattr(Ctx, name, _accessor(found, Ctx))
    return found


def registered() -> list[Capability]:
    """The capabilities, in the order they were registered."""
    return list(_registry.values())


def find(name: str) -> Capability:
    """The capability called ``name``; raises :class:`~agl.AglError` when there is none."""
    found = _registry.get(name)
    if found is None:
        names = ", ".join(_registry) or "none"
        raise AglError(f"no capability named `{name}` (registered: {names})")
    return found


def _unregister(name: str) -> Optional[Capability]:
    """Removes a capability and its accessor (for tests of toy capabilities)."""
    from .ctx import Ctx

    found = _registry.pop(name, None)
    if found is not None and name in vars(Ctx):
        delattr(Ctx, name)
    return found


def _accessor(found: Capability, owner: type) -> Any:
    def make(ctx: Any) -> Any:
        return found.wrapper(ctx._host)

    make.__name__ = make.__qualname__ = found.name
    make.__doc__ = getattr(found.wrapper, "__doc__", None)
    if found.call:
        return make
    accessor = functools.cached_property(make)
    accessor.__set_name__(owner, found.name)
    return accessor
