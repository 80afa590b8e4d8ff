"""Tests of the math agent in plain CPython (no wasm): the grading rules and one rollout against
agl.testing.LocalHost. Run from examples/math-agent-py:
PYTHONPATH=../../sdk/python python3 -m unittest"""

from __future__ import annotations

import unittest

import app
from agl.host import Level
from agl.testing import LocalHost, run
from grading import last_number, same_number, shown

TASK = {"question": "Tom has 12 apples and buys 7 more. How many apples does he have now?", "answer": "19"}


class GradingTests(unittest.TestCase):
    def test_the_last_number_wins(self) -> None:
        self.assertEqual(last_number("12 + 7 = 19. The answer is 19"), 19.0)
        self.assertEqual(last_number("She had 45, gave 18, so 27 are left."), 27.0)

    def test_separators_decimals_and_signs(self) -> None:
        self.assertEqual(last_number("It costs $1,200."), 1200.0)
        self.assertEqual(last_number("about 4.5 km"), 4.5)
        self.assertEqual(last_number("the change is -3"), -3.0)
        self.assertEqual(last_number("3-2"), 2.0)
        self.assertEqual(last_number("list: 1, 2, 3"), 3.0)
        self.assertEqual(last_number("é-5"), -5.0)

    def test_no_number_is_none(self) -> None:
        self.assertIsNone(last_number("I do not know."))
        self.assertIsNone(last_number(""))

    def test_comparison_is_numeric(self) -> None:
        self.assertTrue(same_number(19.0, "19"))
        self.assertTrue(same_number(19.0, " 19.0 "))
        self.assertTrue(same_number(1200.0, "1,200"))
        self.assertFalse(same_number(18.0, "19"))
        self.assertFalse(same_number(19.0, "nineteen"))

    def test_numbers_are_shown_as_the_rust_agent_shows_them(self) -> None:
        self.assertEqual([shown(19.0), shown(4.5), shown(-3.0), shown(None)], ["19", "4.5", "-3", "no number"])


class RolloutTests(unittest.TestCase):
    def test_a_right_last_number_earns_1(self) -> None:
        host = LocalHost(prompts={"prompt": "Problem: {question}"}, reply=lambda r: "7 more makes 19")
        self.assertEqual(run(app.rollout, TASK, host).reward, 1.0)
        self.assertEqual(host.requests[0].messages[0].content, "Problem: " + TASK["question"])
        self.assertEqual(host.logged(Level.INFO), ["extracted answer: 19 (expected 19)"])
        self.assertEqual(host.feedback, [], "no feedback on a right answer")

    def test_a_stray_number_at_the_end_earns_0_with_feedback(self) -> None:
        host = LocalHost(prompts={"prompt": "Problem: {question}"}, reply=lambda r: "19, in 2.5 steps")
        self.assertEqual(run(app.rollout, TASK, host).reward, 0.0)
        self.assertEqual(host.feedback, ["expected 19, got 2.5"])

    def test_without_a_prompt_resource_the_fallback_is_used(self) -> None:
        host = LocalHost(reply=lambda r: "no idea")
        self.assertEqual(run(app.rollout, TASK, host).reward, 0.0)
        self.assertTrue(host.requests[0].messages[0].content.startswith("Solve the problem and end with the number."))
        self.assertEqual(host.logged(Level.INFO), ["extracted answer: no number (expected 19)"])
        self.assertEqual(host.feedback, ["expected 19, got no number"])


if __name__ == "__main__":
    unittest.main()
