// Requests and the token: a 401 is an error the page answers with its token form (never a
// `window.prompt`), the token given there is sent from then on, and paths stay on this server.
import { test, beforeEach } from "node:test";
import assert from "node:assert/strict";
import { get, setToken, hasToken, ApiError } from "../api.js";

/** The requests `fetch` was given, and the answers it gives (by whether a token was sent). */
let sent = [];

beforeEach(() => {
  sent = [];
  const stored = new Map();
  globalThis.sessionStorage = {
    getItem: (key) => (stored.has(key) ? stored.get(key) : null),
    setItem: (key, value) => stored.set(key, String(value)),
  };
  globalThis.location = { origin: "http://127.0.0.1:4748", pathname: "/", hash: "" };
  globalThis.prompt = () => assert.fail("the page must not call window.prompt");
  globalThis.fetch = async (url, init) => {
    const authorization = init?.headers?.Authorization ?? null;
    sent.push({ url: String(url), authorization });
    const ok = authorization === "Bearer s3 cret";
    return {
      ok,
      status: ok ? 200 : 401,
      statusText: ok ? "OK" : "Unauthorized",
      json: async () => (ok ? { items: [] } : { detail: "missing or invalid bearer token" }),
    };
  };
});

test("a 401 asks for the token through the error, then the token given is sent", async () => {
  const refused = await get("/v1/agl/rollouts").then(() => null, (error) => error);
  assert.ok(refused instanceof ApiError);
  assert.equal(refused.status, 401);
  assert.equal(refused.needsToken, true);
  assert.equal(hasToken(), false);
  assert.deepEqual(sent, [{ url: "http://127.0.0.1:4748/v1/agl/rollouts", authorization: null }]);

  setToken("s3 cret");
  assert.equal(hasToken(), true);
  assert.deepEqual(await get("/v1/agl/rollouts", { limit: 5 }), { items: [] });
  assert.deepEqual(sent[1], { url: "http://127.0.0.1:4748/v1/agl/rollouts?limit=5", authorization: "Bearer s3 cret" });
});

test("a refused token is an error that asks again", async () => {
  setToken("wrong");
  const refused = await get("/v1/agl/rollouts").then(() => null, (error) => error);
  assert.equal(refused.needsToken, true);
  assert.equal(sent.length, 1, "asked once, not retried");
});

test("a page under `//host/` still asks its own server", async () => {
  setToken("s3 cret");
  globalThis.location.pathname = "//evil.example/";
  await get("/v1/agl/rollouts");
  assert.equal(new URL(sent[0].url).host, "127.0.0.1:4748");
});
