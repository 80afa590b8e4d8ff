"""The task: each prompt names a key; the right answer is one of K direction words, fixed per key
by a seeded table. A random policy is right about 1/V of the time (V: the vocabulary); one that
learnt the table, always. The agents only compare the first word of the reply with the answer."""

from __future__ import annotations

import json
import random

KEYS = ["red", "blue", "green", "gold", "pink", "grey", "teal", "plum",
        "jade", "ruby", "sand", "navy", "rose", "lime", "coal", "snow"]
ANSWERS = ["north", "south", "east", "west"]
FILLER = ["which", "way", "is", "?"]
VOCABULARY = FILLER + KEYS + ANSWERS


def table(seed: int = 7) -> dict[str, str]:
    """Each answer is right for as many keys as the others (no majority answer to collapse onto)."""
    answers = ANSWERS * (len(KEYS) // len(ANSWERS))
    random.Random(seed).shuffle(answers)
    return dict(zip(KEYS, answers))


def all_tasks(seed: int = 7) -> list[dict]:
    return [{"question": f"which way is {k} ?", "answer": a} for k, a in table(seed).items()]


if __name__ == "__main__":
    for task in all_tasks():
        print(json.dumps(task))
