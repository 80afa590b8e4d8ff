//! A static web app (a dashboard) served beside the API, same-origin with it: [`Site`] says where
//! its files come from (a folder read at request time, or files built into the binary), and
//! [`answer`] serves `GET`/`HEAD` of every path that is not the API's ([`is_api_path`]) — the file
//! when there is one, else `index.html` (single-page apps route on the client). This module owns
//! path resolution (no way out of the folder), content types and cache headers; it knows nothing
//! of the store. The router decides when to call it, after the API's routes.

use crate::error::ServerError;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// The file answered for every path that names no file.
pub const INDEX: &str = "index.html";

/// Where a static site's files come from.
#[derive(Clone, PartialEq, Eq)]
pub enum Site {
    /// The files of this folder, read at each request (a rebuilt app shows up without a restart).
    /// Paths never leave it: `..`, encoded or not, and symlinks pointing outside are refused.
    Dir(PathBuf),
    /// Files built into the binary, by path without a leading slash (`"index.html"`,
    /// `"assets/app.js"`).
    Embedded(&'static [(&'static str, &'static [u8])]),
}

impl Site {
    /// A [`Site::Dir`] of `dir`, once checked to be a folder with an `index.html` in it.
    pub fn dir(dir: impl Into<PathBuf>) -> Result<Site, ServerError> {
        let dir = dir.into();
        let reason = if !dir.is_dir() {
            "no such folder"
        } else if !dir.join(INDEX).is_file() {
            "this folder has no index.html (it must hold a built web app)"
        } else {
            return Ok(Site::Dir(dir));
        };
        Err(ServerError::Site { dir, reason })
    }
}

impl fmt::Debug for Site {
    /// The folder, or how many files are embedded (not their bytes).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Site::Dir(dir) => f.debug_tuple("Dir").field(dir).finish(),
            Site::Embedded(files) => write!(f, "Embedded({} files)", files.len()),
        }
    }
}

/// True for the paths that belong to the API and never to a site, whether routed or not: the
/// store's and OTLP's `/v1/...` (the LLM proxy's `/v1/chat/completions` too), `/metrics`, and
/// the LLM proxy's `/proxy/...` and `/rollout/...`, Agent-lightning 1.0's gateway `/api/...`; and
/// the same under one kept run's prefix,
/// `/runs/{run}/v1/...` (`agl-host dashboard` serving every kept run). An unknown one stays a
/// JSON 404.
pub fn is_api_path(path: &str) -> bool {
    const PREFIXES: [&str; 5] = ["/v1", "/metrics", "/proxy", "/rollout", "/api"];
    let under_a_run = path
        .strip_prefix("/runs/")
        .and_then(|rest| rest.find('/').map(|slash| &rest[slash..]))
        .is_some_and(is_api_path);
    under_a_run
        || PREFIXES.iter().any(|prefix| {
            path.strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
}

/// True when `site` answers this request: a `GET` or `HEAD` of a path that is not the API's.
/// `path` is the request's path as sent (percent-encoded).
pub(crate) fn serves(method: &Method, path: &str) -> bool {
    let decoded = percent_encoding::percent_decode_str(path).decode_utf8_lossy();
    matches!(*method, Method::GET | Method::HEAD) && !is_api_path(path) && !is_api_path(&decoded)
}

/// The answer to a `GET`/`HEAD` of `path` (as sent): the file it names, else `index.html`; a 404
/// for a path trying to leave the site, or when even `index.html` is missing.
pub(crate) async fn answer(site: &Site, path: &str, request_headers: &HeaderMap) -> Response {
    let Some(segments) = segments(path) else {
        return not_found("no such file");
    };
    let found = match site {
        Site::Dir(dir) => {
            let dir = dir.clone();
            tokio::task::spawn_blocking(move || read_from_dir(&dir, &segments))
                .await
                .unwrap_or(Lookup::Missing)
        }
        Site::Embedded(files) => embedded(files, &segments.join("/")),
    };
    match found {
        Lookup::Found(file) => file.into_response(request_headers),
        Lookup::Outside => not_found("no such file"),
        Lookup::Missing => not_found("the site has no index.html"),
    }
}

/// A file to answer, with what tells a browser whether its cached copy is still good.
struct File {
    name: String,
    bytes: Vec<u8>,
    etag: String,
}

enum Lookup {
    Found(File),
    /// The path resolves outside the site (a symlink out of the folder).
    Outside,
    /// Neither the file nor `index.html` exists.
    Missing,
}

impl File {
    /// `200` with the file, or `304` when the request already holds this version.
    fn into_response(self, request_headers: &HeaderMap) -> Response {
        let cache = if self.name == INDEX {
            "no-cache"
        } else {
            "public, max-age=300"
        };
        let mut headers = HeaderMap::new();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
        headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
        if let Ok(etag) = HeaderValue::from_str(&self.etag) {
            headers.insert(header::ETAG, etag);
        }
        let unchanged = request_headers
            .get(header::IF_NONE_MATCH)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|tags| tags.split(',').any(|tag| tag.trim() == self.etag));
        if unchanged {
            return (StatusCode::NOT_MODIFIED, headers).into_response();
        }
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type(&self.name)));
        (StatusCode::OK, headers, Body::from(self.bytes)).into_response()
    }
}

/// The path's segments, percent-decoded, empty ones dropped; `None` when one could step out of
/// the site or is not a plain name (`.`, `..`, a slash or backslash once decoded, a NUL).
fn segments(path: &str) -> Option<Vec<String>> {
    let mut segments = Vec::new();
    for raw in path.split('/').filter(|segment| !segment.is_empty()) {
        let segment = percent_encoding::percent_decode_str(raw).decode_utf8().ok()?;
        if segment == "." || segment == ".." || segment.contains(['/', '\\', '\0']) {
            return None;
        }
        segments.push(segment.into_owned());
    }
    Some(segments)
}

/// The file `segments` names under `dir`, else its `index.html`; never a file whose real path
/// (symlinks followed) is outside `dir`.
fn read_from_dir(dir: &Path, segments: &[String]) -> Lookup {
    let Ok(root) = dir.canonicalize() else {
        return Lookup::Missing;
    };
    let named = segments.iter().fold(root.clone(), |path, segment| path.join(segment));
    match named.canonicalize() {
        Ok(real) if !real.starts_with(&root) => return Lookup::Outside,
        Ok(real) if real.is_file() => {
            if let Some(file) = read_file(&real, segments.last().map_or(INDEX, String::as_str)) {
                return Lookup::Found(file);
            }
        }
        _ => {}
    }
    match root.join(INDEX).canonicalize() {
        Ok(real) if real.starts_with(&root) => read_file(&real, INDEX).map_or(Lookup::Missing, Lookup::Found),
        _ => Lookup::Missing,
    }
}

/// Reads `path`; its entity tag is its length and modification time.
fn read_file(path: &Path, name: &str) -> Option<File> {
    let modified = std::fs::metadata(path)
        .and_then(|meta| meta.modified())
        .ok()
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |since| since.as_nanos());
    let bytes = std::fs::read(path).ok()?;
    Some(File {
        etag: format!("\"{:x}-{modified:x}\"", bytes.len()),
        name: name.to_owned(),
        bytes,
    })
}

/// The embedded file at `path` (no leading slash), else the embedded `index.html`.
fn embedded(files: &[(&str, &[u8])], path: &str) -> Lookup {
    let find = |wanted: &str| files.iter().find(|(name, _)| *name == wanted);
    match find(path).or_else(|| find(INDEX)) {
        Some((name, bytes)) => {
            // The bytes never change while the binary runs: a hash of them is a stable tag.
            let mut hasher = std::hash::DefaultHasher::new();
            bytes.hash(&mut hasher);
            Lookup::Found(File {
                name: (*name).to_owned(),
                bytes: bytes.to_vec(),
                etag: format!("\"{:x}-{:x}\"", bytes.len(), hasher.finish()),
            })
        }
        None => Lookup::Missing,
    }
}

/// The content type of a file, from its extension; `application/octet-stream` for the unknown.
fn content_type(name: &str) -> &'static str {
    let extension = name.rsplit_once('.').map_or("", |(_, extension)| extension);
    match extension.to_ascii_lowercase().as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "webmanifest" => "application/manifest+json",
        "txt" => "text/plain; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "woff" => "font/woff",
        "woff2" => "font/woff2",
        "ttf" => "font/ttf",
        "wasm" => "application/wasm",
        _ => "application/octet-stream",
    }
}

/// A JSON 404, like the API's.
fn not_found(detail: &str) -> Response {
    crate::error::ApiError::not_found(detail).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_paths_are_never_the_sites() {
        for path in [
            "/v1",
            "/v1/agl/rollouts",
            "/v1/agl/nope",
            "/v1/traces",
            "/v1/chat/completions",
            "/metrics",
            "/proxy/state",
            "/rollout/ro-1/attempt/at-1/v1/models",
            "/runs/run-1/v1/agl/rollouts",
            "/runs/run-1/v1/agl-host/runs",
            "/runs/run-1/metrics",
        ] {
            assert!(is_api_path(path), "{path}");
            assert!(!serves(&Method::GET, path), "{path}");
        }
        assert!(
            !serves(&Method::GET, "/%761/agl/nope"),
            "an encoded API path is the API's too"
        );
    }

    #[test]
    fn every_other_get_or_head_is_the_sites() {
        for path in [
            "/",
            "/rollouts",
            "/rollouts/ro-1",
            "/assets/app.js",
            "/v1x",
            "/metricsx",
            "/runners",
            "/runs/run-1/",
            "/runs/run-1/js/app.js",
            "/runs/v1",
        ] {
            assert!(!is_api_path(path), "{path}");
            assert!(serves(&Method::GET, path), "{path}");
            assert!(serves(&Method::HEAD, path), "{path}");
            assert!(!serves(&Method::POST, path), "{path}");
        }
    }

    #[test]
    fn segments_refuse_every_way_out() {
        assert_eq!(
            segments("/assets//app.js"),
            Some(vec!["assets".into(), "app.js".into()])
        );
        assert_eq!(segments("/a%20b.txt"), Some(vec!["a b.txt".into()]));
        for path in [
            "/../etc/passwd",
            "/assets/../../x",
            "/%2e%2e/x",
            "/%2E%2E/x",
            "/.%2e/x",
            "/a/./b",
            "/%2fetc%2fpasswd",
            "/..%5cx",
            "/a%00b",
            "/%ff",
        ] {
            assert_eq!(segments(path), None, "{path}");
        }
    }

    #[test]
    fn content_types_follow_the_extension() {
        assert_eq!(content_type("index.html"), "text/html; charset=utf-8");
        assert_eq!(content_type("index-CF2Y7RR3.js"), "text/javascript; charset=utf-8");
        assert_eq!(content_type("app.MJS"), "text/javascript; charset=utf-8");
        assert_eq!(content_type("a.css"), "text/css; charset=utf-8");
        assert_eq!(content_type("favicon.svg"), "image/svg+xml");
        assert_eq!(content_type("font.woff2"), "font/woff2");
        assert_eq!(content_type("app.js.map"), "application/json");
        assert_eq!(content_type("LICENSE"), "application/octet-stream");
    }

    #[test]
    fn embedded_files_fall_back_to_index() {
        const FILES: &[(&str, &[u8])] = &[("index.html", b"<p>app</p>"), ("assets/app.js", b"go()")];
        let Lookup::Found(file) = embedded(FILES, "assets/app.js") else {
            panic!("app.js is embedded");
        };
        assert_eq!(file.bytes, b"go()");
        let Lookup::Found(file) = embedded(FILES, "rollouts/ro-1") else {
            panic!("index.html is embedded");
        };
        assert_eq!(file.name, INDEX);
        assert!(matches!(embedded(&FILES[1..], "x"), Lookup::Missing));
    }
}
