#!/usr/bin/env bash
# Installs the RL example's Python environment into a venv (default: target/rl-venv), idempotently:
# a venv whose recorded requirements match is left alone. CI calls it as is.
#
#   examples/rl-cpu/setup.sh            # then: target/rl-venv/bin/python examples/rl-cpu/train.py
#   RL_VENV=/some/where examples/rl-cpu/setup.sh
#
# torch, transformers, trl (GRPOTrainer), accelerate, datasets, tokenizers, matplotlib, pytest, at the
# versions pinned in requirements.txt.
# torch: PyTorch's CPU wheel index (~200 MB of torch) when it can be reached; else PyPI's Linux wheel,
# whose dependencies are the CUDA libraries (~5.5 GB installed; `pip install torch --no-deps` does
# not import: torch loads libcublasLt at import time). ~6 GB in all that way.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${RL_VENV:-$repo/target/rl-venv}"
python="${PYTHON:-python3}"
stamp="$venv/.rl-cpu-requirements"
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && cmp -s "$stamp" "$here/requirements.txt" \
    && "$venv/bin/python" -c "import torch, tokenizers, transformers, trl, datasets, matplotlib" 2>/dev/null; then
  echo "rl-cpu: $venv is up to date"
  exit 0
fi
start=$(date +%s)
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
cpu_index=https://download.pytorch.org/whl/cpu
if curl -fsS --max-time 10 -o /dev/null "$cpu_index/torch/" 2>/dev/null; then
  echo "rl-cpu: torch from $cpu_index (CPU only)"
  "$venv/bin/python" -m pip install -q "$(grep '^torch==' "$here/requirements.txt")" --index-url "$cpu_index"
else
  echo "rl-cpu: $cpu_index cannot be reached; torch from PyPI (with its CUDA libraries)"
fi
"$venv/bin/python" -m pip install -q -r "$here/requirements.txt"
cp "$here/requirements.txt" "$stamp"
echo "rl-cpu: installed into $venv in $(( $(date +%s) - start )) s, $(du -sh "$venv" | cut -f1)"
