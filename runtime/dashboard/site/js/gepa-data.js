// A GEPA run's search, read from the run record's results (`results.algorithm_summary`, the
// summary `agl-host run --algo gepa` writes): the candidates with their parents and origin laid
// out as a tree, and the per-val-task Pareto front as a table. Pure functions: every text here
// (component texts, task inputs) is the LLM's or the agent's, and the views show it as text only.

/**
 * The GEPA summary of a run record: `null` when its results hold no candidates with a per-task
 * front (APO's summary has `candidates` too, a list of prompts without one).
 */
export function gepaSummary(record) {
  const summary = record?.results?.algorithm_summary;
  return summary && Array.isArray(summary.candidates) && Array.isArray(summary.pareto_front) ? summary : null;
}

/** Whether a run record is a GEPA run's (its algorithm, or candidates in its results). */
export function isGepaRecord(record) {
  if (!record) return false;
  const algorithm = String(record.algorithm ?? "");
  return gepaSummary(record) !== null || algorithm === "gepa" || algorithm.endsWith("/gepa");
}

/** A candidate's id: its resources version (`v3`), else `#index`. */
export function candidateId(candidate) {
  return typeof candidate?.resources_id === "string" ? candidate.resources_id : `#${candidate?.index ?? "?"}`;
}

/** Where a candidate comes from, in words: `seed`, `mutation of format`, `merge over v0`. */
export function originLabel(candidate) {
  const origin = candidate?.origin ?? {};
  if (origin.kind === "mutation") return `mutation of ${origin.component ?? "?"}`;
  if (origin.kind === "merge") return `merge over ${origin.ancestor ?? "?"}`;
  return typeof origin.kind === "string" ? origin.kind : "—";
}

/** Grid of the tree drawing: node size and gaps, in SVG units. */
export const TREE = { nodeW: 170, nodeH: 58, gapX: 30, gapY: 46, pad: 14 };

/**
 * The candidate tree: each candidate one level below its deepest parent (seeds, and candidates
 * whose parents are not listed, at the top), ordered by index within a level, each level centred.
 * → `{nodes: [{id, candidate, depth, x, y}], edges: [{from, to}], width, height}` (x, y: a node's
 * top-left corner). A cycle in the parents (not a GEPA summary) is cut where it closes.
 */
export function treeLayout(candidates) {
  const list = [...(candidates ?? [])].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
  const byId = new Map(list.map((c) => [candidateId(c), c]));
  const depths = new Map();
  const depthOf = (id, seen = new Set()) => {
    if (depths.has(id)) return depths.get(id);
    if (seen.has(id)) return 0;
    seen.add(id);
    const parents = (byId.get(id)?.parents ?? []).filter((p) => byId.has(p) && p !== id);
    const depth = parents.length ? 1 + Math.max(...parents.map((p) => depthOf(p, seen))) : 0;
    depths.set(id, depth);
    return depth;
  };
  const levels = [];
  for (const candidate of list) {
    const depth = depthOf(candidateId(candidate));
    (levels[depth] ??= []).push(candidate);
  }
  const widest = Math.max(1, ...levels.map((level) => level?.length ?? 0));
  const width = TREE.pad * 2 + widest * TREE.nodeW + (widest - 1) * TREE.gapX;
  const nodes = [];
  levels.forEach((level = [], depth) => {
    const span = level.length * TREE.nodeW + (level.length - 1) * TREE.gapX;
    const left = (width - span) / 2;
    level.forEach((candidate, slot) => nodes.push({
      id: candidateId(candidate),
      candidate,
      depth,
      x: left + slot * (TREE.nodeW + TREE.gapX),
      y: TREE.pad + depth * (TREE.nodeH + TREE.gapY),
    }));
  });
  const edges = [];
  for (const candidate of list) {
    for (const parent of candidate.parents ?? []) {
      if (byId.has(parent) && parent !== candidateId(candidate)) edges.push({ from: parent, to: candidateId(candidate) });
    }
  }
  const height = TREE.pad * 2 + levels.length * TREE.nodeH + Math.max(0, levels.length - 1) * TREE.gapY;
  return { nodes, edges, width, height };
}

/**
 * The per-val-task front: for each val task, every candidate's score on it, the best score and
 * the candidates with it (the summary's `pareto_front` where it has the task, else the highest
 * `val_scores`). → `{ids: [candidate id], rows: [{task, scores: Map(id → score), best, front: Set(id)}],
 * bestOn: Map(id → tasks it is best on)}`.
 */
export function frontTable(summary) {
  const candidates = [...(summary?.candidates ?? [])].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
  const ids = candidates.map(candidateId);
  const recorded = new Map((summary?.pareto_front ?? []).map((entry) => [entry.val_task, entry]));
  const tasks = Math.max(0, ...candidates.map((c) => (Array.isArray(c.val_scores) ? c.val_scores.length : 0)),
    ...[...recorded.keys()].filter(Number.isInteger).map((t) => t + 1));
  const rows = [];
  for (let task = 0; task < tasks; task++) {
    const scores = new Map();
    for (const c of candidates) {
      const value = c.val_scores?.[task];
      if (typeof value === "number" && Number.isFinite(value)) scores.set(candidateId(c), value);
    }
    const entry = recorded.get(task);
    let best;
    let front;
    if (entry && Array.isArray(entry.candidates)) {
      best = typeof entry.score === "number" ? entry.score : null;
      front = new Set(entry.candidates.map(String));
    } else {
      best = scores.size ? Math.max(...scores.values()) : null;
      front = new Set([...scores].filter(([, s]) => s === best).map(([id]) => id));
    }
    rows.push({ task, scores, best, front });
  }
  const bestOn = new Map(ids.map((id) => [id, rows.filter((r) => r.front.has(id)).length]));
  return { ids, rows, bestOn };
}

/**
 * Each val task's input, where the store shows which: the seed candidate ran every val task once,
 * in order, and nothing else ran val under its version; its val rollouts (in the store's order)
 * are then the val tasks, when their rewards are the seed's per-task val scores. Else `[]` (the
 * table says `task N` only).
 */
export function valTaskInputs(summary, rows) {
  const seed = (summary?.candidates ?? []).find((c) => c.origin?.kind === "seed") ?? null;
  const scores = seed?.val_scores;
  if (!Array.isArray(scores)) return [];
  const val = (rows ?? []).filter((r) => r.rollout.mode === "val" && r.rollout.resources_id === seed.resources_id
    && r.rollout.metadata?.["agl.kind"] !== "algorithm");
  if (val.length !== scores.length) return [];
  const same = val.every((r, i) => (r.outcome?.counted_reward ?? null) === scores[i]);
  return same ? val.map((r) => r.rollout.input) : [];
}
