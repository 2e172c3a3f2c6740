//! Fault injection and call counting at the SDK layer: an interceptor installed on the real
//! DynamoDB and SQS clients. Tests choose which operation fails on which calls, and read
//! how many calls of each operation were made.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::config::interceptors::{
    BeforeSerializationInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::orchestrator::Metadata;

/// Where a fault strikes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// Before the request is sent: nothing reaches the server.
    Before,
    /// After the server applied it: the caller sees an error anyway (a lost response).
    After,
}

#[derive(Debug, Default)]
struct State {
    calls: BTreeMap<String, u64>,
    plans: Vec<(String, When, u32)>,
    injected: u64,
}

/// Shared between the test and the clients it builds.
#[derive(Clone, Debug, Default)]
pub struct Faults(Arc<Mutex<State>>);

impl Faults {
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let mut s = match self.0.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        f(&mut s)
    }

    /// The next `times` calls of `operation` (e.g. "SendMessage", "PutItem") fail.
    pub fn fail(&self, operation: &str, when: When, times: u32) {
        self.with(|s| s.plans.push((operation.to_owned(), when, times)));
    }

    /// Calls made so far of one operation (each SDK call once, whatever its retries).
    pub fn calls(&self, operation: &str) -> u64 {
        self.with(|s| s.calls.get(operation).copied().unwrap_or(0))
    }

    /// Every operation's count.
    pub fn all_calls(&self) -> BTreeMap<String, u64> {
        self.with(|s| s.calls.clone())
    }

    pub fn reset_calls(&self) {
        self.with(|s| s.calls.clear());
    }

    /// Faults injected so far.
    pub fn injected(&self) -> u64 {
        self.with(|s| s.injected)
    }

    fn strike(&self, operation: &str, when: When) -> Result<(), BoxError> {
        let hit = self.with(|s| {
            let plan = s
                .plans
                .iter_mut()
                .find(|(op, w, left)| op == operation && *w == when && *left > 0);
            match plan {
                Some(plan) => {
                    plan.2 -= 1;
                    s.injected += 1;
                    true
                }
                None => false,
            }
        });
        if hit {
            Err(format!("injected fault: {operation} ({when:?})").into())
        } else {
            Ok(())
        }
    }
}

fn operation(cfg: &ConfigBag) -> String {
    cfg.load::<Metadata>()
        .map(|m| m.name().to_owned())
        .unwrap_or_default()
}

impl Intercept for Faults {
    fn name(&self) -> &'static str {
        "Faults"
    }

    fn read_before_serialization(
        &self,
        _context: &BeforeSerializationInterceptorContextRef<'_>,
        _rc: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let op = operation(cfg);
        self.with(|s| *s.calls.entry(op.clone()).or_default() += 1);
        self.strike(&op, When::Before)
    }

    fn read_after_execution(
        &self,
        _context: &FinalizerInterceptorContextRef<'_>,
        _rc: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.strike(&operation(cfg), When::After)
    }
}

/// A DynamoDB client with the interceptor.
pub fn dynamo_client(sdk: &aws_config::SdkConfig, faults: &Faults) -> aws_sdk_dynamodb::Client {
    let conf = aws_sdk_dynamodb::config::Builder::from(sdk)
        .interceptor(faults.clone())
        .build();
    aws_sdk_dynamodb::Client::from_conf(conf)
}

/// An SQS client with the interceptor.
pub fn sqs_client(sdk: &aws_config::SdkConfig, faults: &Faults) -> aws_sdk_sqs::Client {
    let conf = aws_sdk_sqs::config::Builder::from(sdk)
        .interceptor(faults.clone())
        .build();
    aws_sdk_sqs::Client::from_conf(conf)
}
