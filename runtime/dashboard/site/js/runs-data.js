// The kept runs `agl-host dashboard` serves (its `GET /v1/agl-host/runs`): one summary per run
// from its run record and results, which two runs a comparison starts with, and which run a
// page's API base belongs to. Pure: the views fetch, this module reads.

/**
 * A listed run (`{id, file, status, agent_name, run: RunRecord}` or `{id, file, error}`) as the
 * Runs view shows it: its name (`run --name`), status, start, elapsed, rollouts, mean reward
 * overall and per split, best.
 */
export function runSummary(entry, now = Date.now() / 1000) {
  const run = entry.run ?? null;
  const results = run?.results ?? null;
  const number = (value) => (typeof value === "number" && Number.isFinite(value) ? value : null);
  const splits = {};
  for (const [split, stats] of Object.entries(results?.splits ?? {})) splits[split] = number(stats?.mean_reward);
  const end = run?.finished_at ?? (run?.status === "running" ? now : null);
  return {
    id: entry.id,
    runId: run?.run_id ?? entry.id,
    name: typeof run?.name === "string" ? run.name : null,
    error: entry.error ?? null,
    status: entry.status ?? run?.status ?? null,
    agent: entry.agent_name ?? run?.agent ?? null,
    algorithm: run?.algorithm ?? null,
    started: run?.started_at ?? null,
    elapsed: run && end != null ? end - run.started_at : null,
    rollouts: number(results?.total?.rollouts),
    mean: number(results?.total?.mean_reward),
    splits,
    best: number(results?.best?.score),
  };
}

/** Every split any of `summaries` reports, sorted. */
export function splitsOf(summaries) {
  return [...new Set(summaries.flatMap((s) => Object.keys(s.splits)))].sort();
}

/**
 * The two runs a comparison shows unless `asked` names them (by id): A the second newest, B the
 * newest (the list comes newest first), among the runs that can be read.
 */
export function pickRuns(entries, asked) {
  const ids = entries.filter((e) => e.run).map((e) => e.id);
  const b = ids.includes(asked.b) ? asked.b : ids[0];
  const a = ids.includes(asked.a) ? asked.a : (ids.find((id) => id !== b) ?? b);
  return { a, b };
}

/** The kept run a page's API base is under (`/runs/ID/` → `ID`), or `null` (a store's own page). */
export function runIdOfBase(base) {
  const match = /^\/runs\/([^/]+)\/$/.exec(base);
  return match ? decodeURIComponent(match[1]) : null;
}
