// The span tree as `agl-host show` builds it (runtime/host/src/span_tree.rs's tests, mirrored).
import { test } from "node:test";
import assert from "node:assert/strict";
import { flatten, timeline, summary, kind, rewardsOf, failureOf, logsOf } from "../span-tree.js";

const span = (span_id, parent_id, name, start, attributes = {}, extra = {}) => ({
  rollout_id: "ro-1", attempt_id: "at-1", sequence_id: start, span_id, parent_id, name,
  start_time: start, end_time: start + 1, status: { status_code: "OK" }, attributes, ...extra,
});

test("children sit under their parent in start order; orphans are roots", () => {
  const spans = [
    span("b", "root", "agentlightning.annotation", 3, { "agentlightning.reward.0.name": "primary", "agentlightning.reward.0.value": 0.5 }),
    span("root", null, "agentlightning.rollout", 1, { "agl.failure": "boom" }),
    span("a", "root", "agentlightning.message", 2, { "agl.log.level": "info", "agentlightning.message.body": "two\nlines" }),
    span("orphan", "elsewhere", "agentlightning.operation", 0.5, { "agentlightning.operation.name": "op" }),
  ];
  const rows = flatten(spans).map(({ span: s, depth }) => `${"  ".repeat(depth)}${s.name}  ${summary(s)}`);
  assert.deepEqual(rows, [
    "agentlightning.operation  op",
    "agentlightning.rollout  failure: boom",
    "  agentlightning.message  log info: two\nlines",
    "  agentlightning.annotation  reward primary = 0.5000",
  ]);
  assert.equal(failureOf(spans), "boom");
  assert.deepEqual(logsOf(spans).map((l) => [l.level, l.body]), [["info", "two\nlines"]]);
});

test("a parent loop shows each span once", () => {
  const rows = flatten([span("a", "b", "x", 1), span("b", "a", "y", 2)]);
  assert.deepEqual(rows.map((r) => r.span.name), ["x", "y"]);
});

test("the timeline places each bar within the attempt", () => {
  const rows = timeline(flatten([span("r", null, "root", 0, {}, { end_time: 10 }), span("c", "r", "child", 5, {}, { end_time: 7.5 })]));
  assert.deepEqual(rows.map((r) => [r.left, r.width]), [[0, 100], [50, 25]]);
});

test("LLM calls, rewards and errors are told apart", () => {
  assert.equal(kind(span("l", null, "openai.chat.completion", 1, { "gen_ai.usage.input_tokens": 3 })), "llm");
  assert.equal(kind(span("g", null, "custom", 1, { "gen_ai.prompt.0.content": "hi" })), "llm");
  assert.equal(kind(span("r", null, "agentlightning.annotation", 1, { reward: 1 })), "reward");
  assert.equal(kind(span("e", null, "openai.chat.completion", 1, {}, { status: { status_code: "ERROR" } })), "error");
  assert.deepEqual(rewardsOf(span("r", null, "x", 1, {
    "agentlightning.reward.1.name": "len", "agentlightning.reward.1.value": 2, "agentlightning.reward.0.value": 1,
  })), [["primary", 1], ["len", 2]]);
  assert.equal(summary(span("l", null, "openai.chat.completion", 1, {
    "gen_ai.response.model": "m", "gen_ai.usage.input_tokens": 3, "gen_ai.usage.output_tokens": 4,
  })), "m · 3+4 tokens");
});
