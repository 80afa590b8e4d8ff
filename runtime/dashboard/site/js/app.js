// The dashboard's entry: takes a token from the URL fragment, routes `#/view?key=value` to one
// view module, and runs the view's live refresh (every POLL_MS) until the route changes. Where
// the server lists kept runs (`agl-host dashboard` with no RUN), the Runs and Compare runs views
// join the navigation: at the root they are all there is, under `/runs/ID/` they link back.
// A store that wants a token gets a form in place of the view (`tokenForm`).

import { takeTokenFromFragment, optional, pageBase, ROOT, hasToken, setToken } from "./api.js";
import { h } from "./dom.js";
import { parseRoute } from "./router.js";
import { runIdOfBase } from "./runs-data.js";
import { isGepaRecord } from "./gepa-data.js";
import * as run from "./views/run.js";
import * as rollouts from "./views/rollouts.js";
import * as rollout from "./views/rollout.js";
import * as resources from "./views/resources.js";
import * as compare from "./views/compare.js";
import * as candidates from "./views/candidates.js";
import * as workers from "./views/workers.js";
import * as runs from "./views/runs.js";
import * as compareRuns from "./views/compare-runs.js";

const POLL_MS = 1500;
const RUN_VIEWS = { "": run, rollouts, rollout, resources, compare, candidates, workers };
/** At the root of a server of kept runs: the list of runs, and two compared. */
const RUNS_VIEWS = { "": runs, runs, "compare-runs": compareRuns };

let timers = [];
/** `null` until known; then whether the server lists kept runs, and this page's run. */
let mode = null;

/**
 * Whether the server lists kept runs (`GET /v1/agl-host/runs` answers), which run this page is,
 * and whether that run is a GEPA run's (the Candidates view joins the navigation).
 */
async function findMode() {
  const listed = await optional("/v1/agl-host/runs", {}, ROOT).catch(() => null);
  const runId = runIdOfBase(pageBase());
  const kept = Array.isArray(listed);
  const atRoot = runId === null;
  const record = kept && atRoot ? null : await optional("/v1/agl-host/run").catch(() => null);
  return { kept, atRoot, runId, gepa: isGepaRecord(record) };
}

/** Shows the links of this mode: a run's views, and the Runs / Compare runs links of a server of runs. */
function layoutNav() {
  const runsRoot = mode.kept && mode.atRoot;
  for (const link of document.querySelectorAll("#nav a")) {
    const forRuns = link.dataset.view === "runs" || link.dataset.view === "compare-runs";
    link.hidden = forRuns ? !mode.kept : runsRoot || (link.dataset.view === "candidates" && !mode.gepa);
  }
  if (mode.kept && !mode.atRoot) {
    // Inside a run: back to the list, or this run compared with another.
    document.querySelector("#nav a[data-view=runs]").href = "/#/";
    document.querySelector("#nav a[data-view=compare-runs]").href = `/#/compare-runs?b=${encodeURIComponent(mode.runId)}`;
  }
}

async function show() {
  if (mode === null) {
    mode = await findMode();
    layoutNav();
  }
  const VIEWS = mode.kept && mode.atRoot ? RUNS_VIEWS : RUN_VIEWS;
  for (const timer of timers) clearInterval(timer);
  timers = [];
  const indicator = document.getElementById("live");
  indicator.hidden = true;
  indicator.textContent = "live";
  indicator.classList.remove("offline");
  const route = parseRoute(location.hash);
  const view = VIEWS[route.view];
  const main = document.getElementById("main");
  const current = mode.kept && mode.atRoot && route.view === "" ? "runs" : route.view;
  for (const link of document.querySelectorAll("#nav a")) {
    const target = link.dataset.view === "run" ? "" : link.dataset.view;
    const here = mode.atRoot || (target !== "runs" && target !== "compare-runs");
    link.classList.toggle("active", here && (target === current || (current === "rollout" && target === "rollouts")));
  }
  if (!view) {
    const back = mode.kept && mode.atRoot ? "Back to the runs" : "Back to the run";
    main.replaceChildren(h("p", { class: "error" }, `No view named “${route.view}”.`), h("a", { href: "#/" }, back));
    return;
  }
  const context = {
    ...route,
    /** Calls `refresh` every POLL_MS while this route is shown (live updates). */
    live(refresh) {
      document.getElementById("live").hidden = false;
      let busy = false;
      timers.push(setInterval(async () => {
        if (busy) return;
        busy = true;
        const indicator = document.getElementById("live");
        try {
          await refresh();
          indicator.textContent = "live";
          indicator.classList.remove("offline");
        } catch (error) {
          // The server went away (a run's dashboard stops with the run) or refused: say so, keep trying.
          indicator.textContent = `not updating: ${error.message}`;
          indicator.classList.add("offline");
        } finally {
          busy = false;
        }
      }, POLL_MS));
    },
  };
  try {
    const content = await view.render(context);
    if (parseRoute(location.hash).view === route.view) main.replaceChildren(content);
  } catch (error) {
    if (error.needsToken) {
      for (const timer of timers) clearInterval(timer);
      timers = [];
      main.replaceChildren(tokenForm());
      main.querySelector("input")?.focus();
      return;
    }
    main.replaceChildren(h("p", { class: "error", "data-error": "" }, `Could not load this view: ${error.message}`));
  }
}

/** Asks for the store's token in the page; once given, the view is shown again with it. */
function tokenForm() {
  const refused = hasToken();
  const input = h("input", {
    type: "password", name: "token", autocomplete: "off", required: true,
    placeholder: "token", "aria-label": "The store's token",
  });
  const submit = (event) => {
    event.preventDefault();
    const token = input.value.trim();
    if (!token) return;
    setToken(token);
    // The server's mode (a list of kept runs or not) was read without the token: read it again.
    mode = null;
    show();
  };
  return h("form", { class: "token-form", "data-token-form": "", onsubmit: submit },
    h("p", { class: "error", "data-error": "" }, refused
      ? "The store refused this token: enter the one it was started with."
      : "This store needs its token (the --token it was started with; the URL it prints carries it)."),
    input,
    h("button", { type: "submit" }, "Use token"));
}

takeTokenFromFragment();
window.addEventListener("hashchange", show);
show();
