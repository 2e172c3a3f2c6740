//! One trace per event, sender to every destination (docs/operations.md, "Traces").
//!
//! The receiver continues the sender's `traceparent` where one arrives and reads ([`context`]),
//! else starts a trace; the envelope carries the receiver's span on (`traceparent`, docs/design.md
//! §5) and the consumer continues it for the take, each destination's call and the completion.
//! The ids exist whether or not spans are exported: they go into the envelope, the ledger item
//! (`trace_id`), the forward's `traceparent` header and the other destinations' carriers.
//!
//! Export is off unless `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`)
//! is set ([`install_from_env`]). Off, a [`Span`] is two random ids and nothing else. On, each
//! span is an OpenTelemetry SDK span; ended spans wait in memory and [`flush`] sends them over
//! OTLP/HTTP (JSON) before the invocation returns (Lambda freezes the sandbox after it): no
//! background thread, which the single-threaded runtime of the functions would not run anyway.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use opentelemetry::trace::{
    Span as _, SpanContext, SpanId, SpanKind, Status, TraceContextExt as _, TraceFlags, TraceId,
    TraceState, Tracer as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    IdGenerator, RandomIdGenerator, SdkTracer, SdkTracerProvider, SpanData, SpanExporter as _,
    SpanProcessor,
};

pub mod context;
mod export;

pub use context::{TraceContext, TraceparentError, TRACEPARENT};

/// The spans, by name (docs/operations.md lists them; the end-to-end test checks them).
pub mod names {
    /// The receiver's request, from its arrival to its answer (kind SERVER).
    pub const RECEIVE: &str = "inbox.receive";
    /// The consumer's run of one event (kind CONSUMER), under the receiver's span.
    pub const CONSUME: &str = "inbox.consume";
    /// The take of the event's item.
    pub const TAKE: &str = "inbox.take";
    /// One destination's call (kind CLIENT), attribute `inbox.destination`.
    pub const DELIVER: &str = "inbox.deliver";
    /// The write that settles a destination's item after its call (complete, fail, defer).
    pub const SETTLE: &str = "inbox.settle";
    /// The event's item completed once every named destination has.
    pub const COMPLETE: &str = "inbox.complete";
}

/// The span attributes this project sets.
pub mod attributes {
    pub const SOURCE: &str = "inbox.source";
    pub const KEY: &str = "inbox.key";
    pub const DESTINATION: &str = "inbox.destination";
    pub const OUTCOME: &str = "inbox.outcome";
    pub const HTTP_STATUS: &str = "http.response.status_code";
}

/// The most ended spans kept between two flushes: beyond it, spans are dropped (counted in
/// the flush's log line), so a flush that keeps failing cannot grow the memory.
pub const MAX_BUFFERED_SPANS: usize = 4096;

/// The exporter's pieces, once installed.
struct Exporting {
    tracer: SdkTracer,
    buffer: Arc<Buffer>,
    exporter: opentelemetry_otlp::SpanExporter,
    /// Held so that the tracer keeps working (dropping the provider shuts it down).
    _provider: SdkTracerProvider,
}

static EXPORTING: OnceLock<Exporting> = OnceLock::new();

/// Whether spans are exported (an exporter was installed in this process).
pub fn exporting() -> bool {
    EXPORTING.get().is_some()
}

/// What kind of span (OpenTelemetry's span kinds this project uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Server,
    Consumer,
    Client,
    Internal,
}

impl From<Kind> for SpanKind {
    fn from(k: Kind) -> Self {
        match k {
            Kind::Server => SpanKind::Server,
            Kind::Consumer => SpanKind::Consumer,
            Kind::Client => SpanKind::Client,
            Kind::Internal => SpanKind::Internal,
        }
    }
}

/// A span of an event's trace: its context always; an SDK span where export is on. Ends when
/// dropped (or by [`Span::end`]).
pub struct Span {
    context: TraceContext,
    recording: Option<opentelemetry_sdk::trace::Span>,
}

impl std::fmt::Debug for Span {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Span")
            .field("context", &self.context)
            .field("recording", &self.recording.is_some())
            .finish()
    }
}

/// Starts span `name` under `parent` (a remote parent: the sender's, or the envelope's), or
/// as the root of a new trace where there is none.
pub fn start(name: &'static str, kind: Kind, parent: Option<&TraceContext>) -> Span {
    match EXPORTING.get() {
        None => Span {
            context: unrecorded(parent),
            recording: None,
        },
        Some(on) => {
            let cx = match parent {
                Some(p) => Context::new().with_remote_span_context(SpanContext::new(
                    TraceId::from_bytes(p.trace_id_bytes()),
                    SpanId::from_bytes(p.span_id_bytes()),
                    if p.is_sampled() {
                        TraceFlags::SAMPLED
                    } else {
                        TraceFlags::default()
                    },
                    true,
                    TraceState::default(),
                )),
                None => Context::new(),
            };
            let span = on
                .tracer
                .span_builder(name)
                .with_kind(kind.into())
                .start_with_context(&on.tracer, &cx);
            let sc = span.span_context();
            Span {
                context: TraceContext::new(
                    sc.trace_id().to_bytes(),
                    sc.span_id().to_bytes(),
                    sc.is_sampled(),
                ),
                recording: Some(span),
            }
        }
    }
}

/// Starts span `name` under `parent`'s span, where there is one; no span (and no cost) where
/// `parent` is `None`.
pub fn child(name: &'static str, kind: Kind, parent: Option<&TraceContext>) -> Option<Span> {
    parent.map(|p| start(name, kind, Some(p)))
}

/// The `inbox.deliver` span of one destination's call (`destination`: its name, `forward`
/// for the default one), under the event's span.
pub fn deliver(destination: &str, parent: Option<&TraceContext>) -> Option<Span> {
    let mut span = child(names::DELIVER, Kind::Client, parent)?;
    if span.is_recording() {
        span.attribute(attributes::DESTINATION, destination.to_owned());
    }
    Some(span)
}

/// The ids of new traces and spans: a trace id's first 4 bytes are the epoch second it starts
/// (big-endian), the other 12 random, so that X-Ray, which reads those 4 bytes as the trace's
/// time, takes it in `AWSTraceHeader` and `TraceHeader` as it is; span ids are random. Still a
/// W3C trace id (random enough: 96 bits).
#[derive(Clone, Copy, Debug, Default)]
pub struct EpochFirstIds;

impl IdGenerator for EpochFirstIds {
    fn new_trace_id(&self) -> TraceId {
        let mut id = RandomIdGenerator::default().new_trace_id().to_bytes();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let secs = u32::try_from(now).unwrap_or(u32::MAX).to_be_bytes();
        id[..4].copy_from_slice(&secs);
        TraceId::from_bytes(id)
    }

    fn new_span_id(&self) -> SpanId {
        RandomIdGenerator::default().new_span_id()
    }
}

/// A span's context without an SDK: the parent's trace (or a new one, sampled) and a new id.
fn unrecorded(parent: Option<&TraceContext>) -> TraceContext {
    let ids = EpochFirstIds;
    let span_id = ids.new_span_id().to_bytes();
    match parent {
        Some(p) => TraceContext::new(p.trace_id_bytes(), span_id, p.is_sampled()),
        None => TraceContext::new(ids.new_trace_id().to_bytes(), span_id, true),
    }
}

impl Span {
    /// This span's context: what the next hop carries as its parent.
    pub fn context(&self) -> &TraceContext {
        &self.context
    }

    /// Whether the span is exported (an SDK span behind it): only then are attributes worth
    /// their allocations.
    pub fn is_recording(&self) -> bool {
        self.recording.is_some()
    }

    /// Sets an attribute, where the span is recorded (nothing is built otherwise).
    pub fn attribute(&mut self, key: &'static str, value: impl Into<opentelemetry::Value>) {
        if let Some(span) = &mut self.recording {
            span.set_attribute(KeyValue::new(key, value));
        }
    }

    /// Marks the span failed with `description` (never a body or a secret).
    pub fn failed(&mut self, description: &str) {
        if let Some(span) = &mut self.recording {
            span.set_status(Status::error(description.to_owned()));
        }
    }

    /// Ends the span now (dropping it does the same).
    pub fn end(self) {}
}

/// Where ended spans wait for [`flush`].
#[derive(Debug, Default)]
struct Buffer {
    spans: Mutex<Vec<SpanData>>,
    dropped: std::sync::atomic::AtomicUsize,
}

/// The SDK's processor handing ended spans to the [`Buffer`].
#[derive(Debug)]
struct Buffered(Arc<Buffer>);

impl SpanProcessor for Buffered {
    fn on_start(&self, _span: &mut opentelemetry_sdk::trace::Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        if !span.span_context.is_sampled() {
            return;
        }
        let mut spans = self.0.spans.lock().unwrap_or_else(|p| p.into_inner());
        if spans.len() < MAX_BUFFERED_SPANS {
            spans.push(span);
        } else {
            self.0
                .dropped
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }
}

/// Why export could not be set up (start-up stops: a configured exporter that cannot work
/// is a configuration error, not a silent loss of traces).
#[derive(Debug, thiserror::Error)]
#[error("the OTLP trace exporter: {0}")]
pub struct ExportSetupError(String);

/// Installs the OTLP exporter where `OTEL_EXPORTER_OTLP_ENDPOINT` or
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (and `OTEL_SDK_DISABLED` is not `true`):
/// `Ok(true)`. The service name is `OTEL_SERVICE_NAME`, else `service`. Once per process;
/// a second call changes nothing.
pub fn install_from_env(service: &str) -> Result<bool, ExportSetupError> {
    let Some(endpoint) = export::endpoint_from_env() else {
        return Ok(false);
    };
    if exporting() {
        return Ok(true);
    }
    let exporting = export::build(service, &endpoint)?;
    let _ = EXPORTING.set(exporting);
    tracing::warn!(
        endpoint = %export::endpoint_for_log(&endpoint),
        "trace export is on: spans are sent over OTLP/HTTP before each invocation returns"
    );
    Ok(true)
}

/// Sends the spans ended since the last flush; a failure is a log line, never an error that
/// holds up the event. Nothing to do where export is off.
pub async fn flush() {
    let Some(on) = EXPORTING.get() else {
        return;
    };
    let batch = std::mem::take(&mut *on.buffer.spans.lock().unwrap_or_else(|p| p.into_inner()));
    let dropped = on
        .buffer
        .dropped
        .swap(0, std::sync::atomic::Ordering::Relaxed);
    if batch.is_empty() && dropped == 0 {
        return;
    }
    let count = batch.len();
    if let Err(e) = on.exporter.export(batch).await {
        tracing::warn!(error = %e, spans = count, dropped, "trace export failed: the spans are lost");
    } else if dropped > 0 {
        tracing::warn!(
            dropped,
            "spans dropped: more than MAX_BUFFERED_SPANS between flushes"
        );
    }
}

#[cfg(test)]
mod tests;
