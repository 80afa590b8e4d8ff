#!/usr/bin/env python3
"""Writes the seed inputs of every fuzz target into runtime/fuzz/seeds/<target>/ from the
repository's real data: the Agent-lightning 0.3.0 exchanges (tests/fixtures), the examples'
resources, tasks and rules, the APO meta-prompts, and OTLP requests encoded here (protobuf by a
small hand encoder, OTLP/JSON, gzip). The in-tree corpora (corpus/<target>/) started from these
and were then grown by fuzzing and minimised with `cargo fuzz cmin`; rerun this only to reseed.
Usage: python3 runtime/fuzz/seeds/make_seeds.py  (from anywhere)."""

import gzip
import hashlib
import json
import pathlib
import re
import struct

FUZZ = pathlib.Path(__file__).resolve().parent.parent
ROOT = FUZZ.parent.parent
OUT = FUZZ / "seeds"


def write(target, data):
    if isinstance(data, str):
        data = data.encode()
    folder = OUT / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)


# --- protobuf, just enough for ExportTraceServiceRequest -------------------------------------

def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number, wire, payload):
    key = varint(number << 3 | wire)
    if wire == 0:
        return key + varint(payload)
    if wire == 1:
        return key + payload
    if wire == 5:
        return key + payload
    return key + varint(len(payload)) + payload


def ld(number, payload):
    return field(number, 2, payload if isinstance(payload, bytes) else payload.encode())


def any_value(v):
    if isinstance(v, bool):
        return field(2, 0, int(v))
    if isinstance(v, int):
        return field(3, 0, v)
    if isinstance(v, float):
        return field(4, 1, struct.pack("<d", v))
    if isinstance(v, bytes):
        return ld(7, v)
    if isinstance(v, list):
        return ld(5, b"".join(ld(1, any_value(x)) for x in v))
    if isinstance(v, dict):
        return ld(6, b"".join(ld(1, key_value(k, x)) for k, x in v.items()))
    return ld(1, str(v))


def key_value(k, v):
    return ld(1, k) + ld(2, any_value(v))


def attrs(number, mapping):
    return b"".join(ld(number, key_value(k, v)) for k, v in mapping.items())


def pb_span(s):
    out = ld(1, bytes.fromhex(s["trace"])) + ld(2, bytes.fromhex(s["span"]))
    if s.get("parent"):
        out += ld(4, bytes.fromhex(s["parent"]))
    out += ld(5, s["name"]) + field(6, 0, s.get("kind", 1))
    out += field(7, 1, struct.pack("<Q", s["start"])) + field(8, 1, struct.pack("<Q", s["end"]))
    out += attrs(9, s.get("attrs", {}))
    for e in s.get("events", []):
        out += ld(11, field(1, 1, struct.pack("<Q", e["time"])) + ld(2, e["name"]) + attrs(3, e.get("attrs", {})))
    for link in s.get("links", []):
        out += ld(13, ld(1, bytes.fromhex(link["trace"])) + ld(2, bytes.fromhex(link["span"])))
    if "status" in s:
        out += ld(15, ld(2, s["status"][1]) + field(3, 0, s["status"][0]))
    return out


def pb_request(resource_attrs, spans):
    scope = ld(1, ld(1, "agl") + ld(2, "0.1"))
    scope_spans = scope + b"".join(ld(2, pb_span(s)) for s in spans)
    resource_spans = ld(1, attrs(1, resource_attrs)) + ld(2, scope_spans) + ld(3, "https://opentelemetry.io/schemas/1.21.0")
    return ld(1, resource_spans)


def json_value(v):
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [json_value(x) for x in v]}}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": json_value(x)} for k, x in v.items()]}}
    return {"stringValue": str(v)}


def json_attrs(mapping):
    return [{"key": k, "value": json_value(v)} for k, v in mapping.items()]


def json_request(resource_attrs, spans):
    out = []
    for s in spans:
        j = {
            "traceId": s["trace"], "spanId": s["span"], "name": s["name"], "kind": s.get("kind", 1),
            "startTimeUnixNano": str(s["start"]), "endTimeUnixNano": str(s["end"]),
            "attributes": json_attrs(s.get("attrs", {})),
            "events": [{"timeUnixNano": str(e["time"]), "name": e["name"], "attributes": json_attrs(e.get("attrs", {}))}
                       for e in s.get("events", [])],
            "links": [{"traceId": l["trace"], "spanId": l["span"]} for l in s.get("links", [])],
        }
        if s.get("parent"):
            j["parentSpanId"] = s["parent"]
        if "status" in s:
            j["status"] = {"code": s["status"][0], "message": s["status"][1]}
        out.append(j)
    return json.dumps({"resourceSpans": [{
        "resource": {"attributes": json_attrs(resource_attrs)},
        "scopeSpans": [{"scope": {"name": "agl", "version": "0.1"}, "spans": out}],
    }]})


T0 = 1_700_000_000_000_000_000
OTLP_CASES = [
    ({"service.name": "agent", "agentlightning.rollout_id": "ro-1", "agentlightning.attempt_id": "at-1"},
     [{"trace": "0af7651916cd43dd8448eb211c80319c", "span": "b7ad6b7169203331", "name": "openai.chat.completion",
       "start": T0, "end": T0 + 5_000_000,
       "attrs": {"gen_ai.prompt.0.content": "hi", "gen_ai.usage.input_tokens": 3, "temperature": 0.5,
                 "stream": False, "stop": ["\n", "END"], "extra": {"a": 1}},
       "events": [{"time": T0 + 1, "name": "token", "attrs": {"n": 1}}],
       "status": (1, "")}]),
    ({"service.name": "agent"},
     [{"trace": "0af7651916cd43dd8448eb211c80319c", "span": "00f067aa0ba902b7", "parent": "b7ad6b7169203331",
       "name": "agentlightning.reward", "start": T0, "end": T0,
       "attrs": {"agentlightning.rollout_id": "ro-2", "agentlightning.attempt_id": "at-2",
                 "agentlightning.span_sequence_id": 7, "reward": 1.0},
       "links": [{"trace": "0af7651916cd43dd8448eb211c80319c", "span": "b7ad6b7169203331"}],
       "status": (2, "boom")},
      {"trace": "0af7651916cd43dd8448eb211c80319c", "span": "00f067aa0ba902b8", "name": "no-ids",
       "start": T0, "end": T0 + 1}]),
    ({"agentlightning.rollout_id": "ro-3", "agentlightning.attempt_id": "at-3", "agentlightning.span_sequence_id": "12"},
     [{"trace": "ffffffffffffffffffffffffffffffff", "span": "0000000000000000", "parent": "0000000000000000",
       "name": "", "kind": 3, "start": 0, "end": (1 << 64) - 1, "attrs": {"bytes": b"\x00\x01", "big": -(1 << 63)}}]),
]


def otlp_seeds():
    write("otlp", b"\x00")
    write("otlp", b"\x01{}")
    for resource_attrs, spans in OTLP_CASES:
        pb = pb_request(resource_attrs, spans)
        js = json_request(resource_attrs, spans)
        write("otlp", b"\x00" + pb)
        write("otlp", b"\x04" + pb)                          # gzipped by the harness
        write("otlp", b"\x08" + gzip.compress(pb))           # gzip as sent
        write("otlp", b"\x01" + js.encode())
        write("otlp", b"\x06" + js.encode())
        write("otlp", b"\x09" + gzip.compress(js.encode()))
        # And the same requests through the server's /v1/traces (route 20).
        write("store_routes", bytes([20]) + pb)
        write("store_routes", bytes([20 + 21 * 6]) + js.encode())


# --- store routes ------------------------------------------------------------------------------

ROUTES = [
    "/v1/agl/queues/rollouts/enqueue", "/v1/agl/queues/rollouts/dequeue", "/v1/agl/rollouts",
    "/v1/agl/rollouts/search", "/v1/agl/rollouts/{r}", "/v1/agl/rollouts/{q}", "/v1/agl/rollouts/{r}/attempts",
    "/v1/agl/rollouts/{q}/attempts", "/v1/agl/rollouts/{r}/attempts/search", "/v1/agl/rollouts/{r}/attempts/latest",
    "/v1/agl/rollouts/{r}/attempts/{a}", "/v1/agl/workers/search", "/v1/agl/workers/{w}", "/v1/agl/resources",
    "/v1/agl/resources/latest", "/v1/agl/resources/{rs}", "/v1/agl/spans", "/v1/agl/spans/search",
    "/v1/agl/spans/next", "/v1/agl/waits/rollouts", "/v1/traces",
]


def route_indices(path):
    """Every route (by index) whose pattern matches `path`, ids being any segment."""
    found = []
    for i, pattern in enumerate(ROUTES):
        regex = "^" + re.sub(r"\{[a-z]+\}", "[^/]+", pattern) + "$"
        if re.match(regex, path) and not (pattern.endswith("{r}") and path.endswith(("/search", "/latest"))):
            found.append(i)
    return found


def exchanges():
    with open(ROOT / "tests/fixtures/agentlightning-0.3/exchanges.jsonl") as f:
        for line in f:
            yield json.loads(line)


def route_seeds():
    for e in exchanges():
        if e["method"] != "POST" or e["path"] == "/v1/traces":
            continue
        body = (e.get("req_body") or "").encode()
        for i in route_indices(e["path"].split("?")[0]):
            write("store_routes", bytes([i]) + body)
    for i in range(len(ROUTES)):
        write("store_routes", bytes([i]) + b"{}")


# --- the rest ----------------------------------------------------------------------------------

MANIFESTS = [
    'max-memory-size = "64MiB"\ntimeout = "20s"\nfuel = 1000000\nenv = ["MODE=test"]\nreal-clock = true\n'
    '[llm]\nmodels = ["gpt-x"]\nmax-calls = 10\nmax-tokens = 5000\ntimeout = "30s"\n'
    '[spans]\nmax-count = 500\nmax-bytes = "4MiB"\nmax-attribute-bytes = "8KiB"\n',
    '[llm]\nmax-request = "16MiB"\nmax-output-tokens = 4096\nmax-tools = 8\nmax-tools-size = "64KiB"\n',
    'dir = ["/tmp::/scratch:rw", "/tmp", "/nonexistent::/x:ro"]\nenv = ["HOME", "A=1=2"]\n',
    'max-memory-size = "268435456"\ntimeout = "0.5"\noutput-capture = "64k"\n',
    'timeout = "1500ms"\n[llm]\ntimeout = "5m"\n[spans]\nmax-attribute-bytes = "1"\n',
    'timeout = "2h"\nmax-memory-size = "1GiB"\n',
    "network = true\n",
    "99999999999999999999s\n18446744073709551615\n256 MiB\n1.5h\n::/x\n/tmp:rw\nNAME\n=v\n",
]


def policy_seeds():
    for m in MANIFESTS:
        write("policy_manifest", m)


def guest_seeds():
    inputs = []
    for path in sorted(ROOT.glob("examples/*/data/*.jsonl")):
        inputs += [line for line in path.read_text().splitlines()[:3] if line.strip()]
    configs = ['', '{"max_attempts": 3, "retry_condition": ["failed", "timeout"]}',
               '{"timeout_seconds": 600.0, "unresponsive_seconds": null, "max_attempts": 2, "retry_condition": ["failed"]}',
               '{"timeout_seconds": 0, "unresponsive_seconds": 1.5, "max_attempts": 1, "retry_condition": ["unresponsive"]}']
    metadata = ['', '{"i": 0}', '{"split": "train", "tags": ["a", 1, null]}']
    for k, text in enumerate(inputs):
        selector = (k * 2) % 256 & 0xFE
        write("guest_values", bytes([selector]) + "\0".join([text, configs[k % 4], metadata[k % 3]]).encode())
        write("guest_values", bytes([selector | 0x40]) + "\0".join([text, configs[(k + 1) % 4], ""]).encode())
    resources = [p.read_text() for p in sorted(ROOT.glob("examples/**/*resources*.json"))]
    for e in exchanges():
        if e["method"] == "POST" and e["path"].startswith("/v1/agl/resources"):
            resources.append(e["req_body"])
    llm = ('{"llm": {"resource_type": "llm", "endpoint": "http://127.0.0.1:9/v1", "model": "m", '
           '"api_key": "sk-secret", "sampling_parameters": {"temperature": 0.7}}, '
           '"proxy": {"resource_type": "proxy_llm", "endpoint": "http://x", "model": "n"}}')
    resources.append(llm)
    for i, text in enumerate(resources):
        write("guest_values", b"\x01" + text.encode() + b"\0" + resources[(i + 1) % len(resources)].encode())


def llm_seeds():
    base = [
        {"messages": [{"role": "system", "content": "Solve the problem."},
                      {"role": "user", "content": "Tom has 12 apples and buys 7 more. How many apples does he have now?"}],
         "model": None, "temperature": 0.0, "max_tokens": 64, "stop": [], "tools": []},
        {"messages": [{"role": "user", "content": "You are reviewing a prompt template. Study the runs with a low reward"}],
         "model": "scripted", "temperature": None, "max_tokens": None, "stop": ["\n\n"], "tools": []},
        {"messages": [{"role": "user", "content": "weather?"},
                      {"role": "assistant", "content": ""},
                      {"role": "tool", "content": "{\"temp\": 21}", "tool_call_id": "call-1"}],
         "model": None, "temperature": 1.5, "max_tokens": 4096, "stop": [],
         "tools": [{"name": "get_weather", "description": "the weather of a city",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]},
        {"messages": [], "model": None, "temperature": None, "max_tokens": None, "stop": [], "tools": []},
    ]
    for request in base:
        write("llm_request", json.dumps(request))


def template_seeds():
    templates = []
    for p in sorted(ROOT.glob("examples/**/*resources*.json")):
        for resource in json.loads(p.read_text()).values():
            if resource.get("resource_type") == "prompt_template":
                templates.append(resource["template"])
    templates += [p.read_text()[:2000] for p in sorted(ROOT.glob("plugins/apo/prompts/*.md"))]
    templates += ["Q: {question} {{json}} {question}", "{ a } {b}{{}}}}", "{x", "x}", "{a b}", "{é_1}", "<prompt>{q}</prompt>",
                  "```text\n{question}\n```"]
    for t in templates:
        write("template", t.encode() + b"\0question=2+2?\nq=x\ntemplate=T\n")


if __name__ == "__main__":
    otlp_seeds()
    route_seeds()
    policy_seeds()
    guest_seeds()
    llm_seeds()
    template_seeds()
    for folder in sorted(OUT.iterdir()):
        if folder.is_dir():
            print(folder.name, len(list(folder.iterdir())))
