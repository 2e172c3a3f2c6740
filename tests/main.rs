//! The end-to-end tests: one test binary (it links the AWS SDKs once), one module per subject.
//!
//! Each test makes its own stack on one local AWS API server (moto) that this process starts on
//! a free loopback port and that stops with it (`devstack::testkit::LocalAws`); the ledger's
//! transitions and the idempotency library also start one dynalite. The shared support (the
//! bridge, draining the queue, a test in a process of its own, a system of record on loopback)
//! is in `support/`. docs/testing.md describes each module; `testing_doc` checks that its table
//! names these modules.

mod support;

mod bad_inputs;
mod breaker;
mod call_counts;
mod chaos;
mod console;
mod consumer;
mod destinations;
mod events;
mod faults;
mod forwarding;
mod https;
mod idempotency_library;
mod input_edges;
mod large_and_replay;
mod ledger_transitions;
mod logs_and_metrics;
mod queue_trust;
mod rate_limit;
mod receiver;
mod start_up;
mod storm;
mod template_deploys;
mod template_hardening;
mod template_matches;
mod testing_doc;
mod traces;
