//! The SQS event source mapping of the demo: [`devstack::bridge::Bridge`] in a loop, following the
//! mapping moto holds, invoking the consumer through the emulator as Lambda's mapping would, and
//! noting what passed through.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::bail;
use aws_lambda_events::sqs::{BatchItemFailure, SqsBatchResponse};
use aws_sdk_sqs::types::MessageSystemAttributeName;
use inbox::queue::Envelope;

use crate::sender::lock;
use crate::stack::Stack;
use devstack::bridge::Bridge;

/// What the bridge saw.
#[derive(Debug, Default)]
pub struct BridgeSeen {
    /// Distinct messages received (a message received again after a failure counts once).
    pub messages: BTreeSet<String>,
    /// For each key: (group id, envelope), to redeliver late.
    pub envelopes: BTreeMap<String, (String, String)>,
    pub batches: u64,
    pub reported_failed: u64,
    pub invoke_errors: u64,
    /// The last receive found nothing.
    pub idle: bool,
}

/// The bridge running in a task of its own until [`BridgeLoop::stop`].
pub struct BridgeLoop {
    seen: Arc<Mutex<BridgeSeen>>,
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl BridgeLoop {
    /// Starts the bridge on the stack's queue, following the stack's event source mapping as
    /// moto holds it (its state and batch size): failed messages are made visible again at once
    /// (no waiting out the visibility timeout), received ones stay hidden 60 s.
    pub async fn start(stack: &Stack) -> anyhow::Result<BridgeLoop> {
        let mut bridge = Bridge::new(stack.sqs.clone(), &stack.resources.queue_url)
            .await?
            .with_mapping(
                stack.lambda.clone(),
                &stack.deployed.event_source_mapping.uuid,
            );
        bridge.retry_failed_now = true;
        bridge.visibility_timeout = Some(60);
        let seen = Arc::new(Mutex::new(BridgeSeen::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn(run_bridge(
            bridge,
            stack.watch.http().clone(),
            stack.watch.invoke_url("consumer"),
            seen.clone(),
            stop.clone(),
        ));
        Ok(BridgeLoop { seen, stop, task })
    }

    /// What it saw so far.
    pub fn seen(&self) -> std::sync::MutexGuard<'_, BridgeSeen> {
        lock(&self.seen)
    }

    /// Waits until the queue is empty and the bridge has found nothing twice in a row.
    pub async fn drain(&self, stack: &Stack, limit: Duration) -> anyhow::Result<()> {
        let until = Instant::now() + limit;
        let mut quiet = 0;
        while quiet < 2 {
            if Instant::now() > until {
                bail!("the queue did not drain in {limit:?}");
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
            let idle = self.seen().idle;
            if idle && stack.queue_depth().await? == 0 {
                quiet += 1;
            } else {
                quiet = 0;
            }
        }
        Ok(())
    }

    /// Stops it after its current round; returns what it saw.
    pub async fn stop(self) -> BridgeSeen {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.task.await;
        std::mem::take(&mut *lock(&self.seen))
    }
}

/// Receive, invoke the consumer, settle; until `stop` is set.
async fn run_bridge(
    bridge: Bridge,
    http: reqwest::Client,
    invoke_url: String,
    seen: Arc<Mutex<BridgeSeen>>,
    stop: Arc<AtomicBool>,
) {
    let with = |f: &mut dyn FnMut(&mut BridgeSeen)| f(&mut lock(&seen));
    while !stop.load(Ordering::Relaxed) {
        let messages = match bridge.receive().await {
            Ok(m) => m,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        if messages.is_empty() {
            with(&mut |s| s.idle = true);
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        }
        with(&mut |s| {
            s.idle = false;
            s.batches += 1;
            for m in &messages {
                s.messages
                    .insert(m.message_id().unwrap_or_default().to_owned());
                if let Some(env) = m.body().and_then(|b| Envelope::parse(b).ok()) {
                    let group = m
                        .attributes()
                        .and_then(|a| a.get(&MessageSystemAttributeName::MessageGroupId))
                        .cloned()
                        .unwrap_or_default();
                    s.envelopes.insert(
                        env.key.clone(),
                        (group, m.body().unwrap_or_default().to_owned()),
                    );
                }
            }
        });
        let event = bridge.event(&messages);
        let answer = async {
            let resp = http
                .post(&invoke_url)
                .body(serde_json::to_vec(&event)?)
                .send()
                .await?;
            let bytes = resp.error_for_status()?.bytes().await?;
            anyhow::Ok(serde_json::from_slice::<SqsBatchResponse>(&bytes)?)
        }
        .await;
        let response = match answer {
            Ok(r) => r,
            Err(_) => {
                // As Lambda's mapping does when the invocation fails: the whole batch comes back.
                with(&mut |s| s.invoke_errors += 1);
                let mut r = SqsBatchResponse::default();
                r.batch_item_failures = messages
                    .iter()
                    .map(|m| {
                        let mut f = BatchItemFailure::default();
                        f.item_identifier = m.message_id().unwrap_or_default().to_owned();
                        f
                    })
                    .collect();
                r
            }
        };
        if let Ok(round) = bridge.settle(&messages, &response).await {
            with(&mut |s| s.reported_failed += round.failed as u64);
        }
    }
}
