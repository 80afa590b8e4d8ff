//! The static site beside the API (`ServerOptions::site`), over a real server on loopback: files
//! with their content types and cache headers, the `index.html` fallback of a single-page app, API
//! paths never shadowed, no way out of the folder (raw requests, as a browser or `reqwest` would
//! normalise `..` away), the token kept for the API only, and a folder read at request time.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test: a failed step panics and fails it"
)]

mod support;

use agl_server::{ServerOptions, Site};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use support::TestServer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const INDEX: &str = "<!doctype html><title>app</title><div id=root></div>";
const APP_JS: &str = "document.getElementById('root').textContent = 'hello';";
const SECRET: &str = "the secret outside the site";

/// `<tmp>/secret.txt` beside `<tmp>/site/` (index.html, assets/app.js, assets/inner.js a link to
/// app.js, assets/leak.txt and assets/up a link out of the site); removed on drop.
struct SiteDir {
    root: PathBuf,
}

impl SiteDir {
    fn new() -> SiteDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "agl-server-site-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&root);
        let site = root.join("site");
        std::fs::create_dir_all(site.join("assets")).expect("site folder");
        std::fs::write(root.join("secret.txt"), SECRET).expect("secret");
        std::fs::write(site.join("index.html"), INDEX).expect("index.html");
        std::fs::write(site.join("assets/app.js"), APP_JS).expect("app.js");
        std::os::unix::fs::symlink("app.js", site.join("assets/inner.js")).expect("link inside");
        std::os::unix::fs::symlink(root.join("secret.txt"), site.join("assets/leak.txt")).expect("link out");
        std::os::unix::fs::symlink(&root, site.join("assets/up")).expect("folder link out");
        SiteDir { root }
    }

    fn site(&self) -> PathBuf {
        self.root.join("site")
    }
}

impl Drop for SiteDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

async fn serving(dir: &SiteDir, token: Option<&str>) -> TestServer {
    TestServer::with_options(ServerOptions {
        site: Some(Site::dir(dir.site()).expect("a site folder")),
        token: token.map(str::to_owned),
        ..ServerOptions::default()
    })
    .await
}

/// Sends `GET path` exactly as written (no normalisation) and returns the whole raw answer.
async fn raw_get(server: &TestServer, path: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(server.handle.local_addr())
        .await
        .expect("connects");
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("request sent");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.expect("answer read");
    String::from_utf8_lossy(&answer).into_owned()
}

fn header<'a>(answer: &'a support::Answer, name: &str) -> &'a str {
    answer
        .headers
        .get(name)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_else(|| panic!("no {name} header: {:?}", answer.headers))
}

#[tokio::test]
async fn a_file_is_served_with_its_content_type_and_index_html_is_never_cached_stale() {
    let dir = SiteDir::new();
    let server = serving(&dir, None).await;

    let index = server.get("/").await;
    assert_eq!((index.status, index.text.as_str()), (200, INDEX));
    assert_eq!(index.content_type.as_deref(), Some("text/html; charset=utf-8"));
    assert_eq!(header(&index, "cache-control"), "no-cache");

    let app = server.get("/assets/app.js").await;
    assert_eq!((app.status, app.text.as_str()), (200, APP_JS));
    assert_eq!(app.content_type.as_deref(), Some("text/javascript; charset=utf-8"));
    assert_eq!(header(&app, "cache-control"), "public, max-age=300");
    assert_eq!(header(&app, "x-content-type-options"), "nosniff");

    let head = server.send("HEAD", "/assets/app.js", None, &[]).await;
    assert_eq!((head.status, head.text.as_str()), (200, ""));
    assert_eq!(header(&head, "content-length"), APP_JS.len().to_string());

    let etag = header(&app, "etag").to_owned();
    let again = server
        .send("GET", "/assets/app.js", None, &[("if-none-match", &etag)])
        .await;
    assert_eq!((again.status, again.text.as_str()), (304, ""));
}

#[tokio::test]
async fn every_other_path_outside_the_api_falls_back_to_index_html() {
    let dir = SiteDir::new();
    let server = serving(&dir, None).await;
    for path in [
        "/rollouts",
        "/rollouts/ro-1?tab=spans",
        "/assets/missing.js",
        "/assets",
        "/v1x",
    ] {
        let answer = server.get(path).await;
        assert_eq!((answer.status, answer.text.as_str()), (200, INDEX), "{path}");
        assert_eq!(header(&answer, "cache-control"), "no-cache", "{path}");
    }
}

#[tokio::test]
async fn api_paths_are_never_shadowed_and_an_unknown_one_stays_a_json_404() {
    let dir = SiteDir::new();
    let server = serving(&dir, None).await;
    assert_eq!(server.get_ok("/v1/agl/health").await["status"], "ok");
    assert_eq!(server.get_ok("/v1/agl/rollouts").await["total"], 0);
    for path in [
        "/v1/agl/nope",
        "/v1",
        "/v1/traces/x",
        "/proxy/state",
        "/rollout/ro-1/attempt/at-1/v1/models",
    ] {
        assert_eq!(server.get(path).await.error(404), "Not Found", "{path}");
    }
    // Whatever /metrics answers, it is never the site's page.
    assert!(!server.get("/metrics").await.text.contains(INDEX));
    // Only GET and HEAD reach the site.
    assert_eq!(server.post_raw("/rollouts", "{}").await.error(404), "Not Found");
}

#[tokio::test]
async fn no_path_leaves_the_folder_encoded_or_through_a_symlink() {
    let dir = SiteDir::new();
    let server = serving(&dir, None).await;
    for path in [
        "/../secret.txt",
        "/assets/../../secret.txt",
        "/%2e%2e/secret.txt",
        "/assets/%2E%2E/%2e%2e/secret.txt",
        "/..%2fsecret.txt",
        "/%2f..%2fsecret.txt",
        &format!("/{}", dir.root.join("secret.txt").display()),
        &format!(
            "/{}",
            dir.root.join("secret.txt").display().to_string().replace('/', "%2f")
        ),
        "/assets/leak.txt",
        "/assets/up/secret.txt",
    ] {
        let answer = raw_get(&server, path).await;
        assert!(!answer.contains(SECRET), "{path} leaked: {answer}");
        let status = answer.lines().next().unwrap_or_default();
        assert!(
            status == "HTTP/1.1 404 Not Found" || (status == "HTTP/1.1 200 OK" && answer.ends_with(INDEX)),
            "{path}: {answer}"
        );
    }
    let inside = server.get("/assets/inner.js").await;
    assert_eq!(
        (inside.status, inside.text.as_str()),
        (200, APP_JS),
        "a link inside the site is served"
    );
}

#[tokio::test]
async fn with_a_token_the_site_is_public_and_the_api_is_not() {
    let dir = SiteDir::new();
    let server = serving(&dir, Some("t0k")).await;
    assert_eq!(server.get("/").await.text, INDEX);
    assert_eq!(server.get("/rollouts").await.text, INDEX);
    assert_eq!(server.get("/assets/app.js").await.text, APP_JS);
    server.get("/v1/agl/rollouts").await.error(401);
    server.get("/v1/agl/nope").await.error(401);
    server.get("/metrics").await.error(401);
    server.post_raw("/rollouts", "{}").await.error(401);
    let authorised = server
        .send("GET", "/v1/agl/rollouts", None, &[("authorization", "Bearer t0k")])
        .await;
    assert_eq!(authorised.status, 200, "{}", authorised.text);
}

#[tokio::test]
async fn the_folder_is_read_at_each_request() {
    let dir = SiteDir::new();
    let server = serving(&dir, None).await;
    assert_eq!(server.get("/assets/app.js").await.text, APP_JS);
    std::fs::write(dir.site().join("assets/app.js"), "rebuilt()").expect("rebuild");
    std::fs::write(dir.site().join("assets/new.css"), "p{}").expect("new file");
    assert_eq!(server.get("/assets/app.js").await.text, "rebuilt()");
    let css = server.get("/assets/new.css").await;
    assert_eq!(
        (css.text.as_str(), css.content_type.as_deref()),
        ("p{}", Some("text/css; charset=utf-8"))
    );
    std::fs::remove_file(dir.site().join("index.html")).expect("remove index.html");
    assert_eq!(server.get("/rollouts").await.error(404), "the site has no index.html");
}

#[tokio::test]
async fn an_embedded_site_is_served_the_same_way() {
    const FILES: &[(&str, &[u8])] = &[("index.html", INDEX.as_bytes()), ("assets/app.js", APP_JS.as_bytes())];
    let server = TestServer::with_options(ServerOptions {
        site: Some(Site::Embedded(FILES)),
        ..ServerOptions::default()
    })
    .await;
    assert_eq!(server.get("/assets/app.js").await.text, APP_JS);
    let index = server.get("/runners").await;
    assert_eq!(
        (index.text.as_str(), header(&index, "cache-control")),
        (INDEX, "no-cache")
    );
    server.get("/v1/agl/nope").await.error(404);
}

#[test]
fn a_folder_without_index_html_is_refused_with_the_reason() {
    let dir = SiteDir::new();
    let error = Site::dir(dir.site().join("assets")).expect_err("no index.html");
    assert!(
        error
            .to_string()
            .ends_with("has no index.html (it must hold a built web app)"),
        "{error}"
    );
    let error = Site::dir(dir.root.join("nowhere")).expect_err("no folder");
    assert!(error.to_string().ends_with(": no such folder"), "{error}");
}

#[tokio::test]
async fn without_a_site_every_other_path_is_a_json_404_as_before() {
    let server = TestServer::start().await;
    assert_eq!(server.get("/").await.error(404), "Not Found");
    assert_eq!(server.get("/rollouts").await.error(404), "Not Found");
}
