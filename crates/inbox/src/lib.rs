//! The webhook inbox library: everything the two Lambda functions do, minus the wiring.
//!
//! - [`config`]: `WEBHOOK_SOURCES` and the environment, parsed and checked once at start-up.
//! - [`key`]: the idempotency key, derived from the sender's own identifier.
//! - [`json_fields`]: the values at key and group pointers, read from the body in one pass.
//! - [`json_text`]: a JSON body as the text the sender signed (what destinations and the
//!   console get), never re-serialised through a general parser's values.
//! - [`signature`]: the senders' signature schemes.
//! - [`ledger`]: the ledger state machine (claim, release, take, complete, fail,
//!   defer) and its DynamoDB and in-memory adapters.
//! - [`queue`]: the queue envelope and the SQS FIFO adapter.
//! - [`fifo`]: the FIFO group rule: an event's group, a batch run by group, SQS-safe ids.
//! - `lease` (crate-private): how long a claim or a take holds a key.
//! - [`receiver`] and [`consumer`]: the two handlers.
//! - `replay_cache` (crate-private): the receiver's memory of keys it answered, so that a
//!   warm instance answers their duplicates with no AWS call.
//! - [`forward`]: the shipped side effect, a signed POST to the system of record.
//! - [`redelivery`]: what the consumer asks of its queue: a later redelivery, a dead letter.
//! - [`bucket`]: the payload bucket (bodies too big for the queue), and where the archive lands.
//! - [`archive`]: the replay archive: the consumer's envelopes, through Firehose, in the bucket.
//! - [`metrics`]: the counters both handlers emit.
//! - [`outcome`]: the log's `outcome` vocabulary, one enum.
//! - [`log_text`]: outside text (a path segment, a queue message's key) capped for a log line.
//! - [`clock`]: time, injected so that tests can move it.
//! - [`app`]: the cold-start wiring the two binaries share.
//! - [`test_ca`]: the test-only CA (`HTTPS_TEST_CA_FILE`) the HTTPS clients may also trust.
//! - [`whsec`]: the one reader of `whsec_` secrets, for the verifier, the forward signer and
//!   the dev stack's senders.
//! - `answer`, `defaults` (crate-private leaves): the stored answer and shared defaults,
//!   re-exported where a user reaches them
//!   ([`receiver::accepted_response`], [`consumer::DEFAULT_MAX_FAILURES`]).
//!
//! What a user of the library needs most is re-exported here: a [`Processor`] of your own
//! (its [`Job`], [`Outcome`] and [`ProcessError`]), run by a [`Consumer`] with its
//! [`ConsumerSettings`]; the [`Receiver`] and its [`ReceiverSettings`]; the sources
//! ([`SourceSpecs`]); the ledger port ([`LedgerStore`]) and its in-memory twin
//! ([`MemoryLedger`]); [`Metrics`]; the queue [`Envelope`]; the [`Clock`].

pub(crate) mod answer;
pub mod app;
pub mod archive;
pub mod breaker;
pub mod bucket;
pub mod clock;
pub mod config;
pub mod consumer;
pub(crate) mod defaults;
pub mod destination;
pub mod event_type;
pub mod fifo;
pub mod forward;
pub mod json_fields;
pub mod json_text;
pub mod key;
pub mod key_fetch;
pub(crate) mod lease;
pub mod ledger;
pub mod log_text;
pub mod metrics;
pub mod outcome;
pub mod queue;
pub mod receiver;
pub mod redelivery;
pub(crate) mod replay_cache;
pub mod route;
pub mod signature;
pub mod test_ca;
pub mod trace;
pub mod whsec;

pub use clock::{Clock, SystemClock};
pub use config::SourceSpecs;
pub use consumer::{Consumer, ConsumerSettings, Job, Outcome, ProcessError, Processor};
pub use ledger::memory::MemoryLedger;
pub use ledger::LedgerStore;
pub use metrics::Metrics;
pub use queue::{Envelope, MemoryQueue};
pub use receiver::{Receiver, ReceiverSettings};
