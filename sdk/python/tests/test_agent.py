"""Unit tests of the SDK's pure-Python parts, against agl.testing.LocalHost (no wasm).

Run from sdk/python: python3 -m unittest
"""

from __future__ import annotations

import dataclasses
import enum
import json
import pathlib
import sys
import types
import unittest
from typing import Callable

import agl
from agl import agent
from agl.host import Level, LlmEndpoint, Mode
from agl.llm import ChatRequest, ChatResponse, Message, Tool, ToolCall
from agl.template import format_template, placeholders
from agl.testing import LocalHost, run


@dataclasses.dataclass
class Task:
    question: str
    answer: str
    hint: str = ""


def echo_agent(task: dict, ctx: agl.Ctx) -> float:
    prompt = ctx.prompt("prompt").format(question=task["question"])
    reply = ctx.llm.ask(prompt)
    ctx.info(f"reply: {reply}")
    return 1.0 if reply == task["answer"] else 0.0


class RolloutTests(unittest.TestCase):
    def test_a_rollout_formats_asks_logs_and_returns_its_reward(self) -> None:
        host = LocalHost(prompts={"prompt": "Q: {question}"}, reply=lambda r: "19")
        outcome = run(echo_agent, {"question": "12+7?", "answer": "19"}, host)
        self.assertEqual(outcome, agent.Outcome(reward=1.0))
        self.assertEqual(host.requests[0].messages, [Message.user("Q: 12+7?")])
        self.assertEqual(host.logged(Level.INFO), ["reply: 19"])

    def test_an_exception_fails_the_attempt_with_its_message_and_logs_the_traceback(self) -> None:
        def broken(task: dict, ctx: agl.Ctx) -> float:
            raise ValueError("no luck")

        host = LocalHost()
        outcome = run(broken, {}, host)
        self.assertEqual(outcome.error, "ValueError: no luck")
        [trace] = host.logged(Level.ERROR)
        self.assertIn("rollout raised ValueError", trace)
        self.assertIn("raise ValueError", trace)

    def test_the_traceback_logged_is_bounded(self) -> None:
        def deep(n: int) -> None:
            if n == 0:
                raise RuntimeError("x" * 10_000)
            deep(n - 1)

        host = LocalHost()
        outcome = run(lambda task, ctx: deep(50), {}, host)
        self.assertTrue(outcome.error is not None and outcome.error.startswith("RuntimeError: xxx"))
        [trace] = host.logged(Level.ERROR)
        self.assertLess(len(trace.encode()), agent.TRACEBACK_LIMIT + 100)

    def test_sdk_errors_fail_with_their_own_message(self) -> None:
        host = LocalHost(prompts={"prompt": "Q: {question}"})
        outcome = run(lambda task, ctx: ctx.prompt("prompt").format(text="x"), {}, host)
        self.assertEqual(outcome.error, "prompt `prompt`: no value for placeholder `{question}` (given: text)")
        outcome = run(lambda task, ctx: ctx.prompt("other"), {}, host)
        self.assertEqual(outcome.error, "no resource named `other` in this rollout's resources (version local)")

    def test_return_values(self) -> None:
        self.assertEqual(run(lambda t, c: None, {}).reward, None)
        self.assertEqual(run(lambda t, c: 1, {}).reward, 1.0)
        self.assertIsNone(run(lambda t, c: 0.5, {}).error)
        outcome = run(lambda t, c: "1.0", {})
        self.assertEqual(outcome.error, "the rollout returned str; return a number (the reward) or None")

    def test_a_dataclass_task_is_built_from_the_json_object(self) -> None:
        seen = []

        def typed(task: Task, ctx: agl.Ctx) -> None:
            seen.append(task)

        self.assertIsNone(run(typed, {"question": "q", "answer": "a", "extra": 1}).error)
        self.assertEqual(seen, [Task("q", "a")])
        outcome = run(typed, {"question": "q"})
        self.assertEqual(outcome.error, "task does not match Task: missing field(s) answer")
        self.assertEqual(run(typed, "[1]").error, "task does not match Task: expected a JSON object, got list")
        self.assertTrue(run(typed, "not json").error.startswith("task is not JSON"))

    def test_the_context_carries_the_rollout_identity(self) -> None:
        seen = {}

        def who(task: dict, ctx: agl.Ctx) -> None:
            seen.update(r=ctx.rollout_id, a=ctx.attempt_id, n=ctx.attempt_number, m=ctx.mode, v=ctx.resources_id)

        run(who, {}, attempt_number=2, mode=Mode.VAL, resources_id="rs-1")
        self.assertEqual(seen, {"r": "ro-local", "a": "at-local-2", "n": 2, "m": Mode.VAL, "v": "rs-1"})

    def test_a_bindings_record_is_a_context_and_its_mode_is_read_by_name(self) -> None:
        # In a component the WIT's rollout-context record is handed over as it is: same field
        # names, and a mode from the bindings' own enum (integer values), mapped by name.
        class WitMode(enum.Enum):
            TRAIN = 0
            VAL = 1

        record = types.SimpleNamespace(
            rollout_id="ro-1", attempt_id="at-1", attempt_number=1, mode=WitMode.VAL, resources_id=None
        )
        ctx = agl.Ctx(LocalHost(), record)
        self.assertIs(ctx.mode, Mode.VAL)
        self.assertIsNone(agl.Ctx(LocalHost(), types.SimpleNamespace(mode=None)).mode)

    def test_tasks_parse_as_json_loads_does(self) -> None:
        for text in ['{"a": [1, 2.5, null]}', ' {"a": 1}\n', '"x"', "3", "[]", "NaN"]:
            self.assertEqual(repr(agent._loads(text)), repr(json.loads(text)), text)
        for text in ['{"a": 1} x', "", "{", " "]:

            def error(loads: Callable[[str], object]) -> str:
                try:
                    loads(text)
                except ValueError as err:
                    return f"{type(err).__name__}: {err}"
                return "no error"

            self.assertEqual(error(agent._loads), error(json.loads), text)

    def test_register_once(self) -> None:
        saved = agent._registered
        try:
            agent._registered = None
            self.assertIs(agl.rollout(echo_agent), echo_agent)
            self.assertIs(agent.registered(), echo_agent)
            with self.assertRaisesRegex(agl.AglError, "two @agl.rollout functions"):
                agl.rollout(lambda t, c: None)
        finally:
            agent._registered = saved


class FindAgentTests(unittest.TestCase):
    def setUp(self) -> None:
        self.saved = agent._registered
        agent._registered = None

    def tearDown(self) -> None:
        agent._registered = self.saved
        for name in ("agl_test_plain", "agl_test_none"):
            sys.modules.pop(name, None)

    def module(self, name: str, **attributes: object) -> None:
        module = types.ModuleType(name)
        module.__dict__.update(attributes)
        sys.modules[name] = module

    def test_the_decorated_function_else_a_module_level_rollout(self) -> None:
        self.module("agl_test_plain", rollout=echo_agent)
        self.assertIs(agent.find_agent("agl_test_plain"), echo_agent)
        agl.rollout(lambda t, c: None)
        self.assertIs(agent.find_agent("agl_test_plain"), agent.registered())

    def test_a_module_without_an_agent_is_refused(self) -> None:
        self.module("agl_test_none", solve=echo_agent, rollout=agl.rollout)
        with self.assertRaisesRegex(agl.AglError, "module `agl_test_none` defines no agent: decorate its rollout"):
            agent.find_agent("agl_test_none")


class CtxTests(unittest.TestCase):
    def test_rewards_logs_messages_objects(self) -> None:
        host = LocalHost()

        def body(task: dict, ctx: agl.Ctx) -> None:
            ctx.reward(0.25)
            ctx.reward("format", 1)
            ctx.debug("d")
            ctx.warn("w")
            ctx.log("trace", "t")
            ctx.message("hello")
            ctx.object({"k": [1, 2]})

        self.assertIsNone(run(body, {}, host).error)
        self.assertEqual(host.rewards, [(None, 0.25), ("format", 1.0)])
        self.assertEqual(host.logs, [(Level.DEBUG, "d"), (Level.WARN, "w"), (Level.TRACE, "t")])
        self.assertEqual(host.messages, ["hello"])
        self.assertEqual(host.objects, [{"k": [1, 2]}])

    def test_feedback_appends_in_order_and_must_be_text(self) -> None:
        host = LocalHost()

        def body(task: dict, ctx: agl.Ctx) -> float:
            ctx.feedback("expected 27, got 2.7: units")
            ctx.feedback("\x1b[2J kept as data")
            return 0.0

        self.assertEqual(run(body, {}, host).reward, 0.0)
        self.assertEqual(host.feedback, ["expected 27, got 2.7: units", "\x1b[2J kept as data"])
        self.assertEqual(run(lambda t, c: c.feedback(27), {}).error,
                         "TypeError: feedback must be a str, not int")

    def test_bad_rewards_and_objects_raise(self) -> None:
        self.assertEqual(run(lambda t, c: c.reward(float("nan")), {}).error,
                         "ValueError: a reward must be a finite number within ±1e15, not nan")
        self.assertEqual(run(lambda t, c: c.reward("x"), {}).error,
                         "TypeError: use ctx.reward(value) or ctx.reward(name, value)")
        self.assertTrue(run(lambda t, c: c.object({1j}), {}).error.startswith("TypeError"))

    def test_operations_end_and_fail_with_the_exception(self) -> None:
        host = LocalHost()

        def body(task: dict, ctx: agl.Ctx) -> float:
            with ctx.operation("fine"):
                ctx.info("inside")
            try:
                with ctx.operation("broken"):
                    raise KeyError("missing")
            except KeyError:
                pass
            return 1.0

        self.assertEqual(run(body, {}, host).reward, 1.0)
        self.assertEqual([(o.name, o.ended, o.error) for o in host.operations],
                         [("fine", True, None), ("broken", True, "KeyError: 'missing'")])

    def test_prompts_inline_fallback_and_kinds(self) -> None:
        endpoint = LlmEndpoint("http://x", "m")
        host = LocalHost(resources={"main": endpoint})

        def body(task: dict, ctx: agl.Ctx) -> None:
            prompt = ctx.prompt("prompt", "Hi {who}")
            self.assertIsNone(prompt.resource_name)
            self.assertEqual(prompt.format(who="you"), "Hi you")
            self.assertIs(ctx.resource("main"), endpoint)
            ctx.prompt("main", "unused")

        self.assertEqual(run(body, {}, host).error, "resource `main` is an LLM endpoint, not a prompt template")
        err = run(lambda t, c: c.prompt("p", "Q: {question}").format(text="x"), {}).error
        self.assertEqual(err, 'prompt template "Q: {question}": no value for placeholder `{question}` (given: text)')


class LlmTests(unittest.TestCase):
    def test_chat_with_tools_and_a_tool_call_round(self) -> None:
        calls = [ToolCall("call-1", "add", '{"a": 1, "b": 2}')]

        def reply(request: ChatRequest) -> ChatResponse:
            if request.messages[-1].role == "tool":
                return ChatResponse(content="3")
            return ChatResponse(content="", tool_calls=calls, finish_reason="tool_calls")

        host = LocalHost(reply=reply)

        def body(task: dict, ctx: agl.Ctx) -> float:
            messages: list = [{"role": "system", "content": "calc"}, {"role": "user", "content": "1+2"}]
            tools = [{"name": "add", "description": "adds", "parameters": {"type": "object"}}]
            first = ctx.llm.chat(messages, tools=tools, model="small", temperature=0, max_tokens=16, stop="\n")
            self.assertTrue(first.wants_tools)
            messages.append(first.message)
            for call in first.tool_calls:
                messages.append(agl.Message.tool(call.id, str(call.arguments["a"] + call.arguments["b"])))
            return float(ctx.llm.chat(messages, tools=tools).content)

        self.assertEqual(run(body, {}, host), agent.Outcome(reward=3.0))
        first, second = host.requests
        self.assertEqual((first.model, first.temperature, first.max_tokens, first.stop), ("small", 0.0, 16, ["\n"]))
        self.assertEqual(first.tools, [Tool("add", "adds", '{"type": "object"}')])
        self.assertEqual([m.role for m in second.messages], ["system", "user", "assistant", "tool"])
        self.assertEqual(second.messages[2].tool_calls, calls)
        self.assertEqual(second.messages[3].tool_call_id, "call-1")

    def test_tool_call_arguments_are_the_text_and_parsed(self) -> None:
        call = ToolCall("call-1", "add", '{"a": 2, "b": 3}')
        self.assertEqual(call.arguments_json, '{"a": 2, "b": 3}')  # the text as the model wrote it
        self.assertEqual(call.arguments, {"a": 2, "b": 3})  # parsed
        broken = ToolCall("call-2", "add", '{"a": 2,')  # invalid JSON fails only when parsed
        self.assertEqual(broken.arguments_json, '{"a": 2,')
        with self.assertRaises(ValueError):
            broken.arguments  # noqa: B018
        self.assertEqual(ToolCall.from_dict({"id": "c", "name": "f", "arguments_json": "[1]"}).arguments, [1])

    def test_openai_shaped_dicts_are_accepted(self) -> None:
        message = Message.coerce({
            "role": "assistant", "content": None,
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": {"x": 1}}}],
        })
        self.assertEqual(message, Message("assistant", "", None, [ToolCall("c", "f", '{"x": 1}')]))
        tool = Tool.coerce({"type": "function", "function": {"name": "f", "description": "d", "parameters": {}}})
        self.assertEqual(tool, Tool("f", "d", "{}"))

    def test_bad_messages_are_invalid_requests(self) -> None:
        with self.assertRaisesRegex(agl.InvalidRequest, "unknown message role 'bot'"):
            Message.coerce({"role": "bot", "content": "x"})
        outcome = run(lambda t, c: c.llm.chat("hello"), {}, LocalHost(reply=lambda r: "x"))
        self.assertTrue(outcome.error.startswith("invalid LLM request: messages must be a list"))

    def test_llm_errors_mirror_the_wit_variant(self) -> None:
        cases = [
            (agl.ModelNotAllowed("gpt-x"), "LLM call refused: model `gpt-x` is not allowed for this agent"),
            (agl.BudgetExceeded("calls (10)"), "LLM budget of this attempt exceeded: calls (10)"),
            (agl.Timeout(), "LLM call timed out: the backend did not answer within the host's limit"),
            (agl.InvalidRequest("no messages"), "invalid LLM request: no messages"),
            (agl.Backend("HTTP 503"), "LLM backend failed: HTTP 503"),
        ]
        for error, text in cases:
            self.assertIsInstance(error, agl.LlmError)

            def refuse(request: ChatRequest, error: agl.LlmError = error) -> str:
                raise error

            self.assertEqual(run(lambda t, c: c.llm.ask("q"), {}, LocalHost(reply=refuse)).error, text)
        self.assertEqual(agl.ModelNotAllowed("m").model, "m")

    def test_an_agent_can_catch_one_refusal(self) -> None:
        def refuse(request: ChatRequest) -> str:
            raise agl.BudgetExceeded("tokens")

        def careful(task: dict, ctx: agl.Ctx) -> float:
            try:
                ctx.llm.ask("q")
            except agl.BudgetExceeded as err:
                ctx.warn(err.message)
                return 0.0
            return 1.0

        host = LocalHost(reply=refuse)
        self.assertEqual(run(careful, {}, host).reward, 0.0)
        self.assertEqual(host.logged(Level.WARN), ["LLM budget of this attempt exceeded: tokens"])


# The f-string rules every formatter follows, shared with agl-template's and the JavaScript SDK's tests.
FSTRING_VECTORS = pathlib.Path(__file__).resolve().parents[3] / "tests" / "vectors" / "fstring.json"


class TemplateTests(unittest.TestCase):
    def setUp(self) -> None:
        self.vectors = json.loads(FSTRING_VECTORS.read_text(encoding="utf-8"))

    def test_the_host_rules(self) -> None:
        cases = self.vectors["format"]
        self.assertGreaterEqual(len(cases), 15)
        for case in cases:
            template, values = case["template"], dict(case["values"])
            with self.subTest(template=template):
                if "expected" in case:
                    self.assertEqual(format_template(template, values), case["expected"])
                else:
                    with self.assertRaises(agl.PromptError) as caught:
                        format_template(template, values)
                    self.assertEqual(str(caught.exception), case["error"]["message"])

    def test_placeholders(self) -> None:
        for case in self.vectors["placeholders"]:
            with self.subTest(template=case["template"]):
                if "expected" in case:
                    self.assertEqual(placeholders(case["template"]), case["expected"])
                else:
                    with self.assertRaises(agl.PromptError) as caught:
                        placeholders(case["template"])
                    self.assertEqual(str(caught.exception), case["error"]["message"])


if __name__ == "__main__":
    unittest.main()
