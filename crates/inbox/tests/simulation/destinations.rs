//! Destinations in the simulation: in half the seeds every source is routed to two
//! destinations, `a` and `b`; `b` also fails and throttles at random, beyond the faults every
//! side effect meets. Each (event, destination) pair runs the simulated side effect under its
//! own ledger key (`<key> to:<destination>`), so the checks that hold per key (no run after a
//! remembered completion, no overlap, the same body) hold per pair, and the final check asks
//! every pair of every accepted event to have completed exactly once.

use std::time::Duration;

use inbox::consumer::{Destinations, Job, Outcome, ProcessError, Processor};
use inbox::route::{destination_key, Routes};
use inbox::SourceSpecs;
use rand::Rng;

use crate::adapters::SimProcessor;
use crate::world::{lock, step, Shared};

/// The routed seeds' destinations.
pub(crate) const DESTINATIONS: [&str; 2] = ["a", "b"];

/// Every source to both destinations.
pub(crate) fn routes(sources: &SourceSpecs) -> Routes {
    Routes::parse(
        r#"{"a": {"target": "https://a.example/in", "sources": ["gh", "shop", "hub"]},
            "b": {"target": "https://b.example/in", "sources": ["gh", "shop", "hub"]}}"#,
        sources,
    )
    .expect("simulation destinations parse")
}

/// The event's key of a pair's key (an event key holds no space).
pub(crate) fn event_of(key: &str) -> &str {
    key.split(' ').next().unwrap_or(key)
}

pub(crate) struct SimDestinations {
    pub(crate) world: Shared,
}

impl Destinations for SimDestinations {
    async fn deliver(&self, destination: &str, job: &Job) -> Outcome {
        let mut call = job.clone();
        call.key = destination_key(&job.key, destination);
        if destination == "b" {
            step().await;
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
}
