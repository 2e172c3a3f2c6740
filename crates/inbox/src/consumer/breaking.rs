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
                let breaker = if t.change == Change::Opened {
                    "opened"
                } else {
                    "reopened"
                };
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
