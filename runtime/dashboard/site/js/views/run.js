// The run at a glance: status, agent, algorithm, elapsed, rollouts by status, mean reward per
// split, best score; reward over time and per resources version (charts).

import { loadRun, countByStatus, countedReward, meanByMode, meanByVersion, taskRows, isFinished } from "../run-data.js";
import { h, fill, card, score, duration, time, status } from "../dom.js";
import { lineChart, barChart } from "../chart.js";
import { gepaSummary } from "../gepa-data.js";

export async function render(context) {
  const root = h("section", { "data-view": "run" });
  const paint = async () => {
    const data = await loadRun();
    fill(root, content(data));
    return data;
  };
  const data = await paint();
  if (data.record?.status === "running") context.live(paint);
  return root;
}

function content({ record, statistics, rows }) {
  const tasks = taskRows(rows);
  const counts = countByStatus(tasks);
  const modes = meanByMode(tasks);
  const results = record?.results ?? null;
  const started = record?.started_at ?? Math.min(...tasks.map((r) => r.rollout.start_time));
  const ended = record?.finished_at ?? (record?.status === "running" ? Date.now() / 1000 : null);
  const best = results?.best ?? null;
  const gepa = gepaSummary(record);
  return [
    h("h1", {}, record ? record.run_id : "Store", " ", record ? status(record.status) : null),
    record ? h("p", { class: "muted" }, `agent ${record.agent} · algorithm ${record.algorithm} · started ${time(record.started_at)}`) : null,
    h("div", { class: "cards" },
      card("rollouts", String(tasks.length), "rollouts"),
      ...Object.entries(counts).sort().map(([s, n]) => card(s, String(n), `status-${s}`)),
      ...modes.map(({ mode, mean, rollouts }) => card(`mean reward (${mode}, ${rollouts})`, score(mean), `mean-${mode}`)),
      card("best score", best ? score(best.score) : "—", "best"),
      card("elapsed", ended ? duration(ended - started) : "—", "elapsed"),
      card("spans", String(statistics.total_spans), "spans"),
    ),
    best?.resources_id ? h("p", {}, "Best resources: ", h("a", { href: `#/resources?b=${encodeURIComponent(best.resources_id)}` }, best.resources_id)) : null,
    gepa ? h("p", { "data-gepa": "" }, `GEPA: ${gepa.candidates.length} candidate(s), ${gepa.pareto_front?.length ?? 0} val task(s) on the front: `,
      h("a", { href: "#/candidates" }, "the candidate tree and per-task front →")) : null,
    h("div", { class: "row" },
      h("div", { class: "chart" }, h("h2", {}, "Reward over time"), rewardOverTime(tasks, started)),
      h("div", { class: "chart" }, h("h2", {}, "Mean reward per resources version"), rewardPerVersion(tasks)),
    ),
  ];
}

function rewardOverTime(rows, started) {
  const points = rows.filter((r) => isFinished(r.rollout) && r.rollout.end_time)
    .sort((a, b) => a.rollout.end_time - b.rollout.end_time)
    .map((r) => ({
      x: r.rollout.end_time - started,
      y: countedReward(r),
      title: `${r.rollout.rollout_id} (${r.rollout.mode ?? "-"}, ${r.rollout.resources_id ?? "-"}): ${score(countedReward(r))}`,
    }));
  if (!points.length) return h("p", { class: "muted" }, "No finished rollout yet.");
  return lineChart(points, movingMean(points, WINDOW), "seconds since start", `mean of last ${WINDOW}`);
}

/** Rollouts the moving mean of the reward chart spans. */
const WINDOW = 16;

/** The mean of each point's `window` last values (fewer at the start). */
export function movingMean(points, window) {
  let sum = 0;
  return points.map((p, i) => {
    sum += p.y - (i >= window ? points[i - window].y : 0);
    return { x: p.x, y: sum / Math.min(i + 1, window) };
  });
}

function rewardPerVersion(rows) {
  const versions = meanByVersion(rows).filter((v) => Object.keys(v.modes).length);
  if (!versions.length) return h("p", { class: "muted" }, "No rollout yet.");
  return barChart(versions.map((v) => ({
    label: v.resources_id,
    bars: Object.entries(v.modes).map(([mode, m]) => ({
      series: mode, value: m.mean, title: `${v.resources_id} ${mode}: ${score(m.mean)} over ${m.rollouts} rollout(s)`,
    })),
  })));
}
