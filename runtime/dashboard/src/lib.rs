//! agl-host's web dashboard: hand-written static files (one `index.html`, ES-module JavaScript,
//! CSS; no framework, no build step, nothing fetched from the network) embedded in the binary.
//! [`FILES`] is what `agl_server::Site::Embedded` serves at `/`; the page then reads the store's
//! own HTTP API (`/v1/agl/...` and agl-host's `/v1/agl-host/...`). This crate owns the files
//! ([`site`] as agl-server serves them; serving is agl-server's) and [`runs`], the routes that put
//! every kept run of a folder behind one dashboard.
//!
//! The files live in `site/`: `js/app.js` routes `#/view` to one module of `js/views/`;
//! `api.js` (requests under a base, token), `run-data.js` (rollouts joined with their outcomes,
//! comparisons), `runs-data.js` (the kept runs `agl-host dashboard` lists),
//! `gepa-data.js` (a GEPA run's candidate tree and per-task front), `span-tree.js`, `line-diff.js`
//! and `chart.js` are shared; `js/test/` holds their unit tests
//! (`node --test`, run by this crate's tests; not embedded).

/// Declares the embedded files: each path under `site/`, with its bytes.
macro_rules! site {
    ($($path:literal),* $(,)?) => {
        /// Every file of the dashboard: (path under the site root without a leading slash, bytes).
        pub static FILES: &[(&str, &[u8])] = &[$(($path, include_bytes!(concat!("../site/", $path)))),*];
    };
}

site![
    "index.html",
    "style.css",
    "favicon.svg",
    "js/app.js",
    "js/api.js",
    "js/chart.js",
    "js/dom.js",
    "js/gepa-data.js",
    "js/line-diff.js",
    "js/router.js",
    "js/run-data.js",
    "js/runs-data.js",
    "js/span-tree.js",
    "js/views/candidates.js",
    "js/views/compare.js",
    "js/views/compare-runs.js",
    "js/views/resources.js",
    "js/views/rollout.js",
    "js/views/rollouts.js",
    "js/views/run.js",
    "js/views/runs.js",
    "js/views/workers.js",
];

pub mod runs;

/// The dashboard built into the binary, as a server serves it.
pub fn site() -> agl_server::Site {
    agl_server::Site::Embedded(FILES)
}

/// The file at `path` (no leading slash), if embedded.
pub fn file(path: &str) -> Option<&'static [u8]> {
    FILES.iter().find(|(name, _)| *name == path).map(|(_, bytes)| *bytes)
}

#[cfg(test)]
mod tests;
