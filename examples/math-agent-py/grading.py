"""Grading a reply: find the last number in free text ("1,200", "-3", "4.5") and compare it with
the expected answer numerically. Pure functions, tested with `python3 -m unittest` (no wasm).
The same rules as the Rust math agent's `grading.rs`, so both agents grade every reply alike."""

from __future__ import annotations

from typing import Optional


def last_number(text: str) -> Optional[float]:
    """The last number written in ``text``, if any.

    Thousands separators are dropped ("1,200" is 1200), a ``-`` directly before the digits makes it
    negative unless it follows a letter or digit ("3-2" reads 3 and 2), and a trailing full stop is
    not a decimal point ("19." is 19).
    """

    def digit_at(i: int) -> bool:
        return i < len(text) and text[i] in "0123456789"

    last: Optional[float] = None
    i = 0
    while i < len(text):
        if not digit_at(i):
            i += 1
            continue
        negative = i > 0 and text[i - 1] == "-" and (i < 2 or not text[i - 2].isascii() or not text[i - 2].isalnum())
        number = "-" if negative else ""
        while digit_at(i) or (i < len(text) and text[i] == "," and digit_at(i + 1)):
            if text[i] != ",":
                number += text[i]
            i += 1
        if i < len(text) and text[i] == "." and digit_at(i + 1):
            number += "."
            i += 1
            while digit_at(i):
                number += text[i]
                i += 1
        last = float(number)
    return last


def same_number(value: float, expected: str) -> bool:
    """Whether ``value`` is the number ``expected`` says (commas allowed, e.g. "1,200")."""
    try:
        want = float(expected.strip().replace(",", ""))
    except ValueError:
        return False
    return abs(value - want) < 1e-9


def shown(value: Optional[float]) -> str:
    """A number as the Rust agent writes it in its log: 19.0 as "19", 4.5 as "4.5"."""
    if value is None:
        return "no number"
    if value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value)
