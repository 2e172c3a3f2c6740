//! `demo run`: the stack up, then each scene in turn (staged receiver crashes, the sample
//! webhooks, the retry storm, late redeliveries), the queue drained, and the count.

use std::time::{Duration, Instant};

use std::collections::BTreeMap;

use anyhow::{bail, Context as _};
use aws_sdk_dynamodb::types::AttributeValue;
use futures::StreamExt;
use inbox::fifo::sqs_id;
use inbox::ledger::{Claim, ClaimOutcome, LedgerStore as _, Status};
use inbox::metrics::Metric;
use inbox::queue::{Envelope, Outgoing, Queue as _};
use inbox::route::{destination_key, Routes};

use crate::bridge_loop::{BridgeLoop, BridgeSeen};
use crate::deliveries::{self, bad_signature, key_of, malformed, valid, Delivery};
use crate::destinations::DemoDestinations;
use crate::events;
use crate::report::{DestinationRow, Report};
use crate::sender::{Answers, HttpSender};
use crate::stack::{step, Stack, StackOptions};
use devstack::testkit;

/// The demo's knobs (`demo --help`).
#[derive(Clone, Debug)]
pub struct Options {
    /// Distinct events in the retry storm.
    pub storm_events: usize,
    /// Deliveries of each storm event (a sender retrying, a user clicking "Redeliver").
    pub storm_copies: usize,
    /// Senders at once.
    pub concurrency: usize,
    /// `cargo lambda watch --concurrency`: instances per function.
    pub instances: u32,
    /// Receiver invocations that "die" after enqueueing, before answering.
    pub crashes: usize,
    /// Completed events put on the queue again with a fresh deduplication id.
    pub late: usize,
    /// Keys whose first forward the system of record answers 500.
    pub forward_failures: usize,
    /// After the count, print it and serve `inbox-ops console` on the stack until Ctrl-C.
    pub console: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            storm_events: 100,
            storm_copies: 10,
            concurrency: 32,
            instances: 4,
            crashes: 5,
            late: 10,
            forward_failures: 3,
            console: false,
        }
    }
}

/// The sources the storm cycles through.
const SOURCES: [&str; 5] = ["github", "stripe", "acme", "shop", "orders"];

/// The source of a key (`<source>:<id>`).
fn source_of(key: &str) -> &str {
    key.split_once(':').map_or(key, |(source, _)| source)
}

/// The id of storm event `i`.
fn storm_id(i: usize) -> String {
    format!("5707e000-0000-4000-8000-{i:012}")
}

/// The id of the event behind staged crash `i`.
fn crash_id(i: usize) -> String {
    format!("c7a5e000-0000-4000-8000-{i:012}")
}

/// The demo. Returns the report; the caller prints it and picks the exit code.
pub async fn run(opts: &Options) -> anyhow::Result<Report> {
    let start = Instant::now();
    let mut stack_opts = StackOptions::loopback("demo")?;
    stack_opts.instances = opts.instances;
    stack_opts.destinations = true;
    let stack = Stack::build_and_start(&stack_opts, start, " (once; not timed)").await?;

    // The clock starts with everything up and warm.
    let clock = Instant::now();
    let mut demo = Demo {
        sender: HttpSender::new(stack.watch.http().clone(), stack.watch.base_url()),
        stack: &stack,
        opts,
        start,
        direct_sends: 0,
    };
    demo.crashes().await?;
    let bridge = BridgeLoop::start(&stack).await?;
    let failing = demo.failing_forwards();
    demo.samples().await?;
    demo.storm().await;
    step(start, "retry storm delivered; draining the queue");
    bridge.drain(&stack, Duration::from_secs(300)).await?;
    demo.late(&bridge).await?;
    bridge.drain(&stack, Duration::from_secs(120)).await?;
    let took = clock.elapsed();
    let seen = bridge.stop().await;
    // Let the last EMF lines through the emulator's output.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let report = demo.count(&seen, &failing, took).await?;
    if opts.console {
        println!("{report}");
        crate::console::start(&stack).await?.await?;
    }
    Ok(report)
}

/// One run's scenes, on a started stack.
struct Demo<'a> {
    stack: &'a Stack,
    opts: &'a Options,
    sender: HttpSender,
    /// Progress lines count from here.
    start: Instant,
    /// Messages put on the queue by the demo itself, not by the receiver.
    direct_sends: u64,
}

impl Demo<'_> {
    /// Receiver crashes after enqueueing: each dead invocation's claim and message are put in
    /// place, its lease runs out, the sender retries. The retry finds the claim RECEIVED with
    /// the same body, sends the stored event again with the same deduplication id (SQS keeps
    /// one message) and answers it replayed: a claimant that died before its send is covered
    /// the same way.
    async fn crashes(&mut self) -> anyhow::Result<()> {
        for i in 0..self.opts.crashes {
            self.stage_crash(i).await?;
        }
        if self.opts.crashes == 0 {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(400)).await;
        for i in 0..self.opts.crashes {
            self.sender
                .deliver(&valid("github", &crash_id(i), 9000 + i))
                .await;
        }
        step(
            self.start,
            &format!(
                "{} receiver crashes after enqueueing staged; the senders' retries sent the stored events again",
                self.opts.crashes
            ),
        );
        Ok(())
    }

    /// What a receiver that died after enqueueing crash `i` left behind: its claim, with a
    /// lease running out in 300 ms, and its message on the queue.
    async fn stage_crash(&mut self, i: usize) -> anyhow::Result<()> {
        let id = crash_id(i);
        let d = valid("github", &id, 9000 + i);
        let key = key_of("github", &id);
        let now = testkit::now_ms();
        let (status, body) = inbox::receiver::accepted_response(&key);
        let claim = Claim {
            key: key.clone(),
            source: "github".into(),
            payload_sha256: inbox::key::sha256_hex(&d.body),
            owner: format!("dead-invocation-{i}"),
            now_ms: now,
            lease_until_ms: now + 300,
            expires_at: inbox::ledger::expires_at(now, inbox::config::DEFAULT_RETENTION_HOURS),
            response_status: status,
            response_body: body,
            event_type: Some("push".into()),
            trace_id: None,
        };
        if self.stack.ledger().claim(&claim).await? != ClaimOutcome::Claimed {
            bail!("could not stage the crashed invocation's claim for {key}");
        }
        let headers = d
            .headers()
            .into_iter()
            .filter(|(n, _)| n != "x-github-event")
            .collect();
        let envelope = Envelope::new(&key, "github", now, &claim.payload_sha256, headers, &d.body);
        self.stack
            .queue()
            .send(Outgoing::new(&key, &key, envelope.to_json()))
            .await?;
        self.direct_sends += 1;
        Ok(())
    }

    /// Some storm events' first forward fails at the system of record; their keys.
    fn failing_forwards(&self) -> Vec<String> {
        let events = self.opts.storm_events;
        (0..self.opts.forward_failures.min(events))
            .map(|i| {
                let n = i * 7 % events.max(1);
                let key = key_of(SOURCES[n % SOURCES.len()], &storm_id(n));
                self.stack.sor.fail_key(&key, 1);
                key
            })
            .collect()
    }

    /// The sample webhooks (`events/`, signed now, as HTTP requests; `bad-base64.json` is an
    /// API Gateway flag no HTTP request can set).
    async fn samples(&self) -> anyhow::Result<()> {
        let samples = events::generate(testkit::now_ms() / 1000);
        let mut sent = 0;
        for s in samples
            .iter()
            .filter(|s| s.function == events::Function::Receiver && s.file != "bad-base64.json")
        {
            self.sender
                .deliver(&deliveries::from_event(&s.event)?)
                .await;
            sent += 1;
        }
        step(
            self.start,
            &format!("{sent} sample webhooks from events/ sent"),
        );
        Ok(())
    }

    /// The retry storm: every storm event `storm_copies` times, with bad signatures and
    /// malformed bodies mixed in, `concurrency` senders at once.
    async fn storm(&self) {
        let opts = self.opts;
        let mut deliveries: Vec<Delivery> = Vec::new();
        for i in 0..opts.storm_events {
            let d = valid(SOURCES[i % SOURCES.len()], &storm_id(i), i);
            deliveries.extend(std::iter::repeat_n(d, opts.storm_copies));
        }
        let bad = (opts.storm_events / 4).max(1);
        for i in 0..bad {
            deliveries.push(bad_signature(i));
            deliveries.push(malformed(i));
        }
        deliveries::shuffle(&mut deliveries);
        step(
            self.start,
            &format!(
                "retry storm: {} deliveries ({} events x {} + {} bad signatures + {} malformed or keyless bodies) from {} senders at once",
                deliveries.len(), opts.storm_events, opts.storm_copies, bad, bad, opts.concurrency
            ),
        );
        futures::stream::iter(deliveries)
            .map(|d| {
                let sender = self.sender.clone();
                async move { sender.deliver(&d).await }
            })
            .buffer_unordered(opts.concurrency.max(1))
            .collect::<Vec<_>>()
            .await;
    }

    /// Late redeliveries: completed events straight onto the queue with fresh deduplication
    /// ids, as after the queue's five-minute window. The consumer's ledger check stops them.
    async fn late(&mut self, bridge: &BridgeLoop) -> anyhow::Result<()> {
        let late: Vec<(String, (String, String))> = bridge
            .seen()
            .envelopes
            .iter()
            .take(self.opts.late)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (n, (key, (group, body))) in late.iter().enumerate() {
            self.stack
                .sqs
                .send_message()
                .queue_url(&self.stack.resources.queue_url)
                .message_group_id(group)
                .message_deduplication_id(sqs_id(&format!("late-{n}:{key}")))
                .message_body(body)
                .send()
                .await?;
            self.direct_sends += 1;
        }
        step(
            self.start,
            &format!(
                "{} completed events redelivered late onto the queue",
                late.len()
            ),
        );
        Ok(())
    }

    /// The destinations as the consumer reads them (its `WEBHOOK_DESTINATIONS` and sources).
    fn routes(&self) -> anyhow::Result<Routes> {
        let env = &self.stack.deployed.consumer.environment;
        let var = |name: &str| env.get(name).map(String::as_str).unwrap_or_default();
        let specs = inbox::SourceSpecs::parse(var("WEBHOOK_SOURCES"))?;
        Ok(Routes::parse(var(inbox::route::DESTINATIONS_VAR), &specs)?)
    }

    /// The event type the receiver stored on a key's item (`event_type`), where it did.
    async fn event_type(&self, key: &str) -> anyhow::Result<Option<String>> {
        let item = self
            .stack
            .dynamo
            .get_item()
            .table_name(&self.stack.resources.table)
            .key("pk", AttributeValue::S(key.to_owned()))
            .consistent_read(true)
            .send()
            .await
            .context("GetItem")?;
        Ok(item
            .item()
            .and_then(|i| i.get("event_type"))
            .and_then(|v| v.as_s().ok())
            .cloned())
    }

    /// A row per destination: the accepted events routed to it, their items COMPLETED, and
    /// what its target received.
    async fn destination_rows(
        &self,
        routes: &Routes,
        accepted: &std::collections::BTreeSet<String>,
    ) -> anyhow::Result<Vec<DestinationRow>> {
        let mut routed: BTreeMap<&str, Vec<&String>> = BTreeMap::new();
        for key in accepted {
            let source = source_of(key);
            if !routes.routes(source) {
                continue;
            }
            let event_type = self.event_type(key).await?;
            for name in routes.destinations_for(source, event_type.as_deref()) {
                routed.entry(name).or_default().push(key);
            }
        }
        let received = match &self.stack.destinations {
            Some(d) => d.received(&self.stack.sqs).await?,
            None => BTreeMap::new(),
        };
        let ledger = self.stack.ledger();
        let mut rows = Vec::new();
        for d in routes.iter() {
            let keys = routed.get(d.name.as_str()).cloned().unwrap_or_default();
            let mut completed = 0;
            for key in &keys {
                let pair = ledger.get(&destination_key(key, &d.name)).await?;
                if pair.is_some_and(|r| r.status == Status::Completed) {
                    completed += 1;
                }
            }
            let got = received.get(d.name.as_str()).cloned().unwrap_or_default();
            rows.push(DestinationRow {
                name: d.name.clone(),
                target: DemoDestinations::target_kind(&d.name),
                routed: keys.len(),
                completed,
                received: keys.iter().filter(|k| got.contains_key(**k)).count(),
                messages: got.values().sum(),
                strays: got.keys().filter(|k| !keys.contains(k)).count(),
            });
        }
        Ok(rows)
    }

    /// The count: side effects per key against the accepted keys, the ledger's statuses, and
    /// what each layer's metrics say it stopped.
    async fn count(
        &self,
        seen: &BridgeSeen,
        failing: &[String],
        took: Duration,
    ) -> anyhow::Result<Report> {
        let answers: Answers = self.sender.take_answers();
        let calls = self.stack.sor.calls();
        let forward_failures: u64 = failing
            .iter()
            .map(|key| calls.get(key).copied().unwrap_or(0).min(1))
            .sum();
        let total_calls: u64 = calls.values().sum();
        let routes = self.routes()?;
        let mut keys_not_once = Vec::new();
        let forwarded: Vec<&String> = answers
            .accepted
            .iter()
            .filter(|key| !routes.routes(source_of(key)))
            .collect();
        for key in forwarded.iter().copied() {
            let expected = 1 + u64::from(failing.contains(key));
            if calls.get(key).copied().unwrap_or(0) != expected {
                keys_not_once.push(key.clone());
            }
        }
        for key in calls.keys() {
            if !forwarded.contains(&key) {
                keys_not_once.push(key.clone());
            }
        }
        let destinations = self.destination_rows(&routes, &answers.accepted).await?;
        let ledger = self.stack.ledger();
        let mut not_completed = 0;
        for key in &answers.accepted {
            let done = ledger
                .get(key)
                .await?
                .is_some_and(|r| r.status == Status::Completed);
            if !done {
                not_completed += 1;
            }
        }
        let out = &self.stack.watch.output;
        Ok(Report {
            accepted: answers.accepted.len(),
            forwarded: forwarded.len(),
            destinations,
            by_answer: answers.by_answer,
            attempts: answers.attempts,
            retries: answers.retries,
            gave_up: answers.gave_up,
            replayed: answers.replayed,
            emf_accepted: out.count("receiver", Metric::Accepted),
            emf_replayed: out.count("receiver", Metric::Replayed),
            direct_sends: self.direct_sends,
            sent_behind_claims: out.sent_behind_claims(),
            messages_seen: seen.messages.len(),
            consumer_duplicates: out.count("consumer", Metric::DuplicateDelivery),
            side_effects: total_calls - forward_failures,
            forward_failures,
            keys_not_once,
            not_completed,
            took,
        })
    }
}
