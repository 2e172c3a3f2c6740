//! A deterministic simulation of the whole inbox: senders, the real `Receiver`, an in-memory
//! SQS FIFO queue, the real `Consumer`, the `MemoryLedger` and a side effect, interleaved by a
//! seeded scheduler, with crashes, lost responses, store and queue errors, lease expiry,
//! Lambda timeouts, TTL sweeps and failing side effects. The receiver runs with its replay
//! cache on, as deployed: a duplicate of a key it answered is answered from memory.
//!
//! And the concurrency the configuration allows, beyond one delivery at a time: a message in
//! flight delivered again to a second consumer at once (a standard queue's at-least-once
//! delivery), a visibility timeout shorter than the consumer's timeout in a quarter of the seeds
//! (the message comes back while the first consumer still runs its side effect), and an
//! operator's redrive of the dead-letter queue in the main phase, racing the original (the
//! consumer's own dead-letter copy leaves its original in flight).
//!
//! And the concurrency the configuration allows, beyond one delivery at a time: a message in
//! flight delivered again to a second consumer at once (a standard queue's at-least-once
//! delivery), a visibility timeout shorter than the consumer's timeout in a quarter of the seeds
//! (the message comes back while the first consumer still runs its side effect), and an
//! operator's redrive of the dead-letter queue in the main phase, racing the original (the
//! consumer's own dead-letter copy leaves its original in flight).
//!
//! How it interleaves: every call the handlers make into the ledger, the queue or the side
//! effect first yields once, so a handler invocation is a future the scheduler advances one
//! call at a time. Several invocations run at once, and dropping one between two calls is a
//! crash at exactly that point (a receiver that dies after the claim, after the send, before
//! its answer; a consumer that dies after the side effect, before complete...).
//!
//! What must hold, checked after every step:
//! - every event the receiver answered 200 is COMPLETED, or still on the queue (visible or in
//!   flight), or in the dead-letter queue: nothing accepted is ever dropped;
//! - no side effect runs for a key the ledger has COMPLETED (and has not forgotten by TTL);
//!   a re-run happens only before completion (after a failure, a crash, a lost lease) and
//!   carries the same key and body;
//! - OVERLAP: never two side effects of one key running at once (a run spans scheduler steps
//!   and ends when it answers, its invocation dies, or its lease's time runs out, when the
//!   forwarder gives up on it);
//! - a FIFO group's batch answer fails a suffix of the group (nothing runs after a failure);
//! - the receiver never answers anything but 200 or 500 to these well-formed requests (a
//!   duplicate behind a live claim sends the event itself: never a 503).
//!
//! Batches (docs/design.md §14): in two thirds of the seeds, a third source takes requests of
//! several events at `/events`, two or three batch requests over the same few events,
//! overlapping (an event in two or three requests), each retried whole. A receiver dying after
//! some of a batch's claims or sends, the retry and the overlapping batch interleave; the
//! checks hold per event: every event of a request answered 200 is completed or on a queue,
//! none applied twice, all completed once after the drain.
//!
//! At the end, with faults off, the dead-letter queue is redriven and everything drained:
//! every accepted event must then be completed exactly once.
//!
//! Breakers and rate limits (destinations.rs): in the routed seeds `a` has `max_per_second`
//! and `b` a circuit breaker on one board every invocation races on; `b` is flaky, recovers,
//! or never does until the operator resumes it at the end. No second starts more calls than
//! the limit (`RATE`); no event a breaker held is dead-lettered but for real failures
//! (`HELD-DEAD-LETTERED`); where `b` never recovers, none of its pairs is applied before the
//! operator resumes it (`NEVER`), and then everything drains exactly once.
//!
//! The world keeps the deployed system's guarantees, no more: invocations die at their
//! deadline or run on past it (a pause, clock skew) but a consumer never outlives six times
//! the function's timeout (the template's visibility timeout; in the seeds with a shorter one,
//! its message comes back long before); the side effect, like the shipped `HttpForwarder`,
//! does not start without time left in its lease and gives up when it runs out; the queue
//! keeps a message for less time than the ledger keeps a key, and senders stop retrying before.
//!
//! `SIM_SEEDS=N` runs seeds 0..N (default below); `SIM_SEED=x` replays one seed and prints its
//! trace. A failure prints the seed, what broke and the run's trace (the same seed run again
//! with tracing on: a run is a function of its seed).

mod adapters;
mod bridge;
mod checks;
mod destinations;
mod faults;
mod ledger_adapter;
mod params;
mod queue_model;
mod run;
mod schedule;
mod senders;
mod sim;
mod stats;
mod world;

use std::time::{Duration, Instant};

use faults::Mutant;
use run::{report, run_seed, run_seeds};
use stats::summary;

/// Seeds in a plain `cargo test` run: 11 s in a debug build on two idle cores, 17 s on two
/// busy ones (measured before the breakers and rate limits; with them, about 24 s of CPU, 50 s
/// on two cores at a load average of 7). `make simulate` runs 100,000 optimised.
const DEFAULT_SEEDS: u64 = 2000;

/// A number from the environment; unset or empty is `None` (`make simulate` without SEEDS).
fn env_u64(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    Some(
        text.parse()
            .unwrap_or_else(|_| panic!("{name} must be a number, got {text:?}")),
    )
}

#[test]
fn every_accepted_event_completes_exactly_once() {
    if let Some(seed) = env_u64("SIM_SEED") {
        let out = run_seed(seed, Mutant::None, true);
        println!("{}", out.trace.join("\n"));
        println!("{}", summary(&out.stats, Duration::ZERO));
        assert!(out.violations.is_empty(), "{}", report(&out));
        return;
    }
    let n = env_u64("SIM_SEEDS").unwrap_or(DEFAULT_SEEDS);
    let seeds: Vec<u64> = (0..n).collect();
    let started = Instant::now();
    let (s, failure) = run_seeds(&seeds, Mutant::None);
    let took = started.elapsed();
    if let Some(out) = failure {
        panic!("{}", report(&out));
    }
    println!("{}", summary(&s, took));
    assert_eq!((s.lost, s.doubled), (0, 0));
    assert_eq!(s.seeds, n);
    // The batches were exercised (docs/design.md §14): requests of several events, and
    // receivers dying between a batch's claims and its sends, then the batch retried whole.
    if n >= 100 {
        assert!(s.batch_deliveries > 0 && s.batch_deaths > 0, "{s:?}");
    }
    // The breaker and the rate limit were exercised (docs/testing.md, "Breakers and rate
    // limits"): `b` opened, held pairs, had its probe claimed (over an expired one too),
    // failed and given back, closed by a probe and by hand; invocations lost races on its
    // state; `a`'s limit deferred calls. None of it dead-lettered a held event for being held.
    if n >= 200 {
        assert!(s.recovering_seeds > 0 && s.never_seeds > 0, "{s:?}");
        assert!(s.breaker_opened > 0 && s.breaker_closed > 0, "{s:?}");
        assert!(s.breaker_reopened > 0 && s.breaker_resumed > 0, "{s:?}");
        assert!(s.probes_expired > 0 && s.probes_released > 0, "{s:?}");
        assert!(
            s.breaker_stale > 0 && s.held > 0 && s.gates_checked > 0,
            "{s:?}"
        );
        assert!(s.rate_deferred > 0 && s.rate_calls > 0, "{s:?}");
    }
}

/// The checks have teeth: a queue that drops messages, a take that ignores COMPLETED and a
/// take that ignores a live lease are each caught within a few hundred seeds.
#[test]
fn the_checks_catch_a_lost_event_and_a_double() {
    let seeds: Vec<u64> = (0..300).collect();
    let (_, lost) = run_seeds(&seeds, Mutant::QueueDropsMessages);
    let lost = lost.expect("a queue that drops messages is caught");
    assert!(
        lost.violations.iter().any(|v| v.contains("LOST")),
        "{:?}",
        lost.violations
    );

    let (_, doubled) = run_seeds(&seeds, Mutant::TakeIgnoresCompleted);
    let doubled = doubled.expect("a take that ignores COMPLETED is caught");
    assert!(
        doubled.violations.iter().any(|v| v.contains("DOUBLED")),
        "{:?}",
        doubled.violations
    );

    let (_, overlap) = run_seeds(&seeds, Mutant::TakeIgnoresLiveLease);
    let overlap = overlap.expect("a take that ignores a live lease is caught");
    assert!(
        overlap
            .violations
            .iter()
            .any(|v| v.contains("OVERLAP") || v.contains("DOUBLED")),
        "{:?}",
        overlap.violations
    );
}

/// With two destinations, one failing and throttling at random: a take of a pair that re-runs
/// a completed destination, or that skips a pending one, is caught.
#[test]
fn the_checks_catch_a_destination_run_twice_or_skipped() {
    let seeds: Vec<u64> = (0..300).collect();
    let (_, doubled) = run_seeds(&seeds, Mutant::LegIgnoresCompleted);
    let doubled = doubled.expect("a destination re-run after it completed is caught");
    assert!(
        doubled.violations.iter().any(|v| v.contains("DOUBLED")),
        "{:?}",
        doubled.violations
    );
    let (_, skipped) = run_seeds(&seeds, Mutant::LegSkipsPending);
    let skipped = skipped.expect("a destination skipped while pending is caught");
    assert!(
        skipped.violations.iter().any(|v| v.contains("LOST")),
        "{:?}",
        skipped.violations
    );
}

/// With a breaker and a rate limit: a limiter that grants every call is caught (`RATE`), a
/// board read that loses the breakers (`HELD-CALLED`), and a queue whose maxReceiveCount is
/// below what a held message is received (SQS dead-letters a held message:
/// `HELD-DEAD-LETTERED`).
#[test]
fn the_checks_catch_a_rate_exceeded_and_a_held_event_dead_lettered() {
    let seeds: Vec<u64> = (0..300).collect();
    let (_, fast) = run_seeds(&seeds, Mutant::RateIgnoresLimit);
    let fast = fast.expect("a limiter that grants every call is caught");
    assert!(
        fast.violations.iter().any(|v| v.starts_with("RATE")),
        "{:?}",
        fast.violations
    );
    let (_, blind) = run_seeds(&seeds, Mutant::BoardLosesBreakers);
    let blind = blind.expect("a board read that loses the breakers is caught");
    assert!(
        blind
            .violations
            .iter()
            .any(|v| v.starts_with("HELD-CALLED")),
        "{:?}",
        blind.violations
    );
    let (_, dropped) = run_seeds(&seeds, Mutant::QueueBoundBelowHolds);
    let dropped = dropped.expect("a held message dead-lettered by the queue is caught");
    assert!(
        dropped
            .violations
            .iter()
            .any(|v| v.starts_with("HELD-DEAD-LETTERED")),
        "{:?}",
        dropped.violations
    );
}

/// Same seed, same run: the trace is a function of the seed.
#[test]
fn a_seed_replays_identically() {
    let a = run_seed(7, Mutant::None, true);
    let b = run_seed(7, Mutant::None, true);
    assert_eq!(a.trace, b.trace);
    assert!(a.trace.len() > 50);
}
