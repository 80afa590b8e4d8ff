// The store's HTTP API, same-origin: GET requests with the bearer token when one is known.
// The token comes from the URL fragment `#token=...` (the CLI prints such a URL) or is asked
// for once when the store answers 401; it is kept for this tab only (sessionStorage).
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
  const url = new URL(underBase(path, base), location.origin);
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null || value === "") continue;
    for (const one of Array.isArray(value) ? value : [value]) url.searchParams.append(key, String(one));
  }
  for (let tries = 0; ; tries++) {
    const headers = {};
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = `Bearer ${token}`;
    const response = await fetch(url, { headers });
    if (response.status === 401 && tries === 0) {
      const given = prompt("This store needs its token (agl-host store --token):");
      if (given) {
        sessionStorage.setItem(TOKEN_KEY, given);
        continue;
      }
    }
    if (!response.ok) {
      let detail = response.statusText;
      try { detail = (await response.json()).detail ?? detail; } catch { /* not JSON */ }
      throw new ApiError(response.status, detail);
    }
    return response.json();
  }
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
