//! `--otlp-endpoint URL` and the standard `OTEL_EXPORTER_OTLP_*` variables: every span the host
//! records (agents' host calls, the algorithm's and the LLM proxy's LLM calls) also goes to an
//! OpenTelemetry collector over OTLP/HTTP (opentelemetry-otlp; protobuf, or JSON when asked),
//! through a batch span processor on its own thread. Never in a rollout's way: a span that cannot
//! be sent (the queue full, the collector down or slow) is dropped and counted, and
//! [`OtlpExport::finish`] reports the count. What the spans carry is the recorder's
//! (agl_wasm::SpanExport), where they go is [`target`]'s; this module sends them and counts.

mod target;

pub use target::{OtlpArgs, OtlpTarget};

use crate::inputs::InputError;
use agl_wasm::SpanExport;
use opentelemetry::{Key, KeyValue};
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SpanData, SpanExporter, SpanProcessor};
use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// How long the end of a command waits for the last spans to go out.
const FINISH_TIMEOUT: Duration = Duration::from_secs(5);

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
