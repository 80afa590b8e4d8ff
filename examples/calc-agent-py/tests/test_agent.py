"""Tests of the calculator agent in plain CPython (no wasm): the pyparsing calculator and a tool
round against agl.testing.LocalHost. Needs pyparsing (pip install pyparsing==3.2.3). Run from
examples/calc-agent-py: PYTHONPATH=../../sdk/python python3 -m unittest"""

from __future__ import annotations

import unittest
from fractions import Fraction

import agl
import app
from agl.llm import ChatRequest, ChatResponse
from agl.testing import LocalHost, run
from calculator import CalculatorError, calculate, show

TASK = {"question": "A garden has 7 rows of 13 tulips. How many tulips are there?", "answer": "91"}


class CalculatorTests(unittest.TestCase):
    def test_precedence_parentheses_signs_and_separators(self) -> None:
        self.assertEqual(calculate("7 * 13"), 91)
        self.assertEqual(calculate("100 - (37 + 28)"), 35)
        self.assertEqual(calculate("2 + 3 * 4 - 6 / 3"), 12)
        self.assertEqual(calculate("-(2 - 5) * 1,000"), 3000)
        self.assertEqual(calculate("1 / 3"), Fraction(1, 3))
        self.assertEqual([show(Fraction(7)), show(Fraction(15, 2)), show(Fraction(1, 3))], ["7", "7.5", "1/3"])

    def test_what_it_refuses(self) -> None:
        for expression in ["8 x 11", "__import__('os')", "1 / (2 - 2)", ""]:
            with self.assertRaises(CalculatorError, msg=expression):
                calculate(expression)


class RolloutTests(unittest.TestCase):
    def test_a_tool_round_then_the_final_answer(self) -> None:
        def reply(request: ChatRequest) -> ChatResponse:
            last = request.messages[-1]
            if last.role == "tool":
                return ChatResponse(content=f"So {last.content}.")
            call = agl.ToolCall("c1", "calculate", '{"expression": "7 * 13"}')
            return ChatResponse(content="", tool_calls=[call], finish_reason="tool_calls")

        host = LocalHost(reply=reply)
        self.assertEqual(run(app.rollout, TASK, host).reward, 1.0)
        second = host.requests[1]
        self.assertEqual([m.role for m in second.messages], ["user", "assistant", "tool"])
        self.assertEqual(second.messages[2].content, "91")
        self.assertEqual(second.tools[0].name, "calculate")
        self.assertEqual([(o.name, o.error) for o in host.operations], [("tools", None)])

    def test_a_bad_expression_is_answered_with_its_error(self) -> None:
        def reply(request: ChatRequest) -> ChatResponse:
            if request.messages[-1].role == "tool":
                return ChatResponse(content="I could not compute it.")
            call = agl.ToolCall("c1", "calculate", '{"expression": "7 x 13"}')
            return ChatResponse(content="", tool_calls=[call], finish_reason="tool_calls")

        host = LocalHost(reply=reply)
        self.assertEqual(run(app.rollout, TASK, host).reward, 0.0)
        self.assertTrue(host.requests[1].messages[2].content.startswith("error: cannot read '7 x 13'"))


if __name__ == "__main__":
    unittest.main()
