//! Counting HTTP requests: a middleware that labels each answered request with its method, its
//! route's pattern (`/v1/agl/rollouts/{rollout_id}`, never the path itself: ids would make a
//! series each) and its status class, and times it until its headers are ready.

use super::ServerMetrics;
use axum::extract::{MatchedPath, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use std::fmt::Write;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Instant;

/// The label value of requests no route matched (static site files, 404s).
const UNMATCHED: &str = "unmatched";

/// A route pattern as the router matched it (shared, not copied per request), or none.
#[derive(Debug, Clone)]
pub(crate) struct Route(Option<MatchedPath>);

impl Route {
    fn as_str(&self) -> &str {
        self.0.as_ref().map_or(UNMATCHED, MatchedPath::as_str)
    }
}

impl PartialEq for Route {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Route {}

impl Hash for Route {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl EncodeLabelValue for Route {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        encoder.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RouteLabel {
    route: Route,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RequestLabels {
    method: &'static str,
    route: Route,
    status: &'static str,
}

/// Middleware: answers the request, then counts it and its latency.
pub(crate) async fn track_requests(
    State(metrics): State<Arc<ServerMetrics>>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let method = method_label(request.method());
    let route = Route(request.extensions().get::<MatchedPath>().cloned());
    let response = next.run(request).await;
    let status = status_class(response.status().as_u16());
    metrics
        .http_request_seconds
        .get_or_create(&RouteLabel { route: route.clone() })
        .observe(started.elapsed().as_secs_f64());
    metrics
        .http_requests
        .get_or_create(&RequestLabels { method, route, status })
        .inc();
    response
}

/// The method's name; any but the standard ones is `other` (the label set stays bounded).
fn method_label(method: &Method) -> &'static str {
    match method.as_str() {
        "GET" => "GET",
        "POST" => "POST",
        "PUT" => "PUT",
        "DELETE" => "DELETE",
        "HEAD" => "HEAD",
        "OPTIONS" => "OPTIONS",
        "PATCH" => "PATCH",
        "TRACE" => "TRACE",
        "CONNECT" => "CONNECT",
        _ => "other",
    }
}

fn status_class(status: u16) -> &'static str {
    match status / 100 {
        1 => "1xx",
        2 => "2xx",
        3 => "3xx",
        4 => "4xx",
        _ => "5xx",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_codes_fall_in_their_class() {
        let classes: Vec<_> = [101, 200, 201, 304, 401, 404, 500, 503].map(status_class).into();
        assert_eq!(classes, ["1xx", "2xx", "2xx", "3xx", "4xx", "4xx", "5xx", "5xx"]);
    }

    #[test]
    fn an_unknown_method_is_other() {
        assert_eq!(method_label(&Method::POST), "POST");
        let custom = Method::from_bytes(b"PURGE").expect("a valid method");
        assert_eq!(method_label(&custom), "other");
    }
}
