import { test } from "node:test";
import assert from "node:assert/strict";
import { gepaSummary, isGepaRecord, originLabel, treeLayout, frontTable, valTaskInputs, TREE } from "../gepa-data.js";

// The candidates of examples/gepa-two-prompts' run: two mutations of the seed, merged over it.
const candidates = [
  { index: 0, resources_id: "v0", parents: [], origin: { kind: "seed" }, val_score: 1 / 3, val_scores: [0, 0, 1, 0, 0, 1] },
  { index: 1, resources_id: "v1", parents: ["v0"], origin: { kind: "mutation", component: "format" }, val_score: 1 / 3, val_scores: [1, 0, 0, 1, 0, 0] },
  { index: 2, resources_id: "v2", parents: ["v0"], origin: { kind: "mutation", component: "system" }, val_score: 2 / 3, val_scores: [0, 1, 1, 0, 1, 1] },
  { index: 3, resources_id: "v3", parents: ["v1", "v2"], origin: { kind: "merge", ancestor: "v0" }, val_score: 1, val_scores: [1, 1, 1, 1, 1, 1] },
];
const front = [
  { val_task: 0, score: 1, candidates: ["v1", "v3"] },
  { val_task: 1, score: 1, candidates: ["v2", "v3"] },
  { val_task: 2, score: 1, candidates: ["v0", "v2", "v3"] },
  { val_task: 3, score: 1, candidates: ["v1", "v3"] },
  { val_task: 4, score: 1, candidates: ["v2", "v3"] },
  { val_task: 5, score: 1, candidates: ["v0", "v2", "v3"] },
];
const summary = { candidates, pareto_front: front };

test("the summary is read from the record's results; a GEPA run is known before it has one", () => {
  assert.equal(gepaSummary({ results: { algorithm_summary: summary } }), summary);
  assert.equal(gepaSummary({ results: { algorithm_summary: { history: [] } } }), null);
  // APO's summary lists its candidate prompts, without a front.
  assert.equal(gepaSummary({ results: { algorithm_summary: { candidates: [{ resources_id: "v0", parent: null }] } } }), null);
  assert.equal(gepaSummary(null), null);
  assert.ok(isGepaRecord({ algorithm: "gepa", results: null }));
  assert.ok(isGepaRecord({ algorithm: "plugins/gepa" }));
  assert.ok(!isGepaRecord({ algorithm: "apo", results: { algorithm_summary: { history: [], candidates: [] } } }));
  assert.ok(!isGepaRecord(null));
});

test("origins in words", () => {
  assert.deepEqual(candidates.map(originLabel), ["seed", "mutation of format", "mutation of system", "merge over v0"]);
});

test("the tree puts each candidate under its deepest parent, a merge under both", () => {
  const layout = treeLayout([...candidates].reverse());
  const at = Object.fromEntries(layout.nodes.map((n) => [n.id, n]));
  assert.deepEqual(Object.fromEntries(layout.nodes.map((n) => [n.id, n.depth])), { v0: 0, v1: 1, v2: 1, v3: 2 });
  assert.ok(at.v1.x < at.v2.x, "ordered by index within a level");
  assert.equal(at.v1.y, at.v2.y);
  assert.ok(at.v3.y > at.v1.y && at.v1.y > at.v0.y);
  // Each level centred: v0 and v3 between v1 and v2.
  assert.equal(at.v0.x, (at.v1.x + at.v2.x) / 2);
  assert.equal(at.v3.x, at.v0.x);
  assert.deepEqual(layout.edges.map((e) => `${e.from}>${e.to}`).sort(), ["v0>v1", "v0>v2", "v1>v3", "v2>v3"]);
  assert.equal(layout.width, TREE.pad * 2 + 2 * TREE.nodeW + TREE.gapX);
  assert.equal(layout.height, TREE.pad * 2 + 3 * TREE.nodeH + 2 * TREE.gapY);
});

test("unknown parents and cycles do not break the layout", () => {
  const layout = treeLayout([
    { index: 0, resources_id: "a", parents: ["b"] },
    { index: 1, resources_id: "b", parents: ["a"] },
    { index: 2, resources_id: "c", parents: ["gone"] },
  ]);
  assert.equal(layout.nodes.length, 3);
  assert.equal(layout.nodes.find((n) => n.id === "c").depth, 0);
  assert.ok(layout.edges.every((e) => e.from !== "gone"));
  assert.deepEqual(treeLayout([]).nodes, []);
});

test("the front: per task the recorded best set, and how many tasks each candidate is best on", () => {
  const table = frontTable(summary);
  assert.deepEqual(table.ids, ["v0", "v1", "v2", "v3"]);
  assert.equal(table.rows.length, 6);
  assert.deepEqual([...table.rows[0].front], ["v1", "v3"]);
  assert.deepEqual([...table.rows[2].front], ["v0", "v2", "v3"]);
  assert.equal(table.rows[0].scores.get("v0"), 0);
  assert.deepEqual(Object.fromEntries(table.bestOn), { v0: 2, v1: 2, v2: 4, v3: 6 });
});

test("without a recorded front, the best scores make it (ties kept)", () => {
  const table = frontTable({ candidates: candidates.slice(0, 3) });
  assert.deepEqual([...table.rows[0].front], ["v1"]);
  assert.deepEqual([...table.rows[2].front], ["v0", "v2"]);
  assert.equal(table.rows[1].best, 1);
});

test("val task inputs come from the seed's val rollouts only when their rewards match", () => {
  const row = (i, reward, extra = {}) => ({
    rollout: { rollout_id: `ro-${i}`, mode: "val", resources_id: "v0", input: { question: `q${i}` }, metadata: {}, ...extra },
    outcome: { counted_reward: reward },
  });
  const rows = candidates[0].val_scores.map((s, i) => row(i, s));
  const other = { rollout: { mode: "val", resources_id: "v1", input: {} }, outcome: null };
  assert.deepEqual(valTaskInputs(summary, [...rows, other]).map((i) => i.question), ["q0", "q1", "q2", "q3", "q4", "q5"]);
  assert.deepEqual(valTaskInputs(summary, rows.slice(1)), []);
  assert.deepEqual(valTaskInputs(summary, [rows[2], ...rows.slice(0, 2), ...rows.slice(3)]), []);
});
