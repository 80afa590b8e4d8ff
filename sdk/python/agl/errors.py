"""The SDK's exceptions.

Any exception that leaves a rollout function fails the attempt; its message becomes the attempt's
failure reason (the WIT ``err(string)``). The classes here are the ones the SDK itself raises:
:class:`LlmError` and its subclasses mirror the WIT ``llm-error`` variant one for one, so an agent
can catch exactly the refusal it can handle (``except agl.BudgetExceeded: ...``).
"""

from __future__ import annotations

__all__ = [
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


class AglError(Exception):
    """Base class of the SDK's errors; its message is the failure reason the host records."""

    @property
    def message(self) -> str:
        """The message the host records when this error fails the attempt."""
        return str(self)


class TaskError(AglError):
    """The rollout's input does not fit the rollout function's task type."""


class PromptError(AglError):
    """A prompt template could not be formatted (a missing variable, a malformed template)."""


class ResourceError(AglError):
    """A resource the agent asked for is missing or of another kind."""


class LlmError(AglError):
    """The host refused or failed an LLM call. Catch a subclass to handle one case."""

    #: The detail the host gave (the model, the budget, the backend's error); empty for a timeout.
    detail: str

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


class ModelNotAllowed(LlmError):
    """The model asked for is not among those this agent may use."""

    def __init__(self, model: str) -> None:
        super().__init__(f"LLM call refused: model `{model}` is not allowed for this agent", model)

    @property
    def model(self) -> str:
        """The model that was refused."""
        return self.detail


class BudgetExceeded(LlmError):
    """This attempt's LLM budget (calls or tokens) is spent."""

    def __init__(self, what: str) -> None:
        super().__init__(f"LLM budget of this attempt exceeded: {what}", what)


class Timeout(LlmError):
    """The backend did not answer within the host's LLM timeout."""

    def __init__(self) -> None:
        super().__init__("LLM call timed out: the backend did not answer within the host's limit")


class InvalidRequest(LlmError):
    """The request was malformed or over the host's limits; it was not sent."""

    def __init__(self, why: str) -> None:
        super().__init__(f"invalid LLM request: {why}", why)


class Backend(LlmError):
    """The backend failed (after the host's retries)."""

    def __init__(self, why: str) -> None:
        super().__init__(f"LLM backend failed: {why}", why)
