// Two resources versions of the run side by side: mean reward, tokens and LLM time per rollout,
// and per task (same input) the reward under each, which tasks flipped across the pass mark.
// `comparison` draws any two sides (the Compare runs view uses it too).

import { all } from "../api.js";
import { loadRun, compareVersions, pickVersions, taskRows, PASS } from "../run-data.js";
import { h, score, duration, oneLine, select } from "../dom.js";
import { setParams } from "../router.js";

export async function render(context) {
  const [versions, run] = await Promise.all([all("/v1/agl/resources"), loadRun()]);
  versions.sort((x, y) => x.create_time - y.create_time || x.version - y.version);
  const ids = versions.map((v) => v.resources_id);
  if (ids.length < 1) return h("p", { class: "muted" }, "No resources in this store.");
  const best = run.record?.results?.best?.resources_id;
  const { a, b } = pickVersions(ids, run.rows, best, context.params);
  const modes = [...new Set(run.rows.map((r) => r.rollout.mode).filter(Boolean))].sort();
  // `mode=all` in the address: every split (an absent one means the default, val).
  const split = context.params.mode ?? (modes.includes("val") ? "val" : "all");
  const mode = split === "all" ? "" : split;
  const result = compareVersions(taskRows(run.rows), a, b, mode);
  const params = { a, b, mode: split };
  return h("section", { "data-view": "compare" },
    h("h1", {}, "Compare resources versions"),
    h("div", { class: "filters" },
      h("label", {}, "A ", select("a", ids.map((id) => [id, id]), a, (v) => setParams({ ...params, a: v }))),
      h("label", {}, "B ", select("b", ids.map((id) => [id, id]), b, (v) => setParams({ ...params, b: v }))),
      h("label", {}, "split ", select("mode", [["all", "all"], ...modes.map((m) => [m, m])], split, (v) => setParams({ ...params, mode: v })))),
    comparison(result, a, b, "No task was run under both versions (in this split)."),
  );
}

/**
 * A comparison (`compareRows`'s result) drawn: a card per side (`nameA`, `nameB`: mean reward,
 * rollouts, tokens and LLM time per rollout), the flips, and the tasks both ran with their
 * rewards, difference and flip; `none` when no task is on both sides.
 */
export function comparison(result, nameA, nameB, none) {
  const flips = result.tasks.filter((t) => t.flipped);
  const sideCard = (label, name, side) => h("div", { class: "card", "data-side": label },
    h("div", { class: "label mono" }, `${label}: ${name}`),
    h("div", { class: "value" }, score(side.mean)),
    h("div", { class: "muted" }, `${side.rollouts} rollouts · ${Math.round(side.tokens ?? 0)} tokens · ${duration(side.llmSeconds ?? 0)} LLM per rollout`));
  return [
    h("div", { class: "cards" }, sideCard("A", nameA, result.a), sideCard("B", nameB, result.b),
      h("div", { class: "card", "data-card": "flips" }, h("div", { class: "label" }, `flipped (pass ≥ ${PASS})`),
        h("div", { class: "value" }, `${flips.filter((t) => t.flipped === "up").length} ↑ ${flips.filter((t) => t.flipped === "down").length} ↓`))),
    h("h2", {}, `Tasks both ran (${result.tasks.length})`),
    result.tasks.length ? h("table", { "data-table": "tasks" },
      h("thead", {}, h("tr", {}, h("th", {}, "task"), h("th", { class: "num" }, "A"), h("th", { class: "num" }, "B"), h("th", { class: "num" }, "Δ"), h("th", {}, ""))),
      h("tbody", {}, result.tasks.map((t) => h("tr", { "data-flipped": t.flipped ?? "" },
        h("td", { class: "mono", title: JSON.stringify(t.input) }, oneLine(t.input, 80)),
        h("td", { class: "num" }, score(t.a)), h("td", { class: "num" }, score(t.b)),
        h("td", { class: `num ${t.delta > 0 ? "up" : t.delta < 0 ? "down" : ""}` }, t.delta === 0 ? "0" : `${t.delta > 0 ? "+" : ""}${t.delta.toFixed(4)}`),
        h("td", {}, t.flipped === "up" ? h("span", { class: "up" }, "flipped ↑") : t.flipped === "down" ? h("span", { class: "down" }, "flipped ↓") : "")))),
    ) : h("p", { class: "muted" }, none),
  ];
}
