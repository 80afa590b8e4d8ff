//! Every run kept in a folder behind one dashboard (`agl-host dashboard` with no RUN).
//! `GET /v1/agl-host/runs` lists them as `agl-host runs` does (`agl_runs::list`), and each run is
//! served whole under `/runs/{id}/` (`id`: its file's name without `.db`, which is the run id for
//! the runs agl-host keeps): the page, the store's API and agl-host's read-only routes, its store
//! opened on first use and kept open. Serving the routes is the binary's.

use agl_runs::list::Listed;
use agl_server::ServerOptions;
use agl_store_db::DbUrl;
use axum::Router;
use axum::extract::{Path as PathParam, Request, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{any, get};
use serde::Serialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::Mutex;
use tower::ServiceExt;

/// The kept runs of one folder, each run's routes built once.
struct KeptRuns {
    dir: PathBuf,
    /// The options of the server in front (its address, the hosts and origins it answers): a
    /// run's routes check a request's `Host` and `Origin` as it did.
    outer: ServerOptions,
    opened: Mutex<HashMap<String, Router>>,
}

type Runs = State<Arc<KeptRuns>>;

/// The list of runs and every run's routes under its prefix, over the runs kept in `dir`, served
/// by a server started with `outer`.
pub fn routes(dir: PathBuf, outer: &ServerOptions) -> Router {
    let runs = Arc::new(KeptRuns {
        dir,
        outer: outer.clone(),
        opened: Mutex::new(HashMap::new()),
    });
    Router::new()
        .route("/v1/agl-host/runs", get(list))
        .route("/runs", get(|| async { Redirect::permanent("/") }))
        .route("/runs/", get(|| async { Redirect::permanent("/") }))
        .route("/runs/{id}", get(add_slash))
        .route("/runs/{id}/", any(forward))
        .route("/runs/{id}/{*rest}", any(forward))
        .with_state(runs)
}

/// One run of the list: its id in the URL and what `agl-host runs --json` says of its file.
#[derive(Serialize)]
struct ListedRun {
    /// The file's name without `.db`: the run is served under `/runs/{id}/`.
    id: String,
    /// Its status as `agl-host runs` shows it (`running?` when no end was recorded).
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<String>,
    /// The agent's short name (no folder, no `.wasm`, no build hash).
    #[serde(skip_serializing_if = "Option::is_none")]
    agent_name: Option<String>,
    #[serde(flatten)]
    listed: Listed,
}

/// `GET /v1/agl-host/runs` → the kept runs, newest first (a file that cannot be read says why).
async fn list(State(runs): Runs) -> Response {
    match agl_runs::list::list(&runs.dir).await {
        Ok(listed) => axum::Json(listed.into_iter().map(ListedRun::from).collect::<Vec<_>>()).into_response(),
        Err(error) => detail(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot list the runs in {}: {error}", runs.dir.display()),
        ),
    }
}

impl From<Listed> for ListedRun {
    fn from(listed: Listed) -> Self {
        let id = Path::new(&listed.file)
            .file_stem()
            .map_or_else(|| listed.file.clone(), |stem| stem.to_string_lossy().into_owned());
        Self {
            id,
            status: listed
                .run
                .as_ref()
                .map(|run| agl_runs::list::status_label(run).to_owned()),
            agent_name: listed
                .run
                .as_ref()
                .map(|run| agl_runs::list::short_agent(&run.agent).to_owned()),
            listed,
        }
    }
}

/// `/runs/{id}` → `/runs/{id}/`, where the page's relative paths resolve under the run.
async fn add_slash(PathParam(id): PathParam<String>) -> Redirect {
    Redirect::permanent(&format!("/runs/{}/", encode_segment(&id)))
}

/// Any request under `/runs/{id}/`: answered by that run's routes, the prefix taken off.
async fn forward(State(runs): Runs, request: Request) -> Response {
    let path = request.uri().path().to_owned();
    let Some((id, rest)) = split_run_prefix(&path) else {
        return detail(StatusCode::NOT_FOUND, "Not Found".to_owned());
    };
    let router = match runs.router(&id).await {
        Ok(router) => router,
        Err(answer) => return answer,
    };
    let (mut parts, body) = request.into_parts();
    let rewritten = match parts.uri.query() {
        Some(query) => format!("{rest}?{query}"),
        None => rest.to_owned(),
    };
    parts.uri = match rewritten.parse::<Uri>() {
        Ok(uri) => uri,
        Err(_) => return detail(StatusCode::BAD_REQUEST, "a malformed path".to_owned()),
    };
    // What this router's routing left on the request (its path parameters, its matched path)
    // would be added to the run's own: the run's routes see the request as sent to them alone.
    parts.extensions = axum::http::Extensions::new();
    match router.oneshot(Request::from_parts(parts, body)).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

impl KeptRuns {
    /// The routes of run `id`, built (its store opened) on first use; a JSON 404 for a run this
    /// folder does not keep.
    async fn router(&self, id: &str) -> Result<Router, Response> {
        let mut opened = self.opened.lock().await;
        if let Some(router) = opened.get(id) {
            return Ok(router.clone());
        }
        let files = agl_runs::find::run_files(&self.dir).map_err(|error| {
            detail(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot list the runs in {}: {error}", self.dir.display()),
            )
        })?;
        let Some(file) = files.into_iter().find(|f| f.file_stem().is_some_and(|s| s == id)) else {
            return Err(detail(
                StatusCode::NOT_FOUND,
                format!("no kept run {id} in {}", self.dir.display()),
            ));
        };
        let store = agl_runs::open::open_existing(&DbUrl::Sqlite(file.clone())).map_err(|error| {
            detail(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot open {}: {error:#}", file.display()),
            )
        })?;
        // The token is the outer server's (it covers these routes), and so are the hosts and
        // origins answered; no site of its own but the dashboard, so that `/runs/{id}/js/app.js`
        // is the page's file.
        let options = ServerOptions {
            site: Some(crate::site()),
            host: self.outer.host,
            allowed_hosts: self.outer.allowed_hosts.clone(),
            allowed_origins: self.outer.allowed_origins.clone(),
            ..ServerOptions::default()
        };
        let router = agl_server::router(store.clone(), &options).merge(agl_server::host_routes(store));
        opened.insert(id.to_owned(), router.clone());
        Ok(router)
    }
}

/// `/runs/ID/REST` → (`ID` decoded, `/REST`); `None` for a path that is not under a run.
fn split_run_prefix(path: &str) -> Option<(String, &str)> {
    let rest = path.strip_prefix("/runs/")?;
    let (id, rest) = match rest.find('/') {
        Some(slash) => (&rest[..slash], &rest[slash..]),
        None => (rest, "/"),
    };
    let id = percent_encoding::percent_decode_str(id).decode_utf8().ok()?;
    (!id.is_empty()).then(|| (id.into_owned(), rest))
}

/// `id` percent-encoded as one path segment.
fn encode_segment(id: &str) -> String {
    percent_encoding::utf8_percent_encode(id, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// A JSON `{"detail": ...}` answer, as the store's errors are.
fn detail(status: StatusCode, detail: String) -> Response {
    (status, axum::Json(serde_json::json!({ "detail": detail }))).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_prefix_splits_into_the_run_and_its_own_path() {
        assert_eq!(
            split_run_prefix("/runs/run-1/v1/agl/rollouts"),
            Some(("run-1".to_owned(), "/v1/agl/rollouts"))
        );
        assert_eq!(split_run_prefix("/runs/run-1/"), Some(("run-1".to_owned(), "/")));
        assert_eq!(
            split_run_prefix("/runs/a%20b/js/app.js"),
            Some(("a b".to_owned(), "/js/app.js"))
        );
        assert_eq!(split_run_prefix("/runs//x"), None);
        assert_eq!(split_run_prefix("/v1/agl/rollouts"), None);
    }
}
