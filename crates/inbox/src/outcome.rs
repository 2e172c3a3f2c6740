//! The log's `outcome` field: every value either function writes, in one enum, so that the
//! vocabulary docs/operations.md lists ("Logs") is the one the code uses. A leaf module.

/// What became of a request or a message, as its log line says (`fields.outcome`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LogOutcome {
    // The receiver.
    /// A first delivery, claimed and on the queue: 200.
    Accepted,
    /// A duplicate, answered with the first answer.
    Replayed,
    /// Refused with a documented 4xx (`error` the code, `reason` why).
    Rejected,
    /// A claim given back after a failure: 500, the sender retries.
    Released,
    /// A claim that could not be given back (it expires with its lease).
    ReleaseFailed,
    /// A provider's URL check answered (docs/providers.md): nothing claimed or sent.
    Handshake,
    // The consumer.
    /// The side effect ran and the key is COMPLETED.
    Completed,
    /// A real failure (or a call that got no answer): the message comes back.
    Failed,
    /// The system of record asked to be called later.
    Throttled,
    /// Taken just as another group was throttled: given back unrun.
    Held,
    /// Moved to the dead-letter queue.
    DeadLettered,
    /// Done already: acknowledged without a side effect.
    Duplicate,
    /// Another invocation holds the lease.
    Busy,
    /// The lease ran out under the side effect.
    LeaseLost,
    /// A declared at-most-once source's failure, not retried.
    Dropped,
    /// An envelope whose parts disagree: no side effect, dead-lettered at once.
    Refused,
}

impl LogOutcome {
    /// Every outcome, in the order docs/operations.md lists them.
    pub const ALL: [LogOutcome; 16] = [
        LogOutcome::Accepted,
        LogOutcome::Replayed,
        LogOutcome::Rejected,
        LogOutcome::Released,
        LogOutcome::ReleaseFailed,
        LogOutcome::Handshake,
        LogOutcome::Completed,
        LogOutcome::Failed,
        LogOutcome::Throttled,
        LogOutcome::Held,
        LogOutcome::DeadLettered,
        LogOutcome::Duplicate,
        LogOutcome::Busy,
        LogOutcome::LeaseLost,
        LogOutcome::Dropped,
        LogOutcome::Refused,
    ];

    /// The value in the log line.
    pub fn as_str(self) -> &'static str {
        match self {
            LogOutcome::Accepted => "accepted",
            LogOutcome::Replayed => "replayed",
            LogOutcome::Rejected => "rejected",
            LogOutcome::Released => "released",
            LogOutcome::ReleaseFailed => "release_failed",
            LogOutcome::Handshake => "handshake",
            LogOutcome::Completed => "completed",
            LogOutcome::Failed => "failed",
            LogOutcome::Throttled => "throttled",
            LogOutcome::Held => "held",
            LogOutcome::DeadLettered => "dead_lettered",
            LogOutcome::Duplicate => "duplicate",
            LogOutcome::Busy => "busy",
            LogOutcome::LeaseLost => "lease_lost",
            LogOutcome::Dropped => "dropped",
            LogOutcome::Refused => "refused",
        }
    }
}

impl std::fmt::Display for LogOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
