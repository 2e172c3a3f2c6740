//! The shared world: the clock, the queue, what the side effect saw, the trace and the
//! verdicts; and the yield that makes each call into it one step of its invocation.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use inbox::clock::{Clock, ManualClock};

use crate::destinations::Mode;
use rand::rngs::StdRng;
use rand::Rng;

use crate::faults::{Fault, Mutant, Rates};
use crate::params::START_MS;
use crate::queue_model::QueueModel;
use crate::stats::Stats;

pub(crate) struct Step(bool);

impl Future for Step {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

pub(crate) fn step() -> Step {
    Step(false)
}

/// One event as the simulation knows it (the ground truth the checks compare against).
#[derive(Clone, Debug)]
pub(crate) struct EventInfo {
    pub(crate) body: Vec<u8>,
}

pub(crate) struct World {
    pub(crate) clock: ManualClock,
    /// Keep the step trace (a failing seed is run again with it on, for the report).
    pub(crate) tracing: bool,
    pub(crate) faults_on: bool,
    pub(crate) rates: Rates,
    pub(crate) mutant: Mutant,
    pub(crate) frng: StdRng,
    pub(crate) queue: QueueModel,
    pub(crate) events: HashMap<String, EventInfo>,
    /// The destinations every event goes to (none: the forward's path).
    pub(crate) destinations: Vec<&'static str>,
    /// Side-effect runs per key: (attempt, applied).
    pub(crate) runs: HashMap<String, Vec<(u32, bool)>>,
    /// Completions the ledger applied, per key: the item's `expires_at` then.
    pub(crate) completions: HashMap<String, Vec<i64>>,
    /// Side effects running now, per key: (run id, when the forwarder gives up on it: the
    /// lease's end less the margin, as `HttpForwarder`'s timeout).
    pub(crate) in_effect: HashMap<String, Vec<(u64, i64)>>,
    pub(crate) next_effect: u64,
    /// Keys whose envelope the archive holds (archived before any run).
    pub(crate) archived: HashSet<String>,
    /// Keys run again after the ledger forgot them (past expires_at).
    pub(crate) forgotten_reruns: HashSet<String>,
    /// The invocation being advanced, and the last call each invocation made.
    pub(crate) current: Option<String>,
    pub(crate) last_call: HashMap<String, &'static str>,
    /// The last call of the invocation that just died (read once by its sender's bookkeeping).
    pub(crate) last_call_of_dead: Option<&'static str>,
    pub(crate) violations: Vec<String>,
    pub(crate) trace: Vec<String>,
    pub(crate) stats: Stats,
    /// How `b` behaves in this seed, and whether it healed (the operator resumed it, or a
    /// recovering one reached the drain).
    pub(crate) mode: Mode,
    pub(crate) healed: bool,
    /// Calls a rate limit let through, per (destination, second of the simulated clock).
    pub(crate) rate_windows: std::collections::BTreeMap<(String, i64), u32>,
    /// Events a destination's breaker held at least once (the consumer gave the event back
    /// with a held pair: [`HELD_REASON`] in the deferral's reason).
    pub(crate) held_events: HashSet<String>,
    /// Each consumer invocation's view of the breakers.
    pub(crate) board_reads: HashMap<String, BoardRead>,
    /// `b`'s breaker rule (routed seeds).
    pub(crate) b_rule: inbox::breaker::Rule,
}

/// What one invocation knows of the breakers: its read at the start of its batch, moved on
/// as the consumer's own view is (`Invocation::saw_breaker`), by what its writes answered.
#[derive(Clone, Debug, Default)]
pub(crate) struct BoardRead {
    pub(crate) breakers: std::collections::BTreeMap<String, inbox::breaker::Breaker>,
}

/// How the consumer's deferral of an event names a pair its destination's breaker held
/// (`<destination>: held: its breaker is <state>`).
pub(crate) const HELD_REASON: &str = ": held: its breaker is ";

impl World {
    pub(crate) fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    pub(crate) fn log(&mut self, text: String) {
        if !self.tracing {
            return;
        }
        let t = self.now() - START_MS;
        self.trace
            .push(format!("{:>10.3}s  {text}", t as f64 / 1000.0));
    }

    pub(crate) fn violation(&mut self, text: String) {
        self.log(format!("VIOLATION: {text}"));
        if text.starts_with("LOST") {
            self.stats.lost += 1;
        }
        if text.starts_with("OVERLAP") {
            self.stats.overlaps += 1;
        }
        self.violations.push(text);
    }

    pub(crate) fn roll(&mut self, before: f64, after: f64) -> Fault {
        if !self.faults_on {
            return Fault::No;
        }
        let x: f64 = self.frng.random();
        let fault = if x < before {
            Fault::Before
        } else if x < before + after {
            Fault::After
        } else {
            Fault::No
        };
        if fault != Fault::No {
            self.stats.faults += 1;
        }
        fault
    }

    /// Notes the call the current invocation just made (for crash-point coverage).
    pub(crate) fn called(&mut self, call: &'static str) {
        if let Some(task) = self.current.clone() {
            self.last_call.insert(task, call);
        }
    }

    /// The last completion of `key` the ledger still remembers (not past its expires_at).
    pub(crate) fn remembered_completion(&self, key: &str) -> bool {
        let now_s = self.now().div_euclid(1000);
        self.completions
            .get(key)
            .and_then(|c| c.last())
            .is_some_and(|expires_at| *expires_at >= now_s)
    }
}

pub(crate) type Shared = Arc<Mutex<World>>;

pub(crate) fn lock(world: &Shared) -> MutexGuard<'_, World> {
    match world.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}
