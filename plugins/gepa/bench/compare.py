#!/usr/bin/env python3
"""GEPA against APO and the reference `gepa` package (0.1.4) on the simulated LLM.

For every seed and budget (rollouts), runs
  - `agl-host run --algo gepa` (max_rollouts = budget), and as `gepa-nocache` with
    `cache_evaluation: false` (every outcome paid for, however often it is needed),
  - `agl-host run --algo apo` (the most rounds whose worst case fits the budget),
  - `gepa.optimize` (max_metric_calls = budget) with an adapter whose task and reflection calls go
    to the same Rust simulator, served as an OpenAI-compatible endpoint by
    `agl-host store --llm-proxy --llm-simulate SPEC`,
all on `agl-host --llm-simulate spec.json` with the spec's seed set to the run's seed (so each
seed is another world: which failure modes affect which task, the noise and the reflection draws),
then scores each method's best prompt on the held-out scheduling family (data/heldout.jsonl, never
shown to an optimiser) through the same endpoint. Writes OUT/runs.jsonl (one line per run, kept:
a rerun skips what is there), OUT/summary.md (medians and spread) and OUT/compare.png.

  python3 plugins/gepa/bench/compare.py                         # the full sweep: seeds 0-9, budgets 100 200 400
  python3 plugins/gepa/bench/compare.py --seeds 0-2 --budgets 100,200
  python3 plugins/gepa/bench/compare.py --summarise-only

Needs a built agl-host (--host, default target/debug/agl-host) and a venv with gepa==0.1.4 and
matplotlib (--python-venv is not needed: run this script with that venv's python, e.g.
target/gepa-ref/venv/bin/python).
"""

import argparse
import contextlib
import json
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
DATA = HERE / "data"
SEED_TEMPLATE = json.loads((HERE / "seed-resources.json").read_text())["prompt"]["template"]
METHODS = ["seed", "apo", "gepa", "gepa-nocache", "gepa-package", "gepa-package@spent"]

# APO's shape, scaled to these budgets (its defaults, beam 4 x branch 4 with 16-task val batches,
# spend ~300 rollouts a round here); only the number of rounds follows the budget.
APO_SHAPE = {"beam_width": 2, "branch_factor": 2, "gradient_batch_size": 3, "val_batch_size": 8}
MINIBATCH = 3


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- the agent's grading, for the gepa package's adapter (plugins/gepa/bench/agent/src/lib.rs) ---


def grade(reply):
    lines = [line.strip() for line in reply.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    if last == "ANSWER: correct":
        return 1.0, None
    prefix = "ANSWER: wrong — "
    why = last[len(prefix) :] if last.startswith(prefix) else f"the answer is not in the expected form: {last}"
    return 0.0, f"Wrong answer: the model {why}."


class Endpoint:
    """`agl-host store --llm-proxy --llm-simulate SPEC`: the simulator over HTTP."""

    def __init__(self, host, spec):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [host, "store", "--port", str(self.port), "--llm-proxy", "--llm-proxy-port", "0",
             "--llm-simulate", str(spec), "--threads", "1", "--token", "bench"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        self.url = f"http://127.0.0.1:{self.port}/v1/chat/completions"
        for _ in range(200):
            try:
                self.chat("[task probe family none] ping")
                return
            except (OSError, urllib.error.URLError):
                time.sleep(0.05)
        raise RuntimeError("the simulator endpoint did not start")

    def chat(self, text):
        body = json.dumps({"model": "simulated", "messages": [{"role": "user", "content": text}]}).encode()
        request = urllib.request.Request(self.url, body, {"Content-Type": "application/json", "Authorization": "Bearer bench"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)["choices"][0]["message"]["content"]

    def close(self):
        self.proc.terminate()
        self.proc.wait()


def score(endpoint, template, tasks):
    """Mean reward of a prompt template on tasks, graded as the bench agent grades."""
    rewards = [grade(endpoint.chat(template.replace("{question}", t["question"])))[0] for t in tasks]
    return sum(rewards) / len(rewards)


# --- agl-host runs ---


def host_run(args, algo, config, spec, seed, workdir):
    config_path = workdir / f"{algo}-config.json"
    config_path.write_text(json.dumps(config))
    out = workdir / f"{algo}-results.json"
    command = [
        args.host, "run", "--agent", str(args.agent), "--algo", algo,
        "--train", str(DATA / "train.jsonl"), "--val", str(DATA / "val.jsonl"),
        "--resources", str(HERE / "seed-resources.json"), "--llm-simulate", str(spec),
        "--algo-config", str(config_path), "--seed", str(seed), "--output", str(out),
    ]
    done = subprocess.run(command, capture_output=True, text=True, cwd=workdir)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}\n{done.stderr[-3000:]}")
    return json.loads(out.read_text())


def rollouts_of(results):
    """Every rollout of the run (the results file's `total.rollouts`)."""
    return results["total"]["rollouts"]


def run_gepa(args, spec, seed, budget, workdir, cache=True):
    config = {"seed": seed, "max_rollouts": budget, "max_reflection_calls": budget, "minibatch_size": MINIBATCH,
              "cache_evaluation": cache, **args.gepa_config}
    results = host_run(args, "gepa", config, spec, seed, workdir)
    summary = results["algorithm_summary"]
    return {
        "val": summary["best"]["score"],
        "prompt": summary["best"]["components"]["prompt"],
        "rollouts": summary["budget"]["rollouts_used"],
        "seed_val": summary["candidates"][0]["val_score"],
        "accepted": len(summary["candidates"]) - 1,
        "cache_hits": summary.get("cache_hits", 0),
    }


def run_apo(args, spec, seed, budget, workdir):
    """APO with the most rounds whose run spends at most the budget (rounds tried from 1 up)."""
    kept = None
    for rounds in range(1, 100):
        config = dict(APO_SHAPE, seed=seed, beam_rounds=rounds)
        results = host_run(args, "apo", config, spec, seed, workdir)
        if rollouts_of(results) > budget:
            break
        summary = results["algorithm_summary"]
        kept = {
            "val": summary["best"]["score"],
            "prompt": summary["best"]["template"],
            "rollouts": rollouts_of(results),
            "rounds": rounds,
        }
    return kept


def run_package(endpoint, seed, budget, train, val):
    import gepa
    from gepa.core.adapter import EvaluationBatch

    class SimAdapter:
        propose_new_texts = None

        def evaluate(self, batch, candidate, capture_traces=False):
            outputs, scores, traces = [], [], []
            for task in batch:
                reply = endpoint.chat(candidate["prompt"].replace("{question}", task["question"]))
                reward, feedback = grade(reply)
                outputs.append(reply)
                scores.append(reward)
                traces.append({"input": task["question"], "output": reply, "feedback": feedback})
            return EvaluationBatch(outputs=outputs, scores=scores, trajectories=traces if capture_traces else None)

        def make_reflective_dataset(self, candidate, eval_batch, components_to_update):
            records = [
                {"Inputs": t["input"], "Generated Outputs": t["output"],
                 "Feedback": t["feedback"] or "The answer is correct."}
                for t in eval_batch.trajectories
            ]
            return {name: records for name in components_to_update}

    result = gepa.optimize(
        seed_candidate={"prompt": SEED_TEMPLATE},
        trainset=train,
        valset=val,
        adapter=SimAdapter(),
        reflection_lm=endpoint.chat,
        reflection_minibatch_size=MINIBATCH,
        max_metric_calls=budget,
        seed=seed,
        display_progress_bar=False,
        raise_on_exception=True,
    )
    # The package checks its budget before an iteration, not against the iteration's worst case,
    # so it may spend past max_metric_calls; `val` is its best among the candidates whose val run
    # ended within the budget (the rollouts counted when each was found, plus the val set), the
    # figure compared; `val_returned` is the best it returns, past the budget or not.
    within = [
        i for i, found in enumerate(result.discovery_eval_counts)
        if found + len(val) <= budget or i == 0
    ]
    best_within = max(within, key=lambda i: (result.val_aggregate_scores[i], -i))
    best = result.best_idx
    return {
        "val": result.val_aggregate_scores[best_within],
        "prompt": result.candidates[best_within]["prompt"],
        "rollouts": result.total_metric_calls,
        "val_returned": result.val_aggregate_scores[best],
        "accepted": len(result.candidates) - 1,
    }


def sweep(args):
    out = pathlib.Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    runs_path = out / "runs.jsonl"
    done = {(r["method"], r["seed"], r["budget"]) for r in read_jsonl(runs_path)} if runs_path.exists() else set()
    train, val, heldout = (read_jsonl(DATA / f"{n}.jsonl") for n in ("train", "val", "heldout"))
    base_spec = json.loads((HERE / "spec.json").read_text())
    for seed in args.seeds:
        spec = out / f"spec-{seed}.json"
        spec.write_text(json.dumps(dict(base_spec, seed=seed), indent=1))
        endpoint = Endpoint(args.host, spec)
        try:
            jobs = [("seed", 0)] + [(m, b) for b in args.budgets for m in args.methods if m != "seed"]
            for method, budget in jobs:
                if (method, seed, budget) in done or (method not in args.methods):
                    continue
                started = time.monotonic()
                with tempfile.TemporaryDirectory(dir=out) as tmp:
                    workdir = pathlib.Path(tmp)
                    if method == "seed":
                        row = {"val": score(endpoint, SEED_TEMPLATE, val), "prompt": SEED_TEMPLATE, "rollouts": 0}
                    elif method == "gepa":
                        row = run_gepa(args, spec, seed, budget, workdir)
                    elif method == "gepa-nocache":  # the same, never reusing a paid-for outcome
                        row = run_gepa(args, spec, seed, budget, workdir, cache=False)
                    elif method == "apo":
                        row = run_apo(args, spec, seed, budget, workdir)
                    elif method == "gepa-package":
                        with contextlib.redirect_stdout(sys.stderr):
                            row = run_package(endpoint, seed, budget, train, val)
                    else:  # gepa-package@spent: the package held to what our GEPA spent at this budget
                        ours = next(r for r in read_jsonl(runs_path)
                                    if (r["method"], r["seed"], r["budget"]) == ("gepa", seed, budget))
                        with contextlib.redirect_stdout(sys.stderr):
                            row = run_package(endpoint, seed, ours["rollouts"], train, val)
                if row is None:
                    continue
                row.update(method=method, seed=seed, budget=budget, seconds=round(time.monotonic() - started, 1))
                row["heldout"] = score(endpoint, row["prompt"], heldout)
                with runs_path.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                print(f"seed {seed} budget {budget} {method}: val {row['val']:.3f} heldout {row['heldout']:.3f} "
                      f"rollouts {row['rollouts']} ({row['seconds']}s)", flush=True)
        finally:
            endpoint.close()


def quantiles(values):
    values = sorted(values)
    if len(values) == 1:
        return values[0], values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], statistics.median(values), q[2]


def summarise(args):
    out = pathlib.Path(args.out)
    rows = read_jsonl(out / "runs.jsonl")
    budgets = sorted({r["budget"] for r in rows if r["method"] != "seed"})
    lines = ["| method | budget | seeds | best val: median (IQR; min–max) | rollouts used (median) | "
             "held-out scheduling: median (IQR) |", "|---|---:|---:|---|---:|---|"]
    series = {}
    for method in METHODS:
        for budget in ([0] if method == "seed" else budgets):
            sel = [r for r in rows if r["method"] == method and (method == "seed" or r["budget"] == budget)]
            if not sel:
                continue
            lo, med, hi = quantiles([r["val"] for r in sel])
            hlo, hmed, hhi = quantiles([r["heldout"] for r in sel])
            used = statistics.median([r["rollouts"] or 0 for r in sel])
            vals = [r["val"] for r in sel]
            lines.append(f"| {method} | {budget or '—'} | {len(sel)} | {med:.3f} ({lo:.3f}–{hi:.3f}; "
                         f"{min(vals):.3f}–{max(vals):.3f}) | {used:.0f} | {hmed:.3f} ({hlo:.3f}–{hhi:.3f}) |")
            series.setdefault(method, []).append((budget, lo, med, hi, hlo, hmed, hhi))
    seeds = sorted({r["seed"] for r in rows})
    by = {(r["method"], r["seed"], r["budget"]): r for r in rows}
    paired = ["", "Paired, per seed, our GEPA's best val minus the other's (same seed, same budget):", "",
              "| against | budget | wins / ties / losses | median difference |", "|---|---:|---|---:|"]
    for other in ("gepa-package", "gepa-package@spent", "apo", "gepa-nocache"):
        for budget in budgets:
            diffs = [by[("gepa", s, budget)]["val"] - by[(other, s, budget)]["val"] for s in seeds
                     if ("gepa", s, budget) in by and (other, s, budget) in by]
            if diffs:
                w, l = sum(d > 1e-9 for d in diffs), sum(d < -1e-9 for d in diffs)
                paired.append(f"| {other} | {budget} | {w} / {len(diffs) - w - l} / {l} | "
                              f"{statistics.median(diffs):+.3f} |")
    text = f"Seeds: {', '.join(map(str, seeds))}.\n\n" + "\n".join(lines + paired) + "\n"
    (out / "summary.md").write_text(text)
    print(text)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot", file=sys.stderr)
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, offset, title in ((axes[0], 1, "best val score"), (axes[1], 4, "held-out family (scheduling)")):
        for method, points in series.items():
            if method == "seed":
                _, lo, med, hi = points[0][0], *points[0][offset:offset + 3]
                ax.axhline(med, color="grey", linestyle="--", label="seed prompt")
                ax.axhspan(lo, hi, color="grey", alpha=0.12)
                continue
            xs = [p[0] for p in points]
            lo, med, hi = ([p[offset + i] for p in points] for i in range(3))
            ax.plot(xs, med, marker="o", label=method)
            ax.fill_between(xs, lo, hi, alpha=0.15)
        ax.set_xlabel("budget (rollouts)")
        ax.set_ylabel("score (median, IQR shaded)")
        ax.set_title(title)
        ax.set_ylim(0, 1)
        ax.set_xticks(budgets)
        ax.grid(alpha=0.3)
    axes[0].legend(loc="lower right")
    fig.suptitle(f"Simulated LLM (plugins/gepa/bench/spec.json), seeds {seeds[0]}–{seeds[-1]} ({len(seeds)})")
    fig.tight_layout()
    fig.savefig(out / "compare.png", dpi=110)
    print(f"wrote {out / 'compare.png'}")


def seeds_arg(text):
    if "-" in text:
        a, b = text.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(s) for s in text.split(",")]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=seeds_arg, default=list(range(10)))
    parser.add_argument("--budgets", type=lambda t: [int(b) for b in t.split(",")], default=[100, 200, 400])
    parser.add_argument("--methods", type=lambda t: t.split(","), default=METHODS)
    parser.add_argument("--host", default=str(ROOT / "target/debug/agl-host"))
    parser.add_argument("--agent", default=str(HERE / "agent"))
    parser.add_argument("--out", default=str(ROOT / "target/gepa-bench"))
    parser.add_argument("--gepa-config", type=json.loads, default={},
                        help="extra --algo-config keys for the gepa and gepa-nocache runs (a JSON object), "
                             "e.g. '{\"failure_focused_minibatches\": true}'; use another --out for them")
    parser.add_argument("--summarise-only", action="store_true")
    args = parser.parse_args()
    if not args.summarise_only:
        sweep(args)
    summarise(args)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
