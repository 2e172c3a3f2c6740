//! Init duration: from a process's start to its first `invocation/next` poll, N starts per
//! function, and their median, min and max.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::function::Function;
use crate::runtime::Emulator;

/// The init durations of each of `functions`, `runs` starts each, by name.
pub async fn init_durations_of(
    functions: &[Function],
    runs: usize,
) -> Result<Vec<(String, Vec<Duration>)>> {
    let mut inits = Vec::new();
    for f in functions {
        eprintln!("bench: init duration of {} ({} starts)", f.name, runs);
        inits.push((f.name.to_owned(), init_durations(f, runs).await?));
    }
    Ok(inits)
}

/// `runs` starts of `f`, one at a time, each on a fresh emulator.
async fn init_durations(f: &Function, runs: usize) -> Result<Vec<Duration>> {
    let mut out = Vec::new();
    for _ in 0..runs {
        let emu = Emulator::start().await?;
        let started = Instant::now();
        let child = f.spawn(&emu.address())?;
        let polled = emu.polled.clone();
        tokio::time::timeout(Duration::from_secs(30), polled.notified())
            .await
            .with_context(|| format!("{}: no poll within 30 s", f.name))?;
        let first = emu
            .first_poll
            .lock()
            .expect("first")
            .context("first poll")?;
        out.push(first - started);
        drop(child);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(out)
}

/// (median, min, max) of non-empty `d`, in milliseconds.
pub fn median_ms(d: &[Duration]) -> (f64, f64, f64) {
    let mut ms: Vec<f64> = d.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
    ms.sort_by(|a, b| a.total_cmp(b));
    let mid = if ms.len() % 2 == 1 {
        ms[ms.len() / 2]
    } else {
        (ms[ms.len() / 2 - 1] + ms[ms.len() / 2]) / 2.0
    };
    (mid, ms[0], ms[ms.len() - 1])
}
