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
