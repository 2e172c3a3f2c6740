//! The lease: until when a claim (receiver) or a take (consumer) holds a key.
//!
//! A lease runs to the invocation's deadline, the moment Lambda stops the function. Work
//! cannot outlive it, so a holder that is past it is gone (or about to be), and the next claim
//! or take may take over. Where the runtime gives no deadline (a bare call from a test or a
//! local tool, outside Lambda), the lease runs [`FALLBACK_LEASE_MS`] from now instead.

/// The lease of an invocation that carries no deadline: 60 s.
///
/// It is the longest function timeout in `template.yaml` (the consumer's 60 s; the receiver's
/// is 10 s). The consumer's side effect is bounded by its function timeout, and the shipped
/// forwarder cuts its request to the time left in the lease, so a bare call gets the time a
/// deployed invocation of either function would, never less: a batch of one group that fits
/// the deployed consumer also fits a bare one. It only applies when the runtime gives no
/// deadline; a deployed invocation always has one.
pub const FALLBACK_LEASE_MS: i64 = 60_000;

/// The invocation's deadline in epoch milliseconds, where the runtime set one (Lambda always
/// does; a hand-built context may leave it at 0).
pub fn deadline_ms(context: &lambda_runtime::Context) -> Option<i64> {
    i64::try_from(context.deadline).ok().filter(|d| *d > 0)
}

/// When a lease taken at `now_ms` by an invocation with this deadline ends: the deadline
/// itself, or [`FALLBACK_LEASE_MS`] from now where there is none (or it has already passed).
pub fn lease_until_ms(now_ms: i64, deadline_ms: Option<i64>) -> i64 {
    match deadline_ms {
        Some(deadline) if deadline > now_ms => deadline,
        _ => now_ms.saturating_add(FALLBACK_LEASE_MS),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lease_runs_to_the_deadline_or_the_fallback() {
        assert_eq!(lease_until_ms(1_000, Some(11_000)), 11_000);
        assert_eq!(lease_until_ms(1_000, None), 1_000 + FALLBACK_LEASE_MS);
        // A deadline already past is no deadline.
        assert_eq!(
            lease_until_ms(1_000, Some(1_000)),
            1_000 + FALLBACK_LEASE_MS
        );
        assert_eq!(lease_until_ms(1_000, Some(500)), 1_000 + FALLBACK_LEASE_MS);
    }

    #[test]
    fn a_context_without_a_deadline_has_none() {
        let mut ctx = lambda_runtime::Context::default();
        assert_eq!(deadline_ms(&ctx), None);
        ctx.deadline = 1_700_000_000_000;
        assert_eq!(deadline_ms(&ctx), Some(1_700_000_000_000));
    }
}
