"""The RL loop on CPU: a tiny `transformers` policy learns the task from scratch, trained by TRL's
GRPOTrainer on samples made by sandboxed agents.

    policy server (server.py) <-- agl-host store --llm-proxy --llm-token-ids <-- agl-host runner
                                   (LightningStore + LLM proxy)                  (Python agent, Rust agent)
          ^                                     |
          | POST /v1/weights vN (folder)        | GET /v1/agl/export/tokens: token ids, loss mask,
          |                                     v logprobs, reward, model, resources_id
          +------ trl.GRPOTrainer (rollout_func = agl-host rollouts)

TRL's generation seam is its `rollout_func` (no vLLM needed in TRL 1.16): for each generation
batch it gets the prompts (each repeated GROUP times), and here it saves the current model as
version vN (`save_pretrained`), loads it into the policy server, publishes a resources version whose
`proxy_llm` names `rl-policy@vN`, enqueues the rollouts, waits, reads their rows from the store's
tokens export, checks them against what the server logged as sampled and against the trainer's
own log-probabilities, and returns prompt/completion ids, the sampler's logprobs and the
agents' rewards. TRL then normalises the rewards per group and takes its own loss and optimizer
steps; `AgentGRPOTrainer` only makes the recorded logprobs the loss's old log-probabilities.
Every `--val-every` steps, greedy val rollouts of every task give the val reward.

    target/rl-venv/bin/python examples/rl-cpu/train.py --steps 40 --out target/rl-cpu/run
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))

import policy as P  # noqa: E402
import tasks  # noqa: E402
from store_reader import Sample, Store, read_samples, worker_ids  # noqa: E402


def agl_host_binary() -> str:
    if os.environ.get("AGL_HOST"):
        return os.environ["AGL_HOST"]
    # The newer of the release and debug builds (the tokens export route is recent).
    built = [c for c in (REPO / "target/release/agl-host", REPO / "target/debug/agl-host") if c.exists()]
    if built:
        return str(max(built, key=lambda c: c.stat().st_mtime))
    found = shutil.which("agl-host")
    if found:
        return found
    sys.exit("no agl-host: build it (cargo build --release -p agl-host) or set AGL_HOST")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, seconds: float = 60) -> None:
    deadline = time.time() + seconds
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except Exception:  # noqa: BLE001 - not up yet
            if time.time() > deadline:
                raise RuntimeError(f"{url} did not come up")
            time.sleep(0.2)


def post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=60) as resp:
        return json.loads(resp.read())


class Services:
    """The policy server, the store with its LLM proxy, and one runner per agent."""

    def __init__(self, out: Path, agl_host: str, runners: int):
        self.procs: list[subprocess.Popen] = []
        self.out = out
        try:
            self._start(agl_host, runners)
        except BaseException:
            self.close()  # what started before the failure does not outlive it
            raise

    def _start(self, agl_host: str, runners: int) -> None:
        out = self.out
        py = sys.executable
        self.server_port, self.store_port, self.agent_port = free_port(), free_port(), free_port()
        self.token = secrets.token_hex(16)
        logs = out / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        self.server_url = f"http://127.0.0.1:{self.server_port}"
        self.spawn([py, str(HERE / "server.py"), "--port", str(self.server_port)], logs / "server.log")
        wait_http(self.server_url + "/health")
        self.spawn([agl_host, "store", "--port", str(self.store_port), "--token", self.token, "--llm-proxy",
                    "--llm-proxy-port", str(self.agent_port), "--llm-endpoint", self.server_url + "/v1",
                    "--llm-model", "rl-policy", "--llm-token-ids", "--llm-train-temperature", "1.0",
                    "--llm-val-temperature", "0"], logs / "store.log")
        self.store = Store(f"http://127.0.0.1:{self.store_port}", self.token)
        wait_http(self.store.url + "/v1/agl/health")
        for prefix, agent in (("py", HERE / "agent-py"), ("rs", HERE / "agent-rs")):
            self.spawn([agl_host, "runner", "--store", self.store.url, "--token", self.token, "--agent", str(agent),
                        "--runners", str(runners), "--worker-prefix", prefix, "--quiet",
                        # The SDK's agents import `llm`, so a runner wants an LLM configured; these
                        # agents never use the import: every call goes through the proxy capability.
                        "--llm-endpoint", self.server_url + "/v1", "--llm-model", "rl-policy",
                        "--agent-http", f"http://127.0.0.1:{self.agent_port}"], logs / f"runner-{prefix}.log")
        # Both agents take part from the first step: wait until each runner is waiting for rollouts
        # (the first start compiles the agent's component, seconds for the Python one).
        deadline = time.time() + 300
        for prefix in ("py", "rs"):
            while "waiting for rollouts" not in (logs / f"runner-{prefix}.log").read_text():
                self.check()
                if time.time() > deadline:
                    raise RuntimeError(f"runner {prefix} did not start; see {logs}")
                time.sleep(0.2)

    def spawn(self, cmd: list[str], log: Path) -> None:
        self.procs.append(subprocess.Popen(cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT, cwd=REPO,
                                           start_new_session=True))

    def check(self) -> None:
        for proc in self.procs:
            if proc.poll() is not None:
                raise RuntimeError(f"{proc.args[:2]} exited with {proc.returncode}; see {self.out}/logs")

    def close(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


class Loop:
    """The trainer's side of agl-host: versions published, rollouts run, samples read and checked."""

    def __init__(self, services: Services, tok, out: Path):
        self.services, self.tok, self.out = services, tok, out
        self.published: dict[int, str] = {}  # version -> resources_id
        self.questions = {t["question"]: t for t in tasks.all_tasks()}
        self.metrics: list[dict] = []
        self.started = time.time()
        self.sampled_logprobs: list[list[float]] = []  # the last batch's, for AgentGRPOTrainer

    def publish(self, model, version: int) -> str:
        """Save the model as folder v{version}, load it into the server, and publish a resources
        version whose proxy_llm names `rl-policy@v{version}`; returns its resources_id."""
        if version in self.published:
            return self.published[version]
        path = self.out / "weights" / f"v{version}"
        P.save(model, self.tok, str(path))
        post(self.services.server_url + "/v1/weights", {"version": f"v{version}", "path": str(path)})
        resources = {"llm": {"resource_type": "proxy_llm", "endpoint": self.services.store.url + "/v1",
                             "model": f"rl-policy@v{version}", "sampling_parameters": {}}}
        rid = self.services.store.call("POST", "/v1/agl/resources", resources)["resources_id"]
        self.published[version] = rid
        return rid

    def run(self, inputs: list[dict], mode: str, resources_id: str, timeout: float = 300):
        """Enqueue the rollouts, wait for all, read their rows from the tokens export: (ids, samples)."""
        store = self.services.store
        rollouts = store.call("POST", "/v1/agl/queues/rollouts/enqueue", {
            "rollouts": [{"input": t, "mode": mode, "resources_id": resources_id} for t in inputs]})
        ids = [r["rollout_id"] for r in rollouts]
        deadline = time.time() + timeout
        done: set[str] = set()
        while len(done) < len(ids):
            self.services.check()
            pending = [i for i in ids if i not in done]
            for r in store.call("POST", "/v1/agl/waits/rollouts", {"rollout_ids": pending, "timeout": 5}):
                done.add(r["rollout_id"])
            if time.time() > deadline:
                raise RuntimeError(f"{len(ids) - len(done)} rollouts did not finish in {timeout}s")
        return ids, read_samples(store, resources_id, mode, ids)

    def validate(self, model, version: int, step: int) -> None:
        all_tasks = tasks.all_tasks()
        ids, samples = self.run(all_tasks, "val", self.publish(model, version))
        reward = sum(samples[i].reward or 0.0 for i in ids if i in samples) / len(all_tasks)
        row = {"step": step, "version": version, "val_reward": reward, "val_samples": len(samples),
               "seconds": round(time.time() - self.started, 1)}
        self.metrics.append(row)
        print(json.dumps(row), flush=True)

    def rollout_func(self, prompts: list, trainer) -> dict:
        """TRL's `rollout_func`: the agents' rollouts of these prompts with the current model."""
        version = trainer.state.global_step
        resources_id = self.publish(trainer.model, version)
        inputs = [self.questions[p[-1]["content"]] for p in prompts]
        ids, samples = self.run(inputs, "train", resources_id)
        present = [samples[i] for i in ids if i in samples]
        assert len(present) >= 0.9 * len(ids), f"only {len(present)} of {len(ids)} rollouts gave samples"
        server_log = get(f"{self.services.server_url}/v1/samples?version=v{version}")["samples"]
        unmatched = check_sampled(present, server_log, version, resources_id)
        gap = check_logprobs(trainer.model, present)
        eos = self.tok.eos_token_id
        # A rollout without a sample (its attempt failed) still needs a row: no reward, so TRL gives
        # it a zero advantage.
        rows = [samples.get(i) or Sample(i, "", prompt_ids_of(self.tok, inputs[k]), [eos], [], [0.0], "", "", None)
                for k, i in enumerate(ids)]
        self.sampled_logprobs = [s.logprobs for s in rows]
        workers = worker_ids(self.services.store, ids)
        by_agent: dict[str, int] = {}
        for s in present:
            agent = (workers.get(s.rollout_id) or "?").split("-")[0]
            by_agent[agent] = by_agent.get(agent, 0) + 1
        row = {"step": len([m for m in self.metrics if "train_reward" in m]) + 1, "version": version,
               "train_reward": sum(s.reward or 0.0 for s in present) / len(ids), "samples": len(present),
               "logprob_gap": gap, "sampler_records_unmatched": unmatched, "rollouts_by_agent": by_agent,
               "resources_id": resources_id, "seconds": round(time.time() - self.started, 1)}
        self.metrics.append(row)
        print(json.dumps(row), flush=True)
        return {"prompt_ids": [s.prompt_ids for s in rows], "completion_ids": [s.response_ids for s in rows],
                "logprobs": [s.logprobs for s in rows], "agl_reward": [s.reward for s in rows]}


def prompt_ids_of(tok, task: dict) -> list[int]:
    return P.encode_prompt(tok, [{"role": "user", "content": task["question"]}])


def check_sampled(samples: list[Sample], server_log: list[dict], version: int, resources_id: str) -> int:
    """Tokens trained on are the tokens sampled: every row of the export came from version
    `version` under `resources_id`, its loss mask covers exactly its response, and its prompt ids,
    response ids and logprobs are one of the completions the policy server logged for that version
    (each used once). Returns how many train-mode completions the server logged that no row used
    (a retried attempt's; 0 normally)."""
    pool: dict[tuple, list[list[float]]] = {}
    for rec in server_log:
        if rec["temperature"] > 0:  # train mode (the proxy sets T=1 for train, 0 for val)
            pool.setdefault((tuple(rec["prompt_token_ids"]), tuple(rec["token_ids"])), []).append(rec["logprobs"])
    for s in samples:
        assert s.model == f"rl-policy@v{version}" and s.resources_id == resources_id, (s.model, s.resources_id, version)
        assert s.response_ids and len(s.logprobs) == len(s.response_ids), s
        assert s.loss_mask == [0] * len(s.prompt_ids) + [1] * len(s.response_ids), s
        logged = pool.get((tuple(s.prompt_ids), tuple(s.response_ids)))
        assert logged, f"{s.rollout_id}: tokens {s.prompt_ids} -> {s.response_ids} were not sampled by v{version}"
        sampled = logged.pop()
        assert max(abs(a - b) for a, b in zip(sampled, s.logprobs)) < 1e-6, (sampled, s.logprobs)
    return sum(len(v) for v in pool.values())


def check_logprobs(model, samples: list[Sample]) -> float:
    """The trainer's log-probabilities of the sampled ids under the version being trained equal
    the sampler's (asserted < 1e-3); returns the largest difference."""
    with torch.no_grad():
        lp, mask = P.sequence_logprobs(model, [s.prompt_ids for s in samples], [s.response_ids for s in samples])
    sampled = torch.zeros_like(lp)
    for i, s in enumerate(samples):
        sampled[i, : len(s.logprobs)] = torch.tensor(s.logprobs)
    gap = float(((lp - sampled).abs() * mask).max())
    assert gap < 1e-3, f"trainer log-probs differ from the sampler's by {gap}"
    return gap


def agent_reward(prompts, completions, agl_reward, **kwargs) -> list:
    """TRL reward function: the reward the agent recorded in the store (None: unscorable)."""
    return list(agl_reward)


def make_trainer_class():
    from trl import GRPOTrainer

    class AgentGRPOTrainer(GRPOTrainer):
        """GRPOTrainer whose importance ratio is taken against the sampler's recorded logprobs:
        after TRL builds the batch (`_generate_and_score_completions`: padding, rewards, group
        advantages), its `old_per_token_logps` are replaced by the logprobs in the store's rows
        (right-padded like `completion_ids`). The largest difference from TRL's own recomputation
        (present when num_iterations > 1) is kept in `trl_logprob_gap`."""

        loop: Loop

        def _generate_and_score_completions(self, inputs):
            out = super()._generate_and_score_completions(inputs)
            ids = out["completion_ids"]
            recorded = torch.zeros(ids.shape, dtype=torch.float32, device=ids.device)
            for i, lps in enumerate(self.loop.sampled_logprobs):
                recorded[i, : len(lps)] = torch.tensor(lps)
            if out.get("old_per_token_logps") is not None and self.loop.metrics:
                gap = ((out["old_per_token_logps"] - recorded).abs() * out["completion_mask"]).max()
                self.loop.metrics[-1]["trl_logprob_gap"] = float(gap)
            out["old_per_token_logps"] = recorded
            return out

    return AgentGRPOTrainer


def plot(metrics: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    train = [m for m in metrics if "train_reward" in m]
    val = [m for m in metrics if "val_reward" in m]
    ax.plot([m["step"] for m in train], [m["train_reward"] for m in train], label="train reward (sampled, T=1)", alpha=0.6)
    ax.plot([m["step"] for m in val], [m["val_reward"] for m in val], "o-", label="val reward (greedy)")
    ax.axhline(1 / len(tasks.ANSWERS), ls=":", c="grey", label=f"1/k (k={len(tasks.ANSWERS)})")
    ax.set_xlabel("step (generation batch)")
    ax.set_ylabel("mean reward")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("rl-cpu: TRL GRPO on samples from agl-host's sandboxed agents")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


class Progress:
    """TrainerCallback: TRL's logged loss and entropy onto the step's row; val every --val-every steps."""

    def __init__(self, loop: Loop, args):
        from transformers import TrainerCallback

        self.loop, self.args = loop, args
        outer = self

        class Callback(TrainerCallback):
            def on_log(self, args, state, control, logs=None, model=None, **kwargs):
                rows = [m for m in outer.loop.metrics if "train_reward" in m]
                if rows and logs:
                    for key in ("loss", "entropy", "clip_ratio/region_mean", "frac_reward_zero_std", "grad_norm"):
                        if key in logs:
                            rows[-1].setdefault("trl", {})[key] = logs[key]

            def on_step_end(self, args, state, control, model=None, **kwargs):
                step, rest = divmod(state.global_step, outer.args.iterations)
                if rest == 0 and (step % outer.args.val_every == 0 or step == outer.args.steps):
                    outer.loop.validate(model, state.global_step, step)

        self.callback = Callback()


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=40, help="generation batches (policy versions sampled)")
    parser.add_argument("--prompts", type=int, default=8, help="tasks per step")
    parser.add_argument("--group", type=int, default=16, help="rollouts per task (GRPO group)")
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--iterations", type=int, default=2, help="TRL num_iterations: optimizer steps per batch")
    parser.add_argument("--clip", type=float, default=0.2, help="TRL epsilon")
    parser.add_argument("--beta", type=float, default=0.0, help="TRL beta (KL to the initial policy)")
    parser.add_argument("--loss-type", default="dapo", help="TRL loss_type")
    parser.add_argument("--val-every", type=int, default=4)
    parser.add_argument("--runners", type=int, default=4, help="agents in flight per runner (one runner per agent)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(REPO / "target/rl-cpu/run"))
    args = parser.parse_args(argv)

    import trl
    from datasets import Dataset
    from trl import GRPOConfig

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is marked experimental
    torch.set_num_threads(1)
    random.seed(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tok = P.build_tokenizer()
    model = P.new_policy(args.seed)
    dataset = Dataset.from_list([{"prompt": [{"role": "user", "content": t["question"]}], "answer": t["answer"]}
                                 for t in tasks.all_tasks()])
    config = GRPOConfig(
        output_dir=str(out / "trl"), per_device_train_batch_size=args.prompts * args.group,
        num_generations=args.group, gradient_accumulation_steps=1, num_iterations=args.iterations,
        max_steps=args.steps * args.iterations, learning_rate=args.lr, lr_scheduler_type="constant",
        warmup_steps=0, weight_decay=0.0, max_grad_norm=1.0, epsilon=args.clip, beta=args.beta,
        loss_type=args.loss_type, max_completion_length=2, logging_steps=1, report_to="none",
        save_strategy="no", use_cpu=True, bf16=False, fp16=False, seed=args.seed, disable_tqdm=True, dataloader_num_workers=0,
    )
    services = Services(out, agl_host_binary(), args.runners)
    loop = Loop(services, tok, out)
    try:
        trainer_class = make_trainer_class()
        trainer_class.loop = loop
        trainer = trainer_class(model=model, reward_funcs=[agent_reward], args=config, train_dataset=dataset,
                                processing_class=tok, rollout_func=loop.rollout_func,
                                callbacks=[Progress(loop, args).callback])
        from transformers import PrinterCallback

        trainer.remove_callback(PrinterCallback)  # TRL's logs go into metrics.jsonl (`trl`)
        loop.validate(trainer.model, 0, 0)
        trainer.train()
    finally:
        services.close()
        metrics = loop.metrics
        (out / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
        if metrics:
            plot(metrics, out / "reward.png")
    val = [m["val_reward"] for m in metrics if "val_reward" in m]
    to_08 = next((m for m in metrics if m.get("val_reward", 0) >= 0.8), None)
    summary = {"steps": args.steps, "seconds": round(time.time() - loop.started, 1), "trl": trl.__version__,
               "first_val_reward": val[0], "final_val_reward": val[-1], "best_val_reward": max(val),
               "first_step_at_0.8": to_08 and to_08["step"], "seconds_to_0.8": to_08 and to_08["seconds"],
               "plot": str(out / "reward.png")}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary), flush=True)
    return summary


if __name__ == "__main__":
    main()
