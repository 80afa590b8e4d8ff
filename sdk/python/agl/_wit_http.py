"""The bridge from :mod:`agl.http` to ``wasi:http/outgoing-handler``, through the bindings
componentize-py generates for world ``agent-python`` (``sdk/python/wit/agent-python.wit``):
:func:`send` builds the outgoing request, writes its body, hands it to the host, waits for the
response and reads its body, all blocking, and turns every ``wasi:http`` error into an
:class:`~agl.http.HttpError` subclass whose message is a sentence.

Only importable inside a component build (like ``agl._wit``); everything else about HTTP is plain
Python in :mod:`agl.http`.
"""

from __future__ import annotations

from typing import Any, Optional

from componentize_py_types import Err, Ok
from wit_world.imports import outgoing_handler
from wit_world.imports import streams as wit_streams
from wit_world.imports import wasi_http_types as wit_http

from .http import HttpError, HttpRequest, HttpResponse, Target, error_for_code

#: Bytes read from a response body at a time.
READ_CHUNK = 64 * 1024
#: Bytes written to a request body at a time: the most one blocking-write-and-flush may take.
WRITE_CHUNK = 4096

_METHODS = {
    "GET": wit_http.Method_Get,
    "HEAD": wit_http.Method_Head,
    "POST": wit_http.Method_Post,
    "PUT": wit_http.Method_Put,
    "DELETE": wit_http.Method_Delete,
    "CONNECT": wit_http.Method_Connect,
    "OPTIONS": wit_http.Method_Options,
    "TRACE": wit_http.Method_Trace,
    "PATCH": wit_http.Method_Patch,
}


class _Failed(Exception):
    """Why the exchange stopped: an :class:`HttpError` class and its reason."""

    def __init__(self, kind: type, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


def send(request: HttpRequest, target: Target) -> HttpResponse:
    """Sends ``request`` to ``target`` and reads the whole response; raises an
    :class:`~agl.http.HttpError` subclass when none came."""
    try:
        return _exchange(request, target)
    except _Failed as failed:
        raise request.error(failed.reason, failed.kind) from None


def _code_error(code: Any, target: Target) -> _Failed:
    case = type(code).__name__.removeprefix("ErrorCode_")
    kind, reason = error_for_code(case, getattr(code, "value", None), target)
    return _Failed(kind, reason)


#: Methods whose request has a body, so a length even when it is empty.
_WITH_BODY = {"POST", "PUT", "PATCH"}


def _fields(request: HttpRequest, body: bytes) -> Any:
    entries = [(name, value.encode("utf-8")) for name, value in request.header_pairs()]
    # The body is sent whole: say how long it is, as many servers want (without it, wasi:http
    # sends it chunked).
    if (body or request.method.upper() in _WITH_BODY) and not any(
        name.lower() == "content-length" for name, _ in entries
    ):
        entries.append(("content-length", str(len(body)).encode()))
    try:
        return wit_http.Fields.from_list(entries)
    except Err as err:
        names = ", ".join(name for name, _ in entries)
        why = {
            "HeaderError_Forbidden": "a header the host sets itself (host, connection, ...) is among them",
            "HeaderError_InvalidSyntax": "a name or value is not valid",
        }.get(type(err.value).__name__, type(err.value).__name__)
        raise _Failed(HttpError, f"the headers ({names}) were refused: {why}") from None


def _options(timeout: Optional[float]) -> Any:
    if timeout is None:
        return None
    options = wit_http.RequestOptions()
    nanos = min(int(timeout * 1e9), 2**64 - 1)
    for setter in (options.set_connect_timeout, options.set_first_byte_timeout, options.set_between_bytes_timeout):
        try:
            setter(nanos)
        except Err:
            pass  # the host may keep its own limit; it applies either way
    return options


def _exchange(request: HttpRequest, target: Target) -> HttpResponse:
    data = request.body_bytes()
    outgoing = wit_http.OutgoingRequest(_fields(request, data))
    method = request.method.upper()
    maker = _METHODS.get(method)
    steps = [
        (outgoing.set_method, maker() if maker is not None else wit_http.Method_Other(request.method), "method"),
        (outgoing.set_scheme, wit_http.Scheme_Https() if target.scheme == "https" else wit_http.Scheme_Http(), "scheme"),
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
        pending = outgoing_handler.handle(outgoing, _options(request.timeout))
    except Err as err:
        body.__exit__(None, None, None)
        raise _code_error(err.value, target) from None
    with pending:
        _write_body(body, data, target)
        try:
            wit_http.OutgoingBody.finish(body, None)
        except Err as err:
            raise _code_error(err.value, target) from None
        with pending.subscribe() as ready:
            ready.block()
        got = pending.get()
    if got is None or isinstance(got, Err):
        raise _Failed(HttpError, "the response was lost")
    answer = got.value
    if isinstance(answer, Err):
        raise _code_error(answer.value, target)
    with answer.value as response:
        status = response.status()
        with response.headers() as fields:
            headers = [(name, value.decode("utf-8", "replace")) for name, value in fields.entries()]
        try:
            incoming = response.consume()
        except Err:
            raise _Failed(HttpError, "the response body is unavailable") from None
    data = _read_body(incoming, target)
    with wit_http.IncomingBody.finish(incoming) as trailers:
        with trailers.subscribe() as ready:
            ready.block()
        ended = trailers.get()
    if isinstance(ended, Ok) and isinstance(ended.value, Err):
        raise _code_error(ended.value.value, target)
    if isinstance(ended, Ok) and isinstance(ended.value, Ok) and ended.value.value is not None:
        ended.value.value.__exit__(None, None, None)  # trailers: not kept
    return HttpResponse(status, headers, data)


def _write_body(body: Any, data: bytes, target: Target) -> None:
    if not data:
        return
    try:
        stream = body.write()
    except Err:
        raise _Failed(HttpError, "the request body is unavailable") from None
    with stream:
        for start in range(0, len(data), WRITE_CHUNK):
            try:
                stream.blocking_write_and_flush(data[start : start + WRITE_CHUNK])
            except Err as err:
                raise _stream_failure("sending the request body", err.value, target) from None


def _read_body(incoming: Any, target: Target) -> bytes:
    try:
        stream = incoming.stream()
    except Err:
        raise _Failed(HttpError, "the response body is unavailable") from None
    chunks = []
    with stream:
        while True:
            try:
                chunks.append(stream.blocking_read(READ_CHUNK))
            except Err as err:
                if isinstance(err.value, wit_streams.StreamError_Closed):
                    return b"".join(chunks)
                raise _stream_failure("reading the response body", err.value, target) from None


def _stream_failure(doing: str, error: Any, target: Target) -> _Failed:
    if isinstance(error, wit_streams.StreamError_Closed):
        return _Failed(HttpError, f"{doing}: the connection closed")
    with error.value as io_error:
        code = wit_http.http_error_code(io_error)
        if code is not None:
            failed = _code_error(code, target)
            return _Failed(failed.kind, f"{doing}: {failed.reason}")
        return _Failed(HttpError, f"{doing}: {io_error.to_debug_string()}")
