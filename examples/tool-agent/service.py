"""The lookup service of examples/tool-agent: `GET /capital?country=NAME` answers
`{"country": NAME, "capital": CITY}`, or 404 with `{"error": ...}` for a country it does not know.

Serves on 127.0.0.1 only. `python3 service.py [--port 8765]` (`--port 0`: any free port); the
first line it prints is `listening on http://127.0.0.1:PORT`. Standard library only.
"""

import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

CAPITALS = {
    "australia": "Canberra",
    "canada": "Ottawa",
    "france": "Paris",
    "japan": "Tokyo",
    "kenya": "Nairobi",
    "new zealand": "Wellington",
}


class Lookup(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (the name http.server calls)
        url = urlsplit(self.path)
        country = parse_qs(url.query).get("country", [""])[0]
        if url.path != "/capital":
            self.answer(404, {"error": f"no such path {url.path}; try /capital?country=France"})
        elif not country:
            self.answer(400, {"error": "missing ?country="})
        elif country.strip().lower() in CAPITALS:
            self.answer(200, {"country": country, "capital": CAPITALS[country.strip().lower()]})
        else:
            self.answer(404, {"error": f"unknown country {country}"})

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format, *args):  # noqa: A002 (http.server's signature)
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (0: any free port)")
    port = parser.parse_args().port
    server = ThreadingHTTPServer(("127.0.0.1", port), Lookup)
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
