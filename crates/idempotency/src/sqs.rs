//! SQS batches: each record run once per key, the batch answered with its failed records
//! (`ReportBatchItemFailures` on the event source mapping), so that only those come back.
//!
//! - A standard queue's records run concurrently.
//! - A FIFO queue's records run in order within their message group; once one fails, the
//!   group's later records are reported failed without running (they would run out of
//!   order), and the other groups go on.
//! - A record already done is acknowledged without running; one in flight elsewhere, or with
//!   a payload its key was not first used with, is reported failed (it comes back, or goes
//!   to the dead-letter queue).
//!
//! The handler as one closure, on the DynamoDB store (the table named by `IDEMPOTENCY_TABLE`):
//!
//! ```no_run
//! # #[cfg(feature = "dynamodb")]
//! # async fn main_() -> Result<(), lambda_runtime::Error> {
//! use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
//! use lambda_idempotency::dynamodb::DynamoStore;
//! use lambda_idempotency::sqs::process_batch;
//! use lambda_idempotency::{Idempotency, Key};
//! use lambda_runtime::{service_fn, Error, LambdaEvent};
//!
//! let table = std::env::var("IDEMPOTENCY_TABLE")?;
//! let client = aws_sdk_dynamodb::Client::new(&aws_config::load_from_env().await);
//! let idem = &Idempotency::new(DynamoStore::new(client, table));
//! lambda_runtime::run(service_fn(|event: LambdaEvent<SqsEvent>| async move {
//!     let response: SqsBatchResponse = process_batch(
//!         idem,
//!         event.payload,
//!         &(&event.context).into(),
//!         // The key: what the message is (here the message id; better the operation's
//!         // own id from the body, which a second send of the same operation repeats).
//!         |m: &SqsMessage| Key::new(m.message_id.clone().unwrap_or_default()),
//!         |m: SqsMessage| async move { Ok::<_, String>(m.body.map(|b| b.len())) },
//!     )
//!     .await;
//!     Ok::<_, Error>(response)
//! }))
//! .await
//! # }
//! ```

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::future::Future;

use aws_lambda_events::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tracing::warn;

use crate::{Deadline, Idempotency, Key, KeyError, Store};

/// Whether these records came from a FIFO queue (an ARN ending in `.fifo`, or a message
/// group id on a record).
pub fn is_fifo(records: &[SqsMessage]) -> bool {
    records.iter().any(|m| {
        m.event_source_arn
            .as_deref()
            .is_some_and(|arn| arn.ends_with(".fifo"))
            || m.attributes.contains_key("MessageGroupId")
    })
}

fn failure(message: &SqsMessage) -> BatchItemFailure {
    let mut f = BatchItemFailure::default();
    f.item_identifier = message.message_id.clone().unwrap_or_default();
    f
}

/// One record, run once per key: `true` when it may be acknowledged.
async fn one<S, R, E, Fut>(
    idem: &Idempotency<S>,
    deadline: &Deadline,
    key: Result<Key, KeyError>,
    message: SqsMessage,
    handler: &impl Fn(SqsMessage) -> Fut,
) -> bool
where
    S: Store,
    R: Serialize + DeserializeOwned,
    E: fmt::Display,
    Fut: Future<Output = Result<R, E>>,
{
    let id = message.message_id.clone().unwrap_or_default();
    let key = match key {
        Ok(key) => key,
        Err(e) => {
            warn!(message_id = %id, error = %e, "idempotency: no key for an SQS record; reported failed");
            return false;
        }
    };
    let payload = message.body.clone().unwrap_or_default();
    let run = idem.run(&key, payload.as_bytes(), deadline, || handler(message));
    match run.await {
        Ok(_) => true,
        Err(e) => {
            warn!(key = %key, message_id = %id, error = %e, "idempotency: SQS record reported failed");
            false
        }
    }
}

/// Runs each record of `event` once per key (`key` derives it from the record), and answers
/// the batch with the records that failed or were not run.
pub async fn process_batch<S, K, H, R, E, Fut>(
    idem: &Idempotency<S>,
    event: SqsEvent,
    deadline: &Deadline,
    key: K,
    handler: H,
) -> SqsBatchResponse
where
    S: Store,
    K: Fn(&SqsMessage) -> Result<Key, KeyError>,
    H: Fn(SqsMessage) -> Fut,
    R: Serialize + DeserializeOwned,
    E: fmt::Display,
    Fut: Future<Output = Result<R, E>>,
{
    let records = event.records;
    let mut response = SqsBatchResponse::default();
    if is_fifo(&records) {
        response.batch_item_failures = fifo(idem, records, deadline, &key, &handler).await;
        return response;
    }
    let runs = records.into_iter().map(|m| {
        let failed = failure(&m);
        let k = key(&m);
        let handler = &handler;
        async move { (!one(idem, deadline, k, m, handler).await).then_some(failed) }
    });
    response.batch_item_failures = futures::future::join_all(runs)
        .await
        .into_iter()
        .flatten()
        .collect();
    response
}

/// A FIFO batch: groups one after another here (their records in order), a failed group's
/// later records reported failed without running.
async fn fifo<S, K, H, R, E, Fut>(
    idem: &Idempotency<S>,
    records: Vec<SqsMessage>,
    deadline: &Deadline,
    key: &K,
    handler: &H,
) -> Vec<BatchItemFailure>
where
    S: Store,
    K: Fn(&SqsMessage) -> Result<Key, KeyError>,
    H: Fn(SqsMessage) -> Fut,
    R: Serialize + DeserializeOwned,
    E: fmt::Display,
    Fut: Future<Output = Result<R, E>>,
{
    let mut failed_groups: HashSet<String> = HashSet::new();
    let mut failures = Vec::new();
    // Groups in order of first appearance are not needed: each group's own order is kept.
    let mut groups: BTreeMap<String, Vec<SqsMessage>> = BTreeMap::new();
    for m in records {
        let group = m
            .attributes
            .get("MessageGroupId")
            .cloned()
            .unwrap_or_default();
        groups.entry(group).or_default().push(m);
    }
    for (group, messages) in groups {
        for m in messages {
            if failed_groups.contains(&group) {
                failures.push(failure(&m));
                continue;
            }
            let failed = failure(&m);
            let k = key(&m);
            if !one(idem, deadline, k, m, handler).await {
                failed_groups.insert(group.clone());
                failures.push(failed);
            }
        }
    }
    failures
}
