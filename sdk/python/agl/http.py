"""Outgoing HTTP from an agent, the capability ``ctx.http()``, whole in this module (see
:mod:`agl._capability`): the client (:class:`Http`), its :class:`HttpRequest`,
:class:`HttpResponse` and :class:`HttpError` family; :class:`WitHttp`, its bridge to
``wasi:http/outgoing-handler`` inside a component; :class:`LocalHttp`, its fake in
:class:`agl.testing.LocalHost`, and :func:`urllib_http`, which sends a test's requests for real.

Everything but :class:`WitHttp` runs in plain CPython: splitting a URL into what ``wasi:http``
takes (:func:`split_url`) and the sentence and error class for each ``wasi:http`` error code
(:func:`error_for_code`) included.

agl-host denies every host by default and grants the ones named by ``--agent-http URL`` or the
manifest's ``allowed-outbound-hosts``; it records each request as an ``agl.http.request`` span.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple, Optional, Protocol, Sequence, Union

from ._capability import capability
from .errors import AglError

# What `agl` exports; `Target`, `split_url`, `error_for_code`, `WitHttp`, `LocalHttp` and
# `urllib_http` (also in `agl.testing`) are reached as `agl.http.<name>`.
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


class Backend(Protocol):
    """What :class:`Http` sends through: :class:`WitHttp` in a component, :class:`LocalHttp` in a
    test."""

    def send(self, request: HttpRequest, target: Target) -> HttpResponse:
        """Sends ``request`` to ``target`` (its URL, split) and reads the whole response; raises
        an :class:`HttpError` subclass when none came."""
        ...


class Http:
    """The agent's HTTP client, ``ctx.http()``. Blocking: one request at a time, bodies whole.

    Every method raises an :class:`HttpError` subclass when no response came (a non-2xx status is
    a response: see :meth:`HttpResponse.error_for_status`)::

        answer = ctx.http().get("http://127.0.0.1:8080/capital?country=France").error_for_status()
        city = answer.json()["capital"]
    """

    def __init__(self, host: Any) -> None:
        self._backend: Backend = host.backend("http")

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
        response = self._backend.send(request, target)
        response.request = request
        return response


def _pairs(headers: Headers) -> list[tuple[str, str]]:
    if headers is None:
        return []
    items = headers.items() if isinstance(headers, Mapping) else headers
    return [(str(name), str(value)) for name, value in items]


# --- the bridge: wasi:http/outgoing-handler, inside a component ----------------------------------

#: Bytes read from a response body at a time.
READ_CHUNK = 64 * 1024
#: Bytes written to a request body at a time: the most one blocking-write-and-flush may take.
WRITE_CHUNK = 4096
#: Methods whose request has a body, so a length even when it is empty.
_WITH_BODY = {"POST", "PUT", "PATCH"}


class _Failed(Exception):
    """Why the exchange stopped: an :class:`HttpError` class and its reason."""

    def __init__(self, kind: type, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


def _code_failure(code: Any, target: Target) -> _Failed:
    case = type(code).__name__.removeprefix("ErrorCode_")
    kind, reason = error_for_code(case, getattr(code, "value", None), target)
    return _Failed(kind, reason)


class WitHttp:
    """agl-host's HTTP, through the bindings componentize-py generates for world
    ``agent-python`` (``sdk/python/wit/agent-python.wit``): :meth:`send` builds the outgoing
    request, writes its body, hands it to the host, waits for the response and reads its body,
    all blocking, and turns every ``wasi:http`` error into an :class:`HttpError` subclass whose
    message is a sentence. Made inside a component only: it imports the bindings."""

    def __init__(self) -> None:
        from componentize_py_types import Err, Ok
        from wit_world.imports import outgoing_handler, streams, wasi_http_types

        self._err, self._ok = Err, Ok
        self._handler = outgoing_handler
        self._streams = streams
        self._types = types = wasi_http_types
        self._methods = {
            "GET": types.Method_Get,
            "HEAD": types.Method_Head,
            "POST": types.Method_Post,
            "PUT": types.Method_Put,
            "DELETE": types.Method_Delete,
            "CONNECT": types.Method_Connect,
            "OPTIONS": types.Method_Options,
            "TRACE": types.Method_Trace,
            "PATCH": types.Method_Patch,
        }

    def send(self, request: HttpRequest, target: Target) -> HttpResponse:
        """Sends ``request`` to ``target`` and reads the whole response; raises an
        :class:`HttpError` subclass when none came."""
        try:
            return self._exchange(request, target)
        except _Failed as failed:
            raise request.error(failed.reason, failed.kind) from None

    def _fields(self, request: HttpRequest, body: bytes) -> Any:
        entries = [(name, value.encode("utf-8")) for name, value in request.header_pairs()]
        # The body is sent whole: say how long it is, as many servers want (without it, wasi:http
        # sends it chunked).
        if (body or request.method.upper() in _WITH_BODY) and not any(
            name.lower() == "content-length" for name, _ in entries
        ):
            entries.append(("content-length", str(len(body)).encode()))
        try:
            return self._types.Fields.from_list(entries)
        except self._err as err:
            names = ", ".join(name for name, _ in entries)
            why = {
                "HeaderError_Forbidden": "a header the host sets itself (host, connection, ...) is among them",
                "HeaderError_InvalidSyntax": "a name or value is not valid",
            }.get(type(err.value).__name__, type(err.value).__name__)
            raise _Failed(HttpError, f"the headers ({names}) were refused: {why}") from None

    def _options(self, timeout: Optional[float]) -> Any:
        if timeout is None:
            return None
        options = self._types.RequestOptions()
        nanos = min(int(timeout * 1e9), 2**64 - 1)
        for setter in (options.set_connect_timeout, options.set_first_byte_timeout, options.set_between_bytes_timeout):
            try:
                setter(nanos)
            except self._err:
                pass  # the host may keep its own limit; it applies either way
        return options

    def _exchange(self, request: HttpRequest, target: Target) -> HttpResponse:
        types, Err, Ok = self._types, self._err, self._ok  # noqa: N806 - the bindings' names
        data = request.body_bytes()
        outgoing = types.OutgoingRequest(self._fields(request, data))
        maker = self._methods.get(request.method.upper())
        steps = [
            (outgoing.set_method, maker() if maker is not None else types.Method_Other(request.method), "method"),
            (outgoing.set_scheme, types.Scheme_Https() if target.scheme == "https" else types.Scheme_Http(), "scheme"),
            (outgoing.set_authority, target.authority, "host"),
            (outgoing.set_path_with_query, target.path_with_query, "path"),
        ]
        for setter, value, what in steps:
            try:
                setter(value)
            except Err:
                raise _Failed(HttpError, f"the {what} is not valid") from None
        body = outgoing.body()
        try:
            pending = self._handler.handle(outgoing, self._options(request.timeout))
        except Err as err:
            body.__exit__(None, None, None)
            raise _code_failure(err.value, target) from None
        with pending:
            self._write_body(body, data, target)
            try:
                types.OutgoingBody.finish(body, None)
            except Err as err:
                raise _code_failure(err.value, target) from None
            with pending.subscribe() as ready:
                ready.block()
            got = pending.get()
        if got is None or isinstance(got, Err):
            raise _Failed(HttpError, "the response was lost")
        answer = got.value
        if isinstance(answer, Err):
            raise _code_failure(answer.value, target)
        with answer.value as response:
            status = response.status()
            with response.headers() as fields:
                headers = [(name, value.decode("utf-8", "replace")) for name, value in fields.entries()]
            try:
                incoming = response.consume()
            except Err:
                raise _Failed(HttpError, "the response body is unavailable") from None
        data = self._read_body(incoming, target)
        with types.IncomingBody.finish(incoming) as trailers:
            with trailers.subscribe() as ready:
                ready.block()
            ended = trailers.get()
        if isinstance(ended, Ok) and isinstance(ended.value, Err):
            raise _code_failure(ended.value.value, target)
        if isinstance(ended, Ok) and isinstance(ended.value, Ok) and ended.value.value is not None:
            ended.value.value.__exit__(None, None, None)  # trailers: not kept
        return HttpResponse(status, headers, data)

    def _write_body(self, body: Any, data: bytes, target: Target) -> None:
        if not data:
            return
        try:
            stream = body.write()
        except self._err:
            raise _Failed(HttpError, "the request body is unavailable") from None
        with stream:
            for start in range(0, len(data), WRITE_CHUNK):
                try:
                    stream.blocking_write_and_flush(data[start : start + WRITE_CHUNK])
                except self._err as err:
                    raise self._stream_failure("sending the request body", err.value, target) from None

    def _read_body(self, incoming: Any, target: Target) -> bytes:
        try:
            stream = incoming.stream()
        except self._err:
            raise _Failed(HttpError, "the response body is unavailable") from None
        chunks = []
        with stream:
            while True:
                try:
                    chunks.append(stream.blocking_read(READ_CHUNK))
                except self._err as err:
                    if isinstance(err.value, self._streams.StreamError_Closed):
                        return b"".join(chunks)
                    raise self._stream_failure("reading the response body", err.value, target) from None

    def _stream_failure(self, doing: str, error: Any, target: Target) -> _Failed:
        if isinstance(error, self._streams.StreamError_Closed):
            return _Failed(HttpError, f"{doing}: the connection closed")
        with error.value as io_error:
            code = self._types.http_error_code(io_error)
            if code is not None:
                failed = _code_failure(code, target)
                return _Failed(failed.kind, f"{doing}: {failed.reason}")
            return _Failed(HttpError, f"{doing}: {io_error.to_debug_string()}")


# --- the fake: LocalHost(http=...) ---------------------------------------------------------------

#: Answers one request in a test: an :class:`HttpResponse`, or a ``str``/``bytes`` body (status
#: 200), or a JSON value (``dict``/``list``, sent back as JSON with status 200); or raises an
#: :class:`HttpError`.
HttpAnswer = Callable[[HttpRequest], Union[HttpResponse, str, bytes, dict, list]]


class LocalHttp:
    """:class:`agl.testing.LocalHost`'s HTTP: ``LocalHost(http=answer)`` answers each request
    with ``answer`` (see :data:`HttpAnswer`, or :func:`urllib_http` for real requests); without
    it every request is denied, as the sandbox denies every host it was not told to grant. Each
    request is recorded in :attr:`requests` (``host.http_requests``)."""

    def __init__(self, answer: Optional[HttpAnswer] = None) -> None:
        self.answer = answer
        self.requests: list[HttpRequest] = []

    def send(self, request: HttpRequest, target: Target) -> HttpResponse:
        """Records ``request`` and answers it."""
        self.requests.append(request)
        if self.answer is None:
            raise request.error(
                f"denied by the sandbox: {target.origin} is not granted to this agent "
                "(LocalHost answers HTTP through its `http` function: pass one)",
                HttpDenied,
            )
        answer = self.answer(request)
        if isinstance(answer, HttpResponse):
            return answer
        if isinstance(answer, (bytes, bytearray)):
            return HttpResponse(200, [("content-type", "application/octet-stream")], bytes(answer))
        if isinstance(answer, str):
            return HttpResponse(200, [("content-type", "text/plain; charset=utf-8")], answer.encode("utf-8"))
        body = json.dumps(answer, ensure_ascii=False).encode("utf-8")
        return HttpResponse(200, [("content-type", "application/json")], body)


def urllib_http(*granted: str) -> HttpAnswer:
    """An ``http`` function for :class:`~agl.testing.LocalHost` that sends each request for real,
    with ``urllib``, to the ``granted`` origins only (``"http://127.0.0.1:8080"``: scheme, host
    and port, the port defaulting to the scheme's, as ``--agent-http`` takes them;
    ``*.example.com`` for its subdomains); any other request is denied as the sandbox would deny
    it. For tests against a local server::

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


capability("http", Http, wit=WitHttp, local=LocalHttp, call=True, testing=("urllib_http", "HttpAnswer"))
