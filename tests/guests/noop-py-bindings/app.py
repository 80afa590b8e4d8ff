"""noop-py-bindings: the least a Python agent can be. No agl SDK: the module defines the class
componentize-py exports for world `agent`, and its rollout returns 1.0 at once, whatever the task.

The run_throughput benchmark runs it beside probe-py's `noop` as the ceiling of a Python agent
here (a fresh componentize-py instance and one call); a CLI test checks that `[tool.agl] sdk =
false` builds it."""


class WitWorld:
    def rollout(self, ctx: object, task_json: str) -> float:
        return 1.0
