// The run's rollouts joined with their outcomes (final reward, LLM calls, tokens, why no triplet),
// fetched from the store and cached per API base (one run each): a rollout whose latest attempt
// ended is not asked for again. Two resources versions, or two runs, compared task by task.

import { all, get, optional, pageBase } from "./api.js";

const FINISHED = new Set(["succeeded", "failed", "cancelled"]);
/** Outcomes asked for per request (ids travel in the query string). */
const CHUNK = 40;
/** API base → (rollout id → outcome). */
const outcomesByBase = new Map();

/** Whether a rollout will not change any more. */
export function isFinished(rollout) {
  return FINISHED.has(rollout.status);
}

/** Whether a rollout is an algorithm's own (its LLM calls), not a task. */
export function isAlgorithmRollout(rollout) {
  return rollout.metadata?.["agl.kind"] === "algorithm";
}

/**
 * A fork rollout's lineage, or `null` for a rollout that is not a fork: the object `agl-host fork`
 * writes under `agl.fork` in its metadata (`parent_rollout_id`, `parent_attempt_id`,
 * `at_llm_call`, `branch`, `branches`), as stored, fields unchecked (as agl_adapter's
 * `fork_lineage` reads it for the export).
 */
export function forkOf(rollout) {
  const fork = rollout?.metadata?.["agl.fork"];
  return fork !== null && typeof fork === "object" && !Array.isArray(fork) ? fork : null;
}

/**
 * The forks of rollout `parentId` among `rollouts`, grouped by the LLM call they branch at:
 * `[{at, forks: [{rollout, fork}]}]`, calls in order, each call's forks by branch (then id).
 */
export function branchesOf(parentId, rollouts) {
  const groups = new Map();
  for (const rollout of rollouts) {
    const fork = forkOf(rollout);
    if (!fork || fork.parent_rollout_id !== parentId) continue;
    const key = JSON.stringify(fork.at_llm_call ?? null);
    if (!groups.has(key)) groups.set(key, { at: fork.at_llm_call, forks: [] });
    groups.get(key).forks.push({ rollout, fork });
  }
  const order = (a, b) => (typeof a === "number" && typeof b === "number" ? a - b : String(a).localeCompare(String(b)));
  const byId = (a, b) => String(a.rollout.rollout_id).localeCompare(String(b.rollout.rollout_id));
  return [...groups.values()]
    .sort((x, y) => order(x.at, y.at))
    .map((group) => ({ ...group, forks: group.forks.sort((a, b) => order(a.fork.branch, b.fork.branch) || byId(a, b)) }));
}

/**
 * The run record (`null` when the store keeps none), statistics, and every rollout with its
 * outcome, of the run served under `base` (the page's own by default).
 */
export async function loadRun(base = pageBase()) {
  const [record, statistics, rollouts] = await Promise.all([
    optional("/v1/agl-host/run", {}, base),
    get("/v1/agl/statistics", {}, base),
    all("/v1/agl/rollouts", {}, base),
  ]);
  if (!outcomesByBase.has(base)) outcomesByBase.set(base, new Map());
  const outcomes = outcomesByBase.get(base);
  await fetchOutcomes(rollouts, outcomes, base);
  const rows = rollouts.map((rollout) => ({ rollout, outcome: outcomes.get(rollout.rollout_id) ?? null }));
  return { record, statistics, rows };
}

async function fetchOutcomes(rollouts, outcomes, base) {
  const stale = rollouts.filter((r) => {
    const known = outcomes.get(r.rollout_id);
    return !known || !known.settled || known.attempt_id !== r.attempt?.attempt_id;
  });
  for (let i = 0; i < stale.length; i += CHUNK) {
    const chunk = stale.slice(i, i + CHUNK);
    const page = await optional("/v1/agl-host/outcomes", { rollout_id_in: chunk.map((r) => r.rollout_id), limit: -1 }, base);
    if (!page) return; // a store without agl-host's routes: rewards stay unknown
    const finished = new Set(chunk.filter(isFinished).map((r) => r.rollout_id));
    for (const outcome of page.items) {
      outcomes.set(outcome.rollout_id, { ...outcome, settled: finished.has(outcome.rollout_id) });
    }
  }
}

/** The outcomes of the rollouts `ids` (`rollout id → outcome`; empty from a store without agl-host's routes). */
export async function outcomesOf(ids, base = pageBase()) {
  const found = new Map();
  for (let i = 0; i < ids.length; i += CHUNK) {
    const page = await optional("/v1/agl-host/outcomes", { rollout_id_in: ids.slice(i, i + CHUNK), limit: -1 }, base);
    if (!page) break;
    for (const outcome of page.items) found.set(outcome.rollout_id, outcome);
  }
  return found;
}

/**
 * The run's task rows only: the algorithm's own rollouts left out, and forks (`agl-host fork`,
 * made after the run from its rollouts), which the rollouts list shows but no summary counts.
 */
export function taskRows(rows) {
  return rows.filter((row) => !isAlgorithmRollout(row.rollout) && !forkOf(row.rollout));
}

/** Rollouts by status: `{succeeded: 3, running: 1, ...}`. */
export function countByStatus(rows) {
  const counts = {};
  for (const { rollout } of rows) counts[rollout.status] = (counts[rollout.status] ?? 0) + 1;
  return counts;
}

/**
 * What a rollout adds to a mean reward: the server's `counted_reward` (agl_adapter's
 * `counted_reward`, the one definition the run's results and `agl-host show` use too): its final
 * reward if it succeeded, else 0 (a failed rollout counts 0 even when it emitted a reward before
 * failing). 0 without an outcome.
 */
export function countedReward(row) {
  return row.outcome?.counted_reward ?? 0;
}

/**
 * Mean reward per mode (`train`, `val`, `test`, `-` for none), as the run's results count it:
 * over every rollout of the mode, each adding its [countedReward].
 * → `[{mode, rollouts, mean}]`, sorted by mode.
 */
export function meanByMode(rows) {
  return groupMeans(rows, (row) => row.rollout.mode ?? "-").map(([mode, g]) => ({ mode, ...g }));
}

/** The same per resources version: `[{resources_id, modes: {val: {rollouts, mean}, ...}}]`. */
export function meanByVersion(rows) {
  const versions = new Map();
  for (const row of rows) {
    const id = row.rollout.resources_id ?? "-";
    if (!versions.has(id)) versions.set(id, []);
    versions.get(id).push(row);
  }
  return [...versions].map(([resources_id, group]) => ({
    resources_id,
    modes: Object.fromEntries(meanByMode(group).map(({ mode, rollouts, mean }) => [mode, { rollouts, mean }])),
  }));
}

function groupMeans(rows, keyOf) {
  const groups = new Map();
  for (const row of rows) {
    const key = keyOf(row);
    const g = groups.get(key) ?? { rollouts: 0, sum: 0 };
    g.rollouts += 1;
    g.sum += countedReward(row);
    groups.set(key, g);
  }
  return [...groups].sort(([a], [b]) => a.localeCompare(b))
    .map(([key, g]) => [key, { rollouts: g.rollouts, mean: g.sum / g.rollouts }]);
}

/**
 * The two versions a diff or comparison starts with, unless `asked` names them: the first that
 * tasks ran under (the seed the algorithm started from), and the best (or else the latest).
 */
export function pickVersions(ids, rows, best, asked) {
  const used = new Set(taskRows(rows).map((r) => r.rollout.resources_id));
  const a = ids.includes(asked.a) ? asked.a : (ids.find((id) => used.has(id)) ?? ids[0]);
  const b = ids.includes(asked.b) ? asked.b : (best && best !== a ? best : ids[ids.length - 1]);
  return { a, b };
}

/** A task's identity across versions: its input as JSON. */
export function taskKey(rollout) {
  return JSON.stringify(rollout.input);
}

/** A reward that passes: at least this much. */
export const PASS = 0.5;

/**
 * Two resources versions side by side on the tasks both ran (finished rollouts of `mode`, or of
 * every mode when `mode` is empty): see [compareRows].
 */
export function compareVersions(rows, a, b, mode) {
  const side = (id) => rows.filter((r) => r.rollout.resources_id === id && isFinished(r.rollout)
    && (!mode || r.rollout.mode === mode));
  return compareRows(side(a), side(b));
}

/**
 * Two runs side by side (their task rows, each run's own): the finished rollouts of `mode` (or
 * of every mode when `mode` is empty) under whichever resources version ran them; see
 * [compareRows]. Tasks are matched by their input.
 */
export function compareRuns(rowsA, rowsB, mode) {
  const side = (rows) => taskRows(rows).filter((r) => isFinished(r.rollout) && (!mode || r.rollout.mode === mode));
  return compareRows(side(rowsA), side(rowsB));
}

/**
 * Two groups of finished rollouts side by side on the tasks both ran: per task the mean reward
 * in each ([countedReward]: a failed rollout counts 0), the difference, and whether it flipped
 * across PASS; overall means, tokens and LLM seconds per rollout.
 */
export function compareRows(rowsA, rowsB) {
  const perTask = (group) => {
    const tasks = new Map();
    for (const row of group) {
      const key = taskKey(row.rollout);
      const t = tasks.get(key) ?? { input: row.rollout.input, rewards: [] };
      t.rewards.push(countedReward(row));
      tasks.set(key, t);
    }
    return tasks;
  };
  const [tasksA, tasksB] = [perTask(rowsA), perTask(rowsB)];
  const mean = (xs) => (xs.length ? xs.reduce((s, x) => s + x, 0) / xs.length : null);
  const tasks = [];
  for (const [key, ta] of tasksA) {
    const tb = tasksB.get(key);
    if (!tb) continue;
    const [ra, rb] = [mean(ta.rewards), mean(tb.rewards)];
    const flipped = ra < PASS && rb >= PASS ? "up" : ra >= PASS && rb < PASS ? "down" : null;
    tasks.push({ input: ta.input, a: ra, b: rb, delta: rb - ra, flipped });
  }
  tasks.sort((x, y) => (y.flipped ? 1 : 0) - (x.flipped ? 1 : 0) || Math.abs(y.delta) - Math.abs(x.delta));
  const totals = (group) => ({
    rollouts: group.length,
    mean: mean(group.map(countedReward)),
    tokens: mean(group.map((r) => (r.outcome?.input_tokens ?? 0) + (r.outcome?.output_tokens ?? 0))),
    llmSeconds: mean(group.map((r) => r.outcome?.llm_seconds ?? 0)),
  });
  return { a: totals(rowsA), b: totals(rowsB), tasks };
}
