"""The policy: a Hugging Face `transformers` causal LM (`LlamaForCausalLM`, the architecture of
Llama and many open models) made from a tiny `LlamaConfig` with random weights, and a word-level
tokenizer built here with `tokenizers`, wrapped as a `PreTrainedTokenizerFast` with a chat
template. No hub download.

Each version is a `save_pretrained` folder (config.json, model.safetensors, tokenizer files), the
folder a vLLM server (or `AutoModelForCausalLM.from_pretrained`) loads. Shared by the server
(sampling with the model's own `generate`) and the trainer (TRL's GRPO and the token-exactness
check), so both see the same tokens."""

from __future__ import annotations

import os
from typing import Optional

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything is local; never ask the hub
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch
from transformers.utils import logging as _hf_logging

_hf_logging.disable_progress_bar()  # no progress bars per saved or loaded version
import torch.nn.functional as F

import tasks

SPECIALS = ["[PAD]", "[UNK]", "[BOS]", "[SEP]", "[EOS]"]
# The chat template: [BOS], every message's content, [SEP] (the assistant's turn starts after it).
CHAT_TEMPLATE = "[BOS]{% for message in messages %} {{ message['content'] }}{% endfor %} [SEP]"


def build_tokenizer():
    """A word-level tokenizer over the task's words (whitespace split), made here, not downloaded,
    as a `PreTrainedTokenizerFast` with special tokens and the chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(SPECIALS + tasks.VOCABULARY)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    tok.add_special_tokens(SPECIALS)  # already in the vocabulary: marks them special
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", bos_token="[BOS]",
                                   sep_token="[SEP]", eos_token="[EOS]", padding_side="left")
    fast.chat_template = CHAT_TEMPLATE
    return fast


def model_config():
    """A 2-layer, 64-wide Llama (4 heads): 135,104 parameters over the 29-token vocabulary. (Not Qwen2:
    transformers 5 forces `Qwen2Tokenizer`, a byte-level BPE, on any folder whose config says qwen2,
    which drops this word-level tokenizer's pre-tokenizer; for `llama` it trusts tokenizer.json.)"""
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=len(SPECIALS) + len(tasks.VOCABULARY), hidden_size=64, intermediate_size=256,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=32,
        tie_word_embeddings=False, pad_token_id=SPECIALS.index("[PAD]"), bos_token_id=SPECIALS.index("[BOS]"),
        eos_token_id=SPECIALS.index("[EOS]"), use_cache=True,
    )


def new_policy(seed: int = 0):
    """Random init from the config (seeded): the weights a real run would load from a checkpoint."""
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(model_config(), attn_implementation="eager", dtype=torch.float32)
    model.generation_config.pad_token_id = model.config.pad_token_id
    model.generation_config.eos_token_id = model.config.eos_token_id
    return model


def save(model, tok, path: str) -> None:
    """One version: the folder `from_pretrained` (and `vllm serve PATH`) loads."""
    model.save_pretrained(path)
    tok.save_pretrained(path)


def load(path: str):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager", dtype=torch.float32)
    model.eval()
    return model, AutoTokenizer.from_pretrained(path)


def encode_prompt(tok, messages: list[dict]) -> list[int]:
    """The chat template's token ids (what vLLM's chat endpoint returns as prompt_token_ids)."""
    text = tok.apply_chat_template([{"role": m.get("role", "user"), "content": str(m.get("content") or "")}
                                    for m in messages], tokenize=False)
    return tok(text, add_special_tokens=False)["input_ids"]


@torch.no_grad()
def sample(model, prompt_ids: list[int], max_tokens: int, temperature: float,
           eos_id: int) -> tuple[list[int], list[float]]:
    """`model.generate`; returns the new token ids and each one's log-probability under the
    model's own (unprocessed, temperature-1) distribution, as vLLM's default `raw_logprobs`."""
    max_tokens = max(0, min(max_tokens, model.config.max_position_embeddings - len(prompt_ids)))
    if max_tokens == 0:
        return [], []
    ids = torch.tensor([prompt_ids])
    greedy = temperature <= 0
    out = model.generate(
        ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_tokens, do_sample=not greedy,
        temperature=None if greedy else temperature, top_k=None, top_p=None, eos_token_id=eos_id,
        pad_token_id=model.config.pad_token_id, output_logits=True, return_dict_in_generate=True,
    )
    new = out.sequences[0, len(prompt_ids):].tolist()
    logprobs = [float(F.log_softmax(step[0].float(), dim=-1)[t]) for step, t in zip(out.logits, new)]
    return new, logprobs


def sequence_logprobs(model, prompts: list[list[int]], responses: list[list[int]]):
    """Per-token log-probabilities of each response given its prompt (one right-padded forward,
    positions from 0 in every row): a [batch, max_resp] tensor and its mask."""
    seqs = [p + r for p, r in zip(prompts, responses)]
    width = max(len(s) for s in seqs)
    ids = torch.zeros(len(seqs), width, dtype=torch.long)
    attn = torch.zeros(len(seqs), width, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s)
        attn[i, : len(s)] = 1
    logp = F.log_softmax(model(input_ids=ids, attention_mask=attn).logits.float(), dim=-1)
    rwidth = max(len(r) for r in responses)
    out = torch.zeros(len(seqs), rwidth)
    mask = torch.zeros(len(seqs), rwidth)
    for i, (p, r) in enumerate(zip(prompts, responses)):
        if r:
            positions = torch.arange(len(p) - 1, len(p) - 1 + len(r))
            out[i, : len(r)] = logp[i, positions, torch.tensor(r)]
            mask[i, : len(r)] = 1.0
    return out, mask
