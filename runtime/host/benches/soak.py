#!/usr/bin/env python3
"""Soak: do `agl-host store` (SQLite) and `agl-host runner` hold steady over a long run? Not a
test and not in CI (no thresholds): it prints figures, recorded in runtime/host/benches/README.md.

  python3 runtime/host/benches/soak.py [--minutes 60] [--agl-host target/release/agl-host]

A store on a fresh SQLite file (`agl-host store --db sqlite:...`, in a scratch folder under
target/tmp) and one runner process with 2 runners (`agl-host runner --runners 2`) running the
probe guest's `noop` (tests/guests/probe: a fresh sandboxed instance per rollout, one call, a
reward). This script is the algorithm, over the store's HTTP API as Agent-lightning's client
would be: it enqueues a window of `--window` rollouts, waits for them
(`POST /v1/agl/waits/rollouts`), and enqueues the next, so the load is steady and the store keeps
growing (every rollout, attempt and span is kept). Every `--interval` seconds it samples each
process's resident memory (VmRSS, and its parts RssAnon and RssFile), open file descriptors and
threads, and the store's size on disk, into a CSV (`--csv`, default soak.csv in the scratch
folder, which is kept). At the end it stops both with SIGTERM.

It prints the first, last, minimum and maximum of each, and after the warm-up (the first
`--warmup-minutes`, by default a tenth of the run and at least one minute: caches and pools
fill) whether each process's RSS (whole, then its anonymous and its file-backed part) stayed
within +-10 % of its first sample after the warm-up, its trend, the floor and the peak of each
minute (every window makes a sawtooth: a leak shows as them rising), and whether the fds and
threads grew (the second half reaching higher than the first: connections come and go, so they
move by a few).

`--summarise CSV` prints the summary of an earlier soak's samples again.

The probe is built with `cargo run -p agl-guest-build` (tests/guests/probe); the release binary
with `cargo build --release -p agl-host`.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from hostile_rss import build_probe  # the probe guest, built as the other bench script builds it

REPO = Path(__file__).resolve().parents[3]
# The probe imports the LLM interface, so runners need a backend; `noop` never calls it.
RULES = REPO / "examples/math-agent/rules.json"
PROCESSES = ("store", "runner")
FIELDS = ["seconds", "finished", "store_bytes"] + [
    f"{process}_{what}" for process in PROCESSES
    for what in ("rss_kib", "rss_anon_kib", "rss_file_kib", "fds", "threads")
]
# Resident memory, whole and in its two parts: RssAnon is the process's own memory (heap, stacks);
# RssFile is pages of mapped files (the binary; before 2026-11-26 also the SQLite file, which the
# store then mapped up to 1 GiB of): the kernel's page cache, shared and given back under memory
# pressure.
RSS_KINDS = (("rss_kib", "VmRSS"), ("rss_anon_kib", "RssAnon"), ("rss_file_kib", "RssFile"))


def status_field(pid: int, name: str) -> int | None:
    """A numeric field of /proc/PID/status (VmRSS in KiB, Threads), None once the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(name + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def open_fds(pid: int) -> int | None:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def store_bytes(db: Path) -> int:
    """The SQLite file and its write-ahead log."""
    total = 0
    for path in (db, db.with_name(db.name + "-wal")):
        try:
            total += path.stat().st_size
        except OSError:
            pass
    return total


def start_store(agl_host: Path, db: Path, log) -> tuple[subprocess.Popen, str]:
    """`agl-host store` on a free port; returns once it printed where it listens."""
    store = subprocess.Popen(
        [str(agl_host), "store", "--port", "0", "--db", f"sqlite:{db}"],
        stdout=log, stderr=subprocess.PIPE, text=True,
    )
    assert store.stderr is not None
    for line in store.stderr:
        log.write(line)
        if line.startswith("agl-host store: listening on "):
            url = line.split()[4]
            # Keep draining its log so it never blocks on a full pipe.
            threading.Thread(target=lambda: [log.write(rest) for rest in store.stderr], daemon=True).start()
            return store, url
    sys.exit(f"agl-host store exited ({store.wait()}) before it listened; see {log.name}")


def post(url: str, path: str, body: dict, timeout: float = 60.0) -> object:
    request = urllib.request.Request(
        url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return json.loads(answer.read() or b"null")


class Driver(threading.Thread):
    """The algorithm: a window of noop rollouts enqueued, waited for, then the next."""

    def __init__(self, url: str, window: int):
        super().__init__(daemon=True)
        self.url, self.window = url, window
        self.finished = 0
        self.failed = 0
        self.stop = threading.Event()
        self.error: str | None = None

    def run(self) -> None:
        rollout = {"input": {"do": "noop"}, "mode": "train", "resources_id": None, "config": None,
                   "metadata": None}
        try:
            while not self.stop.is_set():
                enqueued = post(self.url, "/v1/agl/queues/rollouts/enqueue",
                                {"rollouts": [rollout] * self.window})
                pending = [r["rollout_id"] for r in enqueued]
                while pending and not self.stop.is_set():
                    done = post(self.url, "/v1/agl/waits/rollouts", {"rollout_ids": pending, "timeout": 5.0})
                    finished = {r["rollout_id"] for r in done}
                    self.finished += len(finished)
                    self.failed += sum(1 for r in done if r["status"] != "succeeded")
                    pending = [id for id in pending if id not in finished]
        except Exception as error:  # reported by main, which stops the soak
            self.error = f"{type(error).__name__}: {error}"


def sample(pids: dict[str, int]) -> dict | None:
    row = {}
    for process, pid in pids.items():
        for field, name in RSS_KINDS:
            row[f"{process}_{field}"] = status_field(pid, name)
        row[f"{process}_fds"] = open_fds(pid)
        row[f"{process}_threads"] = status_field(pid, "Threads")
    return None if None in row.values() else row


def summary(rows: list[dict], warmup_s: float) -> list[str]:
    lines = []
    after = [row for row in rows if row["seconds"] >= warmup_s]
    fields = [field for field in FIELDS[1:] if field in rows[0]]  # an older CSV has no RSS parts
    for field in fields:
        values = [row[field] for row in rows]
        lines.append(
            f"{field:<16} first {values[0]:>13,} last {values[-1]:>13,} min {min(values):>13,} max {max(values):>13,}"
        )
    if len(after) < 2:
        lines.append(f"fewer than two samples after the warm-up ({warmup_s:.0f} s): no verdict")
        return lines
    n = len(after)
    mean_t = sum(r["seconds"] for r in after) / n
    var_t = sum((r["seconds"] - mean_t) ** 2 for r in after)
    for process, (kind, name) in [(p, k) for p in PROCESSES for k in RSS_KINDS]:
        field = f"{process}_{kind}"
        if field not in after[0]:
            continue
        base = after[0][field]
        low, high = min(r[field] for r in after), max(r[field] for r in after)
        within = 0.9 * base <= low and high <= 1.1 * base
        # Least-squares slope of RSS after the warm-up, per hour.
        mean_r = sum(r[field] for r in after) / n
        slope = sum((r["seconds"] - mean_t) * (r[field] - mean_r) for r in after) / var_t if var_t else 0.0
        lines.append(
            f"{process}: after the warm-up ({warmup_s:.0f} s, {n} samples): {name} {base:,} KiB at first, "
            f"{low:,}-{high:,} KiB ({100 * (low / base - 1):+.1f} % to {100 * (high / base - 1):+.1f} %): "
            f"{'within' if within else 'NOT within'} +-10 %; trend {slope * 3600 / 1024:+.1f} MiB per hour"
        )
        # Each window of rollouts makes a sawtooth (its requests and answers are held while they
        # are served): a leak shows as the floor or the peak of the minutes rising.
        minutes: dict[int, list[int]] = {}
        for r in after:
            minutes.setdefault(int((r["seconds"] - after[0]["seconds"]) // 60), []).append(r[field])
        full = [values for _, values in sorted(minutes.items())][:-1] or list(minutes.values())
        for what, pick in (("floor", min), ("peak", max)):
            first, last = pick(full[0]), pick(full[-1])
            lines.append(
                f"{process}: {name} {what} of each minute (its {'lowest' if pick is min else 'highest'} sample): "
                f"first minute {first:,} KiB, last {last:,} KiB ({100 * (last / first - 1):+.1f} %), "
                f"range {min(pick(v) for v in full):,}-{max(pick(v) for v in full):,} KiB over {len(full)} minutes"
            )
        if kind != "rss_kib":
            continue
        # Connections come and go (the fds move by a few): growth is a second half that
        # reaches higher than the first.
        for what in ("fds", "threads"):
            values = [r[f"{process}_{what}"] for r in after]
            first, second = values[: n // 2], values[n // 2:]
            grew = max(second) > max(first)
            lines.append(
                f"{process}: after the warm-up: {what} {min(values)}-{max(values)} (highest {max(first)} in the "
                f"first half, {max(second)} in the second): {'GREW' if grew else 'no growth'}"
            )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0, help="how long to run (default 60)")
    parser.add_argument("--agl-host", default=str(REPO / "target/release/agl-host"))
    parser.add_argument("--interval", type=float, default=5.0, help="seconds between samples (default 5)")
    parser.add_argument("--warmup-minutes", type=float, help="default: a tenth of the run, at least 1")
    parser.add_argument("--window", type=int, default=1000, help="rollouts enqueued at a time (default 1000)")
    parser.add_argument("--runners", type=int, default=2)
    parser.add_argument("--csv", help="where the samples go (default: soak.csv in the scratch folder)")
    parser.add_argument("--summarise", metavar="CSV", help="only print the summary of an earlier soak's CSV")
    args = parser.parse_args()
    warmup = 60 * (args.warmup_minutes if args.warmup_minutes is not None else max(1.0, args.minutes / 10))
    if args.summarise:
        with open(args.summarise, newline="") as samples:
            rows = [{k: float(v) if k == "seconds" else int(v) for k, v in row.items()} for row in csv.DictReader(samples)]
        print("\n".join(summary(rows, warmup)))
        return 0

    agl_host = Path(args.agl_host)
    if not agl_host.is_file():
        sys.exit(f"{agl_host} is missing: cargo build --release -p agl-host")
    duration = args.minutes * 60

    work = REPO / "target/tmp" / f"agl-soak-{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    probe = build_probe()
    db = work / "soak.db"
    csv_path = Path(args.csv) if args.csv else work / "soak.csv"
    store_log = (work / "store.log").open("w")
    runner_log = (work / "runner.log").open("w")
    store, url = start_store(agl_host, db, store_log)
    runner = subprocess.Popen(
        [str(agl_host), "runner", "--store", url, "--agent", str(probe), "--runners", str(args.runners),
         "--llm-script", str(RULES)],
        stdout=subprocess.DEVNULL, stderr=runner_log,
    )
    print(f"soak: {args.minutes:g} min; store at {url} on {db}; {args.runners} runners; windows of "
          f"{args.window}; sampling every {args.interval:g} s into {csv_path}", flush=True)
    driver = Driver(url, args.window)
    driver.start()
    started = time.monotonic()
    rows: list[dict] = []
    ended_early = None
    with csv_path.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=FIELDS)
        writer.writeheader()
        next_sample = started
        while True:
            now = time.monotonic()
            gone = [name for name, p in (("store", store), ("runner", runner)) if p.poll() is not None]
            if gone or driver.error or not driver.is_alive():
                ended_early = f"after {now - started:.0f} s: " + (
                    f"{', '.join(gone)} exited" if gone else f"the driver stopped: {driver.error}"
                )
                break
            if now - started >= duration:
                break
            if now >= next_sample:
                row = sample({"store": store.pid, "runner": runner.pid})
                if row is not None:
                    row.update(seconds=round(now - started, 1), finished=driver.finished,
                               store_bytes=store_bytes(db))
                    rows.append(row)
                    writer.writerow(row)
                    out.flush()
                next_sample += args.interval
            time.sleep(min(0.2, max(0.0, next_sample - time.monotonic())))
    driver.stop.set()
    for process in (runner, store):
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    store_log.close()
    runner_log.close()

    elapsed = rows[-1]["seconds"] if rows else 0
    print(f"\n{len(rows)} samples over {elapsed:.0f} s (CSV: {csv_path}); {driver.finished:,} rollouts "
          f"finished ({driver.failed:,} not succeeded), {driver.finished / max(elapsed, 1):.0f}/s")
    if ended_early is not None:
        print(f"NOTE: the soak ended early, {ended_early} (logs in {work})")
    if rows:
        print("\n".join(summary(rows, warmup)))
    print(f"store exited {store.returncode}, runner exited {runner.returncode} (logs in {work})")
    return 1 if ended_early else 0


if __name__ == "__main__":
    sys.exit(main())
