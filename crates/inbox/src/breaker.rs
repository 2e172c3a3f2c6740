//! The circuit breaker of a destination (docs/routing.md#breakers, docs/design.md §15): a pure
//! state machine, and the port of the board that keeps it ([`BreakerBoard`]).
//!
//! ```text
//!   closed{failures} --failure, failures+1 < rule.failures--> closed{failures+1}
//!   closed{failures} --failure, failures+1 = rule.failures--> open{opened_at: now}
//!   closed{failures>0} --success--> closed{0}
//!   open{opened_at} --now >= opened_at + cool_down: a claim--> half_open{probe owner, probe_until}
//!   half_open --the probe's success--> closed{0}
//!   half_open --the probe's failure--> open{opened_at: now}
//!   half_open --the probe neither failed nor succeeded (throttled, busy)--> open{opened_at} (the same)
//!   half_open{probe_until < now} --a claim--> half_open{another owner}   (the probe's consumer died)
//!   any but closed{0} --`inbox-ops resume --destination`--> closed{0}
//! ```
//!
//! Every transition is one write conditional on the breaker it was computed from: its
//! `version` (each write adds one), or its absence where it was never written
//! ([`Transition::condition`]). A consumer whose write finds another version reads the
//! breaker the write returned and computes its step again from there ([`apply`]): two
//! consumers that both saw a closed breaker count two failures, and of two consumers racing
//! for the probe, one claims it and the other holds.
//!
//! A throttle never counts ([`Observed::Other`]): a destination that answers 429 is alive. A
//! success writes only where there is something to reset, so the healthy path writes nothing.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The default number of consecutive failures that opens a breaker.
pub const DEFAULT_FAILURES: u32 = 5;
/// The default cool-down before the probe.
pub const DEFAULT_COOL_DOWN: Duration = Duration::from_secs(60);

/// When a destination's breaker opens and how long it stays open before the probe
/// (`"breaker": {"failures": 5, "cool_down_seconds": 60}` in `WEBHOOK_DESTINATIONS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Consecutive real failures (across every event) that open it; at least 1.
    pub failures: u32,
    /// How long it stays open before one event is tried.
    pub cool_down: Duration,
}

impl Default for Rule {
    fn default() -> Self {
        Rule {
            failures: DEFAULT_FAILURES,
            cool_down: DEFAULT_COOL_DOWN,
        }
    }
}

impl Rule {
    fn cool_down_ms(&self) -> i64 {
        i64::try_from(self.cool_down.as_millis()).unwrap_or(i64::MAX)
    }
}

/// Where a breaker is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// Calls go; `failures` consecutive real failures so far.
    Closed { failures: u32 },
    /// Calls are held since `opened_at_ms` (epoch milliseconds).
    Open { opened_at_ms: i64 },
    /// One event, of `probe_owner` (the take's owner, `<request id>:<message id>`), is tried
    /// until `probe_until_ms`; every other call is held.
    HalfOpen {
        opened_at_ms: i64,
        probe_owner: String,
        probe_until_ms: i64,
    },
}

/// A destination's breaker as the board holds it. `version` 0: never written (closed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Breaker {
    pub state: State,
    pub version: u64,
}

impl Default for Breaker {
    fn default() -> Self {
        Breaker {
            state: State::Closed { failures: 0 },
            version: 0,
        }
    }
}

/// The state's name, as the board, the log, `inbox-ops status` and the console write it.
impl State {
    pub fn name(&self) -> &'static str {
        match self {
            State::Closed { .. } => "closed",
            State::Open { .. } => "open",
            State::HalfOpen { .. } => "half_open",
        }
    }
}

/// What a call to a destination may do now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gate {
    /// Call it (closed, or the probe is ours).
    Pass,
    /// Held: not called, no failure counted; back later.
    Hold,
    /// Call it as the probe, once this claim is written.
    Claim(Transition),
}

/// What a call came to, for the breaker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Observed {
    /// The destination applied it.
    Success,
    /// A real failure (`Outcome::Failed`).
    Failure,
    /// Neither: throttled, deferred by a rate limit, busy, or not called. Never counts.
    Other,
}

/// What a transition means, for the metrics and the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// One more consecutive failure, still closed.
    Counted,
    /// A success reset the failures of a closed breaker.
    Reset,
    /// Closed → open.
    Opened,
    /// Open (or an expired probe) → half-open, the probe ours.
    ProbeClaimed,
    /// Half-open → open again: the probe failed.
    Reopened,
    /// Half-open → open with the same `opened_at`: the probe neither failed nor succeeded.
    ProbeReleased,
    /// Half-open → closed: the probe succeeded.
    Closed,
    /// Open or half-open (or counting) → closed by an operator.
    ClosedByHand,
}

/// One conditional write: the breaker it was computed from, and the one to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transition {
    pub from: Breaker,
    pub to: Breaker,
    pub change: Change,
}

/// The condition of every write, on the board's attribute `#b` (the destination's breaker):
/// never written yet, or written at the version the transition was computed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Condition {
    /// `attribute_not_exists(#b)`
    Absent,
    /// `#b.version = :v`
    Version(u64),
}

impl Condition {
    /// The DynamoDB condition expression (`#b` the breaker's attribute, `:v` the version).
    pub fn expression(self) -> &'static str {
        match self {
            Condition::Absent => "attribute_not_exists(#b)",
            Condition::Version(_) => "#b.version = :v",
        }
    }
}

impl Transition {
    fn new(from: &Breaker, state: State, change: Change) -> Transition {
        Transition {
            from: from.clone(),
            to: Breaker {
                state,
                version: from.version + 1,
            },
            change,
        }
    }

    /// The write's condition: the breaker is still the one this transition read.
    pub fn condition(&self) -> Condition {
        match self.from.version {
            0 => Condition::Absent,
            v => Condition::Version(v),
        }
    }
}

impl Breaker {
    /// Whether a call by `owner` (the take's owner) may go now. Closed: it goes. Open within
    /// the cool-down, or half-open with another's live probe: held. Open past the cool-down,
    /// or half-open with a probe past its deadline (its consumer died): a claim of the probe
    /// for `owner` until `probe_until_ms`, written with the condition on this version (of
    /// consumers racing for it, one wins; the others read the new version and hold).
    pub fn gate(&self, rule: &Rule, now_ms: i64, owner: &str, probe_until_ms: i64) -> Gate {
        let claim = |opened_at_ms: i64| {
            Gate::Claim(Transition::new(
                self,
                State::HalfOpen {
                    opened_at_ms,
                    probe_owner: owner.to_owned(),
                    probe_until_ms,
                },
                Change::ProbeClaimed,
            ))
        };
        match &self.state {
            State::Closed { .. } => Gate::Pass,
            State::Open { opened_at_ms } => {
                if now_ms >= opened_at_ms.saturating_add(rule.cool_down_ms()) {
                    claim(*opened_at_ms)
                } else {
                    Gate::Hold
                }
            }
            State::HalfOpen {
                opened_at_ms,
                probe_owner,
                probe_until_ms: until,
            } => {
                if probe_owner == owner {
                    Gate::Pass
                } else if now_ms > *until {
                    claim(*opened_at_ms)
                } else {
                    Gate::Hold
                }
            }
        }
    }

    /// What a call by `owner` came to. Closed: a failure counts (opening at
    /// `rule.failures`), a success resets a count above 0. Half-open with `owner`'s probe: a
    /// success closes, a failure opens again from `now_ms`, anything else gives the probe back
    /// (open, the same `opened_at`, so the next claim may come at once). Anything else (open,
    /// another's probe: this call was computed from an older breaker): nothing.
    pub fn observe(
        &self,
        rule: &Rule,
        now_ms: i64,
        owner: &str,
        observed: Observed,
    ) -> Option<Transition> {
        match (&self.state, observed) {
            (State::Closed { failures }, Observed::Failure) => {
                let failures = failures.saturating_add(1);
                Some(if failures >= rule.failures.max(1) {
                    Transition::new(
                        self,
                        State::Open {
                            opened_at_ms: now_ms,
                        },
                        Change::Opened,
                    )
                } else {
                    Transition::new(self, State::Closed { failures }, Change::Counted)
                })
            }
            (State::Closed { failures }, Observed::Success) if *failures > 0 => Some(
                Transition::new(self, State::Closed { failures: 0 }, Change::Reset),
            ),
            (
                State::HalfOpen {
                    opened_at_ms,
                    probe_owner,
                    ..
                },
                observed,
            ) if probe_owner == owner => Some(match observed {
                Observed::Success => {
                    Transition::new(self, State::Closed { failures: 0 }, Change::Closed)
                }
                Observed::Failure => Transition::new(
                    self,
                    State::Open {
                        opened_at_ms: now_ms,
                    },
                    Change::Reopened,
                ),
                Observed::Other => Transition::new(
                    self,
                    State::Open {
                        opened_at_ms: *opened_at_ms,
                    },
                    Change::ProbeReleased,
                ),
            }),
            _ => None,
        }
    }

    /// Closed by an operator (`inbox-ops resume --destination`): any breaker but a closed one
    /// with no failure counted.
    pub fn close_by_hand(&self) -> Option<Transition> {
        match self.state {
            State::Closed { failures: 0 } => None,
            _ => Some(Transition::new(
                self,
                State::Closed { failures: 0 },
                Change::ClosedByHand,
            )),
        }
    }

    /// Whether calls to the destination are held now for `owner` (open, or another's probe).
    pub fn holds(&self, rule: &Rule, now_ms: i64, owner: &str) -> bool {
        self.gate(rule, now_ms, owner, now_ms) == Gate::Hold
    }
}

/// What the pause board holds: the paused destinations and every breaker ever written, read
/// together once per batch ([`crate::destination::PauseBoard::read`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Board {
    pub paused: std::collections::BTreeSet<String>,
    pub breakers: BTreeMap<String, Breaker>,
}

/// What a conditional write came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Written {
    /// Written: the board holds the transition's `to`.
    Applied,
    /// The condition failed: the board holds this breaker instead.
    Stale(Breaker),
}

/// Where the breakers are kept: the pause board (`#destinations`, the ledger's table) in a
/// deployment ([`crate::destination::PauseBoard`]), [`MemoryBoard`] in tests and the
/// simulation.
pub trait BreakerBoard: Send + Sync {
    /// Every destination's breaker that was ever written, by name (one consistent read).
    fn breakers(&self) -> impl Future<Output = Result<BTreeMap<String, Breaker>, String>> + Send;

    /// Writes `t.to` for `destination` where the board still holds `t.from`
    /// ([`Transition::condition`]).
    fn write(
        &self,
        destination: &str,
        t: &Transition,
    ) -> impl Future<Output = Result<Written, String>> + Send;
}

/// How many times a step is computed again on a fresher breaker before giving up: each retry
/// follows another consumer's write, and a batch runs at most ten pairs of a destination at
/// once.
const ATTEMPTS: usize = 16;

/// A step applied to the breaker `seen`: written with its condition; where another consumer
/// wrote first, computed again from the breaker the board holds and written again. The
/// transition written (`None`: nothing to write, from the last breaker seen) and that breaker.
pub async fn apply<B: BreakerBoard>(
    board: &B,
    destination: &str,
    seen: Breaker,
    step: impl Fn(&Breaker) -> Option<Transition>,
) -> Result<(Option<Transition>, Breaker), String> {
    let mut current = seen;
    for _ in 0..ATTEMPTS {
        let Some(t) = step(&current) else {
            return Ok((None, current));
        };
        match board.write(destination, &t).await? {
            Written::Applied => {
                let to = t.to.clone();
                return Ok((Some(t), to));
            }
            Written::Stale(now) => current = now,
        }
    }
    Err(format!(
        "breaker of `{destination}`: {ATTEMPTS} writes lost to other consumers"
    ))
}

/// The board in memory, shared by its clones (tests, the simulation): the same conditions as
/// the DynamoDB board's.
#[derive(Clone, Debug, Default)]
pub struct MemoryBoard(Arc<Mutex<BTreeMap<String, Breaker>>>);

impl MemoryBoard {
    /// The breaker of `destination` now (closed, version 0, where never written).
    pub fn get(&self, destination: &str) -> Breaker {
        self.lock().get(destination).cloned().unwrap_or_default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Breaker>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl BreakerBoard for MemoryBoard {
    async fn breakers(&self) -> Result<BTreeMap<String, Breaker>, String> {
        Ok(self.lock().clone())
    }

    async fn write(&self, destination: &str, t: &Transition) -> Result<Written, String> {
        let mut board = self.lock();
        let now = board.get(destination).cloned().unwrap_or_default();
        let holds = match t.condition() {
            Condition::Absent => !board.contains_key(destination),
            Condition::Version(v) => board.contains_key(destination) && now.version == v,
        };
        if !holds {
            return Ok(Written::Stale(now));
        }
        board.insert(destination.to_owned(), t.to.clone());
        Ok(Written::Applied)
    }
}

impl<B: BreakerBoard> BreakerBoard for Arc<B> {
    fn breakers(&self) -> impl Future<Output = Result<BTreeMap<String, Breaker>, String>> + Send {
        (**self).breakers()
    }
    fn write(
        &self,
        destination: &str,
        t: &Transition,
    ) -> impl Future<Output = Result<Written, String>> + Send {
        (**self).write(destination, t)
    }
}

#[cfg(test)]
mod tests;
