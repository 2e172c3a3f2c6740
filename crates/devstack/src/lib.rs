//! Dev only: the inbox on one machine, for the tests, the demo and the bench.
//!
//! - [`moto`]: local AWS (a moto server, CloudWatch in the SDK's protocol included),
//!   [`local_metrics`]: the functions' EMF lines put on its CloudWatch, [`cloudformation`]:
//!   template.yaml translated and created as a stack on it and read back, [`local_stack`]: that stack with the local
//!   parameters and secrets, which the tests, the demo and the bench run on;
//! - [`deployer_policy`]: the IAM policy a deployer needs, derived from the translated
//!   template's resource types and cfn-lint's resource provider schemas (docs/deployer-policy*.json);
//! - [`dynalite`]: a second DynamoDB (dynalite, from npm), for the ledger transition tests;
//! - [`runtime`]: the Lambda Runtime API emulator and function processes under supervision;
//! - [`bridge`]: a stand-in for the SQS event source mapping;
//! - [`faults`]: failures and call counts injected at the SDK layer;
//! - [`senders`]: how each webhook sender signs a delivery;
//! - [`testkit`]: what the end-to-end tests share (local AWS per test, signed requests, API
//!   Gateway events, a system of record).
//!
//! `make demo` and the `events/` generator are the `demo` crate's, on this one: the tests
//! compile neither the demo nor the console it serves.

pub mod bridge;
pub mod cloudformation;
pub mod deployer_policy;
pub mod dynalite;
pub mod faults;
pub mod local_metrics;
pub mod local_stack;
pub mod moto;
pub mod runtime;
pub mod senders;
pub mod targets;
pub mod testkit;
