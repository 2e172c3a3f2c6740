//! The consumer's spans of an event's trace ([`crate::trace`], docs/operations.md, "Traces"):
//! the event's `inbox.consume` span under its envelope's `traceparent`, and a destination's span
//! ended with what its call came to. Here, not in [`crate::trace`], because they read the
//! envelope and the consumer's outcome (the trace module sits below both).

use super::Outcome;
use crate::queue::Envelope;
use crate::trace::{attributes, names, start, Kind, Span, TraceContext};

/// The consumer's `inbox.consume` span of an envelope's event: under the envelope's
/// `traceparent` where it reads; else (absent, or not W3C: input) a new trace, and a line saying
/// why where it was there but did not read. Never a refusal: the event runs either way.
pub(crate) fn consume(envelope: &Envelope) -> Span {
    let parent = envelope.traceparent.as_deref().and_then(|text| {
        TraceContext::parse(text)
            .map_err(|e| {
                tracing::info!(
                    key = %envelope.key,
                    reason = %e,
                    "the envelope's traceparent is not taken: a new trace starts"
                );
            })
            .ok()
    });
    let mut span = start(names::CONSUME, Kind::Consumer, parent.as_ref());
    if span.is_recording() {
        span.attribute(attributes::SOURCE, envelope.source.clone());
        span.attribute(attributes::KEY, envelope.key.clone());
    }
    span
}

/// Ends a destination's span with what its call came to (`inbox.outcome`: `done`, `failed`
/// with the error as its status, `throttled`).
pub(crate) fn ended(span: Option<Span>, outcome: &Outcome) {
    let Some(mut span) = span else { return };
    if !span.is_recording() {
        return;
    }
    let said = match outcome {
        Outcome::Done => "done",
        Outcome::Failed(e) => {
            span.failed(&e.0);
            "failed"
        }
        Outcome::Throttled { .. } => "throttled",
    };
    span.attribute(attributes::OUTCOME, said);
}
