"""Unit tests of ``agl.http`` (URL splitting, error sentences, responses, the client) and of
``LocalHost``'s HTTP, answered by a function or by ``urllib_http`` against a loopback server.

Run from sdk/python: python3 -m unittest
"""

from __future__ import annotations

import http.server
import json
import threading
import unittest
from types import SimpleNamespace

import agl
from agl.http import Target, error_for_code, split_url
from agl.testing import LocalHost, run, urllib_http


class UrlTests(unittest.TestCase):
    def test_urls_split_into_scheme_authority_and_path(self) -> None:
        self.assertEqual(
            split_url("https://api.example.com:8443/v1/items?q=a%20b#frag"),
            Target("https", "api.example.com:8443", "/v1/items?q=a%20b"),
        )
        self.assertEqual(split_url("http://127.0.0.1:8080"), Target("http", "127.0.0.1:8080", "/"))
        self.assertEqual(split_url("HTTP://h?x=1"), Target("http", "h", "/?x=1"))
        self.assertEqual(split_url("http://[::1]:9/a").authority, "[::1]:9")
        self.assertEqual(split_url("https://h/x").origin, "https://h")

    def test_bad_urls_say_what_is_wrong(self) -> None:
        for url, words in [
            ("api.example.com/x", "absolute URL"),
            ("ftp://h/x", "scheme `ftp`"),
            ("http:///x", "no host"),
            ("http://u:p@h/", "credentials"),
        ]:
            with self.assertRaises(ValueError) as caught:
                split_url(url)
            self.assertIn(words, str(caught.exception))


class ErrorCodeTests(unittest.TestCase):
    target = Target("http", "127.0.0.1:9", "/")

    def test_a_denial_says_the_sandbox_refused_and_how_to_grant_the_host(self) -> None:
        kind, reason = error_for_code("HttpRequestDenied", None, self.target)
        self.assertIs(kind, agl.HttpDenied)
        self.assertIn("denied by the sandbox: http://127.0.0.1:9 is not granted", reason)
        self.assertIn("--agent-http http://127.0.0.1:9", reason)
        self.assertIn("allowed-outbound-hosts", reason)

    def test_each_family_of_codes_has_its_class_and_sentence(self) -> None:
        cases = [
            ("HttpResponseTimeout", None, agl.HttpTimeout, "no response within the timeout"),
            ("ConnectionTimeout", None, agl.HttpTimeout, "connecting to http://127.0.0.1:9 timed out"),
            ("DnsTimeout", None, agl.HttpTimeout, "DNS lookup timed out"),
            ("HttpResponseBodySize", 20_000_000, agl.HttpBodyTooLarge, "(20000000 bytes) is larger than"),
            ("HttpResponseBodySize", None, agl.HttpBodyTooLarge, "--agent-http-max-response"),
            ("ConnectionRefused", None, agl.HttpConnectError, "http://127.0.0.1:9 refused the connection"),
            ("DestinationIpProhibited", None, agl.HttpConnectError, "the sandbox refused http://127.0.0.1:9"),
            ("DnsError", SimpleNamespace(rcode="NXDOMAIN", info_code=None), agl.HttpConnectError, "(NXDOMAIN)"),
            ("TlsCertificateError", None, agl.HttpConnectError, "TLS certificate was refused"),
            ("InternalError", "boom", agl.HttpError, "boom"),
            ("HttpProtocolError", None, agl.HttpError, "broke the HTTP protocol"),
            ("SomethingNew", 3, agl.HttpError, "SomethingNew (3)"),
        ]
        for case, value, expected_kind, words in cases:
            kind, reason = error_for_code(case, value, self.target)
            self.assertIs(kind, expected_kind, case)
            self.assertIn(words, reason, case)

    def test_errors_are_sentences_naming_the_request(self) -> None:
        error = agl.HttpRequest("GET", "http://h/x").error("connection refused", agl.HttpConnectError)
        self.assertIsInstance(error, agl.HttpError)
        self.assertIsInstance(error, agl.AglError)
        self.assertEqual(str(error), "GET http://h/x failed: connection refused")
        self.assertEqual((error.method, error.url, error.reason), ("GET", "http://h/x", "connection refused"))


class ResponseTests(unittest.TestCase):
    def test_responses_read_as_text_json_headers_and_status(self) -> None:
        response = agl.HttpResponse(
            404,
            [("Content-Type", "application/json")],
            b'{"error":"no such item"}',
            agl.HttpRequest("GET", "http://h/items/7"),
        )
        self.assertEqual(response.header("content-type"), "application/json")
        self.assertIsNone(response.header("x-missing"))
        self.assertEqual(response.json(), {"error": "no such item"})
        self.assertEqual(response.text(), '{"error":"no such item"}')
        self.assertFalse(response.ok)
        with self.assertRaises(agl.HttpStatusError) as caught:
            response.error_for_status()
        self.assertEqual(str(caught.exception), 'GET http://h/items/7 failed: HTTP status 404: {"error":"no such item"}')
        self.assertEqual(caught.exception.status, 404)
        ok = agl.HttpResponse(204)
        self.assertIs(ok.error_for_status(), ok)

    def test_a_body_that_is_not_json_or_text_is_an_http_error(self) -> None:
        response = agl.HttpResponse(200, [], b"\xff<html>", agl.HttpRequest("GET", "http://h/"))
        with self.assertRaises(agl.HttpError) as caught:
            response.json()
        self.assertIn("GET http://h/ failed: the response body is not JSON", str(caught.exception))
        with self.assertRaises(agl.HttpError):
            response.text()


class ClientTests(unittest.TestCase):
    def test_get_and_post_json_reach_the_hosts_function(self) -> None:
        def answer(request: agl.HttpRequest) -> object:
            if request.method == "POST":
                return {"echo": json.loads(request.body_bytes()), "type": dict(request.header_pairs())["content-type"]}
            return "pong"

        host = LocalHost(http=answer)

        def agent(task: dict, ctx: agl.Ctx) -> float:
            http = ctx.http()
            pong = http.get("http://svc/ping", headers={"x-k": "v"}, timeout=2).error_for_status().text()
            echo = http.post_json("http://svc/echo", {"a": [1, "é"]}).json()
            ctx.info(f"{pong} {echo}")
            return 1.0 if echo == {"echo": {"a": [1, "é"]}, "type": "application/json"} else 0.0

        outcome = run(agent, {}, host)
        self.assertEqual(outcome, agl.agent.Outcome(reward=1.0))
        get, post = host.http_requests
        self.assertEqual((get.method, get.url, get.header_pairs(), get.timeout), ("GET", "http://svc/ping", [("x-k", "v")], 2))
        self.assertEqual(post.body, '{"a": [1, "é"]}'.encode("utf-8"))

    def test_without_a_function_every_request_is_denied_inside_the_agent(self) -> None:
        def agent(task: dict, ctx: agl.Ctx) -> float:
            try:
                ctx.http().get("http://svc/ping")
            except agl.HttpDenied as err:
                ctx.info(str(err))
                return 0.0
            return 1.0

        host = LocalHost()
        self.assertEqual(run(agent, {}, host).reward, 0.0)
        [said] = host.logged()
        self.assertTrue(said.startswith("GET http://svc/ping failed: denied by the sandbox: http://svc"), said)

    def test_bad_requests_fail_before_the_host(self) -> None:
        host = LocalHost(http=lambda request: "never")
        client = agl.Http(host)
        with self.assertRaises(agl.HttpError) as caught:
            client.get("svc/ping")
        self.assertIn("GET svc/ping failed: not an absolute URL", str(caught.exception))
        with self.assertRaises(agl.HttpError) as caught:
            client.get("http://svc/", timeout=0)
        self.assertIn("timeout must be a positive number", str(caught.exception))
        with self.assertRaises(agl.HttpError) as caught:
            client.post_json("http://svc/", {"x": float("nan")})
        self.assertIn("cannot encode the body as JSON", str(caught.exception))
        self.assertEqual(host.http_requests, [])

    def test_an_uncaught_http_error_fails_the_attempt_with_its_sentence(self) -> None:
        outcome = run(lambda task, ctx: ctx.http().get("http://svc/").status, {}, LocalHost())
        self.assertTrue(outcome.error.startswith("GET http://svc/ failed: denied by the sandbox"), outcome.error)


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the standard library's name
        if self.path == "/moved":
            self.send_response(302)
            self.send_header("location", "/elsewhere")
            self.send_header("content-length", "0")
            self.end_headers()
            return
        body = json.dumps({"path": self.path}).encode()
        self.send_response(200 if self.path != "/missing" else 404)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class UrllibTests(unittest.TestCase):
    def setUp(self) -> None:
        self.server = http.server.HTTPServer(("127.0.0.1", 0), _Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"

    def tearDown(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()

    def test_a_granted_loopback_server_answers_and_any_other_host_is_denied(self) -> None:
        client = agl.Http(LocalHost(http=urllib_http(self.origin)))
        response = client.get(f"{self.origin}/capital?country=France")
        self.assertEqual((response.status, response.json()), (200, {"path": "/capital?country=France"}))
        self.assertEqual(response.header("Content-Type"), "application/json")
        self.assertEqual(client.get(f"{self.origin}/missing").status, 404)
        moved = client.get(f"{self.origin}/moved")
        self.assertEqual((moved.status, moved.header("location")), (302, "/elsewhere"), "not followed, as in the sandbox")
        other = f"http://127.0.0.1:{self.server.server_address[1] + 1}"
        with self.assertRaises(agl.HttpDenied) as caught:
            client.get(f"{other}/x")
        self.assertIn(f"{other} is not granted", str(caught.exception))
        with self.assertRaises(agl.HttpDenied):
            agl.Http(LocalHost(http=urllib_http(self.origin))).get("https://127.0.0.1/")

    def test_wildcards_grant_subdomains_only(self) -> None:
        answer = urllib_http("https://*.example.com")
        with self.assertRaises(agl.HttpDenied):
            answer(agl.HttpRequest("GET", "https://example.com/"))
        with self.assertRaises(agl.HttpDenied):
            answer(agl.HttpRequest("GET", "http://api.example.com/"))


if __name__ == "__main__":
    unittest.main()
