// The side-by-side line diff of the resources view.
import { test } from "node:test";
import assert from "node:assert/strict";
import { diffLines, sideBySide } from "../line-diff.js";

test("a line added in the middle is the only change", () => {
  const ops = diffLines("Solve this problem.\nProblem: {question}", "Solve this problem.\nGive the final answer as a number on the last line.\nProblem: {question}");
  assert.deepEqual(ops.map((o) => o.op), ["same", "added", "same"]);
  assert.equal(ops[1].line, "Give the final answer as a number on the last line.");
});

test("a changed line faces its replacement; removals come first", () => {
  const rows = sideBySide(diffLines("a\nold\nc", "a\nnew\nc\nd"));
  assert.deepEqual(rows.map((r) => [r.left?.line ?? null, r.right?.line ?? null]), [
    ["a", "a"], ["old", "new"], ["c", "c"], [null, "d"],
  ]);
  assert.deepEqual(rows[1].left.op, "removed");
  assert.deepEqual(rows[1].right.op, "added");
});

test("equal texts have no change, and an empty side is all added", () => {
  assert.ok(diffLines("x\ny", "x\ny").every((o) => o.op === "same"));
  assert.deepEqual(diffLines("", "x").map((o) => o.op), ["removed", "added"]);
});
