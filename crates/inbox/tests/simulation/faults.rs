//! What can go wrong: the fault rates while faults are on, where a fault lands (before or
//! after the call), and the deliberate bugs the self-test plants.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    No,
    Before,
    After,
}

/// Fault rates while faults are on.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rates {
    /// A ledger call fails before reaching the table.
    pub(crate) ledger_before: f64,
    /// A ledger call is applied but its answer is lost (the caller sees an error).
    pub(crate) ledger_after: f64,
    pub(crate) queue_before: f64,
    pub(crate) queue_after: f64,
    /// The side effect fails without happening.
    pub(crate) effect_before: f64,
    /// The side effect happens but its caller sees a failure (a timeout after the downstream
    /// applied it): the re-run must carry the same key.
    pub(crate) effect_after: f64,
    /// The downstream answers 429/503 (not applied): the consumer defers the key and holds
    /// back the rest of its batch.
    pub(crate) effect_throttled: f64,
    /// The sender never sees the receiver's answer.
    pub(crate) lost_response: f64,
    /// The bridge dies after a batch, before deleting anything.
    pub(crate) bridge_crash: f64,
    /// An invocation past its deadline is killed (else it runs on, a zombie: clock skew).
    pub(crate) kill_overdue: f64,
}

pub(crate) const RATES: Rates = Rates {
    ledger_before: 0.04,
    ledger_after: 0.02,
    queue_before: 0.05,
    queue_after: 0.02,
    effect_before: 0.10,
    effect_after: 0.04,
    effect_throttled: 0.05,
    lost_response: 0.06,
    bridge_crash: 0.03,
    kill_overdue: 0.6,
};

/// A deliberate bug, for the self-test that proves the checker can see one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mutant {
    None,
    /// The queue says a send worked without enqueuing (now and then).
    QueueDropsMessages,
    /// A take that found COMPLETED reports Taken (as if the condition accepted COMPLETED).
    TakeIgnoresCompleted,
    /// A take that found a live PROCESSING lease reports Taken (as if `take_allowed` accepted
    /// a live lease): two consumers run one key's side effect at once.
    TakeIgnoresLiveLease,
    /// The take of an (event, destination) pair that found it COMPLETED reports Taken: the
    /// destination runs again.
    LegIgnoresCompleted,
    /// The take of a pending (event, destination) pair now and then reports COMPLETED: the
    /// destination is skipped.
    LegSkipsPending,
    /// The rate limiter grants every call: a destination called over its `max_per_second`.
    RateIgnoresLimit,
    /// The queue's maxReceiveCount in routed seeds as low as in the others (MAX_FAILURES + 1)
    /// rather than the template's, which the consumer's bound on a held message is set
    /// against: a message a breaker holds reaches it and SQS dead-letters it.
    QueueBoundBelowHolds,
    /// The board read loses the breakers (every one closed, as a board whose breakers do not
    /// parse): a destination called while its breaker holds.
    BoardLosesBreakers,
}

impl Mutant {
    /// The mutants of the destinations' path run only routed seeds.
    pub(crate) fn routed_only(self) -> bool {
        matches!(
            self,
            Mutant::LegIgnoresCompleted
                | Mutant::LegSkipsPending
                | Mutant::RateIgnoresLimit
                | Mutant::QueueBoundBelowHolds
                | Mutant::BoardLosesBreakers
        )
    }
}
