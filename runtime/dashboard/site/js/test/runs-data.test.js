// The kept runs' list, two runs compared task by task, and API bases.
import { test } from "node:test";
import assert from "node:assert/strict";
import { runSummary, splitsOf, pickRuns, runIdOfBase } from "../runs-data.js";
import { compareRuns } from "../run-data.js";
import { folderOf, runBase, underBase } from "../api.js";

const record = (id, started, status, results) => ({
  run_id: id, started_at: started, finished_at: status === "running" ? null : started + 90, status,
  agent: "/x/math_agent-058a92d78b82d5ff.wasm", algorithm: "baseline", command: [], results,
});
const results = { total: { rollouts: 8, mean_reward: 0.625 }, splits: { train: { mean_reward: 0.625 } }, best: { score: 0.625 } };
const entries = [
  { id: "b", file: "runs/b.db", status: "completed", agent_name: "math_agent", run: record("run-b", 2000, "completed", results) },
  { id: "a", file: "runs/a.db", status: "running?", agent_name: "math_agent", run: record("run-a", 1000, "running", null) },
  { id: "bad", file: "runs/bad.db", error: "an empty file, not a database" },
];

test("a run's summary: status as listed, elapsed, rollouts, means per split, best", () => {
  const b = runSummary(entries[0]);
  assert.deepEqual([b.runId, b.status, b.agent, b.elapsed, b.rollouts, b.mean, b.splits, b.best],
    ["run-b", "completed", "math_agent", 90, 8, 0.625, { train: 0.625 }, 0.625]);
  const a = runSummary(entries[1], 1030);
  assert.deepEqual([a.status, a.elapsed, a.rollouts, a.mean, a.best], ["running?", 30, null, null, null]);
  const bad = runSummary(entries[2]);
  assert.deepEqual([bad.id, bad.error, bad.started], ["bad", "an empty file, not a database", null]);
  assert.deepEqual(splitsOf([a, b, bad]), ["train"]);
});

test("a run's name comes from its record, when it has one", () => {
  const named = { ...entries[0], run: { ...entries[0].run, name: "apo, new seed" } };
  assert.equal(runSummary(named).name, "apo, new seed");
  assert.equal(runSummary(entries[0]).name, null);
  assert.equal(runSummary({ ...entries[0], run: { ...entries[0].run, name: 42 } }).name, null);
});

test("two runs compared start from the second newest to the newest, unless asked", () => {
  assert.deepEqual(pickRuns(entries, {}), { a: "a", b: "b" });
  assert.deepEqual(pickRuns(entries, { a: "b", b: "a" }), { a: "b", b: "a" });
  assert.deepEqual(pickRuns(entries, { b: "a" }), { a: "b", b: "a" });
  assert.deepEqual(pickRuns(entries, { a: "bad" }), { a: "a", b: "b" }, "an unreadable run is never picked");
  assert.deepEqual(pickRuns(entries.slice(0, 1), {}), { a: "b", b: "b" });
});

const row = (id, mode, version, status, reward, input, tokens = 15) => ({
  rollout: { rollout_id: id, mode, resources_id: version, status, input, start_time: 0 },
  outcome: {
    final_reward: reward, counted_reward: status === "succeeded" ? (reward ?? 0) : 0,
    input_tokens: tokens, output_tokens: 0, llm_seconds: 2,
  },
});

test("two runs compared on the tasks both ran, whichever version ran them: flips both ways", () => {
  const runA = [row("a1", "val", "v0", "succeeded", 0, "q1"), row("a2", "val", "v3", "succeeded", 1, "q2"),
    row("a3", "val", "v0", "succeeded", 1, "q3"), row("a4", "train", "v0", "succeeded", 0, "q4")];
  const runB = [row("b1", "val", "v0", "succeeded", 1, "q1", 25), row("b2", "val", "v0", "succeeded", 0, "q2", 25),
    row("b3", "val", "v0", "succeeded", 1, "q3", 25), row("b4", "val", "v0", "running", undefined, "q5", 25)];
  const val = compareRuns(runA, runB, "val");
  assert.deepEqual(val.tasks.map((t) => [t.input, t.flipped]), [["q1", "up"], ["q2", "down"], ["q3", null]]);
  assert.deepEqual([val.a.rollouts, val.a.tokens, val.b.rollouts, val.b.tokens, val.b.llmSeconds], [3, 15, 3, 25, 2]);
  const every = compareRuns(runA, runB, "");
  assert.equal(every.a.rollouts, 4, "every split: train's rollout too");
  assert.equal(every.tasks.length, 3, "q4 and q5 are not on both sides");
});

test("API bases: a page's folder, a run's prefix, paths under them", () => {
  assert.equal(folderOf("/"), "/");
  assert.equal(folderOf("/index.html"), "/");
  assert.equal(folderOf("/runs/run-1/"), "/runs/run-1/");
  assert.equal(runBase("a b"), "/runs/a%20b/");
  assert.equal(runIdOfBase("/runs/a%20b/"), "a b");
  assert.equal(runIdOfBase("/"), null);
  assert.equal(underBase("/v1/agl/rollouts", "/"), "/v1/agl/rollouts");
  assert.equal(underBase("/v1/agl/rollouts", "/runs/a/"), "/runs/a/v1/agl/rollouts");
});
