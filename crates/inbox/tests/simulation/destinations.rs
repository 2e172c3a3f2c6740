//! Destinations in the simulation: in half the seeds every source is routed to two
//! destinations, `a` and `b`. Each (event, destination) pair runs the simulated side effect
//! under its own ledger key (`<key> to:<destination>`), so the checks that hold per key (no run
//! after a remembered completion, no overlap, the same body) hold per pair, and the final check
//! asks every pair of every accepted event to have completed exactly once.
//!
//! `a` has a rate limit (`max_per_second`, 1 or 2), held by the real [`RateLimits`] over one
//! shared [`MemoryRate`] on the simulation's clock, as `Targets::deliver` asks it: every call
//! the limit lets through is tallied in the second of the simulated clock it starts in (the
//! limiter's answer a step after the question), and a second with more calls than the limit is
//! a violation (`RATE`).
//!
//! `b` has a circuit breaker with a small rule (2 to 4 failures, a cool-down of 10 to 60 s),
//! kept on one [`MemoryBoard`] that every consumer invocation of the seed reads and writes
//! (each write one step of the scheduler, with the ledger's faults: invocations race on its
//! state, and a claim or an outcome whose answer is lost leaves a probe to expire). `b` is, by
//! seed ([`Mode`]): flaky (fails and throttles at random), down for a while and then flaky
//! (it recovers), or down until the operator, at the end of the run, closes its breaker by hand
//! and the destination heals (it never recovers by itself).

use std::sync::Arc;
use std::time::Duration;

use inbox::breaker::{
    BreakerBoard, Change, MemoryBoard, Observed, Rule, State, Transition, Written,
};
use inbox::consumer::{Board, Destinations, Job, Outcome, ProcessError, Processor};
use inbox::destination::rate::{Admission, RateError, RateFuture, RateLimiter};
use inbox::destination::{MemoryRate, RateLimits};
use inbox::route::{destination_key, Routes};
use inbox::SourceSpecs;
use rand::Rng;

use crate::adapters::SimProcessor;
use crate::faults::{Fault, Mutant};
use crate::world::{lock, step, BoardRead, Shared};

/// The routed seeds' destinations.
pub(crate) const DESTINATIONS: [&str; 2] = ["a", "b"];

/// How `b` behaves in a seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Fails and throttles at random while faults are on.
    Flaky,
    /// Down (every call fails, now and then throttled) until `heals_at`, then flaky; healed
    /// at the latest when the drain starts.
    Recovers { heals_at: i64 },
    /// Down through the whole run, faults or not, until the operator resumes it at the end.
    Never,
}

/// The seed's destinations: `a` limited to `a_max` calls a second, `b` with its breaker.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    pub(crate) a_max: u32,
    pub(crate) failures: u32,
    pub(crate) cool_down_s: u64,
    pub(crate) mode: Mode,
}

/// Every source to both destinations.
pub(crate) fn routes(sources: &SourceSpecs, plan: &Plan) -> Routes {
    Routes::parse(
        &format!(
            r#"{{"a": {{"target": "https://a.example/in", "sources": ["gh", "shop", "hub"],
                       "max_per_second": {}}},
                "b": {{"target": "https://b.example/in", "sources": ["gh", "shop", "hub"],
                       "breaker": {{"failures": {}, "cool_down_seconds": {}}}}}}}"#,
            plan.a_max, plan.failures, plan.cool_down_s
        ),
        sources,
    )
    .expect("simulation destinations parse")
}

/// The event's key of a pair's key (an event key holds no space).
pub(crate) fn event_of(key: &str) -> &str {
    key.split(' ').next().unwrap_or(key)
}

/// The rate limiter every invocation shares: the [`MemoryRate`], its answer one step later
/// (a DynamoDB call), with the ledger's faults (refused before counting, or counted and the
/// answer lost: the call is deferred either way, `UNREADABLE_WAIT`).
#[derive(Clone)]
pub(crate) struct SimRate {
    pub(crate) inner: MemoryRate,
    pub(crate) world: Shared,
}

impl RateLimiter for SimRate {
    fn admit<'a>(
        &'a self,
        destination: &'a str,
        max: u32,
        now_ms: i64,
    ) -> RateFuture<'a, Admission> {
        Box::pin(async move {
            let f = {
                let mut w = lock(&self.world);
                w.called("rate");
                let (before, after) = (w.rates.ledger_before, w.rates.ledger_after);
                w.roll(before, after)
            };
            if f == Fault::Before {
                step().await;
                return Err(RateError(
                    "injected: the limiter's table unreachable".into(),
                ));
            }
            let mut out = self.inner.admit(destination, max, now_ms).await;
            if lock(&self.world).mutant == Mutant::RateIgnoresLimit {
                out = Ok(Admission::Granted);
            }
            step().await;
            if f == Fault::After {
                return Err(RateError("injected: the limiter's answer lost".into()));
            }
            out
        })
    }

    fn count<'a>(&'a self, destination: &'a str, now_ms: i64) -> RateFuture<'a, u32> {
        self.inner.count(destination, now_ms)
    }
}

pub(crate) struct SimDestinations {
    pub(crate) world: Shared,
    /// The breakers' board every invocation of the seed shares.
    pub(crate) board: MemoryBoard,
    /// `a`'s limit, on the simulation's clock (`None` in unrouted seeds).
    pub(crate) rates: Option<RateLimits>,
}

impl SimDestinations {
    /// `b`'s answer where it is down: a failure, now and then a throttle (a 429 from a
    /// struggling destination: the breaker counts neither a probe's throttle nor any other).
    fn down(&self, job: &Job) -> Option<Outcome> {
        let mut w = lock(&self.world);
        let now = w.now();
        let down = match w.mode {
            Mode::Flaky => false,
            Mode::Recovers { heals_at } => now < heals_at && !w.healed,
            Mode::Never => !w.healed,
        };
        if !down {
            return None;
        }
        w.stats.down_calls += 1;
        let throttle = w.frng.random_bool(0.1);
        w.log(format!(
            "  destination b for {}: down, {} (not applied)",
            job.key,
            if throttle { "throttled" } else { "failed" }
        ));
        Some(if throttle {
            Outcome::Throttled {
                retry_after: Duration::from_secs(5),
                reason: ProcessError("injected: b down, throttling".into()),
            }
        } else {
            Outcome::Failed(ProcessError("injected: b down".into()))
        })
    }

    /// A call `a`'s limit let through, tallied in the second it starts: more than the limit
    /// there is a violation.
    fn tally_call(&self, destination: &str, second: i64) {
        let Some(max) = self
            .rates
            .as_ref()
            .and_then(|r| r.max_per_second(destination))
        else {
            return;
        };
        let mut w = lock(&self.world);
        w.stats.rate_calls += 1;
        let n = w
            .rate_windows
            .entry((destination.to_owned(), second))
            .or_default();
        *n += 1;
        let n = *n;
        if n > max {
            w.violation(format!(
                "RATE: {n} calls to {destination} started in second {second}, over its max_per_second of {max}"
            ));
        }
    }
}

impl Destinations for SimDestinations {
    async fn deliver(&self, destination: &str, job: &Job) -> Outcome {
        let mut call = job.clone();
        call.key = destination_key(&job.key, destination);
        // As `Targets::deliver`: over its rate, deferred as a throttle, never called. The
        // limiter's answer comes a step later, the clock perhaps in another second by then;
        // the call is tallied in the second it starts.
        if let Some(rates) = &self.rates {
            if let Some(deferred) = rates.check(destination, job).await {
                let mut w = lock(&self.world);
                w.stats.rate_deferred += 1;
                w.log(format!(
                    "  destination {destination} for {}: deferred by its rate limit",
                    job.key
                ));
                return deferred;
            }
            let second = lock(&self.world).now().div_euclid(1000);
            self.tally_call(destination, second);
        }
        if destination == "b" {
            step().await;
            if let Some(down) = self.down(job) {
                return down;
            }
            let mut w = lock(&self.world);
            if w.faults_on && w.frng.random_bool(0.15) {
                let throttle = w.frng.random_bool(0.5);
                w.log(format!(
                    "  destination b for {}: {} (not applied)",
                    job.key,
                    if throttle { "throttled" } else { "failed" }
                ));
                return if throttle {
                    Outcome::Throttled {
                        retry_after: Duration::from_secs(w.frng.random_range(1..=30)),
                        reason: ProcessError("injected: b throttling".into()),
                    }
                } else {
                    Outcome::Failed(ProcessError("injected: b down".into()))
                };
            }
        }
        SimProcessor {
            world: self.world.clone(),
        }
        .run(&call)
        .await
    }

    async fn paused(&self) -> Result<std::collections::BTreeSet<String>, String> {
        Ok(Default::default())
    }

    fn keeps_breakers(&self) -> bool {
        true
    }

    /// One read of the board, one step, with the ledger's faults before it (the batch's
    /// routed events then wait).
    async fn board(&self) -> Result<Board, String> {
        step().await;
        let f = {
            let mut w = lock(&self.world);
            w.called("board");
            let before = w.rates.ledger_before;
            w.roll(before, 0.0)
        };
        if f == Fault::Before {
            lock(&self.world).log("  board read: store error".to_owned());
            return Err("injected: the board unreadable".to_owned());
        }
        let breakers = self.board.breakers().await?;
        let mut w = lock(&self.world);
        if let Some(task) = w.current.clone() {
            w.board_reads.insert(
                task,
                BoardRead {
                    breakers: breakers.clone(),
                },
            );
        }
        Ok(Board {
            paused: Default::default(),
            breakers: if w.mutant == Mutant::BoardLosesBreakers {
                Default::default()
            } else {
                breakers
            },
        })
    }

    /// One conditional write, one step, with the ledger's faults before and after it; every
    /// transition written tallied.
    async fn write_breaker(&self, destination: &str, t: &Transition) -> Result<Written, String> {
        step().await;
        let f = {
            let mut w = lock(&self.world);
            w.called("breaker");
            let (before, after) = (w.rates.ledger_before, w.rates.ledger_after);
            w.roll(before, after)
        };
        if f == Fault::Before {
            lock(&self.world).log(format!(
                "  breaker {destination} {:?}: store error (nothing written)",
                t.change
            ));
            return Err("injected: store error".to_owned());
        }
        let written = self.board.write(destination, t).await?;
        let mut w = lock(&self.world);
        match &written {
            Written::Applied => {
                w.tally_breaker(destination, t);
                if f != Fault::After {
                    // The consumer learns it: a metric of its own.
                    match t.change {
                        Change::Opened | Change::Reopened => w.stats.opened_told += 1,
                        Change::Closed => w.stats.closed_told += 1,
                        _ => {}
                    }
                }
                w.log(format!(
                    "  breaker {destination}: {:?} -> {} (v{}){}",
                    t.change,
                    t.to.state.name(),
                    t.to.version,
                    if f == Fault::After {
                        ", answer lost (store error)"
                    } else {
                        ""
                    }
                ));
            }
            Written::Stale(now) => {
                w.stats.breaker_stale += 1;
                w.log(format!(
                    "  breaker {destination} {:?}: stale (v{} on the board), lost the race",
                    t.change, now.version
                ));
            }
        }
        if f == Fault::After {
            return Err("injected: answer lost".to_owned());
        }
        w.saw(destination, t, &written);
        Ok(written)
    }
}

impl crate::world::World {
    /// A breaker transition written, counted by what it means; one against its rule (opened
    /// at another count of failures, probed before the cool-down) is a violation (`RULE`).
    pub(crate) fn tally_breaker(&mut self, destination: &str, t: &Transition) {
        let rule = self.rule_of(destination);
        let now = self.now();
        match (&t.change, &t.from.state) {
            // It opens at its rule's count of consecutive failures, not before nor after.
            (Change::Opened, State::Closed { failures }) if failures + 1 != rule.failures => {
                self.violation(format!(
                    "RULE: {destination}'s breaker opened at {} failures, its rule says {}",
                    failures + 1,
                    rule.failures
                ));
            }
            // Its probe comes after the cool-down, not before.
            (Change::ProbeClaimed, State::Open { opened_at_ms })
                if now < opened_at_ms + i64::try_from(rule.cool_down.as_millis()).unwrap_or(0) =>
            {
                self.violation(format!(
                    "RULE: {destination}'s probe claimed {} ms after it opened, before its cool-down of {:?}",
                    now - opened_at_ms,
                    rule.cool_down
                ));
            }
            _ => {}
        }
        let s = &mut self.stats;
        match t.change {
            Change::Opened => s.breaker_opened += 1,
            Change::Reopened => s.breaker_reopened += 1,
            Change::ProbeClaimed => {
                s.probes += 1;
                // Claimed over another's probe: its consumer died or ran out of lease.
                if matches!(t.from.state, State::HalfOpen { .. }) {
                    s.probes_expired += 1;
                }
            }
            Change::ProbeReleased => s.probes_released += 1,
            Change::Closed => s.breaker_closed += 1,
            Change::ClosedByHand => s.breaker_resumed += 1,
            Change::Counted | Change::Reset => {}
        }
    }
}

/// The operator closes `b`'s breaker by hand (`inbox-ops resume --destination b`) and the
/// destination heals.
pub(crate) fn resume(world: &Shared, board: &MemoryBoard) {
    let seen = board.get("b");
    let written = futures::executor::block_on(inbox::breaker::apply(board, "b", seen, |b| {
        b.close_by_hand()
    }));
    let mut w = lock(world);
    w.healed = true;
    match written {
        Ok((Some(t), _)) => {
            w.tally_breaker("b", &t);
            w.log("operator resumes b (its breaker closed by hand); b heals".to_owned());
        }
        Ok((None, _)) => w.log("operator resumes b (its breaker was closed); b heals".to_owned()),
        Err(e) => w.violation(format!("the operator could not close b's breaker: {e}")),
    }
}

/// The rate limits of `routes` on the simulation's clock, over `limiter`.
pub(crate) fn rate_limits(
    routes: &Routes,
    limiter: SimRate,
    clock: &inbox::clock::ManualClock,
) -> Option<RateLimits> {
    let (metrics, _) = inbox::metrics::Metrics::memory("consumer");
    RateLimits::of(routes, Arc::new(limiter), metrics)
        .map(|r| r.with_clock(Arc::new(clock.clone())))
}

impl crate::world::World {
    /// The take of `pair` by `owner` (its consumer's breaker gate passed it just before, in
    /// the same step): where the invocation has not written `destination`'s breaker since its
    /// read, that read must let `owner` call now (closed, or `owner`'s probe). Else a call
    /// its breaker holds (`HELD-CALLED`).
    pub(crate) fn check_gate(&mut self, pair: &str, owner: &str) {
        let Some((_, destination)) = pair.split_once(" to:") else {
            return;
        };
        if destination != "b" {
            return;
        }
        let Some(task) = self.current.clone() else {
            return;
        };
        let Some(read) = self.board_reads.get(&task) else {
            return;
        };
        let breaker = read.breakers.get(destination).cloned().unwrap_or_default();
        let now = self.now();
        let gate = breaker.gate(&self.b_rule, now, owner, now);
        self.stats.gates_checked += 1;
        if gate != inbox::breaker::Gate::Pass {
            self.violation(format!(
                "HELD-CALLED: {pair} taken by {owner} to call {destination}, whose breaker it read {} (v{}): {gate:?}",
                breaker.state.name(),
                breaker.version
            ));
        }
    }
}

impl crate::world::World {
    /// `destination`'s rule (`a` has the default).
    pub(crate) fn rule_of(&self, destination: &str) -> Rule {
        if destination == "b" {
            self.b_rule
        } else {
            Rule::default()
        }
    }

    /// A breaker write `t` of the current invocation answered `written`: its view moves on as
    /// the consumer's does. `breaker::apply` tells the consumer the breaker it ends on, after
    /// its last write: an applied one, or a stale one from which its step computes nothing
    /// more (a stale answer followed by another write tells it nothing yet). Never back to an
    /// older version.
    pub(crate) fn saw(&mut self, destination: &str, t: &Transition, written: &Written) {
        let now_board = match written {
            Written::Applied => t.to.clone(),
            Written::Stale(b) => {
                let rule = self.rule_of(destination);
                let now = self.now();
                let again = match (&t.change, &t.to.state, &t.from.state) {
                    (
                        Change::ProbeClaimed,
                        State::HalfOpen {
                            probe_owner,
                            probe_until_ms,
                            ..
                        },
                        _,
                    ) => matches!(
                        b.gate(&rule, now, probe_owner, *probe_until_ms),
                        inbox::breaker::Gate::Claim(_)
                    ),
                    (Change::Counted | Change::Opened, _, _) => {
                        b.observe(&rule, now, "", Observed::Failure).is_some()
                    }
                    (Change::Reset, _, _) => b.observe(&rule, now, "", Observed::Success).is_some(),
                    (change, _, State::HalfOpen { probe_owner, .. }) => {
                        let observed = match change {
                            Change::Closed => Observed::Success,
                            Change::Reopened => Observed::Failure,
                            _ => Observed::Other,
                        };
                        b.observe(&rule, now, probe_owner, observed).is_some()
                    }
                    _ => false,
                };
                if again {
                    return;
                }
                b.clone()
            }
        };
        let Some(task) = self.current.clone() else {
            return;
        };
        if let Some(read) = self.board_reads.get_mut(&task) {
            let known = read.breakers.get(destination).map_or(0, |k| k.version);
            if now_board.version >= known {
                read.breakers.insert(destination.to_owned(), now_board);
            }
        }
    }
}
