"""Short mode of the RL loop: the real pipeline (policy server, agl-host store + LLM proxy with
token ids, Python and Rust agents in the sandbox, the store reader, GRPO) for a few steps; the
greedy val reward must rise by a clear margin. No timing assertions.

    target/rl-venv/bin/python -m pytest examples/rl-cpu/test_rl_cpu.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import policy as P  # noqa: E402
import tasks  # noqa: E402
import train  # noqa: E402


def test_tokenizer_and_sampler_agree_with_the_trainer():
    tok = P.build_tokenizer()
    pol = P.new_policy(P.PolicyConfig())
    prompt = P.encode_prompt(tok, [{"role": "user", "content": tasks.all_tasks()[0]["question"]}])
    assert tok.token_to_id("[UNK]") not in prompt
    ids, logprobs = P.sample(pol, prompt, 2, 1.0, tok.token_to_id("[EOS]"))
    recomputed, mask = P.sequence_logprobs(pol, [prompt], [ids])
    assert mask.sum() == len(ids)
    assert abs(recomputed[0, : len(ids)] - __import__("torch").tensor(logprobs)).max() < 1e-4


def test_short_run_learns():
    with tempfile.TemporaryDirectory() as out:
        summary = train.main(["--steps", "24", "--val-every", "8", "--out", out])
        metrics = [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines()]
        assert (Path(out) / "reward.png").stat().st_size > 0
    trained = [m for m in metrics if "train_reward" in m]
    # Both sandboxed agents took part, and every step's samples were token-exact (train.py asserts it).
    assert {k for m in trained for k in m["rollouts_by_agent"]} == {"py", "rs"}
    assert all(m["logprob_gap"] < 1e-3 for m in trained)
    assert summary["first_val_reward"] <= 0.3
    assert summary["best_val_reward"] >= summary["first_val_reward"] + 0.4, summary
