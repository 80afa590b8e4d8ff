// Two kept runs side by side (`agl-host dashboard` over a folder of runs): mean reward per split,
// then on the tasks both ran (matched by their input) each run's reward, which flipped across
// the pass mark, tokens and LLM time per rollout — drawn as two resources versions are.

import { get, ROOT, runBase } from "../api.js";
import { loadRun, compareRuns, meanByMode, taskRows } from "../run-data.js";
import { pickRuns, runSummary } from "../runs-data.js";
import { h, score, select } from "../dom.js";
import { setParams } from "../router.js";
import { comparison } from "./compare.js";

export async function render(context) {
  const entries = await get("/v1/agl-host/runs", {}, ROOT);
  const summaries = entries.filter((e) => e.run).map((e) => runSummary(e));
  if (summaries.length < 1) return h("p", { class: "muted" }, "No kept run can be read here.");
  const { a, b } = pickRuns(entries, context.params);
  const [runA, runB] = await Promise.all([loadRun(runBase(a)), loadRun(runBase(b))]);
  const [tasksA, tasksB] = [taskRows(runA.rows), taskRows(runB.rows)];
  const modes = [...new Set([...tasksA, ...tasksB].map((r) => r.rollout.mode).filter(Boolean))].sort();
  // `mode=all` in the address: every split (an absent one means val when either has it).
  const split = context.params.mode ?? (modes.includes("val") ? "val" : "all");
  const result = compareRuns(tasksA, tasksB, split === "all" ? "" : split);
  const params = { a, b, mode: split };
  const label = (s) => (s.name ? `${s.name} · ${s.runId}` : s.runId);
  const name = (id) => {
    const s = summaries.find((s) => s.id === id);
    return s ? label(s) : id;
  };
  const choices = summaries.map((s) => [s.id, `${label(s)} (${s.algorithm ?? "?"}, ${s.status ?? "?"})`]);
  return h("section", { "data-view": "compare-runs" },
    h("h1", {}, "Compare runs"),
    h("div", { class: "filters" },
      h("label", {}, "A ", select("a", choices, a, (v) => setParams({ ...params, a: v }))),
      h("label", {}, "B ", select("b", choices, b, (v) => setParams({ ...params, b: v }))),
      h("label", {}, "split ", select("mode", [["all", "all"], ...modes.map((m) => [m, m])], split, (v) => setParams({ ...params, mode: v })))),
    h("h2", {}, "Mean reward per split"),
    meansPerSplit(meanByMode(tasksA), meanByMode(tasksB), a, b),
    h("h2", {}, split === "all" ? "Every split" : `The ${split} split`),
    comparison(result, name(a), name(b), "No task was run by both runs (in this split)."),
  );
}

/** Per split: each run's mean reward (as its results count it), the difference, links to each run. */
function meansPerSplit(meansA, meansB, a, b) {
  const splits = [...new Set([...meansA, ...meansB].map((m) => m.mode))].sort();
  const of = (means, split) => means.find((m) => m.mode === split) ?? null;
  return h("table", { "data-table": "splits" },
    h("thead", {}, h("tr", {}, h("th", {}, "split"),
      h("th", { class: "num" }, h("a", { href: `${runBase(a)}#/` }, "A")),
      h("th", { class: "num" }, h("a", { href: `${runBase(b)}#/` }, "B")),
      h("th", { class: "num" }, "Δ"))),
    h("tbody", {}, splits.map((split) => {
      const [x, y] = [of(meansA, split), of(meansB, split)];
      const delta = x && y ? y.mean - x.mean : null;
      return h("tr", { "data-split": split },
        h("td", {}, split),
        h("td", { class: "num", "data-mean": "A" }, x ? `${score(x.mean)} (${x.rollouts})` : "—"),
        h("td", { class: "num", "data-mean": "B" }, y ? `${score(y.mean)} (${y.rollouts})` : "—"),
        h("td", { class: `num ${delta > 0 ? "up" : delta < 0 ? "down" : ""}` }, delta == null ? "—" : `${delta > 0 ? "+" : ""}${delta.toFixed(4)}`));
    })));
}
