//! A Lambda function as a destination: an asynchronous `Invoke` (`InvocationType` `Event`)
//! whose payload is the key beside the body's JSON text as sent ([`super::detail`]), a
//! pointer where it would exceed the asynchronous payload limit. Lambda's own retries of an
//! asynchronous event may run it more than once: the function deduplicates on
//! `idempotency_key`.

use aws_sdk_lambda::error::ProvideErrorMetadata;
use aws_sdk_lambda::primitives::Blob;
use aws_sdk_lambda::types::InvocationType;

use super::{aws_error, detail};
use crate::bucket::S3Bucket;
use crate::consumer::{Job, Outcome, ProcessError};

/// The asynchronous invocation's payload limit (256 KB), less a margin.
pub const MAX_ASYNC_PAYLOAD_BYTES: usize = 256 * 1024 - 1024;

#[derive(Clone, Debug)]
pub struct FunctionTarget {
    client: aws_sdk_lambda::Client,
    arn: String,
    store: Option<S3Bucket>,
}

impl FunctionTarget {
    pub fn new(client: aws_sdk_lambda::Client, arn: String, store: Option<S3Bucket>) -> Self {
        Self { client, arn, store }
    }

    pub async fn deliver(&self, job: &Job) -> Outcome {
        let payload = match detail::fitted(
            job,
            MAX_ASYNC_PAYLOAD_BYTES,
            detail::Carries::AnyJson,
            self.store.as_ref(),
        )
        .await
        {
            Ok(p) => with_traceparent(p, job),
            Err(e) => return Outcome::Failed(e),
        };
        let answer = self
            .client
            .invoke()
            .function_name(&self.arn)
            .invocation_type(InvocationType::Event)
            .payload(Blob::new(payload))
            .send()
            .await;
        match answer {
            Ok(out) if out.status_code() == 202 => Outcome::Done,
            Ok(out) => Outcome::Failed(ProcessError(format!(
                "Invoke answered {}",
                out.status_code()
            ))),
            Err(e) => aws_error::outcome("Invoke", e.code(), &e.to_string()),
        }
    }
}

/// The payload with the call's `traceparent` as its first member, where the event has a trace
/// (docs/operations.md, "Traces"): an asynchronous `Invoke` passes no `ClientContext` to the
/// function, and X-Ray's own header names the consumer's invocation, not the event.
fn with_traceparent(payload: String, job: &Job) -> String {
    match (&job.trace, payload.strip_prefix('{')) {
        (Some(trace), Some(rest)) => {
            let sep = if rest.starts_with('}') { "" } else { "," };
            format!(
                "{{\"{}\":\"{}\"{sep}{rest}",
                crate::trace::TRACEPARENT,
                trace.traceparent()
            )
        }
        _ => payload,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_payload_carries_the_call_s_traceparent_first() {
        let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let job = Job {
            key: "k".into(),
            source: "s".into(),
            body: bytes::Bytes::new(),
            headers: Default::default(),
            attempt: 1,
            lease_until_ms: 0,
            replay_id: None,
            event_type: None,
            trace: crate::trace::TraceContext::parse(parent).ok(),
        };
        let payload = with_traceparent(r#"{"idempotency_key":"k"}"#.into(), &job);
        assert_eq!(
            payload,
            format!(r#"{{"traceparent":"{parent}","idempotency_key":"k"}}"#)
        );
        let value: serde_json::Value = serde_json::from_str(&payload).expect("JSON");
        assert_eq!(value["idempotency_key"], "k");
        let untraced = Job { trace: None, ..job };
        assert_eq!(with_traceparent("{}".into(), &untraced), "{}");
    }
}
