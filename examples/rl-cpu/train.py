"""The RL loop on CPU: a tiny policy learns the task from scratch through sandboxed agents.

    policy server (server.py) <-- agl-host store --llm-proxy --llm-token-ids <-- agl-host runner
                                   (LightningStore + LLM proxy)                  (Python agent, Rust agent)
          ^                                     |
          | POST /v1/weights v{n+1}             | spans: prompt/response token ids, logprobs, reward
          +------ this trainer (GRPO step) <----+

Each step: enqueue PROMPTS x GROUP train rollouts with the resources version whose `proxy_llm`
names `rl-policy@v{n}`; wait; read the token-exact samples from the store; one GRPO update (plain
PyTorch, see README); save, load it into the server as v{n+1} and publish it as a new resources
version. Every `--val-every` steps, greedy val rollouts of every task give the val reward.

    target/rl-venv/bin/python examples/rl-cpu/train.py --steps 60 --out target/rl-cpu/run
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
from store_reader import Sample, Store, read_samples  # noqa: E402


def agl_host_binary() -> str:
    if os.environ.get("AGL_HOST"):
        return os.environ["AGL_HOST"]
    for candidate in (REPO / "target/release/agl-host", REPO / "target/debug/agl-host"):
        if candidate.exists():
            return str(candidate)
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


class Services:
    """The policy server, the store with its LLM proxy, and one runner per agent."""

    def __init__(self, out: Path, agl_host: str, runners: int):
        self.procs: list[subprocess.Popen] = []
        self.out = out
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


def publish(services: Services, policy: P.Policy, version: int, out: Path) -> str:
    """Save the weights, load them into the server as v{version}, and publish a resources version
    whose proxy_llm names that model; returns its resources_id."""
    path = out / "weights" / f"v{version}.pt"
    path.parent.mkdir(exist_ok=True)
    P.save(policy, str(path))
    post(services.server_url + "/v1/weights", {"version": f"v{version}", "path": str(path)})
    resources = {"llm": {"resource_type": "proxy_llm", "endpoint": services.store.url + "/v1",
                         "model": f"rl-policy@v{version}", "sampling_parameters": {}}}
    return services.store.call("POST", "/v1/agl/resources", resources)["resources_id"]


def run_rollouts(services: Services, inputs: list[dict], mode: str, resources_id: str, timeout: float = 300):
    rollouts = services.store.call("POST", "/v1/agl/queues/rollouts/enqueue", {
        "rollouts": [{"input": t, "mode": mode, "resources_id": resources_id} for t in inputs]})
    ids = [r["rollout_id"] for r in rollouts]
    deadline = time.time() + timeout
    done: dict[str, dict] = {}
    while len(done) < len(ids):
        services.check()
        pending = [i for i in ids if i not in done]
        for r in services.store.call("POST", "/v1/agl/waits/rollouts", {"rollout_ids": pending, "timeout": 5}):
            done[r["rollout_id"]] = r
        if time.time() > deadline:
            raise RuntimeError(f"{len(ids) - len(done)} rollouts did not finish in {timeout}s")
    samples = read_samples(services.store, [done[i] for i in ids])
    return rollouts, samples


def check_token_exact(policy: P.Policy, tok, samples: list[Sample], version: int) -> float:
    """Tokens trained on are the tokens sampled: the ids decode to the recorded text, match the
    sampler's token strings, come from the version being trained, and the trainer's log-probs of
    them under that version equal the sampler's. Returns the largest log-prob difference."""
    eos = tok.token_to_id("[EOS]")
    for s in samples:
        assert s.model == f"rl-policy@v{version}", (s.model, version)
        assert s.response_ids and len(s.logprobs) == len(s.response_ids), s
        assert [tok.id_to_token(i) for i in s.response_ids] == s.tokens, (s.response_ids, s.tokens)
        assert tok.decode([i for i in s.response_ids if i != eos], skip_special_tokens=True) == s.text, s
    with torch.no_grad():
        lp, mask = P.sequence_logprobs(policy, [s.prompt_ids for s in samples], [s.response_ids for s in samples])
    sampled = torch.zeros_like(lp)
    for i, s in enumerate(samples):
        sampled[i, : len(s.logprobs)] = torch.tensor(s.logprobs)
    gap = float(((lp - sampled).abs() * mask).max())
    assert gap < 1e-3, f"trainer log-probs differ from the sampler's by {gap}"
    return gap


def grpo_step(policy, optimizer, samples: list[Sample], inner: int, clip: float, entropy_coef: float) -> dict:
    """GRPO: advantages are rewards normalised within each prompt's group; the clipped
    importance-ratio objective against the sampler's log-probs, averaged over tokens, plus a small
    entropy bonus (a 100k-parameter policy from scratch otherwise collapses onto one answer before
    it learns to read the prompt, and then its groups carry no signal)."""
    groups: dict[tuple, list[int]] = {}
    for i, s in enumerate(samples):
        groups.setdefault(tuple(s.prompt_ids), []).append(i)
    adv = torch.zeros(len(samples))
    for members in groups.values():
        r = torch.tensor([samples[i].reward for i in members])
        a = (r - r.mean()) / (r.std(unbiased=False) + 1e-4) if len(members) > 1 else torch.zeros_like(r)
        adv[members] = a
    old = torch.zeros(len(samples), max(len(s.response_ids) for s in samples))
    for i, s in enumerate(samples):
        old[i, : len(s.logprobs)] = torch.tensor(s.logprobs)
    prompts, responses = [s.prompt_ids for s in samples], [s.response_ids for s in samples]
    policy.train()
    for _ in range(inner):
        lp, mask, entropy = P.sequence_logprobs(policy, prompts, responses, with_entropy=True)
        ratio = torch.exp(lp - old)
        a = adv[:, None]
        objective = torch.minimum(ratio * a, torch.clamp(ratio, 1 - clip, 1 + clip) * a)
        loss = -((objective + entropy_coef * entropy) * mask).sum() / mask.sum()
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
        optimizer.step()
    policy.eval()
    return {"loss": loss.item(), "entropy": float((entropy * mask).sum() / mask.sum()), "groups_with_signal": int(sum(1 for m in groups.values()
                                                              if len({samples[i].reward for i in m}) > 1))}


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
    ax.set_xlabel("step (policy version)")
    ax.set_ylabel("mean reward")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("rl-cpu: GRPO through agl-host's sandboxed agents and LLM proxy")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--prompts", type=int, default=8, help="tasks per step")
    parser.add_argument("--group", type=int, default=16, help="rollouts per task (GRPO group)")
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--inner", type=int, default=2, help="gradient steps per batch")
    parser.add_argument("--clip", type=float, default=0.2)
    parser.add_argument("--entropy", type=float, default=0.05, help="entropy bonus coefficient")
    parser.add_argument("--val-every", type=int, default=4)
    parser.add_argument("--runners", type=int, default=4, help="agents in flight per runner (one runner per agent)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(REPO / "target/rl-cpu/run"))
    args = parser.parse_args(argv)

    torch.set_num_threads(1)
    random.seed(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    all_tasks = tasks.all_tasks()
    tok = P.build_tokenizer()
    policy = P.new_policy(P.PolicyConfig(seed=args.seed))
    optimizer = torch.optim.Adam(policy.parameters(), lr=args.lr)
    metrics: list[dict] = []
    started = time.time()
    services = Services(out, agl_host_binary(), args.runners)
    try:
        resources_id = publish(services, policy, 0, out)

        def validate(step: int, resources_id: str) -> None:
            _, samples = run_rollouts(services, all_tasks, "val", resources_id)
            reward = sum(s.reward for s in samples) / max(1, len(all_tasks))
            row = {"step": step, "val_reward": reward, "val_samples": len(samples), "seconds": time.time() - started}
            metrics.append(row)
            print(json.dumps(row), flush=True)

        validate(0, resources_id)
        for step in range(1, args.steps + 1):
            batch = random.sample(all_tasks, args.prompts)
            rollouts, samples = run_rollouts(services, [t for t in batch for _ in range(args.group)], "train", resources_id)
            assert len(samples) >= 0.9 * len(rollouts), f"only {len(samples)} of {len(rollouts)} rollouts gave samples"
            gap = check_token_exact(policy, tok, samples, step - 1)
            stats = grpo_step(policy, optimizer, samples, args.inner, args.clip, args.entropy)
            resources_id = publish(services, policy, step, out)
            by_agent = {}
            for s in samples:
                by_agent.setdefault((s.worker_id or "?").split("-")[0], []).append(s.reward)
            row = {"step": step, "train_reward": sum(s.reward for s in samples) / len(samples),
                   "samples": len(samples), "logprob_gap": gap, **stats,
                   "rollouts_by_agent": {k: len(v) for k, v in sorted(by_agent.items())},
                   "resources_id": resources_id, "seconds": time.time() - started}
            metrics.append(row)
            print(json.dumps(row), flush=True)
            if step % args.val_every == 0 or step == args.steps:
                validate(step, resources_id)
    finally:
        services.close()
        (out / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
        if metrics:
            plot(metrics, out / "reward.png")
    val = [m["val_reward"] for m in metrics if "val_reward" in m]
    summary = {"steps": args.steps, "seconds": round(time.time() - started, 1), "first_val_reward": val[0],
               "final_val_reward": val[-1], "best_val_reward": max(val), "plot": str(out / "reward.png")}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary), flush=True)
    return summary


if __name__ == "__main__":
    main()
