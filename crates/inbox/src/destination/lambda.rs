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
            Ok(p) => p,
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
