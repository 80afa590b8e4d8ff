// A GEPA run's search (`#/candidates`): the candidate tree (each candidate a node with its id,
// origin and mean val score; edges from its parents), the per-val-task Pareto front (val task ×
// candidate, the best on each task marked), each candidate's component texts, and every proposal.
// All read from the run record's results; every text is put on the page as text, never as markup.

import { loadRun } from "../run-data.js";
import { h, card, score, oneLine } from "../dom.js";
import { gepaSummary, isGepaRecord, candidateId, originLabel, treeLayout, frontTable, valTaskInputs, TREE } from "../gepa-data.js";

const NS = "http://www.w3.org/2000/svg";

export async function render() {
  const { record, rows } = await loadRun();
  const summary = gepaSummary(record);
  const root = h("section", { "data-view": "candidates" });
  if (!summary) {
    const why = isGepaRecord(record)
      ? "The candidates are in the run's results, written when the run ends."
      : `This run's algorithm (${record?.algorithm ?? "none recorded"}) keeps no candidate tree: GEPA's does (--algo gepa).`;
    root.append(h("h1", {}, "Candidates"), h("p", { class: "muted", "data-empty": "" }, why));
    return root;
  }
  const front = frontTable(summary);
  const bestId = summary.best?.resources_id ?? record?.results?.best?.resources_id ?? null;
  const proposals = Array.isArray(summary.proposals) ? summary.proposals : [];
  const inputs = valTaskInputs(summary, rows);
  root.append(
    h("h1", {}, "Candidates ", h("span", { class: "muted" }, String(summary.candidates.length))),
    h("div", { class: "cards" },
      card("candidates", String(summary.candidates.length), "candidates"),
      card("best", bestId ? `${bestId} ${score(summary.best?.score)}` : "—", "gepa-best"),
      card("seed", summary.seed_candidate ? `${summary.seed_candidate.resources_id ?? "—"} ${score(summary.seed_candidate.score)}` : "—", "gepa-seed"),
      card("proposals kept", `${proposals.filter((p) => p.accepted).length} of ${proposals.length}`, "proposals"),
      card("val tasks", String(front.rows.length), "val-tasks"),
      summary.stopped_because ? card("stopped", String(summary.stopped_because), "stopped") : null,
    ),
    h("h2", {}, "Candidate tree"),
    h("p", { class: "muted" }, "Each candidate under its parents (a merge under both), with its origin and mean val score; ★ the best, a thick border: on the front (best on some val task). A click shows its texts against its first parent's."),
    h("div", { class: "tree" }, tree(summary, front, bestId)),
    h("h2", {}, "Per-val-task front"),
    h("p", { class: "muted" }, "Each candidate's score on each val task; ★ marks the candidates with the task's best score (the front on that task)."),
    frontView(front, inputs),
    h("h2", {}, "Candidates and their texts"),
    candidatesTable(summary, front, bestId),
    proposals.length ? [h("h2", {}, "Proposals"), proposalsTable(proposals)] : null,
  );
  return root;
}

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Where a click on a candidate leads: its texts against its first parent's (Resources' diff). */
function diffHref(candidate) {
  const id = candidateId(candidate);
  const parent = candidate.parents?.[0];
  return parent ? `#/resources?a=${encodeURIComponent(parent)}&b=${encodeURIComponent(id)}` : `#/resources?b=${encodeURIComponent(id)}`;
}

function tree(summary, front, bestId) {
  const layout = treeLayout(summary.candidates);
  const out = svg("svg", {
    viewBox: `0 0 ${layout.width} ${layout.height}`, width: layout.width, role: "img", "data-tree": "",
    "aria-label": "candidate tree",
  });
  const at = new Map(layout.nodes.map((n) => [n.id, n]));
  for (const edge of layout.edges) {
    const [p, c] = [at.get(edge.from), at.get(edge.to)];
    const [x1, y1, x2, y2] = [p.x + TREE.nodeW / 2, p.y + TREE.nodeH, c.x + TREE.nodeW / 2, c.y];
    const mid = (y1 + y2) / 2;
    out.append(svg("path", {
      class: "edge", "data-edge": `${edge.from}>${edge.to}`,
      d: `M ${x1} ${y1} C ${x1} ${mid}, ${x2} ${mid}, ${x2} ${y2}`,
    }));
  }
  for (const node of layout.nodes) {
    const c = node.candidate;
    const onFront = (front.bestOn.get(node.id) ?? 0) > 0;
    const kind = typeof c.origin?.kind === "string" ? c.origin.kind : "other";
    const link = svg("a", { href: diffHref(c), "data-node": node.id, "data-origin": kind });
    const classes = ["node", `origin-${kind.replace(/[^a-z]/g, "")}`, onFront ? "on-front" : "", node.id === bestId ? "best" : ""];
    link.append(
      svg("title", {}, `${node.id}: ${originLabel(c)}; parents ${(c.parents ?? []).join(", ") || "none"}; mean val ${score(c.val_score)}; best on ${front.bestOn.get(node.id) ?? 0} val task(s)`),
      svg("rect", { class: classes.filter(Boolean).join(" "), x: node.x, y: node.y, width: TREE.nodeW, height: TREE.nodeH, rx: 6 }),
      svg("text", { class: "id", x: node.x + 10, y: node.y + 18 }, `${oneLine(node.id, 14)}${node.id === bestId ? " ★" : ""}`),
      svg("text", { class: "score", x: node.x + TREE.nodeW - 10, y: node.y + 18, "text-anchor": "end", "data-score": "" }, score(c.val_score)),
      svg("text", { class: "origin", x: node.x + 10, y: node.y + 36, "data-origin-label": "" }, oneLine(originLabel(c), 24)),
      svg("text", { class: "origin", x: node.x + 10, y: node.y + 51 }, c.parents?.length ? `from ${oneLine(c.parents.join(" + "), 19)}` : "no parent"),
    );
    out.append(link);
  }
  return out;
}

function frontView({ ids, rows, bestOn }, inputs) {
  const label = (task) => {
    const input = inputs[task];
    if (input === undefined) return "";
    return oneLine(typeof input?.question === "string" ? input.question : input, 80);
  };
  return h("table", { "data-table": "front" },
    h("thead", {}, h("tr", {},
      h("th", {}, "val task"), inputs.length ? h("th", {}, "input") : null, h("th", { class: "num" }, "best"),
      ids.map((id) => h("th", { class: "num", "data-candidate": id }, id)),
      h("th", {}, "front"))),
    h("tbody", {}, rows.map((row) => h("tr", { "data-task": row.task },
      h("td", { class: "mono" }, `task ${row.task}`),
      inputs.length ? h("td", { title: JSON.stringify(inputs[row.task] ?? null) }, label(row.task)) : null,
      h("td", { class: "num" }, score(row.best)),
      ids.map((id) => {
        const onFront = row.front.has(id);
        return h("td", { class: `num${onFront ? " front" : ""}`, "data-candidate": id, "data-front": onFront },
          row.scores.has(id) ? score(row.scores.get(id)) : "—", onFront ? " ★" : null);
      }),
      h("td", { class: "mono", "data-front-set": "" }, [...row.front].join(", "))))),
    h("tfoot", {},
      h("tr", { "data-total": "best-on" },
        h("th", {}, "best on"), inputs.length ? h("th", {}, "") : null, h("th", {}, ""),
        ids.map((id) => h("td", { class: "num", "data-candidate": id }, `${bestOn.get(id) ?? 0} task(s)`)),
        h("th", {}, ""))));
}

function candidatesTable(summary, front, bestId) {
  const candidates = [...summary.candidates].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
  return h("table", { "data-table": "candidates" },
    h("thead", {}, h("tr", {}, h("th", {}, "candidate"), h("th", {}, "parents"), h("th", {}, "origin"),
      h("th", { class: "num" }, "iteration"), h("th", { class: "num" }, "mean val"), h("th", { class: "num" }, "best on"),
      h("th", {}, "texts"))),
    h("tbody", {}, candidates.map((c) => {
      const id = candidateId(c);
      const components = c.components && typeof c.components === "object" ? Object.entries(c.components) : [];
      return h("tr", { "data-candidate": id },
        h("td", { class: "mono" }, id, id === bestId ? h("strong", {}, " ★ best") : null),
        h("td", { class: "mono" }, (c.parents ?? []).join(", ") || "—"),
        h("td", { "data-origin": "" }, originLabel(c)),
        h("td", { class: "num" }, c.iteration ?? "—"),
        h("td", { class: "num" }, score(c.val_score)),
        h("td", { class: "num" }, `${front.bestOn.get(id) ?? 0} task(s)`),
        h("td", {},
          components.map(([name, text]) => h("details", { "data-component": name },
            h("summary", { class: "mono" }, name, " ", h("span", { class: "muted" }, oneLine(text, 60))),
            h("pre", {}, typeof text === "string" ? text : JSON.stringify(text, null, 2)))),
          h("a", { href: diffHref(c) }, c.parents?.length ? `diff from ${c.parents[0]} →` : "resources →")));
    })));
}

function proposalsTable(proposals) {
  const sum = (values) => (Array.isArray(values) ? values.reduce((s, v) => s + (Number(v) || 0), 0) : null);
  return h("table", { "data-table": "proposals" },
    h("thead", {}, h("tr", {}, h("th", { class: "num" }, "iteration"), h("th", {}, "kind"), h("th", {}, "parents"),
      h("th", {}, "component / ancestor"), h("th", {}, "on"), h("th", { class: "num" }, "parents' sum"),
      h("th", { class: "num" }, "its sum"), h("th", {}, "kept"), h("th", {}, "candidate"))),
    h("tbody", {}, proposals.map((p) => h("tr", { "data-accepted": Boolean(p.accepted) },
      h("td", { class: "num" }, p.iteration ?? "—"),
      h("td", {}, p.kind ?? "—"),
      h("td", { class: "mono" }, (p.parents ?? []).join(", ")),
      h("td", { class: "mono" }, p.component ?? p.ancestor ?? "—"),
      h("td", {}, `${p.split ?? "?"} ${Array.isArray(p.minibatch) ? `[${p.minibatch.join(", ")}]` : ""}`),
      h("td", { class: "num" }, (p.parent_scores ?? []).map((s) => String(sum(s))).join(" / ") || "—"),
      h("td", { class: "num" }, sum(p.scores) ?? "—"),
      h("td", { class: p.accepted ? "up" : "down" }, p.accepted ? `yes${typeof p.val_score === "number" ? `, val ${score(p.val_score)}` : ""}` : "no"),
      h("td", { class: "mono" }, p.resources_id ?? "—")))));
}
