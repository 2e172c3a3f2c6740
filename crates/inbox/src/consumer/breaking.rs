//! Each named destination's circuit breaker in the consumer (docs/routing.md#breakers): read
//! with the pauses once per batch, asked before a pair is taken (held where it is open, or
//! half-open with another's probe; the probe claimed where the cool-down is over), and told
//! what the call came to. The state machine is [`crate::breaker`]'s; here only where it is
//! asked, what is written through the destinations' port, and what is recorded.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::Duration;

use tracing::{info, warn};

use super::invocation::Invocation;
use super::item::Leg;
use super::{Consumer, Destinations, Outcome, Processor, Wired};
use crate::breaker::{
    apply, Breaker, BreakerBoard, Change, Gate, Observed, Rule, State, Transition, Written,
};
use crate::clock::Clock;
use crate::ledger::LedgerStore;
use crate::metrics::Metric;

/// The destinations' port as the breakers' board.
struct Via<'a, D>(&'a D);

impl<D: Destinations> BreakerBoard for Via<'_, D> {
    async fn breakers(&self) -> Result<BTreeMap<String, Breaker>, String> {
        Ok(self.0.board().await?.breakers)
    }

    async fn write(&self, destination: &str, t: &Transition) -> Result<Written, String> {
        self.0.write_breaker(destination, t).await
    }
}

/// What a call came to, for its destination's breaker: a throttle never counts.
pub(super) fn observed(outcome: &Outcome) -> Observed {
    match outcome {
        Outcome::Done => Observed::Success,
        Outcome::Failed(_) => Observed::Failure,
        Outcome::Throttled { .. } => Observed::Other,
    }
}

/// The pauses, and the breakers where they are kept.
type BoardRead = (
    Result<BTreeSet<String>, String>,
    Option<Mutex<BTreeMap<String, Breaker>>>,
);

/// The pair of a destination whose breaker holds it: pending, no failure counted, back after
/// what is left of the cool-down (a probe of another's: a cool-down).
fn held(name: &str, rule: &Rule, b: &Breaker, now_ms: i64) -> Leg {
    let wait = match b.state {
        State::Open { opened_at_ms } => {
            let cool = i64::try_from(rule.cool_down.as_millis()).unwrap_or(i64::MAX);
            let left = opened_at_ms.saturating_add(cool).saturating_sub(now_ms);
            Duration::from_millis(u64::try_from(left).unwrap_or(0).max(1_000))
        }
        _ => rule.cool_down,
    };
    Leg::Pending {
        wait: Some(wait),
        failures: None,
        reason: format!("{name}: held: its breaker is {}", b.state.name()),
        held: false,
    }
}

/// The log's word for an opening: a closed breaker opened, or a failed probe reopened it.
fn opened_word(change: &Change) -> &'static str {
    if *change == Change::Opened {
        "opened"
    } else {
        "reopened"
    }
}

impl<L: LedgerStore, P: Processor, C: Clock, W: Wired> Consumer<L, P, C, W> {
    /// The pauses and the breakers of the batch: one read of the board (nothing where no
    /// source is routed).
    pub(super) async fn read_board(&self) -> BoardRead {
        if self.routes.is_empty() {
            return (Ok(BTreeSet::new()), None);
        }
        let destinations = &self.wired().destinations;
        match destinations.board().await {
            Ok(board) => (
                Ok(board.paused),
                destinations
                    .keeps_breakers()
                    .then(|| Mutex::new(board.breakers)),
            ),
            Err(e) => (Err(e), None),
        }
    }

    fn breaker_rule(&self, name: &str) -> Rule {
        self.routes.get(name).map(|d| d.breaker).unwrap_or_default()
    }

    /// Whether the pair of `owner`'s event may call `name` now: `None`, it calls (closed, or
    /// the probe is this pair's, claimed now or before); else the pair held.
    pub(super) async fn breaker_gate(
        &self,
        name: &str,
        owner: &str,
        inv: &Invocation<'_>,
    ) -> Option<Leg> {
        let seen = inv.breaker(name)?;
        let rule = self.breaker_rule(name);
        let now = self.clock.now_ms();
        let gate = |b: &Breaker| b.gate(&rule, now, owner, inv.lease_until_ms);
        match gate(&seen) {
            Gate::Pass => return None,
            Gate::Hold => {}
            Gate::Claim(_) => {
                let claim = |b: &Breaker| match gate(b) {
                    Gate::Claim(t) => Some(t),
                    Gate::Pass | Gate::Hold => None,
                };
                match apply(&Via(&self.wired().destinations), name, seen, claim).await {
                    Ok((claimed, board)) => {
                        inv.saw_breaker(name, board.clone());
                        if let Some(t) = claimed {
                            self.breaker_changed(name, &t, &rule);
                            return None;
                        }
                        if gate(&board) == Gate::Pass {
                            return None;
                        }
                    }
                    Err(e) => {
                        warn!(destination = name, error = %e, "breaker: the probe could not be claimed; the destination's events are held");
                    }
                }
            }
        }
        inv.keep(owner);
        let b = inv.breaker(name).unwrap_or_default();
        Some(held(name, &rule, &b, now))
    }

    /// What the call of `owner`'s pair came to, told to `name`'s breaker: written only where
    /// it changes something (a failure counted or opening, a success after failures, the
    /// probe's end).
    pub(super) async fn breaker_observe(
        &self,
        name: &str,
        owner: &str,
        observed: Observed,
        inv: &Invocation<'_>,
    ) {
        let Some(seen) = inv.breaker(name) else {
            return;
        };
        let rule = self.breaker_rule(name);
        let now = self.clock.now_ms();
        let step = |b: &Breaker| b.observe(&rule, now, owner, observed);
        if step(&seen).is_none() {
            return;
        }
        match apply(&Via(&self.wired().destinations), name, seen, step).await {
            Ok((written, board)) => {
                inv.saw_breaker(name, board);
                if let Some(t) = written {
                    self.breaker_changed(name, &t, &rule);
                }
            }
            Err(e) => {
                warn!(destination = name, error = %e, "breaker: the call's outcome could not be written");
            }
        }
    }

    /// A transition written: its metric and its line (docs/operations.md, "Breakers").
    fn breaker_changed(&self, name: &str, t: &Transition, rule: &Rule) {
        let cool_down_s = rule.cool_down.as_secs();
        match t.change {
            Change::Opened | Change::Reopened => {
                self.metrics.count_breaker(name, Metric::BreakerOpened);
                let breaker = opened_word(&t.change);
                warn!(
                    destination = name,
                    breaker,
                    failures = rule.failures,
                    cool_down_s,
                    "the destination's breaker opened: its events are held, one is tried after the cool-down"
                );
            }
            Change::Closed | Change::ClosedByHand => {
                self.metrics.count_breaker(name, Metric::BreakerClosed);
                info!(
                    destination = name,
                    breaker = "closed",
                    "the destination's breaker closed: its events go again"
                );
            }
            Change::ProbeClaimed => {
                info!(
                    destination = name,
                    breaker = "probe",
                    "the destination's breaker is half-open: one event is tried"
                );
            }
            Change::ProbeReleased => {
                info!(
                    destination = name,
                    breaker = "probe_released",
                    "the probe neither failed nor succeeded: the breaker stays open"
                );
            }
            Change::Counted | Change::Reset => {}
        }
    }
}

#[cfg(test)]
mod tests {
    //! The breaker through the consumer, on the memory ledger and the memory board: held pairs
    //! are neither taken nor called, and one probe closes the breaker.

    use std::collections::BTreeSet;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    use aws_lambda_events::sqs::SqsMessage;

    use super::*;
    use crate::breaker::MemoryBoard;
    use crate::clock::ManualClock;
    use crate::consumer::{Board, ConsumerSettings, Job, ProcessError};
    use crate::ledger::memory::MemoryLedger;
    use crate::metrics::Metrics;
    use crate::queue::Envelope;
    use crate::route::{destination_key, Routes};
    use crate::SourceSpecs;

    /// `flaky` down or up, `steady` always up, over a memory board; every call kept.
    #[derive(Clone, Default)]
    struct Two {
        board: MemoryBoard,
        down: Arc<AtomicBool>,
        calls: Arc<std::sync::Mutex<Vec<(String, String)>>>,
    }

    impl Two {
        fn calls(&self, destination: &str) -> usize {
            let calls = self.calls.lock().expect("calls");
            calls.iter().filter(|(d, _)| d == destination).count()
        }
    }

    impl Destinations for Two {
        async fn deliver(&self, destination: &str, job: &Job) -> Outcome {
            self.calls
                .lock()
                .expect("calls")
                .push((destination.to_owned(), job.key.clone()));
            if destination == "flaky" && self.down.load(Ordering::SeqCst) {
                Outcome::Failed(ProcessError("503".into()))
            } else {
                Outcome::Done
            }
        }
        async fn paused(&self) -> Result<BTreeSet<String>, String> {
            Ok(BTreeSet::new())
        }
        fn keeps_breakers(&self) -> bool {
            true
        }
        async fn board(&self) -> Result<Board, String> {
            Ok(Board {
                paused: BTreeSet::new(),
                breakers: self.board.breakers().await?,
            })
        }
        async fn write_breaker(
            &self,
            destination: &str,
            t: &Transition,
        ) -> Result<Written, String> {
            self.board.write(destination, t).await
        }
    }

    fn message(id: &str) -> SqsMessage {
        let body = format!(r#"{{"n":"{id}"}}"#);
        let sha = crate::key::payload_sha256(body.as_bytes(), &[]);
        let env = Envelope::new(
            &format!("github:{id}"),
            "github",
            1_000_000,
            &sha,
            Default::default(),
            body.as_bytes(),
        );
        let mut m = SqsMessage::default();
        m.message_id = Some(format!("m-{id}"));
        m.body = Some(env.to_json());
        m
    }

    #[tokio::test]
    async fn an_open_breaker_holds_its_pairs_and_one_probe_closes_it() {
        let specs = SourceSpecs::parse(
            r#"{"github": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "payload_sha256"}}}"#,
        )
        .expect("sources");
        let routes = Routes::parse(
            r#"{"flaky": {"target": "https://f.example/", "sources": ["github"], "breaker": {"failures": 2, "cool_down_seconds": 60}},
                "steady": {"target": "https://s.example/", "sources": ["github"]}}"#,
            &specs,
        )
        .expect("routes");
        let two = Two::default();
        two.down.store(true, Ordering::SeqCst);
        let clock = ManualClock::at_ms(1_000_000);
        let ledger = Arc::new(MemoryLedger::new());
        let (metrics, lines) = Metrics::memory("consumer");
        let settings = ConsumerSettings {
            max_concurrent_groups: 1,
            ..ConsumerSettings::default()
        };
        let cx = Consumer::new(
            specs,
            ledger.clone(),
            None::<crate::forward::HttpForwarder>,
            clock.clone(),
            settings,
            metrics,
        )
        .with_destinations(routes, two.clone());
        let ids = ["1", "2", "3", "4"];
        for id in ids {
            // The receiver's claim, its lease run out: the consumer's take finds the event.
            let body = format!(r#"{{"n":"{id}"}}"#);
            let claim = crate::ledger::Claim {
                key: format!("github:{id}"),
                source: "github".into(),
                payload_sha256: crate::key::payload_sha256(body.as_bytes(), &[]),
                owner: "receiver".into(),
                now_ms: clock.now_ms(),
                lease_until_ms: clock.now_ms() - 1,
                expires_at: clock.now_secs() + 86_400,
                response_status: 200,
                response_body: String::new(),
                event_type: None,
                trace_id: None,
            };
            ledger.claim(&claim).await.expect("claimed");
        }
        let batch: Vec<SqsMessage> = ids.iter().map(|i| message(i)).collect();
        // One at a time: the second failure opens it, the other two are held uncalled.
        let answer = cx.handle_batch(&batch, "req-1", None).await;
        assert_eq!(
            answer.batch_item_failures.len(),
            4,
            "{:?}",
            lines.lock().expect("lines")
        );
        assert_eq!(two.calls("flaky"), 2, "{:?}", lines.lock().expect("lines"));
        assert_eq!(two.calls("steady"), 4);
        assert!(matches!(two.board.get("flaky").state, State::Open { .. }));
        let held = ledger
            .get(&destination_key("github:3", "flaky"))
            .await
            .expect("get");
        assert_eq!(held, None, "a held pair is not even taken");
        let opened = lines
            .lock()
            .expect("lines")
            .iter()
            .filter(|l| {
                l.contains(r#""BreakerOpened":1"#) && l.contains(r#""destination":"flaky""#)
            })
            .count();
        assert_eq!(opened, 1);
        // Within the cool-down: held again.
        cx.handle_batch(&batch, "req-2", None).await;
        assert_eq!(two.calls("flaky"), 2);
        // Past it, up again: one probe closes it, and the rest go.
        clock.advance_ms(60_000);
        two.down.store(false, Ordering::SeqCst);
        let answer = cx.handle_batch(&batch, "req-3", None).await;
        assert_eq!(two.board.get("flaky").state, State::Closed { failures: 0 });
        assert_eq!(two.calls("flaky"), 2 + 4, "the probe, then the other three");
        assert!(answer.batch_item_failures.is_empty(), "{answer:?}");
    }

    /// What the consumer asked of the queue.
    #[derive(Clone, Default)]
    struct Asked(Arc<std::sync::Mutex<Vec<String>>>);

    impl crate::redelivery::Redelivery for Asked {
        async fn delay(
            &self,
            m: &SqsMessage,
            seconds: u32,
        ) -> Result<(), crate::queue::QueueError> {
            let id = m.message_id.clone().unwrap_or_default();
            self.0
                .lock()
                .expect("asked")
                .push(format!("delay {id} {seconds}"));
            Ok(())
        }
        async fn dead_letter(&self, m: &SqsMessage) -> Result<(), crate::queue::QueueError> {
            let id = m.message_id.clone().unwrap_or_default();
            self.0
                .lock()
                .expect("asked")
                .push(format!("dead_letter {id}"));
            Ok(())
        }
        fn dead_letters(&self) -> bool {
            true
        }
        async fn resend(&self, m: &SqsMessage) -> Result<(), crate::queue::QueueError> {
            let id = m.message_id.clone().unwrap_or_default();
            self.0.lock().expect("asked").push(format!("resend {id}"));
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_message_held_four_hundred_times_is_sent_again_never_dead_lettered() {
        let specs = SourceSpecs::parse(
            r#"{"github": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "payload_sha256"}}}"#,
        )
        .expect("sources");
        let routes = Routes::parse(
            r#"{"flaky": {"target": "https://f.example/", "sources": ["github"]}}"#,
            &specs,
        )
        .expect("routes");
        let two = Two::default();
        let clock = ManualClock::at_ms(1_000_000);
        // Open since now: every pair of flaky is held.
        let open = Breaker::default()
            .observe(
                &Rule {
                    failures: 1,
                    ..Rule::default()
                },
                clock.now_ms(),
                "x",
                Observed::Failure,
            )
            .expect("opens");
        two.board.write("flaky", &open).await.expect("written");
        let ledger = Arc::new(MemoryLedger::new());
        let asked = Asked::default();
        let cx = Consumer::new(
            specs,
            ledger.clone(),
            None::<crate::forward::HttpForwarder>,
            clock.clone(),
            ConsumerSettings::default(),
            Metrics::memory("consumer").0,
        )
        .with_destinations(routes, two.clone())
        .with_redelivery(asked.clone());
        let mut batch = Vec::new();
        for (id, receives) in [("a", "399"), ("b", "400")] {
            let body = format!(r#"{{"n":"{id}"}}"#);
            let claim = crate::ledger::Claim {
                key: format!("github:{id}"),
                source: "github".into(),
                payload_sha256: crate::key::payload_sha256(body.as_bytes(), &[]),
                owner: "receiver".into(),
                now_ms: clock.now_ms(),
                lease_until_ms: clock.now_ms() - 1,
                expires_at: clock.now_secs() + 86_400,
                response_status: 200,
                response_body: String::new(),
                event_type: None,
                trace_id: None,
            };
            ledger.claim(&claim).await.expect("claimed");
            let mut m = message(id);
            m.attributes
                .insert("ApproximateReceiveCount".into(), receives.into());
            batch.push(m);
        }
        let answer = cx.handle_batch(&batch, "req", None).await;
        let failed: Vec<_> = answer
            .batch_item_failures
            .iter()
            .map(|f| f.item_identifier.as_str())
            .collect();
        assert_eq!(failed, ["m-a"], "the one sent again is done");
        let mut asked = asked.0.lock().expect("asked").clone();
        asked.sort();
        // a: held, back after its receive count (399 s, above the 60 s cool-down); b: sent again.
        assert_eq!(asked, ["delay m-a 399", "resend m-b"]);
        assert_eq!(two.calls("flaky"), 0);
    }

    #[test]
    fn a_held_pair_waits_what_is_left_of_the_cool_down_at_least_a_second() {
        let rule = Rule {
            failures: 5,
            cool_down: Duration::from_secs(60),
        };
        let open = |opened_at_ms| Breaker {
            state: State::Open { opened_at_ms },
            version: 3,
        };
        let wait = |b: &Breaker, now| match held("crm", &rule, b, now) {
            Leg::Pending {
                wait,
                failures,
                held,
                reason,
            } => {
                assert_eq!(failures, None, "a held pair counts no failure");
                assert!(!held, "{reason}");
                assert!(reason.starts_with("crm: held: its breaker is "), "{reason}");
                wait
            }
            Leg::Done => panic!("held is pending"),
        };
        assert_eq!(wait(&open(1_000), 51_000), Some(Duration::from_secs(10)));
        assert_eq!(wait(&open(1_000), 60_900), Some(Duration::from_secs(1)));
        assert_eq!(wait(&open(1_000), 900_000), Some(Duration::from_secs(1)));
        let half = Breaker {
            state: State::HalfOpen {
                opened_at_ms: 1_000,
                probe_owner: "r:m".into(),
                probe_until_ms: 90_000,
            },
            version: 4,
        };
        assert_eq!(wait(&half, 61_000), Some(Duration::from_secs(60)));
    }

    #[test]
    fn an_opening_is_logged_as_opened_and_a_failed_probe_as_reopened() {
        assert_eq!(opened_word(&Change::Opened), "opened");
        assert_eq!(opened_word(&Change::Reopened), "reopened");
    }
}
