// Every kept run `agl-host dashboard` serves, newest first: status, rollouts, mean reward per
// split, best score, elapsed, algorithm and agent (redrawn while a run goes). A click opens the
// run's own views (under `/runs/ID/`); two runs are compared in the Compare runs view.

import { get, ROOT, runBase } from "../api.js";
import { runSummary, splitsOf } from "../runs-data.js";
import { h, fill, score, duration, time, status } from "../dom.js";

export async function render(context) {
  const root = h("section", { "data-view": "runs" });
  const paint = async () => {
    const summaries = (await get("/v1/agl-host/runs", {}, ROOT)).map((entry) => runSummary(entry));
    fill(root, content(summaries));
    return summaries;
  };
  const summaries = await paint();
  // A run still going (or killed before it recorded an end): its row is redrawn as it changes.
  if (summaries.some((s) => s.status === "running?" || s.status === "running")) context.live(paint);
  return root;
}

function content(summaries) {
  const splits = splitsOf(summaries);
  const readable = summaries.filter((s) => !s.error);
  return [
    h("h1", {}, "Runs ", h("span", { class: "muted" }, String(summaries.length))),
    readable.length >= 2 ? h("p", {}, h("a", { href: "#/compare-runs" }, "Compare two runs →")) : null,
    summaries.length ? h("table", { "data-table": "runs" },
      h("thead", {}, h("tr", {},
        ["run", "status", "started (UTC)", "elapsed", "rollouts", "mean reward", ...splits.map((s) => `mean (${s})`), "best", "algorithm", "agent"]
          .map((t) => h("th", { class: ["rollouts", "mean reward", "best", ...splits.map((s) => `mean (${s})`)].includes(t) ? "num" : null }, t)))),
      h("tbody", {}, summaries.map((s) => s.error ? unreadable(s, splits) : row(s, splits))),
    ) : h("p", { class: "muted" }, "No kept runs here: `agl-host run` and `agl-host dev` keep each run in .agl/runs/ of the folder they ran in (`agl-host dashboard --dir` names another folder)."),
  ];
}

function row(s, splits) {
  const open = () => { location.href = `${runBase(s.id)}#/`; };
  return h("tr", { class: "clickable", onclick: open, "data-run": s.id },
    h("td", { class: "mono" }, h("a", { href: `${runBase(s.id)}#/` }, s.runId),
      s.name ? h("div", { class: "muted", "data-cell": "name" }, s.name) : null),
    h("td", {}, status(s.status)),
    h("td", { class: "time" }, time(s.started)),
    h("td", {}, duration(s.elapsed)),
    h("td", { class: "num", "data-cell": "rollouts" }, s.rollouts == null ? "—" : String(s.rollouts)),
    h("td", { class: "num", "data-cell": "mean" }, score(s.mean)),
    splits.map((split) => h("td", { class: "num", "data-cell": `mean-${split}` }, score(s.splits[split]))),
    h("td", { class: "num", "data-cell": "best" }, score(s.best)),
    h("td", {}, s.algorithm ?? "—"),
    h("td", { class: "mono" }, s.agent ?? "—"),
  );
}

function unreadable(s, splits) {
  return h("tr", { "data-run": s.id },
    h("td", { class: "mono" }, s.id),
    h("td", { class: "error", colspan: 9 + splits.length }, `cannot be read: ${s.error}`));
}
