//! What a run counted (summed over seeds) and the summary line printed after a run.

use std::collections::BTreeMap;
use std::time::Duration;

#[derive(Debug, Default, Clone)]
pub(crate) struct Stats {
    pub(crate) seeds: u64,
    pub(crate) steps: u64,
    pub(crate) events: u64,
    pub(crate) accepted: u64,
    pub(crate) deliveries: u64,
    pub(crate) duplicates: u64,
    pub(crate) retries: u64,
    pub(crate) lost_responses: u64,
    pub(crate) crashes: u64,
    pub(crate) killed: u64,
    pub(crate) zombies: u64,
    pub(crate) faults: u64,
    pub(crate) batches: u64,
    /// Deliveries of a batch request (several events), and those whose receiver died after
    /// some of the batch's claims or sends (a batch partly claimed or partly queued).
    pub(crate) batch_deliveries: u64,
    pub(crate) batch_deaths: u64,
    pub(crate) side_effects: u64,
    pub(crate) reruns: u64,
    pub(crate) reruns_after_retention: u64,
    pub(crate) lease_lost: u64,
    pub(crate) out_of_lease: u64,
    pub(crate) deduplicated_sends: u64,
    pub(crate) dead_lettered: u64,
    /// Side effects throttled, and messages whose visibility the consumer changed after one.
    pub(crate) throttled: u64,
    pub(crate) delayed: u64,
    pub(crate) redriven: u64,
    /// Redrives in the main phase, racing the originals.
    pub(crate) early_redrives: u64,
    /// Messages delivered again while in flight (to a second consumer at once).
    pub(crate) delivered_again: u64,
    /// Seeds run with a visibility timeout shorter than the consumer's timeout.
    pub(crate) short_visibility: u64,
    /// Side effects that started while another of their key's was still running (found
    /// none: every one is a violation).
    pub(crate) overlaps: u64,
    pub(crate) swept: u64,
    pub(crate) completed: u64,
    pub(crate) lost: u64,
    pub(crate) doubled: u64,
    /// Routed seeds by how `b` behaved: down for a while then recovering, down until the
    /// operator resumed it.
    pub(crate) recovering_seeds: u64,
    pub(crate) never_seeds: u64,
    /// Calls to `b` while it was down.
    pub(crate) down_calls: u64,
    /// Breaker transitions written: opened, opened again by a failed probe, probes claimed
    /// (of them, over an expired probe), probes given back, closed by a probe, closed by hand.
    pub(crate) breaker_opened: u64,
    pub(crate) breaker_reopened: u64,
    pub(crate) probes: u64,
    pub(crate) probes_expired: u64,
    pub(crate) probes_released: u64,
    pub(crate) breaker_closed: u64,
    pub(crate) breaker_resumed: u64,
    /// Breaker writes that lost the race to another invocation's (their condition failed).
    pub(crate) breaker_stale: u64,
    /// Openings (or reopenings) and closings by a probe whose write's answer reached the
    /// consumer: each must be its `BreakerOpened` or `BreakerClosed` metric.
    pub(crate) opened_told: u64,
    pub(crate) closed_told: u64,
    /// Takes of a `b` pair checked against their invocation's read of the breaker.
    pub(crate) gates_checked: u64,
    /// Deferrals of an event with a pair its breaker held; held messages sent again as fresh
    /// ones near the queue's bound.
    pub(crate) held: u64,
    pub(crate) held_resent: u64,
    /// Events `b` held to its end whose `a` pair was done meanwhile (seeds where `b` never
    /// recovers).
    pub(crate) held_done_elsewhere: u64,
    /// Dead letters whose event a breaker had held, all with a pair at MAX_FAILURES real
    /// failures (any other is a violation).
    pub(crate) held_then_dead_lettered: u64,
    /// Calls a rate limit let through, and calls it deferred.
    pub(crate) rate_calls: u64,
    pub(crate) rate_deferred: u64,
    /// Where invocations died: "receiver after claim", "consumer after effect", ...
    pub(crate) crash_points: BTreeMap<String, u64>,
    /// The receiver's answers by status.
    pub(crate) answers: BTreeMap<u16, u64>,
}

impl Stats {
    pub(crate) fn add(&mut self, o: &Stats) {
        macro_rules! sum { ($($f:ident),*) => { $(self.$f += o.$f;)* } }
        sum!(
            seeds,
            steps,
            events,
            accepted,
            deliveries,
            duplicates,
            retries,
            lost_responses,
            crashes,
            killed,
            zombies,
            faults,
            batches,
            batch_deliveries,
            batch_deaths,
            side_effects,
            reruns,
            reruns_after_retention,
            lease_lost,
            deduplicated_sends,
            dead_lettered,
            throttled,
            delayed,
            redriven,
            early_redrives,
            delivered_again,
            short_visibility,
            overlaps,
            swept,
            completed,
            lost,
            doubled,
            out_of_lease,
            recovering_seeds,
            never_seeds,
            down_calls,
            breaker_opened,
            breaker_reopened,
            probes,
            probes_expired,
            probes_released,
            breaker_closed,
            breaker_resumed,
            breaker_stale,
            gates_checked,
            opened_told,
            closed_told,
            held,
            held_resent,
            held_done_elsewhere,
            held_then_dead_lettered,
            rate_calls,
            rate_deferred
        );
        for (k, v) in &o.crash_points {
            *self.crash_points.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &o.answers {
            *self.answers.entry(*k).or_default() += v;
        }
    }
}

pub(crate) fn summary(s: &Stats, took: Duration) -> String {
    let answers: Vec<String> = s.answers.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    let points: Vec<String> = s
        .crash_points
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    format!(
        "simulation: {} seeds, {} scheduler steps, {} events ({} answered 200, {} completed), \
         lost {}, doubled {}, overlapping {}, in {:.1?}\n\
         \x20 senders: {} deliveries ({} retries, {} duplicates, {} of batches, {} of them dying \
         after some of the batch's claims or sends), {} answers lost; answers {{{}}}\n\
         \x20 faults: {} injected store/queue/side-effect errors, {} crashes, {} Lambda timeouts, \
         {} zombies past their deadline\n\
         \x20 died: {{{}}}\n\
         \x20 consumer: {} batches, {} side effects ({} re-runs before completion, {} not started \
         for want of lease, {} after the ledger forgot the key), {} lease losses, {} throttled \
         ({} messages delayed)\n\
         \x20 queue: {} sends deduplicated, {} dead-lettered, {} redriven ({} redrives racing \
         the originals), {} delivered again while in flight, {} seeds with a visibility timeout \
         shorter than the consumer's; {} items swept by TTL\n{}",
        s.seeds,
        s.steps,
        s.events,
        s.accepted,
        s.completed,
        s.lost,
        s.doubled,
        s.overlaps,
        took,
        s.deliveries,
        s.retries,
        s.duplicates,
        s.batch_deliveries,
        s.batch_deaths,
        s.lost_responses,
        answers.join(", "),
        s.faults,
        s.crashes,
        s.killed,
        s.zombies,
        points.join(", "),
        s.batches,
        s.side_effects,
        s.reruns,
        s.out_of_lease,
        s.reruns_after_retention,
        s.lease_lost,
        s.throttled,
        s.delayed,
        s.deduplicated_sends,
        s.dead_lettered,
        s.redriven,
        s.early_redrives,
        s.delivered_again,
        s.short_visibility,
        s.swept,
        breakers_summary(s)
    )
}

/// The breakers' and the rate limit's lines of the summary.
fn breakers_summary(s: &Stats) -> String {
    format!(
        "  breakers: {} seeds with b down then recovering, {} with b down until resumed by \
         hand; {} calls to b while down; opened {}, reopened by a failed probe {}, {} probes \
         claimed ({} over an expired probe, {} given back), closed by a probe {}, by hand {}; \
         {} writes lost the race; {} takes checked against their invocation's read of the \
         breaker; {} deferrals holding a pair, {} held messages sent again, {} \
         events held by a b that never recovered done to a meanwhile, {} held events \
         dead-lettered (each for real failures)\n\
         \x20 rate limit: {} calls let through, {} deferred",
        s.recovering_seeds,
        s.never_seeds,
        s.down_calls,
        s.breaker_opened,
        s.breaker_reopened,
        s.probes,
        s.probes_expired,
        s.probes_released,
        s.breaker_closed,
        s.breaker_resumed,
        s.breaker_stale,
        s.gates_checked,
        s.held,
        s.held_resent,
        s.held_done_elsewhere,
        s.held_then_dead_lettered,
        s.rate_calls,
        s.rate_deferred
    )
}
