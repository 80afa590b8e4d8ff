"""Outgoing HTTP from an agent: ``ctx.http()``, a small blocking client (:class:`Http`), its
:class:`HttpRequest` and :class:`HttpResponse`, and the :class:`HttpError` family.

This module owns everything about HTTP that does not need the component's bindings, so it runs in
plain CPython: splitting a URL into what ``wasi:http`` takes (:func:`split_url`), the sentence and
error class for each ``wasi:http`` error code (:func:`error_for_code`), and the response type. The
requests themselves go through the host (:meth:`~agl.host.Host.send_http`): in a component,
``agl._wit_http`` over ``wasi:http/outgoing-handler``; in a unit test, :class:`agl.testing.LocalHost`.

agl-host denies every host by default and grants the ones named by ``--agent-http URL`` or the
manifest's ``allowed-outbound-hosts``; it records each request as an ``agl.http.request`` span.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping, NamedTuple, Optional, Protocol, Sequence, Union

from .errors import AglError

__all__ = [
    "Http",
    "HttpRequest",
    "HttpResponse",
    "HttpError",
    "HttpDenied",
    "HttpTimeout",
    "HttpBodyTooLarge",
    "HttpConnectError",
    "HttpStatusError",
    "Target",
    "split_url",
    "error_for_code",
]

#: Headers as the agent gives them: a mapping, or (name, value) pairs (a name may repeat).
Headers = Union[Mapping[str, str], Sequence[tuple[str, str]], None]


class HttpError(AglError):
    """A request that got no usable response: refused by the sandbox, unreachable, timed out, a
    bad URL... Its message is a sentence: ``GET http://... failed: <reason>``."""

    def __init__(self, method: str, url: str, reason: str) -> None:
        super().__init__(f"{method} {url} failed: {reason}")
        #: The request's method and URL.
        self.method = method
        self.url = url
        #: Why, without the method and URL.
        self.reason = reason


class HttpDenied(HttpError):
    """The sandbox refused the request: its host is not granted, or the attempt's request budget
    is spent."""


class HttpTimeout(HttpError):
    """Connecting, the response's first byte or the next piece of its body took too long."""


class HttpBodyTooLarge(HttpError):
    """The response body is larger than the sandbox allows (``--agent-http-max-response``)."""


class HttpConnectError(HttpError):
    """The host could not be reached: a DNS failure, a refused connection, a prohibited address,
    a TLS failure."""


class HttpStatusError(HttpError):
    """Raised by :meth:`HttpResponse.error_for_status` for a status other than 2xx."""

    def __init__(self, method: str, url: str, response: "HttpResponse") -> None:
        start = response.body[:200].decode("utf-8", "replace")
        super().__init__(method, url, f"HTTP status {response.status}" + (f": {start}" if start else ""))
        #: The response, whole.
        self.response = response
        self.status = response.status


@dataclass
class HttpRequest:
    """A request: method, absolute ``http``/``https`` URL, headers, body and an optional timeout
    in seconds (for connecting, the first byte of the response and each later piece of it; the
    host's own limit applies as well, and the shorter wins)."""

    method: str
    url: str
    headers: Headers = None
    body: Union[bytes, str, None] = None
    timeout: Optional[float] = None

    def header_pairs(self) -> list[tuple[str, str]]:
        """The headers as (name, value) pairs."""
        return _pairs(self.headers)

    def body_bytes(self) -> bytes:
        """The body as bytes (a ``str`` body as UTF-8)."""
        if self.body is None:
            return b""
        return self.body.encode("utf-8") if isinstance(self.body, str) else bytes(self.body)

    def error(self, reason: str, kind: type = HttpError) -> HttpError:
        """An error of class ``kind`` about this request."""
        return kind(self.method, self.url, reason)


@dataclass
class HttpResponse:
    """A response, its body read whole. ``request`` is what was sent (for error messages)."""

    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    request: Optional[HttpRequest] = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        """Whether the status is 2xx."""
        return 200 <= self.status < 300

    def header(self, name: str) -> Optional[str]:
        """The first header called ``name`` (any case), if any."""
        wanted = name.lower()
        for key, value in self.headers:
            if key.lower() == wanted:
                return value
        return None

    def text(self, encoding: str = "utf-8") -> str:
        """The body as text; raises :class:`HttpError` when it does not decode."""
        try:
            return self.body.decode(encoding)
        except UnicodeDecodeError as err:
            raise self._error(f"the response body is not {encoding} text: {err}") from None

    def json(self) -> Any:
        """The body parsed as JSON; raises :class:`HttpError` when it is not JSON."""
        try:
            return json.loads(self.body)
        except ValueError as err:
            raise self._error(f"the response body is not JSON: {err}") from None

    def error_for_status(self) -> "HttpResponse":
        """``self`` for a 2xx status, else raises :class:`HttpStatusError` naming the status and
        the start of the body."""
        if self.ok:
            return self
        method, url = self._who()
        raise HttpStatusError(method, url, self)

    def _who(self) -> tuple[str, str]:
        return (self.request.method, self.request.url) if self.request is not None else ("HTTP", "request")

    def _error(self, reason: str) -> HttpError:
        method, url = self._who()
        return HttpError(method, url, reason)


class Target(NamedTuple):
    """Where a URL points, as ``wasi:http`` takes it."""

    #: ``"http"`` or ``"https"``.
    scheme: str
    #: ``host[:port]`` as the URL writes it.
    authority: str
    #: The path and query, at least ``/``; the fragment is dropped.
    path_with_query: str

    @property
    def origin(self) -> str:
        """``scheme://authority``: what a grant for this host would say."""
        return f"{self.scheme}://{self.authority}"


def split_url(url: str) -> Target:
    """Splits an absolute ``http``/``https`` URL; raises :class:`ValueError` saying what is wrong."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ValueError("not an absolute URL (it needs http:// or https://)")
    scheme = scheme.lower()
    if scheme not in ("http", "https"):
        raise ValueError(f"unsupported scheme `{scheme}` (only http and https)")
    rest = rest.split("#", 1)[0]
    cut = len(rest)
    for mark in "/?":
        at = rest.find(mark)
        if at != -1:
            cut = min(cut, at)
    authority, path = rest[:cut], rest[cut:]
    if not authority:
        raise ValueError("the URL has no host")
    if "@" in authority:
        raise ValueError("credentials in the URL are not supported (send an authorization header)")
    if not path:
        path = "/"
    elif path.startswith("?"):
        path = "/" + path
    return Target(scheme, authority, path)


_TIMEOUT_HINT = "(the request's timeout, or the sandbox's --agent-http-timeout, 30 s by default)"


def error_for_code(case: str, value: Any, target: Optional[Target]) -> tuple[type, str]:
    """The error class and the sentence for a ``wasi:http`` ``error-code``: ``case`` is its name as
    componentize-py writes it (``"HttpRequestDenied"`` for ``HTTP-request-denied``), ``value`` its
    payload (a record's fields are read by name), ``target`` the request's destination."""
    origin = target.origin if target is not None else "this host"
    if case == "HttpRequestDenied":
        return HttpDenied, (
            f"denied by the sandbox: {origin} is not granted to this agent (grant it with "
            f"`--agent-http {origin}` or `[http] allowed-outbound-hosts` in the agent folder's `agent.toml`), "
            "or the attempt's HTTP request budget is spent (`--agent-http-requests`)"
        )
    if case == "DestinationIpProhibited":
        return HttpConnectError, (
            f"the sandbox refused {origin}: its address is loopback, private or otherwise local, which "
            "only a grant naming that very host reaches"
        )
    if case == "HttpResponseBodySize":
        size = f" ({value} bytes)" if value is not None else ""
        return HttpBodyTooLarge, (
            f"the response body{size} is larger than the sandbox allows "
            "(`--agent-http-max-response` or the manifest's `max-response-size`, 10 MiB by default)"
        )
    timeouts = {
        "DnsTimeout": "the DNS lookup timed out",
        "ConnectionTimeout": f"connecting to {origin} timed out {_TIMEOUT_HINT}",
        "ConnectionReadTimeout": f"the response timed out {_TIMEOUT_HINT}",
        "ConnectionWriteTimeout": "sending the request timed out",
        "HttpResponseTimeout": f"no response within the timeout {_TIMEOUT_HINT}",
    }
    if case in timeouts:
        return HttpTimeout, timeouts[case]
    if case == "DnsError":
        rcode = getattr(value, "rcode", None)
        return HttpConnectError, f"the DNS lookup of {origin} failed" + (f" ({rcode})" if rcode else "")
    if case == "TlsAlertReceived":
        message = getattr(value, "alert_message", None)
        return HttpConnectError, "the server sent a TLS alert" + (f": {message}" if message else "")
    unreachable = {
        "DestinationNotFound": f"{origin} was not found",
        "DestinationUnavailable": f"{origin} is unavailable",
        "DestinationIpUnroutable": f"{origin}'s address cannot be reached",
        "ConnectionRefused": f"{origin} refused the connection",
        "ConnectionTerminated": "the connection was closed before the response ended",
        "ConnectionLimitReached": "too many connections are open",
        "TlsProtocolError": "the TLS handshake failed",
        "TlsCertificateError": f"{origin}'s TLS certificate was refused",
    }
    if case in unreachable:
        return HttpConnectError, unreachable[case]
    if case == "InternalError":
        return HttpError, str(value) if value else "the host failed the request"
    sizes = {
        "HttpRequestBodySize": "the request body does not match its content-length",
        "HttpRequestHeaderSectionSize": "the request's headers are too large",
        "HttpRequestHeaderSize": "a request header is too large",
        "HttpResponseHeaderSectionSize": "the response's headers are too large",
        "HttpResponseHeaderSize": "a response header is too large",
    }
    if case in sizes:
        return HttpError, sizes[case]
    others = {
        "HttpRequestMethodInvalid": "the method is not valid",
        "HttpRequestUriInvalid": "the URL is not valid",
        "HttpRequestUriTooLong": "the URL is too long",
        "HttpRequestLengthRequired": "the server wants a content-length",
        "HttpResponseIncomplete": "the response ended early",
        "HttpProtocolError": "the server broke the HTTP protocol",
        "HttpUpgradeFailed": "the protocol upgrade failed",
        "LoopDetected": "a request loop was detected",
        "ConfigurationError": "the host's HTTP configuration refused the request",
    }
    if case in others:
        return HttpError, others[case]
    # A case with a payload not listed above: its name, and the payload when there is one.
    return HttpError, f"{case}" + (f" ({value})" if value is not None else "")


class Sender(Protocol):
    """What :class:`Http` sends through: the host's ``send_http``."""

    def send_http(self, request: HttpRequest, target: Target) -> HttpResponse: ...


class Http:
    """The agent's HTTP client, ``ctx.http()``. Blocking: one request at a time, bodies whole.

    Every method raises an :class:`HttpError` subclass when no response came (a non-2xx status is
    a response: see :meth:`HttpResponse.error_for_status`)::

        answer = ctx.http().get("http://127.0.0.1:8080/capital?country=France").error_for_status()
        city = answer.json()["capital"]
    """

    def __init__(self, host: Sender) -> None:
        self._host = host

    def get(self, url: str, headers: Headers = None, timeout: Optional[float] = None) -> HttpResponse:
        """``GET url``."""
        return self.send(HttpRequest("GET", url, headers, None, timeout))

    def post_json(self, url: str, obj: Any, headers: Headers = None, timeout: Optional[float] = None) -> HttpResponse:
        """``POST url`` with ``obj`` as JSON (``content-type: application/json``)."""
        request = HttpRequest("POST", url, headers, None, timeout)
        try:
            body = json.dumps(obj, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as err:
            raise request.error(f"cannot encode the body as JSON: {err}") from None
        pairs = request.header_pairs()
        if not any(name.lower() == "content-type" for name, _ in pairs):
            pairs.insert(0, ("content-type", "application/json"))
        request.headers = pairs
        request.body = body.encode("utf-8")
        return self.send(request)

    def send(self, request: HttpRequest) -> HttpResponse:
        """Sends ``request`` and reads the whole response."""
        try:
            target = split_url(request.url)
        except ValueError as err:
            raise request.error(str(err)) from None
        if request.timeout is not None and not request.timeout > 0:
            raise request.error(f"the timeout must be a positive number of seconds, not {request.timeout!r}")
        response = self._host.send_http(request, target)
        response.request = request
        return response


def _pairs(headers: Headers) -> list[tuple[str, str]]:
    if headers is None:
        return []
    items = headers.items() if isinstance(headers, Mapping) else headers
    return [(str(name), str(value)) for name, value in items]
