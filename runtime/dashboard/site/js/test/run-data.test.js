// The run's aggregates: means per split and version, the comparison of two versions, filters.
import { test } from "node:test";
import assert from "node:assert/strict";
import { meanByMode, meanByVersion, compareVersions, countByStatus, pickVersions, taskRows } from "../run-data.js";
import { filterAndSort } from "../views/rollouts.js";

// An outcome as the server gives it: `counted_reward` is the final reward of a rollout that
// succeeded, else 0 (agl_adapter::counted_reward).
const row = (id, mode, version, status, reward, input = id, extra = {}) => ({
  rollout: { rollout_id: id, mode, resources_id: version, status, input, start_time: 0, ...extra },
  outcome: reward === undefined ? null : {
    final_reward: reward,
    counted_reward: status === "succeeded" ? reward : 0,
    input_tokens: 10, output_tokens: 5, llm_seconds: 1,
  },
});

const rows = [
  row("r1", "train", "v0", "succeeded", 1, "q1"),
  row("r2", "train", "v0", "failed", undefined, "q2"),
  row("r3", "val", "v0", "succeeded", 0, "q3"),
  row("r4", "val", "v1", "succeeded", 1, "q3"),
  row("r5", "val", "v1", "running", undefined, "q4"),
  row("a1", null, null, "succeeded", undefined, "algo", { metadata: { "agl.kind": "algorithm" } }),
  // A fork of r3 made after the run: listed, never counted in the run's aggregates.
  row("f1", "val", "v0", "succeeded", 1, "q3", {
    metadata: { "agl.fork": { parent_rollout_id: "r3", parent_attempt_id: "a", at_llm_call: 1, branch: 0, branches: 1 } },
  }),
];

test("every rollout counts as the run's results count it: a missing reward, or one not finished, as 0", () => {
  assert.deepEqual(meanByMode(taskRows(rows)), [
    { mode: "train", rollouts: 2, mean: 0.5 },
    { mode: "val", rollouts: 3, mean: 1 / 3 },
  ]);
  assert.deepEqual(meanByVersion(taskRows(rows)).map((v) => [v.resources_id, v.modes.val?.mean]), [["v0", 0], ["v1", 0.5]]);
  assert.deepEqual(countByStatus(taskRows(rows)), { succeeded: 3, failed: 1, running: 1 });
});

test("a failed rollout's emitted reward is not counted, in means and comparisons alike", () => {
  // The run: 0.5833 counted the rewards failed rollouts emitted; the results say 0.2500.
  const run = [
    row("f1", "train", "v0", "failed", 1, "q1"),
    row("f2", "train", "v0", "failed", 0.5, "q2"),
    row("f3", "train", "v0", "failed", 0.8333, "q3"),
    row("s1", "train", "v0", "succeeded", 1, "q4"),
  ];
  assert.deepEqual(meanByMode(run), [{ mode: "train", rollouts: 4, mean: 0.25 }]);
  assert.equal(meanByVersion(run)[0].modes.train.mean, 0.25);
  const better = run.map((r) => row(`b-${r.rollout.rollout_id}`, "train", "v1", "succeeded", 1, r.rollout.input));
  const result = compareVersions([...run, ...better], "v0", "v1", "train");
  assert.equal(result.a.mean, 0.25);
  assert.deepEqual(result.tasks.filter((t) => t.flipped === "up").map((t) => t.input).sort(), ["q1", "q2", "q3"]);
});

test("two versions compared on the tasks both ran: the flip is found", () => {
  const result = compareVersions(taskRows(rows), "v0", "v1", "val");
  assert.equal(result.a.mean, 0);
  assert.equal(result.b.mean, 1);
  assert.deepEqual(result.tasks.map((t) => [t.input, t.a, t.b, t.flipped]), [["q3", 0, 1, "up"]]);
});

test("filters and the reward sort", () => {
  const shown = filterAndSort(taskRows(rows), { status: "succeeded", mode: "", version: "", sort: "reward-desc" });
  assert.deepEqual(shown.map((r) => r.rollout.rollout_id), ["r1", "r4", "r3"]);
  assert.deepEqual(filterAndSort(taskRows(rows), { version: "v1", sort: "start" }).map((r) => r.rollout.rollout_id), ["r4", "r5"]);
});

test("a comparison starts from the first version tasks ran under, to the best", () => {
  const ids = ["seed", "v0", "v1", "v2"];
  assert.deepEqual(pickVersions(ids, rows, "v1", {}), { a: "v0", b: "v1" });
  assert.deepEqual(pickVersions(ids, rows, null, {}), { a: "v0", b: "v2" });
  assert.deepEqual(pickVersions(ids, rows, "v1", { a: "seed", b: "nope" }), { a: "seed", b: "v1" });
});

test("missing rewards sort last, whichever the direction", () => {
  const order = (sort) => filterAndSort(taskRows(rows), { sort }).map((r) => r.rollout.rollout_id);
  assert.deepEqual(order("reward-asc").slice(-2).sort(), ["r2", "r5"]);
  assert.deepEqual(order("reward-desc").slice(-2).sort(), ["r2", "r5"]);
});

test("the reward chart's moving mean", async () => {
  const { movingMean } = await import("../views/run.js");
  const points = [1, 0, 1, 1].map((y, x) => ({ x, y }));
  assert.deepEqual(movingMean(points, 2).map((p) => p.y), [1, 0.5, 0.5, 1]);
});

test("a fork is a rollout whose agl.fork metadata is an object; its parent's branches group by LLM call", async () => {
  const { forkOf, branchesOf } = await import("../run-data.js");
  const lineage = { parent_rollout_id: "p", parent_attempt_id: "a", at_llm_call: 2, branch: 1, branches: 2 };
  assert.deepEqual(forkOf({ metadata: { "agl.fork": lineage } }), lineage);
  for (const metadata of [undefined, null, {}, { "agl.fork": null }, { "agl.fork": "p" }, { "agl.fork": [lineage] }]) {
    assert.equal(forkOf({ metadata }), null, JSON.stringify(metadata));
  }
  const fork = (id, at, branch, parent = "p") => ({ rollout_id: id, metadata: { "agl.fork": { parent_rollout_id: parent, at_llm_call: at, branch } } });
  const groups = branchesOf("p", [fork("c", 10, 1), fork("b", 2, 2), fork("a", 2, 1), fork("z", 2, 1, "q"), { rollout_id: "p" }]);
  assert.deepEqual(groups.map((g) => [g.at, g.forks.map((f) => f.rollout.rollout_id)]), [[2, ["a", "b"]], [10, ["c"]]]);
});
