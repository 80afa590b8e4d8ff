// Every rollout in one table: filters (status, mode, resources version, flagged only), sort by
// reward or start, live updates while rollouts are still running. A click opens the rollout.

import { loadRun, isAlgorithmRollout, isFinished, forkOf } from "../run-data.js";
import { h, fill, score, duration, time, status, oneLine, select } from "../dom.js";
import { setParams } from "../router.js";

/** Rows drawn at once unless all are asked for (a big run's table stays quick to redraw). */
const SHOWN_AT_MOST = 500;
const SORTS = [["start", "start time"], ["reward-desc", "reward, highest first"], ["reward-asc", "reward, lowest first"]];

export async function render(context) {
  const filters = { status: "", mode: "", version: "", flagged: "", sort: "start", all: "", ...context.params };
  const root = h("section", { "data-view": "rollouts" });
  const paint = async () => {
    const data = await loadRun();
    fill(root, content(data.rows, filters));
    return data;
  };
  const { record, rows } = await paint();
  if (record?.status === "running" || rows.some((r) => !isFinished(r.rollout))) context.live(paint);
  return root;
}

/** The rows that pass the filters, in the order asked for. */
export function filterAndSort(rows, filters) {
  const kept = rows.filter(({ rollout, outcome }) => (!filters.status || rollout.status === filters.status)
    && (!filters.mode || (rollout.mode ?? "-") === filters.mode)
    && (!filters.version || (rollout.resources_id ?? "-") === filters.version)
    && (!filters.flagged || outcome?.no_triplet_reason));
  // Rollouts without a reward (yet) come last either way.
  const byReward = (direction) => (a, b) => {
    const [x, y] = [a.outcome?.final_reward, b.outcome?.final_reward];
    if (x == null || y == null) return (x == null) - (y == null);
    return direction * (x - y);
  };
  const order = {
    "reward-desc": byReward(-1),
    "reward-asc": byReward(1),
    start: (a, b) => a.rollout.start_time - b.rollout.start_time,
  }[filters.sort] ?? ((a, b) => a.rollout.start_time - b.rollout.start_time);
  return kept.sort(order);
}

function content(rows, filters) {
  const distinct = (f) => [...new Set(rows.map(f))].sort();
  const choice = (name, values) => h("label", {}, `${name} `, select(name, [["", "all"], ...values.map((v) => [v, v])],
    filters[name], (value) => setParams({ ...filters, [name]: value })));
  const shown = filterAndSort(rows, filters);
  const flagged = rows.filter((r) => r.outcome?.no_triplet_reason).length;
  const unfinished = rows.filter((r) => !isFinished(r.rollout)).length;
  return [
    h("h1", {}, "Rollouts ", h("span", { class: "muted" }, `${shown.length} of ${rows.length}`),
      h("span", { class: "muted", "data-unfinished": unfinished }, unfinished ? ` · ${unfinished} unfinished` : "")),
    h("div", { class: "filters" },
      choice("status", distinct((r) => r.rollout.status)),
      choice("mode", distinct((r) => r.rollout.mode ?? "-")),
      choice("version", distinct((r) => r.rollout.resources_id ?? "-")),
      h("label", {}, "sort ", select("sort", SORTS, filters.sort, (value) => setParams({ ...filters, sort: value }))),
      h("label", {}, h("input", { type: "checkbox", name: "flagged", checked: Boolean(filters.flagged),
        onchange: (e) => setParams({ ...filters, flagged: e.target.checked ? "1" : "" }) }), ` no triplet only (${flagged})`),
    ),
    h("table", { "data-table": "rollouts" },
      h("thead", {}, h("tr", {}, ["rollout", "status", "mode", "resources", "input", "attempts", "reward", "LLM calls", "tokens", "duration", "started", ""]
        .map((t) => h("th", { class: ["reward", "LLM calls", "tokens", "attempts"].includes(t) ? "num" : null }, t)))),
      h("tbody", {}, (filters.all ? shown : shown.slice(0, SHOWN_AT_MOST)).map(row)),
    ),
    !filters.all && shown.length > SHOWN_AT_MOST ? h("p", { class: "muted" },
      `The first ${SHOWN_AT_MOST} of ${shown.length} are shown: narrow them with the filters, or `,
      h("a", { href: "#", onclick: (e) => { e.preventDefault(); setParams({ ...filters, all: "1" }); } }, "show them all"), ".") : null,
  ];
}

function row({ rollout, outcome }) {
  const open = () => { location.hash = `#/rollout/${encodeURIComponent(rollout.rollout_id)}`; };
  const end = rollout.end_time ?? (isFinished(rollout) ? null : Date.now() / 1000);
  return h("tr", { class: "clickable", onclick: open, "data-rollout": rollout.rollout_id },
    h("td", { class: "mono" }, rollout.rollout_id, isAlgorithmRollout(rollout) ? h("span", { class: "muted" }, " (algorithm)") : null,
      forkBadge(forkOf(rollout))),
    h("td", {}, status(rollout.status)),
    h("td", {}, rollout.mode ?? "-"),
    h("td", { class: "mono" }, rollout.resources_id ?? "-"),
    h("td", { class: "mono", title: JSON.stringify(rollout.input) }, oneLine(rollout.input, 50)),
    h("td", { class: "num" }, rollout.attempt ? String(rollout.attempt.sequence_id) : "0"),
    h("td", { class: "num", "data-reward": "" }, score(outcome?.final_reward)),
    h("td", { class: "num" }, outcome ? String(outcome.triplets) : "—"),
    h("td", { class: "num" }, outcome ? String(outcome.input_tokens + outcome.output_tokens) : "—"),
    h("td", {}, end ? duration(end - rollout.start_time) : "—"),
    h("td", { class: "time" }, time(rollout.start_time)),
    h("td", {}, outcome?.no_triplet_reason ? h("span", { class: "flag", "data-flag": "", title: outcome.no_triplet_reason }, `⚑ ${outcome.no_triplet_reason}`) : null),
  );
}

/** A fork's badge, what it branched from in its title; nothing for a rollout that is not a fork. */
function forkBadge(fork) {
  if (!fork) return null;
  const text = (value) => (typeof value === "string" ? value : JSON.stringify(value) ?? "?");
  return h("span", {
    class: "badge", "data-fork-badge": "",
    title: `forked from ${text(fork.parent_rollout_id)} at LLM call ${text(fork.at_llm_call)}, branch ${text(fork.branch)} of ${text(fork.branches)}`,
  }, "fork");
}
