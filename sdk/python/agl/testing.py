"""Testing an agent in plain CPython, without agl-host or WebAssembly.

:class:`LocalHost` plays the host: resources from a dict, LLM replies from a function, HTTP
answers from a function (or real requests to the hosts you grant, :func:`urllib_http`), and a
record of every call (logs, rewards, operations, requests). :func:`run` runs one attempt of a
rollout function the way the component does, exceptions included::

    from agl.testing import LocalHost, run
    import app

    host = LocalHost(prompts={"prompt": "Q: {question}"}, reply=lambda request: "19")
    outcome = run(app.rollout, {"question": "12+7?", "answer": "19"}, host)
    assert outcome.reward == 1.0
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from .agent import Outcome, run_attempt
from .errors import LlmError, PromptError
from .host import Level, Mode, PromptTemplate, Resource, RolloutContext
from .http import HttpConnectError, HttpDenied, HttpRequest, HttpResponse, HttpTimeout, Target, split_url
from .llm import ChatRequest, ChatResponse
from .template import format_template

__all__ = ["LocalHost", "run", "Operation", "urllib_http"]

Reply = Callable[[ChatRequest], Union[str, ChatResponse]]
#: Answers one HTTP request: an :class:`~agl.HttpResponse`, or a ``str``/``bytes`` body (status
#: 200), or a JSON value (``dict``/``list``, sent back as JSON with status 200); or raises an
#: :class:`~agl.HttpError`.
HttpAnswer = Callable[[HttpRequest], Union[HttpResponse, str, bytes, dict, list]]


@dataclass
class Operation:
    """An operation span as :class:`LocalHost` saw it."""

    name: str
    ended: bool = False
    error: Optional[str] = None


@dataclass
class LocalHost:
    """A host in plain Python, for unit tests of agents.

    ``prompts`` become f-string prompt-template resources and ``resources`` adds any others;
    ``reply`` answers each chat request (a string, a :class:`~agl.ChatResponse`, or an
    :class:`~agl.LlmError` raised); ``http`` answers each HTTP request (see ``HttpAnswer``, or
    :func:`urllib_http` for real requests); without it every request is denied, as the sandbox
    denies every host it was not told to grant. Every call is recorded in the lists below.
    """

    prompts: Mapping[str, str] = field(default_factory=dict)
    resources: Mapping[str, Resource] = field(default_factory=dict)
    reply: Optional[Reply] = None
    http: Optional[HttpAnswer] = None
    requests: list[ChatRequest] = field(default_factory=list)
    http_requests: list[HttpRequest] = field(default_factory=list)
    logs: list[tuple[Level, str]] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    objects: list[Any] = field(default_factory=list)
    rewards: list[tuple[Optional[str], float]] = field(default_factory=list)
    operations: list[Operation] = field(default_factory=list)

    def chat(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        if self.reply is None:
            raise LlmError("LocalHost has no reply function")
        answer = self.reply(request)
        return answer if isinstance(answer, ChatResponse) else ChatResponse(content=str(answer), model="local")

    def emit_reward(self, value: float) -> None:
        self.rewards.append((None, value))

    def emit_named_reward(self, name: str, value: float) -> None:
        self.rewards.append((name, value))

    def resource(self, name: str) -> Optional[Resource]:
        if name in self.prompts:
            return PromptTemplate(self.prompts[name])
        return self.resources.get(name)

    def format_prompt(self, name: str, values: Sequence[tuple[str, str]]) -> str:
        found = self.resource(name)
        if not isinstance(found, PromptTemplate):
            raise PromptError(f"prompt `{name}`: no prompt template resource named `{name}`")
        try:
            return format_template(found.template, dict(values))
        except PromptError as err:
            raise PromptError(f"prompt `{name}`: {err}") from None

    def log(self, level: Level, message: str) -> None:
        self.logs.append((level, message))

    def message(self, text: str) -> None:
        self.messages.append(text)

    def object(self, json_text: str) -> None:
        self.objects.append(json.loads(json_text))

    def start_operation(self, name: str) -> int:
        self.operations.append(Operation(name))
        return len(self.operations)

    def end_operation(self, handle: int, error: Optional[str]) -> None:
        if 1 <= handle <= len(self.operations) and not self.operations[handle - 1].ended:
            self.operations[handle - 1].ended = True
            self.operations[handle - 1].error = error

    def send_http(self, request: HttpRequest, target: Target) -> HttpResponse:
        self.http_requests.append(request)
        if self.http is None:
            raise request.error(
                f"denied by the sandbox: {target.origin} is not granted to this agent "
                "(LocalHost answers HTTP through its `http` function: pass one)",
                HttpDenied,
            )
        answer = self.http(request)
        if isinstance(answer, HttpResponse):
            return answer
        if isinstance(answer, (bytes, bytearray)):
            return HttpResponse(200, [("content-type", "application/octet-stream")], bytes(answer))
        if isinstance(answer, str):
            return HttpResponse(200, [("content-type", "text/plain; charset=utf-8")], answer.encode("utf-8"))
        body = json.dumps(answer, ensure_ascii=False).encode("utf-8")
        return HttpResponse(200, [("content-type", "application/json")], body)

    def logged(self, level: Optional[Level] = None) -> list[str]:
        """The logged messages (of ``level`` only, when given)."""
        return [text for lvl, text in self.logs if level is None or lvl == level]


def run(
    function: Callable[..., Any],
    task: Any,
    host: Optional[LocalHost] = None,
    *,
    attempt_number: int = 1,
    mode: Optional[Mode] = Mode.TRAIN,
    resources_id: Optional[str] = "local",
) -> Outcome:
    """Runs one attempt of ``function`` on ``task`` (a JSON value, or JSON text) against ``host``,
    as the component would; returns its :class:`~agl.agent.Outcome`."""
    task_json = task if isinstance(task, str) else json.dumps(task)
    context = RolloutContext(
        rollout_id="ro-local",
        attempt_id=f"at-local-{attempt_number}",
        attempt_number=attempt_number,
        mode=mode,
        resources_id=resources_id,
    )
    return run_attempt(function, host if host is not None else LocalHost(), context, task_json)


def urllib_http(*granted: str) -> HttpAnswer:
    """An ``http`` function for :class:`LocalHost` that sends each request for real, with
    ``urllib``, to the ``granted`` origins only (``"http://127.0.0.1:8080"``: scheme, host and
    port, the port defaulting to the scheme's, as ``--agent-http`` takes them; ``*.example.com``
    for its subdomains); any other request is denied as the sandbox would deny it. For tests
    against a local server::

        host = LocalHost(http=urllib_http(f"http://127.0.0.1:{port}"))
    """
    grants = [_origin_parts(split_url(pattern)) for pattern in granted]

    def answer(request: HttpRequest) -> HttpResponse:
        # Imported here: a component never runs this, and urllib would only weigh it down.
        import urllib.error
        import urllib.request

        target = split_url(request.url)
        scheme, host, port = _origin_parts(target)
        if not any(_grants(grant, scheme, host, port) for grant in grants):
            raise request.error(
                f"denied by the sandbox: {target.origin} is not granted to this agent "
                f"(urllib_http grants {', '.join(granted) or 'nothing'})",
                HttpDenied,
            )
        sent = urllib.request.Request(
            request.url,
            data=request.body_bytes() if request.body is not None else None,
            headers=dict(request.header_pairs()),
            method=request.method.upper(),
        )
        try:
            with _opener().open(sent, timeout=request.timeout or 30) as reply:
                return HttpResponse(reply.status, list(reply.getheaders()), reply.read())
        except urllib.error.HTTPError as err:
            return HttpResponse(err.code, list(err.headers.items()), err.read())
        except (urllib.error.URLError, OSError) as err:
            reason = getattr(err, "reason", err)
            if isinstance(reason, TimeoutError):
                raise request.error(f"no response within the timeout ({reason})", HttpTimeout) from None
            raise request.error(f"{target.origin} could not be reached: {reason}", HttpConnectError) from None

    return answer


def _opener() -> Any:
    """A urllib opener that does not follow redirects: the sandbox returns a 3xx as it is."""
    import urllib.request

    class NoRedirects(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    return urllib.request.build_opener(NoRedirects)


def _origin_parts(target: Target) -> tuple[str, str, int]:
    host, port = target.authority, ""
    if not host.endswith("]") and ":" in host:
        host, port = host.rsplit(":", 1)
    default = 443 if target.scheme == "https" else 80
    return target.scheme, host.lower(), int(port) if port else default


def _grants(grant: tuple[str, str, int], scheme: str, host: str, port: int) -> bool:
    g_scheme, g_host, g_port = grant
    if (g_scheme, g_port) != (scheme, port):
        return False
    if g_host.startswith("*."):
        return host.endswith(g_host[1:])
    return g_host == host
