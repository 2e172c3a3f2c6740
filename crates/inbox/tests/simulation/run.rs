//! One seed (the world, the real handlers, the schedule) and many seeds across the cores,
//! stopping at the first failure, which is run again with its trace for the report.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use inbox::breaker::MemoryBoard;
use inbox::clock::ManualClock;
use inbox::config::{AwsSecretResolver, SourceSpecs};
use inbox::consumer::{Consumer, ConsumerSettings};
use inbox::destination::MemoryRate;
use inbox::ledger::memory::MemoryLedger;
use inbox::metrics::{tally, Metric, Metrics};
use inbox::receiver::{Receiver, ReceiverSettings};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::adapters::{SimArchive, SimProcessor, SimQueue, SimRedelivery};
use crate::destinations::{self, SimDestinations, SimRate, DESTINATIONS};
use crate::faults::{Mutant, RATES};
use crate::ledger_adapter::SimLedger;
use crate::params::{
    sources_json, MAX_FAILURES, MAX_RECEIVE, QUEUE_RETENTION_MS, ROUTED_QUEUE_RETENTION_MS,
    SHORT_VISIBILITY_MS, START_MS, TEMPLATE_MAX_RECEIVE, VISIBILITY_MS,
};
use crate::queue_model::QueueModel;
use crate::senders::make_senders;
use crate::sim::Sim;
use crate::stats::Stats;
use crate::world::{lock, EventInfo, World};
use inbox::route::Routes;

pub(crate) struct Outcome {
    pub(crate) seed: u64,
    pub(crate) stats: Stats,
    pub(crate) violations: Vec<String>,
    pub(crate) trace: Vec<String>,
}

#[allow(
    clippy::too_many_lines,
    reason = "one seed's run: set up, drive, drain, check the invariants"
)]
pub(crate) fn run_seed(seed: u64, mutant: Mutant, tracing: bool) -> Outcome {
    let mut rng = StdRng::seed_from_u64(seed);
    let clock = ManualClock::at_ms(START_MS);
    let n_singles = rng.random_range(3..=8);
    // Half the seeds route every event to two destinations (the mutants of that path, all).
    let routed = mutant.routed_only() || seed % 2 == 1;
    let senders = make_senders(&mut rng, n_singles);
    let n_events = senders
        .iter()
        .flat_map(|s| s.keys.iter())
        .collect::<HashSet<_>>()
        .len();
    let n_batches = senders.iter().filter(|s| s.batch).count();
    let short_visibility = rng.random_bool(0.25);
    let visibility_ms = if short_visibility {
        SHORT_VISIBILITY_MS
    } else {
        VISIBILITY_MS
    };
    let plan = plan(seed);
    let max_receive = if routed && mutant != Mutant::QueueBoundBelowHolds {
        TEMPLATE_MAX_RECEIVE
    } else {
        MAX_RECEIVE
    };
    let retention_ms = if routed {
        ROUTED_QUEUE_RETENTION_MS
    } else {
        QUEUE_RETENTION_MS
    };
    let world = Arc::new(Mutex::new(World {
        clock: clock.clone(),
        tracing,
        faults_on: true,
        rates: RATES,
        mutant,
        frng: StdRng::seed_from_u64(seed ^ 0x5eed_fa17),
        queue: QueueModel::new(visibility_ms, max_receive, retention_ms),
        events: senders
            .iter()
            .flat_map(|s| s.events.iter())
            .map(|(key, body)| (key.clone(), EventInfo { body: body.clone() }))
            .collect(),
        destinations: if routed {
            DESTINATIONS.to_vec()
        } else {
            Vec::new()
        },
        runs: HashMap::new(),
        completions: HashMap::new(),
        in_effect: HashMap::new(),
        next_effect: 0,
        archived: HashSet::new(),
        forgotten_reruns: HashSet::new(),
        current: None,
        last_call: HashMap::new(),
        last_call_of_dead: None,
        violations: Vec::new(),
        trace: Vec::new(),
        stats: Stats {
            seeds: 1,
            events: n_events as u64,
            short_visibility: u64::from(short_visibility),
            recovering_seeds: u64::from(
                routed && matches!(plan.mode, destinations::Mode::Recovers { .. }),
            ),
            never_seeds: u64::from(routed && plan.mode == destinations::Mode::Never),
            ..Stats::default()
        },
        mode: if routed {
            plan.mode
        } else {
            destinations::Mode::Flaky
        },
        healed: false,
        rate_windows: Default::default(),
        held_events: HashSet::new(),
        board_reads: HashMap::new(),
        b_rule: inbox::breaker::Rule {
            failures: plan.failures,
            cool_down: std::time::Duration::from_secs(plan.cool_down_s),
        },
    }));
    let ledger = Arc::new(MemoryLedger::new());
    let store = SimLedger {
        inner: ledger.clone(),
        world: world.clone(),
    };
    let sources = futures::executor::block_on(
        SourceSpecs::parse(&sources_json())
            .expect("simulation sources parse")
            .resolve(&AwsSecretResolver::env_only()),
    )
    .expect("no secrets to resolve");
    let (rx_metrics, _) = Metrics::memory("receiver");
    let (cx_metrics, cx_lines) = Metrics::memory("consumer");
    let rx = Receiver::new(
        sources,
        store.clone(),
        SimQueue {
            world: world.clone(),
        },
        clock.clone(),
        // The replay cache as deployed (10,000 keys, five minutes of the simulation's clock).
        ReceiverSettings::default().with_replay_cache(10_000),
        rx_metrics,
    );
    let specs = SourceSpecs::parse(&sources_json()).expect("simulation sources parse");
    let routes = if routed {
        destinations::routes(&specs, &plan)
    } else {
        Routes::none()
    };
    let board = MemoryBoard::default();
    let rates = destinations::rate_limits(
        &routes,
        SimRate {
            inner: MemoryRate::new(),
            world: world.clone(),
        },
        &clock,
    );
    let cx = Consumer::new(
        specs,
        store,
        SimProcessor {
            world: world.clone(),
        },
        clock.clone(),
        ConsumerSettings {
            max_concurrent_groups: rng.random_range(1..=3),
            max_failures: MAX_FAILURES,
            // No retention guard where the delays here (at most a minute) never near the
            // queue's retention; routed seeds have the guard, their retention hours long.
            queue_retention_seconds: routed
                .then(|| u64::try_from(retention_ms / 1000).unwrap_or(u64::MAX)),
            // Every source archives: the archive step, its faults, and the invariant that no
            // side effect runs on an envelope the archive does not hold.
            archive_bodies: true,
        },
        cx_metrics,
    )
    .with_redelivery(SimRedelivery {
        world: world.clone(),
        ledger: ledger.clone(),
    })
    .with_archive(SimArchive {
        world: world.clone(),
    })
    .with_destinations(
        routes,
        SimDestinations {
            world: world.clone(),
            board: board.clone(),
            rates,
        },
    );
    let mut sim = Sim {
        seed,
        rng,
        rates: RATES,
        world: world.clone(),
        clock,
        ledger,
        rx: &rx,
        cx: &cx,
        senders,
        tasks: Vec::new(),
        invocations: 0,
        board,
    };
    sim.log(format!(
        "seed {}: {n_events} events ({n_batches} batch requests), visibility timeout {} s",
        sim.seed,
        visibility_ms / 1000
    ));
    if routed {
        sim.log(format!("destinations: {plan:?}"));
    }
    sim.main_phase();
    if !sim.failed() {
        sim.drain();
    }
    if !sim.failed() {
        sim.final_checks();
    }
    let accepted = sim.event_keys().iter().filter(|(_, a)| *a).count() as u64;
    drop(sim);
    let lines = cx_lines.lock().map(|l| l.clone()).unwrap_or_default();
    let mut w = lock(&world);
    w.stats.accepted = accepted;
    w.stats.lease_lost = ["gh", "shop", "hub"]
        .iter()
        .map(|s| tally(&lines, s, Metric::LeaseLost))
        .sum();
    // Every opening and closing the consumer learnt of is its metric (docs/operations.md).
    let counted = (
        breaker_metric(&lines, Metric::BreakerOpened),
        breaker_metric(&lines, Metric::BreakerClosed),
    );
    let told = (w.stats.opened_told, w.stats.closed_told);
    if counted != told && w.violations.is_empty() {
        w.violation(format!(
            "METRICS: BreakerOpened and BreakerClosed counted {counted:?}, the consumer was told of {told:?}"
        ));
    }
    Outcome {
        seed,
        stats: w.stats.clone(),
        violations: std::mem::take(&mut w.violations),
        trace: std::mem::take(&mut w.trace),
    }
}

/// The breakers' `metric` in the consumer's metric lines, every destination's.
fn breaker_metric(lines: &[String], metric: Metric) -> u64 {
    lines
        .iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v.get("destination").is_some())
        .filter_map(|v| v.get(metric.name()).and_then(serde_json::Value::as_u64))
        .sum()
}

/// The seed's destinations (drawn from a generator of their own, so that the rest of the
/// seed's run does not depend on them): `a`'s limit of 1 or 2 calls a second; `b`'s breaker
/// opening at 2 to 4 failures with a cool-down of 10 to 60 s; `b` flaky in 3 seeds of 8,
/// down then recovering in 3 of 8, down until the operator resumes it in 2 of 8.
fn plan(seed: u64) -> destinations::Plan {
    let mut rng = StdRng::seed_from_u64(seed ^ 0xb4ea_c3e5);
    let mode = match rng.random_range(0..8) {
        0..=2 => destinations::Mode::Flaky,
        3..=5 => destinations::Mode::Recovers {
            heals_at: START_MS + rng.random_range(3 * 60_000..25 * 60_000),
        },
        _ => destinations::Mode::Never,
    };
    destinations::Plan {
        a_max: rng.random_range(1..=2),
        failures: rng.random_range(2..=4),
        cool_down_s: rng.random_range(10..=60),
        mode,
    }
}

/// Runs seeds on every core; stops at the first failing seed.
pub(crate) fn run_seeds(seeds: &[u64], mutant: Mutant) -> (Stats, Option<Outcome>) {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(seeds.len())
        .max(1);
    let stop = AtomicBool::new(false);
    let results: Vec<(Stats, Option<Outcome>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let stop = &stop;
                scope.spawn(move || {
                    let mut total = Stats::default();
                    for &seed in seeds.iter().skip(t).step_by(threads) {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let out = run_seed(seed, mutant, false);
                        total.add(&out.stats);
                        if !out.violations.is_empty() {
                            stop.store(true, Ordering::Relaxed);
                            // The same seed again, with its trace: the run is a function
                            // of the seed, so it fails the same way.
                            return (total, Some(run_seed(seed, mutant, true)));
                        }
                    }
                    (total, None)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a simulation thread"))
            .collect()
    });
    let mut total = Stats::default();
    let mut failure: Option<Outcome> = None;
    for (stats, fail) in results {
        total.add(&stats);
        if let Some(f) = fail {
            if failure.as_ref().is_none_or(|g| f.seed < g.seed) {
                failure = Some(f);
            }
        }
    }
    (total, failure)
}

pub(crate) fn report(out: &Outcome) -> String {
    let tail = out.trace.len().saturating_sub(400);
    format!(
        "seed {} broke the invariant:\n  {}\n\ntrace{}:\n{}\n\nreplay: SIM_SEED={} cargo test -p inbox --test simulation -- --nocapture",
        out.seed,
        out.violations.join("\n  "),
        if tail > 0 { format!(" (last 400 of {} lines)", out.trace.len()) } else { String::new() },
        out.trace[tail..].join("\n"),
        out.seed
    )
}
