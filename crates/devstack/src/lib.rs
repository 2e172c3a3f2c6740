//! Dev only: the inbox on one machine, for the tests, the demo and the bench.
//!
//! - [`moto`]: local AWS (a moto server), [`provision`]: the table and queues made from
//!   template.yaml's own definitions, [`cloudformation`]: the whole template rehearsed as a stack;
//! - [`bridge`]: a stand-in for the SQS event source mapping;
//! - [`faults`]: failures and call counts injected at the SDK layer;
//! - [`senders`]: how each webhook sender signs a delivery;
//! - [`testkit`]: what the end-to-end tests share (local AWS per test, signed requests, API
//!   Gateway events, a system of record);
//! - [`demo`]: `make demo` and its `serve` and `check-events`, and the `events/` generator.

pub mod bridge;
pub mod cloudformation;
pub mod demo;
pub mod faults;
pub mod moto;
pub mod provision;
pub mod senders;
pub mod testkit;
