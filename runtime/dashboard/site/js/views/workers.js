// The runners the store knows: status, last heartbeat, what each is running now.

import { all } from "../api.js";
import { h, fill, time, status, duration } from "../dom.js";

export async function render(context) {
  const root = h("section", { "data-view": "workers" });
  const paint = async () => {
    const workers = await all("/v1/agl/workers");
    fill(root, content(workers));
    return workers;
  };
  const workers = await paint();
  if (workers.some((w) => w.status === "busy")) context.live(paint);
  return root;
}

function content(workers) {
  const now = Date.now() / 1000;
  if (!workers.length) return [h("h1", {}, "Workers"), h("p", { class: "muted" }, "No worker has registered with this store.")];
  return [
    h("h1", {}, "Workers ", h("span", { class: "muted" }, String(workers.length))),
    h("table", { "data-table": "workers" },
      h("thead", {}, h("tr", {}, ["worker", "status", "last heartbeat", "ago", "current rollout", "current attempt"].map((t) => h("th", {}, t)))),
      h("tbody", {}, workers.map((w) => h("tr", { "data-worker": w.worker_id },
        h("td", { class: "mono" }, w.worker_id),
        h("td", {}, status(w.status)),
        h("td", {}, time(w.last_heartbeat_time)),
        h("td", {}, w.last_heartbeat_time ? duration(now - w.last_heartbeat_time) : "—"),
        h("td", { class: "mono" }, w.current_rollout_id
          ? h("a", { href: `#/rollout/${encodeURIComponent(w.current_rollout_id)}` }, w.current_rollout_id) : "—"),
        h("td", { class: "mono" }, w.current_attempt_id ?? "—"))))),
  ];
}
