//! `make bench`: the receiver against a minimal Python receiver built on Powertools
//! idempotency (bench/powertools_handler.py, the comparison, not the product), in one run, on
//! one moto server, under one workload; and the consumer processing what the receiver put on
//! the queue, fed by the driver playing the SQS event source mapping (the peer has none).
//!
//! The functions run as real Lambda functions would: as processes that poll a Runtime API
//! (an emulator in this driver), one invocation at a time per process, one process per
//! concurrent request (per poller, for the consumer). They reach AWS through counting proxies
//! in this driver, one lane per process, so their AWS calls (and new TCP connections) are
//! counted by the same instrument, each classified by service and operation and priced; a
//! call that cannot be fails the run. Their CPU is read from /proc/<pid>/stat (utime + stime)
//! and schedstat of the handler processes alone, before and after.
//!
//! Then: init duration (process start to the first `invocation/next` poll) of each binary
//! and of the Python peer, median of N starts; and the release zips' sizes.
//!
//! ```text
//! cargo run -p bench -- --receiver target/release/receiver \
//!     --consumer target/release/consumer --zip receiver=... --zip consumer=... [--out FILE]
//! ```
//!
//! Modules: [`options`] (command line), [`driver`] (the run in order), [`function`] (the
//! processes), [`runtime`] (Runtime API emulator), [`proxy`] (counting proxy), [`classify`]
//! (each request's service and operation), [`meter`] (its billing quantity), [`http`] (their
//! server), [`procfs`] (CPU, RSS), [`workload`] (deliveries), [`phases`] (one function's
//! measured run), [`consumer`] (the consumer's run), [`mapping`] (the event source mapping
//! the driver plays), [`forward`] (the local system of record), [`init`] (init durations),
//! [`zips`] (zip sizes), [`aws`] (direct AWS), [`bill`] (the bill per million webhooks by
//! line, and its prices), [`report`] (the markdown).

mod aws;
mod bill;
mod classify;
mod consumer;
mod driver;
mod forward;
mod function;
mod init;
mod mapping;
mod meter;
mod options;
mod phases;
mod price;
mod procfs;
mod proxy;
mod report;
mod workload;
mod zips;

use anyhow::Result;
use devstack::runtime::{emulator as runtime, http};

use crate::options::Options;

#[tokio::main]
async fn main() -> Result<()> {
    let o = Options::parse_checked()?;
    let text = driver::run(&o).await?;
    println!("{text}");
    if let Some(out) = &o.out {
        if let Some(dir) = out.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(out, &text)?;
        eprintln!("bench: written to {}", out.display());
    }
    Ok(())
}
