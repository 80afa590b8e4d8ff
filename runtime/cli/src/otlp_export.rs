//! `--otlp-endpoint URL` and the standard `OTEL_EXPORTER_OTLP_*` variables: every span the host
//! records (agents' host calls, the algorithm's and the LLM proxy's LLM calls) also goes to an
//! OpenTelemetry collector over OTLP/HTTP (opentelemetry-otlp; protobuf, or JSON when asked),
//! through a batch span processor on its own thread. Never in a rollout's way: a span that cannot
//! be sent (the queue full, the collector down or slow) is dropped and counted, and
//! [`OtlpExport::finish`] reports the count. What the spans carry is the recorder's
//! (agl_wasm::SpanExport); this module only resolves where they go, sends them and counts.

use crate::inputs::InputError;
use agl_wasm::SpanExport;
use clap::Args;
use opentelemetry::{Key, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SpanData, SpanExporter, SpanProcessor};
use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// The path OTLP/HTTP collectors take traces at, appended to a base endpoint.
const TRACES_PATH: &str = "/v1/traces";
/// How long the end of a command waits for the last spans to go out.
const FINISH_TIMEOUT: Duration = Duration::from_secs(5);

const ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
const TRACES_ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
const PROTOCOL_VAR: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";
const TRACES_PROTOCOL_VAR: &str = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL";

/// The export flag of the commands that record spans: `run`, `dev` and `runner` (the agents' and
/// the algorithm's), `store --llm-proxy` (the proxy's).
#[derive(Debug, Clone, Default, PartialEq, Eq, Args)]
pub struct OtlpArgs {
    /// Also send every span the host records to this OpenTelemetry collector (OTLP/HTTP,
    /// protobuf), e.g. http://127.0.0.1:4318: to URL/v1/traces, or to URL itself when it ends in
    /// /v1/traces. Without it, $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (as is) or
    /// $OTEL_EXPORTER_OTLP_ENDPOINT (+ /v1/traces) turn the export on; $OTEL_EXPORTER_OTLP_HEADERS,
    /// _TIMEOUT, _PROTOCOL (http/protobuf or http/json) and $OTEL_BSP_* apply. Spans that cannot
    /// be sent are dropped and counted, never slowing a rollout; the count is reported at the end.
    /// (`store`: the LLM proxy's spans, with --llm-proxy.)
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
}

/// Where spans go and how they are encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpTarget {
    /// The full traces URL the requests are posted to.
    pub url: String,
    pub protocol: Protocol,
}

impl OtlpTarget {
    /// From `--otlp-endpoint`, else the standard variables (read through `env`); `None` when
    /// neither asks for an export.
    pub fn resolve(flag: Option<&str>, env: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, InputError> {
        let env = |name: &str| env(name).filter(|value| !value.trim().is_empty());
        let (given, source, is_base) = match (flag, env(TRACES_ENDPOINT_VAR), env(ENDPOINT_VAR)) {
            (Some(flag), _, _) => (flag.trim().to_owned(), "--otlp-endpoint", true),
            (None, Some(url), _) => (url.trim().to_owned(), TRACES_ENDPOINT_VAR, false),
            (None, None, Some(base)) => (base.trim().to_owned(), ENDPOINT_VAR, true),
            (None, None, None) => return Ok(None),
        };
        if !is_http_url(&given) {
            return Err(InputError(format!(
                "{source}: '{given}' is not an http:// or https:// URL with a host (e.g. http://127.0.0.1:4318)"
            )));
        }
        let url = if is_base { with_traces_path(&given) } else { given };
        let protocol = match env(TRACES_PROTOCOL_VAR).map(|p| (p, TRACES_PROTOCOL_VAR)) {
            Some(found) => Some(found),
            None => env(PROTOCOL_VAR).map(|p| (p, PROTOCOL_VAR)),
        };
        let protocol = match protocol {
            None => Protocol::HttpBinary,
            Some((name, _)) if name.trim() == "http/protobuf" => Protocol::HttpBinary,
            Some((name, _)) if name.trim() == "http/json" => Protocol::HttpJson,
            Some((name, var)) => {
                return Err(InputError(format!(
                    "{var}={name}: agl-host exports over OTLP/HTTP only; use http/protobuf (the default) or http/json"
                )));
            }
        };
        Ok(Some(Self { url, protocol }))
    }
}

/// A base endpoint with the traces path appended (kept when already there).
fn with_traces_path(base: &str) -> String {
    let base = base.trim().trim_end_matches('/');
    if base.ends_with(TRACES_PATH) {
        base.to_owned()
    } else {
        format!("{base}{TRACES_PATH}")
    }
}

/// An absolute http(s) URL with a host.
fn is_http_url(url: &str) -> bool {
    url.parse::<http::Uri>().is_ok_and(|uri| {
        matches!(uri.scheme_str(), Some("http" | "https")) && uri.host().is_some_and(|host| !host.is_empty())
    })
}

/// Spans handed to the exporter, and what became of them.
#[derive(Debug, Default)]
struct Counts {
    handed: AtomicU64,
    exported: AtomicU64,
    warned: AtomicBool,
}

/// What the export did, for the closing line and the results file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OtlpReport {
    /// The traces URL.
    pub endpoint: String,
    /// Spans the host recorded and handed to the exporter.
    pub spans: u64,
    /// Spans the collector accepted.
    pub exported: u64,
    /// Spans that could not be sent (collector down or slow, queue full): lost to the collector,
    /// kept in the store all the same.
    pub dropped: u64,
}

impl OtlpReport {
    /// The line printed at the end: a warning when spans were dropped.
    pub fn line(&self) -> String {
        if self.dropped == 0 {
            format!("OTLP export: {} span(s) sent to {}", self.exported, self.endpoint)
        } else {
            format!(
                "warning: OTLP export: {} of {} span(s) could not be sent to {} and were dropped (the collector was \
                 unreachable or too slow); the store has them all",
                self.dropped, self.spans, self.endpoint
            )
        }
    }
}

/// The running export: a batch span processor over the OTLP exporter.
pub struct OtlpExport {
    processor: Arc<CountingProcessor>,
    counts: Arc<Counts>,
    endpoint: String,
}

impl OtlpExport {
    /// Starts exporting to `--otlp-endpoint` or the standard variables; `None` when neither is set.
    pub fn from_flags(args: &OtlpArgs) -> anyhow::Result<Option<Self>> {
        let target = OtlpTarget::resolve(args.otlp_endpoint.as_deref(), |name| std::env::var(name).ok())?;
        target.map(Self::start).transpose()
    }

    /// Starts the exporter's thread (nothing is sent until spans arrive).
    pub fn start(target: OtlpTarget) -> anyhow::Result<Self> {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(target.url.clone())
            .with_protocol(target.protocol)
            .build()
            .map_err(|e| InputError(format!("--otlp-endpoint {}: {e}", target.url)))?;
        let counts = Arc::new(Counts::default());
        let exporter = CountingExporter {
            inner: exporter,
            counts: Arc::clone(&counts),
            endpoint: target.url.clone(),
        };
        let mut batch = BatchSpanProcessor::builder(exporter).build();
        batch.set_resource(&resource());
        let processor = Arc::new(CountingProcessor {
            inner: batch,
            counts: Arc::clone(&counts),
        });
        Ok(Self {
            processor,
            counts,
            endpoint: target.url,
        })
    }

    /// The hook the span recorders hand finished spans to.
    pub fn span_export(&self) -> SpanExport {
        SpanExport::new(self.processor.clone())
    }

    /// Sends what is still queued (waiting at most a few seconds) and stops; what was not
    /// accepted by then counts as dropped. Blocks: call it off the async runtime.
    pub fn finish(self) -> OtlpReport {
        // A timeout leaves the rest unsent: counted below, nothing more to do.
        let _ = self.processor.inner.shutdown_with_timeout(FINISH_TIMEOUT);
        let spans = self.counts.handed.load(Ordering::Relaxed);
        let exported = self.counts.exported.load(Ordering::Relaxed);
        OtlpReport {
            endpoint: self.endpoint,
            spans,
            exported,
            dropped: spans.saturating_sub(exported),
        }
    }
}

/// Finishes `export` off the async runtime and prints its closing line; `None` without one.
pub async fn finish(export: Option<OtlpExport>) -> Option<OtlpReport> {
    let export = export?;
    let report = tokio::task::spawn_blocking(move || export.finish()).await.ok()?;
    crate::output::stderr_line(&report.line());
    Some(report)
}

/// service.name `agl-host` unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES name one, the
/// version, and the SDK's own attributes.
fn resource() -> Resource {
    let detected = Resource::builder().build();
    let named = detected
        .get(&Key::from_static_str("service.name"))
        .is_some_and(|name| !name.as_str().starts_with("unknown_service"));
    let builder = Resource::builder().with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    if named {
        builder.build()
    } else {
        builder.with_service_name("agl-host").build()
    }
}

/// The batch processor, counting the spans handed to it.
#[derive(Debug)]
struct CountingProcessor {
    inner: BatchSpanProcessor,
    counts: Arc<Counts>,
}

impl SpanProcessor for CountingProcessor {
    fn on_start(&self, span: &mut opentelemetry_sdk::trace::Span, cx: &opentelemetry::Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        self.counts.handed.fetch_add(1, Ordering::Relaxed);
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }
}

/// The OTLP exporter, counting the spans the collector accepted and saying once that it fails.
#[derive(Debug)]
struct CountingExporter {
    inner: opentelemetry_otlp::SpanExporter,
    counts: Arc<Counts>,
    endpoint: String,
}

impl SpanExporter for CountingExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len() as u64;
        let result = self.inner.export(batch).await;
        match &result {
            Ok(()) => {
                self.counts.exported.fetch_add(spans, Ordering::Relaxed);
            }
            Err(error) if !self.counts.warned.swap(true, Ordering::Relaxed) => {
                tracing::warn!(
                    "OTLP export to {} failed ({error}); spans that cannot be sent are dropped and counted, the run goes on",
                    self.endpoint
                );
            }
            Err(_) => {}
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn resolve(flag: Option<&str>, vars: &[(&str, &str)]) -> Result<Option<OtlpTarget>, InputError> {
        let vars: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        OtlpTarget::resolve(flag, |name| vars.get(name).cloned())
    }

    fn url(flag: Option<&str>, vars: &[(&str, &str)]) -> String {
        resolve(flag, vars).expect("valid").expect("an export").url
    }

    #[test]
    fn nothing_set_means_no_export() {
        assert_eq!(resolve(None, &[]).expect("valid"), None);
        assert_eq!(
            resolve(None, &[(ENDPOINT_VAR, " ")]).expect("valid"),
            None,
            "blank is unset"
        );
    }

    #[test]
    fn a_base_endpoint_gets_the_traces_path_and_a_traces_endpoint_is_taken_as_is() {
        assert_eq!(url(Some("http://h:4318"), &[]), "http://h:4318/v1/traces");
        assert_eq!(url(Some("http://h:4318/"), &[]), "http://h:4318/v1/traces");
        assert_eq!(url(Some("http://h:4318/v1/traces"), &[]), "http://h:4318/v1/traces");
        assert_eq!(
            url(None, &[(ENDPOINT_VAR, "https://c/otlp")]),
            "https://c/otlp/v1/traces"
        );
        assert_eq!(
            url(None, &[(TRACES_ENDPOINT_VAR, "http://c/ingest")]),
            "http://c/ingest"
        );
    }

    #[test]
    fn the_flag_beats_the_traces_variable_which_beats_the_general_one() {
        let both = [(TRACES_ENDPOINT_VAR, "http://t/x"), (ENDPOINT_VAR, "http://g")];
        assert_eq!(url(Some("http://flag"), &both), "http://flag/v1/traces");
        assert_eq!(url(None, &both), "http://t/x");
    }

    #[test]
    fn a_bad_url_is_one_line_naming_where_it_came_from() {
        for (flag, vars, source) in [
            (Some("not a url"), vec![], "--otlp-endpoint"),
            (Some("ftp://h:21"), vec![], "--otlp-endpoint"),
            (Some("127.0.0.1:4318"), vec![], "--otlp-endpoint"),
            (None, vec![(ENDPOINT_VAR, "localhost")], ENDPOINT_VAR),
            (None, vec![(TRACES_ENDPOINT_VAR, "http://")], TRACES_ENDPOINT_VAR),
        ] {
            let error = resolve(flag, &vars).expect_err("refused").0;
            let given = flag.or(vars.first().map(|(_, v)| *v)).unwrap_or_default();
            assert!(
                error.starts_with(&format!("{source}: '{given}' is not an http")),
                "{error}"
            );
            assert!(
                error.contains("e.g. http://127.0.0.1:4318") && !error.contains('\n'),
                "{error}"
            );
        }
    }

    #[test]
    fn protobuf_by_default_json_when_asked_grpc_refused() {
        let endpoint = Some("http://h");
        assert_eq!(
            resolve(endpoint, &[]).expect("ok").expect("some").protocol,
            Protocol::HttpBinary
        );
        let json = [(PROTOCOL_VAR, "http/json")];
        assert_eq!(
            resolve(endpoint, &json).expect("ok").expect("some").protocol,
            Protocol::HttpJson
        );
        let traces_wins = [(PROTOCOL_VAR, "http/json"), (TRACES_PROTOCOL_VAR, "http/protobuf")];
        assert_eq!(
            resolve(endpoint, &traces_wins).expect("ok").expect("some").protocol,
            Protocol::HttpBinary
        );
        let error = resolve(endpoint, &[(PROTOCOL_VAR, "grpc")]).expect_err("refused").0;
        assert!(
            error.contains("OTEL_EXPORTER_OTLP_PROTOCOL=grpc") && error.contains("http/protobuf"),
            "{error}"
        );
    }

    #[test]
    fn the_closing_line_warns_only_when_spans_were_dropped() {
        let mut report = OtlpReport {
            endpoint: "http://h/v1/traces".into(),
            spans: 10,
            exported: 10,
            dropped: 0,
        };
        assert_eq!(report.line(), "OTLP export: 10 span(s) sent to http://h/v1/traces");
        report.exported = 4;
        report.dropped = 6;
        assert!(
            report.line().starts_with("warning: OTLP export: 6 of 10 span(s)"),
            "{}",
            report.line()
        );
    }
}
