// The store's HTTP API, same-origin: GET requests with the bearer token when one is known.
// The token comes from the URL fragment `#token=...` (the CLI prints such a URL) or, when the
// store answers 401, from the form the page shows in place of the view (`setToken`); it is kept
// for this tab only (sessionStorage).
// Paths are read under a base: the page's own folder by default (`/`, or `/runs/ID/` where
// `agl-host dashboard` serves each kept run), another run's to compare runs, `/` for the list.

const TOKEN_KEY = "agl-host.token";

/** Reads `token=...` out of the fragment (then drops it from the address bar). */
export function takeTokenFromFragment() {
  const match = /(?:^#|[#&?])token=([^&]*)/.exec(location.hash);
  if (!match) return;
  sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]));
  const rest = location.hash.replace(/[#&?]?token=[^&]*/, "");
  history.replaceState(null, "", location.pathname + (rest.startsWith("#/") ? rest : "#/"));
}

/** An API error: the HTTP status and the store's `detail`. */
export class ApiError extends Error {
  constructor(status, detail) {
    super(`HTTP ${status}: ${detail}`);
    this.status = status;
  }

  /** The store wants a token (none was given, or it refused the one given). */
  get needsToken() {
    return this.status === 401;
  }
}

/** Keeps `token` for this tab: every later request sends it. */
export function setToken(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
}

/** Whether a token is kept (one was given, from the URL or the form). */
export function hasToken() {
  return Boolean(sessionStorage.getItem(TOKEN_KEY));
}

/** The server's root, where the list of runs is read. */
export const ROOT = "/";

/** The folder of a page's path: `/runs/a/` for `/runs/a/` or `/runs/a/index.html`. */
export function folderOf(pathname) {
  return pathname.replace(/[^/]*$/, "") || "/";
}

/** The base the page reads its own run under: its folder. */
export function pageBase() {
  return folderOf(location.pathname);
}

/** The base of kept run `id`: `/runs/ID/`. */
export function runBase(id) {
  return `/runs/${encodeURIComponent(id)}/`;
}

/** `path` (`/v1/...`) under `base` (`/runs/a/`) → `/runs/a/v1/...`. */
export function underBase(path, base) {
  return base.replace(/\/$/, "") + (path.startsWith("/") ? path : `/${path}`);
}

/**
 * GET `path` under `base` (with `params`: a value, or an array for a repeated key) → the parsed
 * JSON.
 */
export async function get(path, params = {}, base = pageBase()) {
  // Appended to the origin, never resolved against it: a path such as `//elsewhere/` stays on
  // this server (and the token with it).
  const url = new URL(location.origin + underBase(path, base));
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null || value === "") continue;
    for (const one of Array.isArray(value) ? value : [value]) url.searchParams.append(key, String(one));
  }
  const headers = {};
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = `Bearer ${token}`;
  const response = await fetch(url, { headers });
  if (!response.ok) {
    let detail = response.statusText;
    try { detail = (await response.json()).detail ?? detail; } catch { /* not JSON */ }
    throw new ApiError(response.status, detail);
  }
  return response.json();
}

/** Every item of a paginated query (`limit=-1`: the store answers them all at once). */
export async function all(path, params = {}, base = pageBase()) {
  const page = await get(path, { ...params, limit: -1 }, base);
  return page.items;
}

/** GET that answers `null` where the route does not exist (a store without agl-host's routes). */
export async function optional(path, params = {}, base = pageBase()) {
  try {
    return await get(path, params, base);
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return null;
    throw error;
  }
}
