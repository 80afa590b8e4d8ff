"""The policy: a small GPT-style transformer made from a config (random init, no hub), and a
word-level tokenizer built locally with `tokenizers`. Shared by the server (sampling) and the
trainer (log-probabilities and the GRPO step), so both see the same tokens and the same maths."""

from __future__ import annotations

import dataclasses
import json
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

import tasks

SPECIALS = ["[PAD]", "[UNK]", "[BOS]", "[SEP]", "[EOS]"]


def build_tokenizer():
    """A word-level tokenizer over the task's words (whitespace split), made here, not downloaded."""
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders

    vocab = {w: i for i, w in enumerate(SPECIALS + tasks.VOCABULARY)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    tok.add_special_tokens(SPECIALS)  # already in the vocabulary: marks them special for decode
    return tok


@dataclasses.dataclass
class PolicyConfig:
    vocab_size: int = len(SPECIALS) + len(tasks.VOCABULARY)
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    max_len: int = 32
    seed: int = 0


class Policy(nn.Module):
    """Decoder-only transformer: token + position embeddings, pre-norm causal blocks, LM head."""

    def __init__(self, config: PolicyConfig):
        super().__init__()
        self.config = config
        self.tok = nn.Embedding(config.vocab_size, config.d_model)
        self.pos = nn.Embedding(config.max_len, config.d_model)
        layer = nn.TransformerEncoderLayer(
            config.d_model, config.n_heads, 4 * config.d_model, dropout=0.0, batch_first=True, norm_first=True
        )
        self.blocks = nn.TransformerEncoder(layer, config.n_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(config.d_model)
        self.head = nn.Linear(config.d_model, config.vocab_size, bias=False)

    def forward(self, ids: torch.Tensor, pad_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Logits [batch, time, vocab] for ids [batch, time] (right-padded; pad_mask True at pads)."""
        t = ids.shape[1]
        x = self.tok(ids) + self.pos(torch.arange(t, device=ids.device))
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        x = self.blocks(x, mask=causal, src_key_padding_mask=pad_mask, is_causal=True)
        return self.head(self.norm(x))


def new_policy(config: PolicyConfig) -> Policy:
    torch.manual_seed(config.seed)
    return Policy(config)


def save(policy: Policy, path: str) -> None:
    torch.save({"config": dataclasses.asdict(policy.config), "state": policy.state_dict()}, path)


def load(path: str) -> Policy:
    blob = torch.load(path, map_location="cpu", weights_only=True)
    policy = Policy(PolicyConfig(**blob["config"]))
    policy.load_state_dict(blob["state"])
    policy.eval()
    return policy


def encode_prompt(tok, messages: list[dict]) -> list[int]:
    """The chat template: [BOS] content of every message, in order [SEP]."""
    text = " ".join(str(m.get("content") or "") for m in messages)
    return [tok.token_to_id("[BOS]")] + tok.encode(text).ids + [tok.token_to_id("[SEP]")]


@torch.no_grad()
def sample(policy: Policy, prompt_ids: list[int], max_tokens: int, temperature: float, eos_id: int,
           generator: Optional[torch.Generator] = None) -> tuple[list[int], list[float]]:
    """Autoregressive sampling; returns the new token ids and each one's log-probability under the
    policy's own distribution (temperature 1, as vLLM's default `raw_logprobs`)."""
    ids = list(prompt_ids)
    out, logprobs = [], []
    for _ in range(max_tokens):
        if len(ids) >= policy.config.max_len:
            break
        logits = policy(torch.tensor([ids]))[0, -1]
        logp = F.log_softmax(logits.float(), dim=-1)
        if temperature <= 0:
            nxt = int(torch.argmax(logits))
        else:
            probs = F.softmax(logits.float() / temperature, dim=-1)
            nxt = int(torch.multinomial(probs, 1, generator=generator))
        out.append(nxt)
        logprobs.append(float(logp[nxt]))
        ids.append(nxt)
        if nxt == eos_id:
            break
    return out, logprobs


def sequence_logprobs(policy: Policy, prompts: list[list[int]], responses: list[list[int]], with_entropy: bool = False):
    """Per-token log-probabilities of each response given its prompt: a padded [batch, max_resp]
    tensor and its mask (and, with_entropy, the entropy of the policy at each of those positions)."""
    seqs = [p + r for p, r in zip(prompts, responses)]
    width = max(len(s) for s in seqs)
    ids = torch.zeros(len(seqs), width, dtype=torch.long)
    pad = torch.ones(len(seqs), width, dtype=torch.bool)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s)
        pad[i, : len(s)] = False
    logp = F.log_softmax(policy(ids, pad).float(), dim=-1)
    rwidth = max(len(r) for r in responses)
    out = torch.zeros(len(seqs), rwidth)
    mask = torch.zeros(len(seqs), rwidth)
    entropy = torch.zeros(len(seqs), rwidth)
    for i, (p, r) in enumerate(zip(prompts, responses)):
        if not r:
            continue
        positions = torch.arange(len(p) - 1, len(p) - 1 + len(r))
        out[i, : len(r)] = logp[i, positions, torch.tensor(r)]
        mask[i, : len(r)] = 1.0
        if with_entropy:
            entropy[i, : len(r)] = -(logp[i, positions].exp() * logp[i, positions]).sum(-1)
    return (out, mask, entropy) if with_entropy else (out, mask)
