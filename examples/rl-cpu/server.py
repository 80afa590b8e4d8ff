"""An OpenAI-compatible chat-completions server for the policy, in the shape vLLM answers with
`return_token_ids` and `logprobs` (what agl-host's LLM proxy records on the span):

    {"id", "object": "chat.completion", "model", "prompt_token_ids": [...],
     "choices": [{"index": 0, "message": {"role": "assistant", "content"}, "finish_reason",
                  "token_ids": [...], "logprobs": {"content": [{"token", "logprob"}, ...]}}],
     "usage": {...}}

The policy is a `transformers` causal LM (policy.py); each version is a `save_pretrained` folder,
the one `vllm serve FOLDER` would load. Completions come from the model's own `generate`; the
logprobs are the model's unprocessed (temperature-1) log-probabilities of the sampled tokens, as
vLLM's default. `POST /v1/weights {"version": "v3", "path": "FOLDER"}` loads a folder as
`MODEL@v3`; a request's `model` picks the version (`rl-policy@v3`; plain `rl-policy` is the
newest). `GET /v1/models` lists the loaded versions.

Every completion is also logged here, per version, as the sampler saw it (prompt ids, sampled ids,
their logprobs, temperature): `GET /v1/samples?version=v3` returns that version's log and drops it,
so the trainer can check that the store's token rows are exactly what was sampled.

    python server.py --port 8011 --weights target/rl-cpu/run/weights/v0
"""

from __future__ import annotations

import argparse
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import urllib.parse

import torch

import policy as P

NAME = "rl-policy"


class Models:
    """The loaded versions (the newest `keep` of them) and the tokenizer."""

    def __init__(self, keep: int = 4):
        self.lock = threading.Lock()
        self.generating = threading.Lock()
        self.versions: dict[str, tuple] = {}  # version -> (model, tokenizer)
        self.order: list[str] = []
        self.keep = keep
        self.samples: dict[str, list[dict]] = {}  # version -> what was sampled with it

    def load(self, version: str, path: str) -> None:
        loaded = P.load(path)
        with self.lock:
            self.versions[version] = loaded
            self.order = [v for v in self.order if v != version] + [version]
            while len(self.order) > self.keep:
                self.versions.pop(self.order.pop(0), None)

    def get(self, model: str):
        with self.lock:
            if not self.order:
                return None, None
            version = model.split("@", 1)[1] if "@" in model else self.order[-1]
            return version, self.versions.get(version)

    def log(self, version: str, record: dict) -> None:
        with self.lock:
            self.samples.setdefault(version, []).append(record)

    def take(self, version: str) -> list[dict]:
        with self.lock:
            return self.samples.pop(version, [])


class Handler(BaseHTTPRequestHandler):
    models: Models
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def reply(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def error(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        self.reply(status, {"error": {"message": message, "type": kind, "code": status}})

    def do_GET(self):
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            with self.models.lock:
                data = [{"id": f"{NAME}@{v}", "object": "model", "owned_by": "rl-cpu"} for v in self.models.order]
            self.reply(200, {"object": "list", "data": data})
        elif self.path.startswith("/v1/samples"):
            query = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
            self.reply(200, {"version": query.get("version", [""])[0],
                             "samples": self.models.take(query.get("version", [""])[0])})
        elif self.path == "/health":
            self.reply(200, {"status": "ok"})
        else:
            self.error(404, f"no route {self.path}")

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError as e:
            return self.error(400, f"the body is not JSON: {e}")
        if self.path.rstrip("/") == "/v1/weights":
            try:
                self.models.load(str(body["version"]), body["path"])
            except Exception as e:  # noqa: BLE001 - reported to the caller
                return self.error(400, f"cannot load weights: {e}")
            return self.reply(200, {"loaded": f"{NAME}@{body['version']}"})
        if self.path.rstrip("/") != "/v1/chat/completions":
            return self.error(404, f"no route {self.path}")
        if body.get("stream"):
            return self.error(400, "streaming is not supported by this server")
        version, loaded = self.models.get(str(body.get("model") or NAME))
        if loaded is None:
            return self.error(404, f"model {body.get('model')!r} is not loaded", "not_found_error")
        model, tok = loaded
        prompt_ids = P.encode_prompt(tok, body.get("messages") or [])
        max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 4)
        temperature = float(body.get("temperature") if body.get("temperature") is not None else 1.0)
        eos = tok.eos_token_id
        with self.models.generating:  # one `generate` at a time: concurrent calls on one model disagree
            ids, logprobs = P.sample(model, prompt_ids, max_tokens, temperature, eos)
        text_ids = [i for i in ids if i != eos]
        finish = "stop" if ids and ids[-1] == eos else "length"
        content = tok.decode(text_ids, skip_special_tokens=True)
        self.models.log(version, {"prompt_token_ids": prompt_ids, "token_ids": ids, "logprobs": logprobs,
                                  "temperature": temperature, "content": content})
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": finish,
        }
        if body.get("return_token_ids"):
            choice["token_ids"] = ids
        if body.get("logprobs"):
            choice["logprobs"] = {"content": [
                {"token": tok.convert_ids_to_tokens(i), "logprob": lp, "bytes": None, "top_logprobs": []}
                for i, lp in zip(ids, logprobs)
            ]}
        answer = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": f"{NAME}@{version}",
            "choices": [choice],
            "usage": {"prompt_tokens": len(prompt_ids), "completion_tokens": len(ids),
                      "total_tokens": len(prompt_ids) + len(ids)},
        }
        if body.get("return_token_ids"):
            answer["prompt_token_ids"] = prompt_ids
        self.reply(200, answer)


def serve(port: int, weights: dict[str, str] | None = None, host: str = "127.0.0.1") -> ThreadingHTTPServer:
    torch.set_num_threads(1)
    models = Models()
    for version, path in (weights or {}).items():
        models.load(version, path)
    handler = type("BoundHandler", (Handler,), {"models": models})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--weights", help="a save_pretrained folder to serve as version v0")
    args = parser.parse_args()
    server = serve(args.port, {"v0": args.weights} if args.weights else None)
    print(f"serving {NAME} on http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
