"""Unit tests of the capability registry (``agl._capability``): a toy capability module, written
by the test and not part of the SDK, gets its ``ctx`` accessor, its ``LocalHost`` fake, its bridge
in the real host and its exports with no edit to the SDK.

Run from sdk/python: python3 -m unittest
"""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest
from unittest import mock

import agl
from agl import _capability, agent
from agl.host import RolloutContext
from agl.testing import LocalHost, run

#: A whole capability module, as ``agl/clock.py`` would be: wrapper, bridge, fake, registration.
TOY_MODULE = textwrap.dedent(
    '''
    """A toy capability, ``ctx.clock``: the time, as the host tells it."""

    from agl._capability import capability

    __all__ = ["Clock"]


    class Clock:
        """The host's clock: ``ctx.clock.now()``."""

        def __init__(self, host):
            self._backend = host.backend("clock")

        def now(self):
            return self._backend.now()


    class WitClock:
        """Inside a component: the WIT import (a made-up interface)."""

        def __init__(self):
            from wit_world.imports import clock

            self._clock = clock

        def now(self):
            return self._clock.now()


    class LocalClock:
        """``LocalHost(clock=start)``: a clock one second later at each reading."""

        def __init__(self, start=None):
            self.time = 0.0 if start is None else float(start)
            self.readings = []

        def now(self):
            self.time += 1.0
            self.readings.append(self.time)
            return self.time


    capability("clock", Clock, wit=WitClock, local=LocalClock, testing=("LocalClock",))
    '''
)


def two_readings(task: dict, ctx: agl.Ctx) -> float:
    assert ctx.clock is ctx.clock, "made once per attempt"
    return ctx.clock.now() + ctx.clock.now()


class ToyCapabilityTests(unittest.TestCase):
    def setUp(self) -> None:
        folder = pathlib.Path(tempfile.mkdtemp())
        (folder / "toy_clock.py").write_text(TOY_MODULE, encoding="utf-8")
        sys.path.insert(0, str(folder))
        self.addCleanup(shutil.rmtree, folder)
        self.addCleanup(sys.path.remove, str(folder))
        self.addCleanup(sys.modules.pop, "toy_clock", None)
        self.addCleanup(_capability._unregister, "clock")
        import toy_clock  # noqa: F401 - registers the capability

    def test_the_ctx_accessor_reaches_the_localhost_fake(self) -> None:
        host = LocalHost(clock=10)
        outcome = run(two_readings, {}, host)
        self.assertEqual(outcome, agent.Outcome(reward=23.0))
        self.assertEqual(host.clock_readings, [11.0, 12.0])
        self.assertEqual(host.clock.time, 12.0)
        self.assertEqual(run(two_readings, {}, LocalHost()).reward, 3.0, "no option: the fake's default")
        self.assertIn("ctx.clock.now()", agl.Ctx.clock.__doc__)
        from agl.testing import LocalClock

        self.assertIsInstance(host.clock, LocalClock)

    def test_the_real_host_makes_the_bridge_inside_a_component(self) -> None:
        # The component's bindings, stood in for: agl._wit imports them at its top.
        imports = mock.MagicMock()
        imports.clock.now.return_value = 7.0
        stubs = {"componentize_py_types": mock.MagicMock(), "wit_world": mock.MagicMock(), "wit_world.imports": imports}
        self.addCleanup(vars(agl).pop, "_wit", None)
        with mock.patch.dict(sys.modules, stubs):
            from agl import _wit

            host = _wit.WitHost()
            context = RolloutContext(rollout_id="ro-1", attempt_id="at-1", attempt_number=1)
            outcome = agent.run_attempt(two_readings, host, context, "{}")
        self.assertEqual(outcome, agent.Outcome(reward=14.0))
        self.assertEqual(imports.clock.now.call_count, 2)
        self.assertEqual(type(host.backend("http")).__name__, "WitHttp")

    def test_a_name_already_taken_is_refused(self) -> None:
        with self.assertRaises(agl.AglError) as caught:
            _capability.capability("clock", dict, wit=dict, local=dict)
        self.assertIn("two capabilities named `clock`", str(caught.exception))
        with self.assertRaises(agl.AglError) as caught:
            _capability.capability("reward", dict, wit=dict, local=dict)
        self.assertIn("would hide an attribute", str(caught.exception))
        self.assertNotIn("reward", [found.name for found in _capability.registered()])
        with self.assertRaises(TypeError) as caught:
            LocalHost(clokc=1)
        self.assertIn("unknown option(s) clokc (capabilities: http, clock)", str(caught.exception))


class DiscoveryTests(unittest.TestCase):
    def test_a_module_dropped_into_the_package_is_found_and_exported(self) -> None:
        folder = pathlib.Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, folder)
        shutil.copytree(pathlib.Path(agl.__file__).parent, folder / "agl", ignore=shutil.ignore_patterns("__pycache__"))
        (folder / "agl" / "clock.py").write_text(TOY_MODULE, encoding="utf-8")
        script = textwrap.dedent(
            """
            import json
            import agl
            from agl.testing import LocalHost, LocalClock, run

            host = LocalHost(clock=1)
            outcome = run(lambda task, ctx: ctx.clock.now(), {}, host)
            print(json.dumps({
                "reward": outcome.reward,
                "readings": host.clock_readings,
                "exported": agl.Clock is agl.clock.Clock and "Clock" in agl.__all__,
                "fake": type(host.clock) is LocalClock,
                "http": "HttpRequest" in agl.__all__,
            }))
            """
        )
        done = subprocess.run(
            [sys.executable, "-B", "-c", script], cwd=folder, capture_output=True, text=True, timeout=60,
            env={"PYTHONPATH": str(folder), "PATH": ""},
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(
            json.loads(done.stdout),
            {"reward": 2.0, "readings": [2.0], "exported": True, "fake": True, "http": True},
        )


if __name__ == "__main__":
    unittest.main()
