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
