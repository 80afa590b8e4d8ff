// The dashboard's entry: takes a token from the URL fragment, routes `#/view?key=value` to one
// view module, and runs the view's live refresh (every POLL_MS) until the route changes.

import { takeTokenFromFragment } from "./api.js";
import { h } from "./dom.js";
import { parseRoute } from "./router.js";
import * as run from "./views/run.js";
import * as rollouts from "./views/rollouts.js";
import * as rollout from "./views/rollout.js";
import * as resources from "./views/resources.js";
import * as compare from "./views/compare.js";
import * as workers from "./views/workers.js";

const POLL_MS = 1500;
const VIEWS = { "": run, rollouts, rollout, resources, compare, workers };

let timers = [];

async function show() {
  for (const timer of timers) clearInterval(timer);
  timers = [];
  const indicator = document.getElementById("live");
  indicator.hidden = true;
  indicator.textContent = "live";
  indicator.classList.remove("offline");
  const route = parseRoute(location.hash);
  const view = VIEWS[route.view];
  const main = document.getElementById("main");
  for (const link of document.querySelectorAll("#nav a")) {
    const target = link.dataset.view === "run" ? "" : link.dataset.view;
    link.classList.toggle("active", target === route.view || (route.view === "rollout" && target === "rollouts"));
  }
  if (!view) {
    main.replaceChildren(h("p", { class: "error" }, `No view named “${route.view}”.`), h("a", { href: "#/" }, "Back to the run"));
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
    main.replaceChildren(h("p", { class: "error", "data-error": "" }, `Could not load this view: ${error.message}`));
  }
}

takeTokenFromFragment();
window.addEventListener("hashchange", show);
show();
