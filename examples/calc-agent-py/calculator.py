"""A safe calculator for the model's tool calls: arithmetic expressions (numbers, + - * /, unary
minus, parentheses) parsed with a pyparsing grammar and evaluated without `eval`."""

from __future__ import annotations

import operator
from fractions import Fraction
from typing import Any, Callable

import pyparsing as pp

_OPERATORS: dict[str, Callable[[Fraction, Fraction], Fraction]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
}


class CalculatorError(ValueError):
    """The expression is not arithmetic this calculator reads, or divides by zero."""


def _number(tokens: pp.ParseResults) -> Fraction:
    return Fraction(tokens[0].replace(",", ""))


def _sign(tokens: pp.ParseResults) -> Fraction:
    sign, value = tokens[0]
    return -value if sign == "-" else value


def _chain(tokens: pp.ParseResults) -> Fraction:
    items: list[Any] = list(tokens[0])
    value = items[0]
    for op, operand in zip(items[1::2], items[2::2]):
        if op == "/" and operand == 0:
            raise CalculatorError("division by zero")
        value = _OPERATORS[op](value, operand)
    return value


_NUMBER = pp.Regex(r"\d{1,3}(,\d{3})+(\.\d+)?|\d+(\.\d+)?").set_parse_action(_number)
_EXPRESSION = pp.infix_notation(
    _NUMBER,
    [
        (pp.one_of("+ -"), 1, pp.OpAssoc.RIGHT, _sign),
        (pp.one_of("* /"), 2, pp.OpAssoc.LEFT, _chain),
        (pp.one_of("+ -"), 2, pp.OpAssoc.LEFT, _chain),
    ],
)


def calculate(expression: str) -> Fraction:
    """The value of ``expression``; :class:`CalculatorError` when it cannot be read."""
    try:
        result = _EXPRESSION.parse_string(expression, parse_all=True)[0]
    except pp.ParseException as err:
        raise CalculatorError(f"cannot read {expression!r}: {err}") from None
    return Fraction(result)


def show(value: Fraction) -> str:
    """A result as the model should read it: "91", "7.5", "1/3"."""
    if value.denominator == 1:
        return str(value.numerator)
    as_float = float(value)
    return repr(as_float) if Fraction(as_float) == value else f"{value.numerator}/{value.denominator}"
