// Routes are URL fragments, `#/view/ID?key=value`: the view, an optional id, and the view's
// filters (so a filtered view can be bookmarked or shared).

/** `#/rollout/ro-1?attempt=at-2` → `{view: "rollout", id: "ro-1", params: {attempt: "at-2"}}`. */
export function parseRoute(hash) {
  const [path, query = ""] = hash.replace(/^#\/?/, "").split("?");
  const [view, ...rest] = path.split("/");
  return { view, id: rest.length ? decodeURIComponent(rest.join("/")) : null, params: Object.fromEntries(new URLSearchParams(query)) };
}

/** Changes the route's query parameters (a view's filters) without leaving the view. */
export function setParams(params) {
  const { view, id } = parseRoute(location.hash);
  const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== "" && v != null)).toString();
  location.hash = `#/${view}${id ? `/${encodeURIComponent(id)}` : ""}${query ? `?${query}` : ""}`;
}
