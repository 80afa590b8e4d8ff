"""probe-py: the hostile Python guest. Its task is {"do": "<action>", ...}; each action does what
its name says, so the host's sandbox tests can check that every limit holds for a Python
component as it does for the Rust probe (same action names, same "may it?" convention; see
tests/guests/README.md)."""

from __future__ import annotations

# Every module is imported here, at the top: the build runs this module once and keeps only the
# modules imported by then (a module first imported inside a function is not found at run time).
import encodings.idna  # noqa: F401 - socket's host-name lookups need it
import os
import socket
import sys
import time
from typing import Any, Callable, Optional

import agl
from agl.http import Target, WitHttp

MIB = 1024 * 1024


def verdict(ctx: agl.Ctx, action: str, attempt: Callable[[], str]) -> float:
    """The "may it?" convention: log "<action>: allowed: <detail>" or "<action>: denied: <error>"
    (info level) and return 1.0 if the operation went through, 0.0 if it was denied. Never raises."""
    try:
        detail = attempt()
    except Exception as err:  # noqa: BLE001 - any refusal is the verdict
        ctx.info(f"{action}: denied: {type(err).__name__}: {err}")
        return 0.0
    ctx.info(f"{action}: allowed: {detail}")
    return 1.0


def spin(task: dict, ctx: agl.Ctx) -> float:
    """Never returns: the host's CPU limit has to stop it."""
    turns = 0
    while True:
        turns += 1


def sleep(task: dict, ctx: agl.Ctx) -> float:
    """`time.sleep(secs)`: waits in a host call, which the deadline must cut short."""
    time.sleep(float(task["secs"]))
    return 1.0


def memory_bomb(task: dict, ctx: agl.Ctx) -> float:
    """Never returns: holds 16 MiB chunks, every byte written, until the memory limit stops it."""
    hoard = []
    while True:
        hoard.append(b"\x01" * (16 * MIB))


def deep_recursion(task: dict, ctx: agl.Ctx) -> float:
    """Unbounded recursion. With the default recursion limit Python stops it (RecursionError); with
    "limit" set high, the interpreter's own stack in wasm is what runs out."""
    if "limit" in task:
        sys.setrecursionlimit(int(task["limit"]))

    def down(depth: int) -> int:
        return down(depth + 1) + 1

    return float(down(0))


def read_file(task: dict, ctx: agl.Ctx) -> float:
    path = task["path"]

    def attempt() -> str:
        with open(path, "rb") as f:
            data = f.read()
        return f"read {len(data)} bytes from {path}: {data[:200]!r}"

    return verdict(ctx, "read_file", attempt)


def list_dir(task: dict, ctx: agl.Ctx) -> float:
    path = task["path"]

    def attempt() -> str:
        names = sorted(os.listdir(path))
        return f"{len(names)} entries in {path}: {', '.join(names[:50])}"

    return verdict(ctx, "list_dir", attempt)


def read_env(task: dict, ctx: agl.Ctx) -> float:
    name: Optional[str] = task.get("name")

    def attempt() -> str:
        if name is not None:
            if name not in os.environ:
                raise KeyError(f"{name}: not present")
            return f"{name}={os.environ[name]}"
        if not os.environ:
            raise LookupError("no environment variables visible")
        return f"{len(os.environ)} variables: " + ", ".join(f"{k}={v}" for k, v in os.environ.items())

    return verdict(ctx, "read_env", attempt)


def open_socket(task: dict, ctx: agl.Ctx) -> float:
    """A TCP connection to addr, then a UDP socket bound on its IP (port 0); 1.0 if either works."""
    host, _, port = task["addr"].rpartition(":")

    def tcp() -> str:
        with socket.create_connection((host, int(port)), timeout=2) as conn:
            return f"tcp connect to {task['addr']} from {conn.getsockname()}"

    def udp() -> str:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.bind((host, 0))
            return f"udp bind on {sock.getsockname()}"

    return max(verdict(ctx, "open_socket", tcp), verdict(ctx, "open_socket", udp))


def http_get(task: dict, ctx: agl.Ctx) -> float:
    """``ctx.http().get(url)`` ("timeout" seconds, optional): 1.0 if a response came (its status
    and body logged), 0.0 if it raised an ``agl.HttpError`` (the sandbox's refusal, a timeout...).
    With "raw": true the SDK's checks of the URL are skipped: its parts go to ``wasi:http`` as
    written (user info included), as a guest bypassing the SDK would send them."""
    url = task["url"]

    def attempt() -> str:
        if task.get("raw"):
            scheme, _, rest = url.partition("://")
            authority, slash, path = rest.partition("/")
            request = agl.HttpRequest("GET", url, {"x-probe": "probe-py"}, None, task.get("timeout"))
            response = WitHttp().send(request, Target(scheme, authority, slash + path))
        else:
            response = ctx.http().get(url, headers={"x-probe": "probe-py"}, timeout=task.get("timeout"))
        return f"status {response.status}, {len(response.body)} bytes: {response.text()[:200]}"

    return verdict(ctx, "http_get", attempt)


def stdout_flood(task: dict, ctx: agl.Ctx) -> float:
    """Writes "bytes" (10 MiB) to stdout and a sixteenth of that to stderr, in 64 KiB lines; a write
    error stops that stream and is logged (warn)."""
    total = int(task.get("bytes", 10 * MIB))
    line = "x" * (64 * 1024 - 1) + "\n"
    for stream, name, amount in [(sys.stdout, "stdout", total), (sys.stderr, "stderr", total // 16)]:
        written = 0
        try:
            while written < amount:
                n = min(len(line), amount - written)
                stream.write(line[:n])
                written += n
            stream.flush()
            ctx.info(f"stdout_flood: wrote {written} bytes to {name}")
        except Exception as err:  # noqa: BLE001 - a closed stream is an outcome, not a failure
            ctx.warn(f"stdout_flood: {name} failed after {written} bytes: {err}")
    return 1.0


def huge_error(task: dict, ctx: agl.Ctx) -> float:
    raise agl.AglError("E" * int(task["bytes"]))


def panic(task: dict, ctx: agl.Ctx) -> float:
    raise RuntimeError("probe: panic on purpose")


def error_text(task: dict, ctx: agl.Ctx) -> float:
    raise agl.AglError(str(task["text"]))


def flaky(task: dict, ctx: agl.Ctx) -> float:
    if ctx.attempt_number == 1:
        raise RuntimeError("probe: flaky, the first attempt fails on purpose")
    return 1.0


def llm_once(task: dict, ctx: agl.Ctx) -> float:
    ctx.llm.ask(task.get("prompt", "Say hello."), model=task.get("model"))
    return 1.0


def llm_flood(task: dict, ctx: agl.Ctx) -> float:
    """chat up to "calls" times; stops at the first error (logged, warn); the reward is the count."""
    done = 0
    for _ in range(int(task.get("calls", 1000))):
        try:
            ctx.llm.ask("flood")
        except agl.LlmError as err:
            ctx.warn(f"llm_flood: stopped after {done} calls: {err}")
            break
        done += 1
    return float(done)


def host_calls(task: dict, ctx: agl.Ctx) -> float:
    for _ in range(int(task["n"])):
        ctx.debug("probe")
    return 1.0


def clock_and_random(task: dict, ctx: agl.Ctx) -> float:
    start = time.monotonic_ns()
    now = time.time_ns()
    ctx.object({
        "system_time": {"secs": now // 1_000_000_000, "nanos": now % 1_000_000_000},
        "instant_diff_nanos": time.monotonic_ns() - start,
        "random": [int.from_bytes(os.urandom(8), "little") for _ in range(4)],
    })
    return 1.0


def emit_rewards(task: dict, ctx: agl.Ctx) -> None:
    ctx.reward("a", 0.5)
    ctx.reward(0.25)


def operation(task: dict, ctx: agl.Ctx) -> float:
    try:
        with ctx.operation("probe-operation"):
            ctx.llm.ask("inside an operation")
            ctx.info("inside the operation")
            raise agl.AglError("operation failed on purpose")
    except agl.AglError:
        pass
    return 1.0


def feedback(task: dict, ctx: agl.Ctx) -> Optional[float]:
    """Asks the LLM "ask" (when given), gives each of "texts" (and "repeat" more copies of the
    last) as feedback, then returns "reward" (none when absent), or raises "failed on purpose"
    when "fail"."""
    if task.get("ask") is not None:
        ctx.llm.ask(task["ask"])
    texts = [str(text) for text in task["texts"]]
    for text in texts:
        ctx.feedback(text)
    for _ in range(int(task.get("repeat", 0)) if texts else 0):
        ctx.feedback(texts[-1])
    if task.get("fail"):
        raise agl.AglError("failed on purpose")
    reward = task.get("reward")
    return None if reward is None else float(reward)


ACTIONS: dict[str, Callable[[dict, agl.Ctx], Any]] = {
    "noop": lambda task, ctx: 1.0,
    "spin": spin,
    "sleep": sleep,
    "memory_bomb": memory_bomb,
    "deep_recursion": deep_recursion,
    "read_file": read_file,
    "list_dir": list_dir,
    "read_env": read_env,
    "open_socket": open_socket,
    "http_get": http_get,
    "stdout_flood": stdout_flood,
    "huge_error": huge_error,
    "error_text": error_text,
    "panic": panic,
    "flaky": flaky,
    "llm_once": llm_once,
    "llm_flood": llm_flood,
    "host_calls": host_calls,
    "clock_and_random": clock_and_random,
    "emit_rewards": emit_rewards,
    "operation": operation,
    "feedback": feedback,
    "garbage_reward": lambda task, ctx: float("nan"),
    "reward": lambda task, ctx: float(task["value"]),
}


@agl.rollout
def rollout(task: dict, ctx: agl.Ctx) -> Optional[float]:
    """Runs the action the task names."""
    action = ACTIONS.get(task.get("do", "")) if isinstance(task, dict) else None
    if action is None:
        raise agl.TaskError(f"task does not match probe-py's actions: {task!r}")
    try:
        return action(task, ctx)
    except KeyError as err:
        raise agl.TaskError(f"task does not match probe-py's actions: missing argument {err}") from None
