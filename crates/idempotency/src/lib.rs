//! Idempotent AWS Lambda handlers on DynamoDB.
//!
//! A duplicate is the normal case: webhook senders, SQS, SNS, EventBridge and asynchronous
//! invocations all deliver at least once. This crate runs a function once per **key**, the
//! identity of the operation (a header, a field of the body, an event's id: what the request
//! *is*, never when it was seen), and answers every repeat with the first result.
//!
//! - **One round trip per claim.** The claim is one conditional `UpdateItem`
//!   ([`machine::CLAIM_CONDITION`]: absent or expired, or this payload's record abandoned or
//!   failed) with `ReturnValuesOnConditionCheckFailure=ALL_OLD`: a duplicate is answered from
//!   that same call, with no second read.
//! - **Leases follow the invocation's deadline**, so a timed-out invocation never leaves its
//!   key stuck: once the lease ran out, the next call's claim takes the record over, in the
//!   same one write.
//! - **Never a lock you do not hold**: completing, releasing and recording a failure are
//!   guarded on the caller's own lease owner.
//! - **One payload per key**: the payload's SHA-256 is stored, and a different payload under
//!   the same key is refused ([`Error::PayloadMismatch`]) on every path.
//! - **TTL left to DynamoDB** (`expires_at`, epoch seconds); an expired record counts as
//!   absent in every condition. Every other time is in milliseconds.
//! - The key is in every log line about it.
//!
//! The state machine, each DynamoDB condition beside its in-memory twin, is [`machine`];
//! the stores implement the small [`Store`] port. Both stores are built on a public
//! conditional-write layer (`dynamodb::Table`, `memory::Table`) and on transitions written
//! against the [`machine::Lease`] part of a record, so that a layer with records of its own
//! (more statuses, more attributes) reuses the state machine instead of writing a second one.
//!
//! # Entry points
//!
//! - any async function: [`Idempotency::run`] or [`idempotent`];
//! - `lambda_http` (feature `http`): `http::IdempotencyLayer`, the `Idempotency-Key` header;
//! - SQS batches (feature `sqs`): `sqs::process_batch`, per-record idempotency and FIFO groups;
//! - SNS, EventBridge, S3, DynamoDB streams, EventBridge Scheduler (feature `events`):
//!   `events::NaturalKey`, each event's own identity as the key.
//!
//! # Features
//!
//! | feature | what it adds |
//! | --- | --- |
//! | `memory` | `memory::MemoryStore` |
//! | `dynamodb` | `dynamodb::DynamoStore` (aws-sdk-dynamodb) |
//! | `lambda` | a [`Deadline`] from `lambda_runtime::Context` |
//! | `http` | `http::IdempotencyLayer` for `lambda_http` (tower) |
//! | `sqs` | `sqs::process_batch` (aws_lambda_events) |
//! | `events` | `events::NaturalKey` for aws_lambda_events types |
//!
//! # Example
//!
//! ```
//! # #[cfg(feature = "memory")]
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use lambda_idempotency::memory::MemoryStore;
//! use lambda_idempotency::{Deadline, Idempotency, Key};
//!
//! let idem = Idempotency::new(MemoryStore::new());
//! let key = Key::new("order-42").unwrap();
//! let payload = br#"{"amount":100}"#;
//!
//! let first = idem
//!     .run(&key, payload, &Deadline::none(), || async { Ok::<_, String>(7_u32) })
//!     .await
//!     .unwrap();
//! assert_eq!((first.value, first.replayed), (7, false));
//!
//! // A retry of the same operation: the function does not run, the first result comes back.
//! let again = idem
//!     .run(&key, payload, &Deadline::none(), || async { Ok::<_, String>(8_u32) })
//!     .await
//!     .unwrap();
//! assert_eq!((again.value, again.replayed), (7, true));
//! # });
//! ```
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod cache;
mod core;
mod key;
pub mod machine;
mod store;

#[cfg(feature = "dynamodb")]
#[cfg_attr(docsrs, doc(cfg(feature = "dynamodb")))]
pub mod dynamodb;
#[cfg(feature = "events")]
#[cfg_attr(docsrs, doc(cfg(feature = "events")))]
pub mod events;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;
#[cfg(feature = "memory")]
#[cfg_attr(docsrs, doc(cfg(feature = "memory")))]
pub mod memory;
#[cfg(feature = "sqs")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqs")))]
pub mod sqs;

pub use crate::cache::ResultCache;
pub use crate::core::{
    idempotent, system_now_ms, Deadline, Error, Idempotency, OnFailure, Outcome, DEFAULT_RETENTION,
    FALLBACK_LEASE_MS,
};
pub use crate::key::{payload_sha256, Key, KeyError, MAX_KEY_BYTES};
pub use crate::machine::{Record, Status};
pub use crate::store::{Store, StoreError};
