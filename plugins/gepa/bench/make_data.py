#!/usr/bin/env python3
"""Writes the bench's tasks (data/*.jsonl) for the simulated LLM: train and val over the
arithmetic, logic and calendar families, and a held-out scheduling family (data/heldout.jsonl)
that no optimiser sees. Each question carries the `[task ID family FAMILY]` tag the simulator
reads; which failure modes affect a task is the simulator's draw (spec.json's rates and seed)."""
import json
import pathlib

HERE = pathlib.Path(__file__).parent
SUBJECTS = {
    "arithmetic": "a shopping and measurement word problem",
    "logic": "a syllogism about sets of people",
    "calendar": "a question about dates and durations",
    "scheduling": "a meeting to place across two cities",
}


def tasks(family, split, count):
    for i in range(count):
        tid = f"{family[:4]}-{split}-{i:02d}"
        yield {"question": f"[task {tid} family {family}] Solve {SUBJECTS[family]} (#{i})."}


def write(name, rows):
    with open(HERE / "data" / name, "w") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")


write("train.jsonl", [t for f in ("arithmetic", "logic", "calendar") for t in tasks(f, "train", 10)])
write("val.jsonl", [t for f in ("arithmetic", "logic", "calendar") for t in tasks(f, "val", 7)])
write("heldout.jsonl", list(tasks("scheduling", "test", 20)))
