//! Fault injection and call counting at the SDK layer: an interceptor installed on the real
//! DynamoDB and SQS clients. Tests choose which operation fails on which calls, and read
//! how many calls of each operation were made.
//!
//! Three kinds of fault:
//! - [`Faults::fail`] / [`Faults::fail_after`]: a call fails with an error the SDK does not
//!   retry (an interceptor error), either before anything is sent ([`When::Before`]) or after
//!   the server applied it ([`When::After`], a lost response).
//! - [`Faults::throttle`]: attempts are answered `400 ThrottlingException` by a stand-in
//!   endpoint instead of the server, so nothing is applied and the SDK's own retry strategy
//!   sees a retryable throttling error. (An interceptor error is never retried by the SDK:
//!   the orchestrator's classifiers only retry transient, throttling and modeled-retryable
//!   errors from a response or the connector; so throttling has to come as a response.)
//! - [`Faults::freeze_after`]: once a given call has completed, every later call through
//!   these clients is sent to a black hole that never answers: the process froze there.
//!   The test then drops the handler's future, which is what a dead invocation looks like.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::config::interceptors::{
    BeforeSerializationInterceptorContextRef, BeforeTransmitInterceptorContextMut,
    FinalizerInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::retries::RequestAttempts;

mod stand_ins;
use stand_ins::stand_ins;

/// Where a fault strikes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// Before the request is sent: nothing reaches the server.
    Before,
    /// After the server applied it: the caller sees an error anyway (a lost response).
    After,
}

/// Matches every operation in [`Faults::throttle`].
pub const EVERY_OPERATION: &str = "*";

/// The header that carries a call's throttling plan from `modify_before_retry_loop` (once
/// per call) to each attempt; removed before signing, so it is never sent.
const THROTTLE_MARK: &str = "x-local-faults-throttle";

#[derive(Debug)]
struct Plan {
    operation: String,
    when: When,
    skip: u32,
    left: u32,
}

#[derive(Debug)]
struct Throttle {
    operation: String,
    attempts: u32,
    calls: u32,
}

#[derive(Debug, Default)]
struct State {
    calls: BTreeMap<String, u64>,
    plans: Vec<Plan>,
    injected: u64,
    throttles: Vec<Throttle>,
    throttled: BTreeMap<String, u64>,
    freeze_after: Option<String>,
    frozen: bool,
    frozen_signal: Arc<tokio::sync::Notify>,
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
        self.fail_after(operation, when, 0, times);
    }

    /// The next `skip` calls of `operation` go through, then the `times` after them fail
    /// (e.g. the consumer's second UpdateItem, its complete, after its take).
    pub fn fail_after(&self, operation: &str, when: When, skip: u32, times: u32) {
        self.with(|s| {
            s.plans.push(Plan {
                operation: operation.to_owned(),
                when,
                skip,
                left: times,
            })
        });
    }

    /// The next `calls` calls of `operation` ([`EVERY_OPERATION`] for all) are throttled on
    /// their first `attempts` attempts: each such attempt is answered `400
    /// ThrottlingException` without reaching the server, and the SDK's retry strategy
    /// decides what follows (with the standard mode's 3 attempts, up to 2 are absorbed).
    pub fn throttle(&self, operation: &str, attempts: u32, calls: u32) {
        self.with(|s| {
            s.throttles.push(Throttle {
                operation: operation.to_owned(),
                attempts,
                calls,
            })
        });
    }

    /// Attempts answered with a throttling error so far, per operation.
    pub fn throttled(&self) -> BTreeMap<String, u64> {
        self.with(|s| s.throttled.clone())
    }

    /// Once the next call of `operation` has succeeded, every later call through these
    /// clients hangs (its request goes to a black hole that never answers) and
    /// [`Faults::frozen`] resolves: the process froze right there. Drop the future that made
    /// the calls to model an invocation that died at that point.
    pub fn freeze_after(&self, operation: &str) {
        self.with(|s| s.freeze_after = Some(operation.to_owned()));
    }

    /// Whether the clients have frozen (see [`Faults::freeze_after`]).
    pub fn is_frozen(&self) -> bool {
        self.with(|s| s.frozen)
    }

    /// Resolves once the clients have frozen.
    pub async fn frozen(&self) {
        let signal = self.with(|s| s.frozen_signal.clone());
        loop {
            let notified = signal.notified();
            if self.is_frozen() {
                return;
            }
            notified.await;
        }
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

    /// Faults injected so far (failed calls; throttled attempts are in [`Faults::throttled`]).
    pub fn injected(&self) -> u64 {
        self.with(|s| s.injected)
    }

    fn strike(&self, operation: &str, when: When) -> Result<(), BoxError> {
        let hit = self.with(|s| {
            let plan = s
                .plans
                .iter_mut()
                .find(|p| p.operation == operation && p.when == when && p.left > 0);
            match plan {
                Some(plan) if plan.skip > 0 => {
                    plan.skip -= 1;
                    false
                }
                Some(plan) => {
                    plan.left -= 1;
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

    /// How many attempts of this new call to throttle (0: none).
    fn throttle_plan(&self, operation: &str) -> u32 {
        self.with(|s| {
            let plan = s.throttles.iter_mut().find(|t| {
                (t.operation == operation || t.operation == EVERY_OPERATION) && t.calls > 0
            });
            match plan {
                Some(t) => {
                    t.calls -= 1;
                    t.attempts
                }
                None => 0,
            }
        })
    }
}

fn operation(cfg: &ConfigBag) -> String {
    cfg.load::<Metadata>()
        .map(|m| m.name().to_owned())
        .unwrap_or_default()
}

/// Sends the request to `endpoint` (scheme and authority) instead, keeping path and query.
fn redirect(
    request: &mut aws_smithy_runtime_api::http::Request,
    endpoint: &str,
) -> Result<(), BoxError> {
    let path = request
        .uri()
        .split_once("://")
        .and_then(|(_, rest)| rest.find('/').map(|i| rest[i..].to_owned()))
        .unwrap_or_else(|| "/".to_owned());
    request.set_uri(format!("{endpoint}{path}"))?;
    Ok(())
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

    /// Once per call: whether its attempts are to be throttled, marked on the request (which
    /// every attempt starts again from).
    fn modify_before_retry_loop(
        &self,
        context: &mut BeforeTransmitInterceptorContextMut<'_>,
        _rc: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let attempts = self.throttle_plan(&operation(cfg));
        if attempts > 0 {
            context
                .request_mut()
                .headers_mut()
                .insert(THROTTLE_MARK, attempts.to_string());
        }
        Ok(())
    }

    /// Once per attempt, before signing: a throttled attempt or a frozen process goes to its
    /// stand-in endpoint instead of the server.
    fn modify_before_signing(
        &self,
        context: &mut BeforeTransmitInterceptorContextMut<'_>,
        _rc: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let request = context.request_mut();
        let throttle_attempts: u32 = request
            .headers_mut()
            .remove(THROTTLE_MARK)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if self.is_frozen() {
            return redirect(request, stand_ins().black_hole());
        }
        let attempt = cfg.load::<RequestAttempts>().map_or(1, |a| a.attempts());
        if attempt <= throttle_attempts {
            let op = operation(cfg);
            self.with(|s| *s.throttled.entry(op).or_default() += 1);
            return redirect(request, stand_ins().throttling());
        }
        Ok(())
    }

    fn read_after_execution(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _rc: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let op = operation(cfg);
        let succeeded = matches!(context.output_or_error(), Some(Ok(_)));
        let froze = self.with(|s| {
            if succeeded && !s.frozen && s.freeze_after.as_deref() == Some(op.as_str()) {
                s.frozen = true;
                s.frozen_signal.notify_waiters();
                true
            } else {
                false
            }
        });
        if froze {
            return Ok(());
        }
        self.strike(&op, When::After)
    }
}

/// A DynamoDB client with the interceptor.
pub fn dynamo_client(sdk: &aws_config::SdkConfig, faults: &Faults) -> aws_sdk_dynamodb::Client {
    let conf = aws_sdk_dynamodb::config::Builder::from(sdk)
        .interceptor(faults.clone())
        .build();
    aws_sdk_dynamodb::Client::from_conf(conf)
}

/// An S3 client with the interceptor (path-style, as the functions' on a local endpoint).
pub fn s3_client(sdk: &aws_config::SdkConfig, faults: &Faults) -> aws_sdk_s3::Client {
    let conf = inbox::bucket::s3_config(sdk)
        .interceptor(faults.clone())
        .build();
    aws_sdk_s3::Client::from_conf(conf)
}

/// An SQS client with the interceptor.
pub fn sqs_client(sdk: &aws_config::SdkConfig, faults: &Faults) -> aws_sdk_sqs::Client {
    let conf = aws_sdk_sqs::config::Builder::from(sdk)
        .interceptor(faults.clone())
        .build();
    aws_sdk_sqs::Client::from_conf(conf)
}
