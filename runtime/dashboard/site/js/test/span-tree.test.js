// The span tree as `agl-host show` builds it (runtime/runs/src/span_tree.rs): the describer's cases
// are the shared vectors (tests/vectors/span_describe.json, each case's `dashboard` rows), read by
// the Rust span tree's tests too.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { flatten, timeline, summary, kind, rewardsOf, failureOf, logsOf } from "../span-tree.js";

const VECTORS = JSON.parse(readFileSync(new URL("../../../../../tests/vectors/span_describe.json", import.meta.url), "utf8"));

/** A vector's span as the store's API serves it. */
const fromVector = (fields) => ({
  rollout_id: "ro-1", attempt_id: "at-1", end_time: fields.start_time, status: { status_code: "OK" }, ...fields,
});

const vectorSpans = (name) => VECTORS.cases.find((c) => c.name === name).spans.map(fromVector);

const span = (span_id, parent_id, name, start, attributes = {}, extra = {}) => ({
  rollout_id: "ro-1", attempt_id: "at-1", sequence_id: start, span_id, parent_id, name,
  start_time: start, end_time: start + 1, status: { status_code: "OK" }, attributes, ...extra,
});

test("spans are described as the shared vectors say", () => {
  const cases = VECTORS.cases.filter((c) => c.dashboard !== undefined);
  assert.ok(cases.length >= 3);
  for (const c of cases) {
    const rows = flatten(c.spans.map(fromVector)).map(({ span: s, depth }) => {
      const said = summary(s);
      return `${"  ".repeat(depth)}${s.name}${said ? `  ${said}` : ""}`;
    });
    assert.deepEqual(rows, c.dashboard, c.name);
  }
});

test("children sit under their parent in start order: the failure and the logs", () => {
  const spans = vectorSpans("children sit under their parent in start order; orphans are roots");
  assert.equal(failureOf(spans), "boom");
  assert.deepEqual(logsOf(spans).map((l) => [l.level, l.body]), [["info", "two\nlines"]]);
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
});
