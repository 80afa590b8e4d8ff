// The views put no stray "null" on the page: a view's optional parts (`cond ? h(...) : null`)
// are skipped, as `h` skips them, never turned into text by the DOM's own `replaceChildren`.
// A small stand-in for the DOM stringifies what is not a node, as a browser's does.
import { test, beforeEach } from "node:test";
import assert from "node:assert/strict";

class FakeNode {}
class FakeText extends FakeNode {
  constructor(text) { super(); this.text = text; }
  get textContent() { return this.text; }
}
class FakeElement extends FakeNode {
  constructor(tag) { super(); this.tag = tag; this.children = []; this.attributes = {}; }
  append(...nodes) {
    for (const node of nodes) this.children.push(node instanceof FakeNode ? node : new FakeText(String(node)));
  }
  replaceChildren(...nodes) { this.children = []; this.append(...nodes); }
  setAttribute(key, value) { this.attributes[key] = value; }
  addEventListener() {}
  get textContent() { return this.children.map((c) => c.textContent).join(""); }
  set textContent(text) { this.children = [new FakeText(String(text))]; }
}

/** Answers of the fake store, by path (a missing path is a 404). */
let answers = {};

beforeEach(() => {
  globalThis.Node = FakeNode;
  globalThis.document = {
    createElement: (tag) => new FakeElement(tag),
    createElementNS: (_ns, tag) => new FakeElement(tag),
  };
  globalThis.sessionStorage = { getItem: () => null, setItem: () => {} };
  globalThis.location = { origin: "http://127.0.0.1:4748", pathname: "/", hash: "#/" };
  globalThis.fetch = async (url) => {
    const body = answers[new URL(url).pathname];
    return {
      ok: body !== undefined,
      status: body !== undefined ? 200 : 404,
      statusText: body !== undefined ? "OK" : "Not Found",
      json: async () => body ?? { detail: "not found" },
    };
  };
  answers = {
    "/v1/agl/statistics": { total_spans: 0 },
    "/v1/agl/rollouts": {
      items: [{ rollout_id: "ro-1", status: "succeeded", input: { q: 1 }, start_time: 1, end_time: 2, attempt: null }],
    },
    "/v1/agl/workers": { items: [] },
  };
});

const context = { params: {}, live() {} };

test("fill skips null, undefined and false, and flattens arrays", async () => {
  const { fill, h } = await import("../dom.js");
  const el = h("div", {});
  fill(el, "a", null, [undefined, h("b", {}, "c"), false], 0);
  assert.equal(el.textContent, "ac0");
});

test("the run view of a store without a run record shows no null", async () => {
  const { render } = await import("../views/run.js");
  const root = await render(context);
  assert.ok(root.textContent.includes("Store"), root.textContent);
  assert.ok(!root.textContent.includes("null"), root.textContent);
});

test("the rollouts view shows no null under its table", async () => {
  const { render } = await import("../views/rollouts.js");
  const root = await render(context);
  assert.ok(root.textContent.includes("ro-1"), root.textContent);
  assert.ok(!root.textContent.includes("null"), root.textContent);
});

test("the workers view shows no null", async () => {
  const { render } = await import("../views/workers.js");
  const root = await render(context);
  assert.ok(!root.textContent.includes("null"), root.textContent);
});

test("the candidates view draws a GEPA run's tree and front, its texts as text", async () => {
  const hostile = "<script>alert(1)</script>";
  answers["/v1/agl-host/run"] = {
    run_id: "run-1", algorithm: "gepa", status: "completed",
    results: {
      best: { resources_id: "v1", score: 1 },
      algorithm_summary: {
        best: { resources_id: "v1", score: 1 },
        seed_candidate: { resources_id: "v0", score: 0.5 },
        candidates: [
          { index: 0, resources_id: "v0", parents: [], origin: { kind: "seed" }, iteration: 0, components: { system: hostile }, val_score: 0.5, val_scores: [1, 0] },
          { index: 1, resources_id: "v1", parents: ["v0"], origin: { kind: "mutation", component: "system" }, iteration: 1, components: { system: "better" }, val_score: 1, val_scores: [1, 1] },
        ],
        pareto_front: [{ val_task: 0, score: 1, candidates: ["v0", "v1"] }, { val_task: 1, score: 1, candidates: ["v1"] }],
        proposals: [{ iteration: 1, kind: "mutation", parents: ["v0"], component: "system", split: "train", minibatch: [0], parent_scores: [[0]], scores: [1], resources_id: "v1", accepted: true, val_score: 1 }],
      },
    },
  };
  const { render } = await import("../views/candidates.js");
  const root = await render(context);
  const text = root.textContent;
  assert.ok(text.includes("mutation of system") && text.includes("v1 ★ best"), text);
  assert.ok(text.includes(hostile), "the component text is shown as it is");
  assert.ok(!text.includes("null") && !text.includes("undefined"), text);
  const find = (node, pred) => {
    if (pred(node)) return node;
    for (const child of node.children ?? []) {
      const found = find(child, pred);
      if (found) return found;
    }
    return null;
  };
  const pre = find(root, (n) => n.tag === "pre" && n.textContent === hostile);
  assert.ok(pre && pre.children.every((c) => c instanceof FakeText), "a text node, not markup");
  assert.ok(find(root, (n) => n.attributes?.["data-edge"] === "v0>v1"));
  assert.ok(find(root, (n) => n.attributes?.["data-node"] === "v1"));
  delete answers["/v1/agl-host/run"];
});

test("the candidates view of a run that is not GEPA's says so", async () => {
  answers["/v1/agl-host/run"] = { run_id: "run-1", algorithm: "apo", status: "completed", results: { algorithm_summary: { history: [] } } };
  const { render } = await import("../views/candidates.js");
  const root = await render(context);
  assert.ok(root.textContent.includes("keeps no candidate tree"), root.textContent);
  delete answers["/v1/agl-host/run"];
});

test("a rollout lists the forks made from it by LLM call, and a fork says what it branched from, as text", async () => {
  const hostile = "<img src=x onerror=alert(1)>";
  const fork = (id, at, branch, extra = {}) => ({
    rollout_id: id, status: "succeeded", input: { q: 1 }, start_time: 2, attempt: null,
    metadata: { "agl.fork": { parent_rollout_id: "ro-p", parent_attempt_id: "at-p", at_llm_call: at, branch, branches: 2, ...extra } },
  });
  const parent = { rollout_id: "ro-p", status: "succeeded", input: { q: 1 }, start_time: 1, attempt: null };
  const forks = [fork("ro-f2", 1, 2, { note: hostile }), fork("ro-f1", 1, 1), fork("ro-g", 3, 1)];
  const other = { ...fork("ro-x", 1, 1), metadata: { "agl.fork": { parent_rollout_id: "ro-other" } } };
  answers["/v1/agl/rollouts"] = { items: [parent, ...forks, other] };
  answers["/v1/agl/rollouts/ro-p"] = parent;
  answers["/v1/agl/rollouts/ro-p/attempts"] = { items: [] };
  answers["/v1/agl/spans"] = { items: [] };
  answers["/v1/agl-host/outcomes"] = { items: [{ rollout_id: "ro-f1", final_reward: 0.25 }, { rollout_id: "ro-f2", final_reward: 1 }] };
  const find = (node, pred, out = []) => {
    if (pred(node)) out.push(node);
    for (const child of node.children ?? []) find(child, pred, out);
    return out;
  };
  const { render } = await import("../views/rollout.js");
  const root = await render({ ...context, id: "ro-p" });
  const [section] = find(root, (n) => n.attributes?.["data-branches"] !== undefined);
  assert.ok(section, root.textContent);
  assert.ok(section.textContent.includes("Branches (3)"), section.textContent);
  const calls = find(section, (n) => n.attributes?.["data-branch-call"] !== undefined).map((n) => n.attributes["data-branch-call"]);
  assert.deepEqual(calls, ["1", "3"]);
  const rows = find(section, (n) => n.attributes?.["data-branch-rollout"] !== undefined);
  assert.deepEqual(rows.map((n) => n.attributes["data-branch-rollout"]), ["ro-f1", "ro-f2", "ro-g"], "by call, then branch");
  assert.ok(rows[0].textContent.includes("1 of 2") && rows[0].textContent.includes("0.2500"), rows[0].textContent);
  assert.ok(rows[1].textContent.includes("1.0000"), rows[1].textContent);
  assert.deepEqual(find(rows[0], (n) => n.tag === "a").map((a) => a.attributes.href), ["#/rollout/ro-f1"]);
  assert.ok(!root.textContent.includes("ro-x"), "another rollout's fork is not listed");

  // The fork's page: its line, the ids (hostile ones too) as text and encoded in the links.
  const weird = { ...fork("ro-f3", 2, 1), metadata: { "agl.fork": {
    parent_rollout_id: hostile, parent_attempt_id: "at/1?x", at_llm_call: 2, branch: 1, branches: hostile } } };
  answers["/v1/agl/rollouts/ro-f3"] = weird;
  answers["/v1/agl/rollouts/ro-f3/attempts"] = { items: [] };
  answers["/v1/agl/rollouts"] = { items: [parent, weird] };
  const page = await render({ ...context, id: "ro-f3" });
  const [line] = find(page, (n) => n.attributes?.["data-forked-from"] !== undefined);
  assert.equal(line.textContent, `Forked from ${hostile} (attempt at/1?x) at LLM call 2, branch 1 of ${hostile}`);
  assert.deepEqual(find(line, (n) => n.tag === "a").map((a) => a.attributes.href), [
    `#/rollout/${encodeURIComponent(hostile)}`, `#/rollout/${encodeURIComponent(hostile)}?attempt=at%2F1%3Fx`,
  ]);
  assert.ok(find(page, (n) => n.tag === "img").length === 0, "nothing from the store became markup");
  assert.ok(find(page, (n) => n.attributes?.["data-branches"] !== undefined).length === 0, "no fork of its own: no section");

  // The rollouts list: a badge on each fork only.
  answers["/v1/agl/rollouts"] = { items: [parent, ...forks] };
  const list = await (await import("../views/rollouts.js")).render(context);
  const badged = find(list, (n) => n.attributes?.["data-fork-badge"] !== undefined);
  assert.equal(badged.length, 3);
  assert.ok(badged.every((b) => b.textContent === "fork"));
  for (const path of ["/v1/agl/rollouts/ro-p", "/v1/agl/rollouts/ro-p/attempts", "/v1/agl/spans", "/v1/agl-host/outcomes",
    "/v1/agl/rollouts/ro-f3", "/v1/agl/rollouts/ro-f3/attempts"]) delete answers[path];
});
