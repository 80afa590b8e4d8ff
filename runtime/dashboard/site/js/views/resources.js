// Resources versions: each version with the score its rollouts got, and a side-by-side line diff
// of the prompt templates (any resource: its template, or its JSON) between two chosen versions.

import { all } from "../api.js";
import { loadRun, meanByVersion, pickVersions, taskRows } from "../run-data.js";
import { h, score, time, select } from "../dom.js";
import { setParams } from "../router.js";
import { diffLines, sideBySide } from "../line-diff.js";

export async function render(context) {
  const [versions, run] = await Promise.all([all("/v1/agl/resources"), loadRun()]);
  if (!versions.length) return h("p", { class: "muted" }, "No resources in this store.");
  versions.sort((x, y) => x.create_time - y.create_time || x.version - y.version);
  const scores = new Map(meanByVersion(taskRows(run.rows)).map((v) => [v.resources_id, v.modes]));
  const ids = versions.map((v) => v.resources_id);
  const best = run.record?.results?.best?.resources_id;
  const { a, b } = pickVersions(ids, run.rows, best, context.params);
  const byId = new Map(versions.map((v) => [v.resources_id, v]));
  const modes = [...new Set([...scores.values()].flatMap((m) => Object.keys(m)))].sort();
  return h("section", { "data-view": "resources" },
    h("h1", {}, "Resources versions ", h("span", { class: "muted" }, String(versions.length))),
    h("table", { "data-table": "resources" },
      h("thead", {}, h("tr", {}, h("th", {}, "resources"), h("th", {}, "created"), h("th", {}, "names"),
        modes.map((m) => h("th", { class: "num" }, `mean reward (${m})`)), h("th", {}, ""))),
      h("tbody", {}, versions.map((v) => h("tr", { "data-resources": v.resources_id },
        h("td", { class: "mono" }, v.resources_id, v.resources_id === best ? h("strong", {}, " ★ best") : null),
        h("td", {}, time(v.create_time)),
        h("td", {}, Object.keys(v.resources).join(", ")),
        modes.map((m) => {
          const s = scores.get(v.resources_id)?.[m];
          return h("td", { class: "num" }, s ? `${score(s.mean)} (${s.rollouts})` : "—");
        }),
        h("td", {}, h("a", { href: `#/rollouts?version=${encodeURIComponent(v.resources_id)}` }, "rollouts")))))),
    h("h2", {}, "Diff"),
    h("div", { class: "filters" },
      h("label", {}, "from ", select("a", ids.map((id) => [id, id]), a, (value) => setParams({ a: value, b }))),
      h("label", {}, "to ", select("b", ids.map((id) => [id, id]), b, (value) => setParams({ a, b: value }))),
      h("a", { href: `#/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}` }, "compare their rewards →")),
    diffs(byId.get(a), byId.get(b)),
  );
}

/** The text a resource is compared by: its template, or its JSON. */
function textOf(resource) {
  if (resource === undefined) return "";
  return typeof resource.template === "string" ? resource.template : JSON.stringify(resource, null, 2);
}

function diffs(a, b) {
  const names = [...new Set([...Object.keys(a.resources), ...Object.keys(b.resources)])].sort();
  return names.map((name) => {
    const rows = sideBySide(diffLines(textOf(a.resources[name]), textOf(b.resources[name])));
    const changed = rows.filter((r) => r.left?.op !== "same").length;
    const line = (side) => h("div", { class: `line ${side ? side.op : "blank"}` }, side ? side.line : "");
    return h("div", { "data-diff": name },
      h("h3", {}, name, " ", h("span", { class: "muted" }, changed ? `${changed} line(s) changed` : "unchanged")),
      h("div", { class: "diff" },
        h("div", { class: "side" }, h("div", { class: "head mono" }, a.resources_id), rows.map((r) => line(r.left))),
        h("div", { class: "side" }, h("div", { class: "head mono" }, b.resources_id), rows.map((r) => line(r.right)))));
  });
}
