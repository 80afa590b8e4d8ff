#!/usr/bin/env python3
"""What a hostile agent can make the host hold: peak and steady resident memory (RSS) of
`agl-host` while the probe guest floods its trace.

Not a test (no thresholds): it prints figures, recorded in runtime/host/benches/README.md.

  python3 runtime/host/benches/hostile_rss.py [--agl-host target/debug/agl-host] [--rollouts 100]

1. `agl-host run` (shared memory, the store in the same process): peak RSS of a run whose one
   rollout writes LINES log lines of 64 KiB (default 100,000: 6.4 GB offered) and returns 1.0,
   against a run whose rollout does nothing, and the same with two such rollouts.
2. `agl-host store` + `agl-host runner` (the runner is the process that runs untrusted code):
   ROLLOUTS consecutive flood rollouts; the runner's RSS after every tenth, and the store's.

The probe is built with `cargo run -p agl-guest-build` first (tests/guests/probe).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
# The probe imports the LLM interface, so runs need a backend; it never calls it here.
RULES = str(REPO / "examples/math-agent/rules.json")
KIB = 1024
MIB = 1024 * KIB


def rss_kib(pid: int) -> int:
    """Resident set size of a live process, in KiB (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class PeakSampler:
    """Samples a process's RSS every 20 ms until stopped; keeps the peak."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_kib(self.pid))
            time.sleep(0.02)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def build_probe() -> Path:
    out = subprocess.run(
        ["cargo", "run", "-q", "-p", "agl-guest-build", "--", "tests/guests/probe"],
        cwd=REPO, check=True, capture_output=True, text=True,
    ).stdout.strip().splitlines()
    return Path(out[-1])


def flood_task(lines: int) -> dict:
    return {"do": "trace_flood", "kind": "log", "count": lines, "bytes": 64 * KIB, "then": 1.0}


def peak_of_run(agl_host: str, probe: Path, tasks: list[dict], work: Path) -> tuple[int, float]:
    """Peak RSS (KiB) and wall time of `agl-host run` over `tasks` with the baseline algorithm."""
    data = work / "tasks.jsonl"
    data.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    start = time.monotonic()
    proc = subprocess.Popen(
        [agl_host, "run", "--agent", str(probe), "--algo", "baseline", "--train", str(data),
         "--runners", "1", "--output", str(work / "results.json"), "--no-progress", "--llm-script", RULES],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    sampler = PeakSampler(proc.pid)
    _, err = proc.communicate()
    peak = sampler.stop()
    if proc.returncode != 0:
        sys.exit(f"agl-host run failed ({proc.returncode}): {err[-2000:]}")
    results = json.loads((work / "results.json").read_text())
    if results.get("failures"):
        sys.exit(f"a rollout failed: {results['failures'][:1]}")
    return peak, time.monotonic() - start


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url: str, body: dict) -> object:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"content-type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=600) as answer:
        return json.loads(answer.read())


def wait_healthy(url: str) -> None:
    for _ in range(200):
        try:
            with urllib.request.urlopen(f"{url}/v1/agl/health", timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"no store at {url}")


def remote_series(agl_host: str, probe: Path, rollouts: int, lines: int) -> list[tuple[int, int, int, int]]:
    """(rollouts done, runner RSS KiB, runner peak KiB, store RSS KiB) after every tenth rollout."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    store = subprocess.Popen([agl_host, "store", "--port", str(port)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    runner = None
    try:
        wait_healthy(url)
        # A 4 MiB span budget: the store keeps what each rollout was allowed, and 100 rollouts at
        # the default 32 MiB would be gigabytes of (legitimately) stored spans.
        runner = subprocess.Popen([agl_host, "runner", "--store", url, "--agent", str(probe), "--quiet",
                                   "--llm-script", RULES, "--agent-max-span-bytes", "4MiB"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sampler = PeakSampler(runner.pid)
        series = []
        done = 0
        while done < rollouts:
            batch = min(10, rollouts - done)
            enqueued = post(f"{url}/v1/agl/queues/rollouts/enqueue",
                            {"rollouts": [{"input": flood_task(lines)} for _ in range(batch)]})
            ids = [r["rollout_id"] for r in enqueued]
            finished: set[str] = set()
            while len(finished) < len(ids):
                answer = post(f"{url}/v1/agl/waits/rollouts", {"rollout_ids": ids, "timeout": 60})
                finished |= {r["rollout_id"] for r in answer}
            done += batch
            series.append((done, rss_kib(runner.pid), sampler.peak, rss_kib(store.pid)))
        sampler.stop()
        return series
    finally:
        for proc in (runner, store):
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agl-host", default=str(REPO / "target/debug/agl-host"))
    parser.add_argument("--lines", type=int, default=100_000, help="64 KiB log lines per flood rollout (part 1)")
    parser.add_argument("--rollouts", type=int, default=100, help="consecutive flood rollouts (part 2)")
    parser.add_argument("--remote-lines", type=int, default=5_000,
                        help="64 KiB log lines per rollout in part 2 (10x the default span budget)")
    args = parser.parse_args()
    probe = build_probe()
    print(f"agl-host: {args.agl_host}\nprobe: {probe}\n(peaks: median of 3 runs)")
    def median_peak(tasks: list[dict], work: Path) -> tuple[int, float]:
        runs = sorted(peak_of_run(args.agl_host, probe, tasks, work) for _ in range(3))
        return runs[1]

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        peak_of_run(args.agl_host, probe, [{"do": "noop"}], work)  # warms the compile cache
        idle, idle_s = median_peak([{"do": "noop"}], work)
        one, one_s = median_peak([flood_task(args.lines)], work)
        two, two_s = median_peak([flood_task(args.lines)] * 2, work)
    print("\n== agl-host run: peak RSS")
    print(f"  no-op rollout:                    {idle / KIB:8.1f} MiB  ({idle_s:.1f} s)")
    print(f"  1 flood rollout ({args.lines} x 64 KiB): {one / KIB:8.1f} MiB  (+{(one - idle) / KIB:.1f} MiB, {one_s:.1f} s)")
    print(f"  2 flood rollouts:                 {two / KIB:8.1f} MiB  (+{(two - idle) / KIB:.1f} MiB, {two_s:.1f} s)")
    print("  bound per attempt: memory cap 256 MiB + span budget 32 MiB (defaults)")

    series = remote_series(args.agl_host, probe, args.rollouts, args.remote_lines)
    print(f"\n== agl-host runner: {args.rollouts} flood rollouts ({args.remote_lines} x 64 KiB each, 4 MiB span budget)")
    print("  done   runner RSS   runner peak   store RSS")
    for done, rss, peak, store_rss in series:
        print(f"  {done:4d}  {rss / KIB:8.1f} MiB  {peak / KIB:8.1f} MiB  {store_rss / KIB:8.1f} MiB")
    first, last = series[0][1], series[-1][1]
    print(f"  runner RSS after {series[-1][0]} vs after {series[0][0]}: {100.0 * (last - first) / first:+.1f} %")


if __name__ == "__main__":
    main()
