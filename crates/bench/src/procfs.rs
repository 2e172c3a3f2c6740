//! CPU and memory of the handler processes, read from /proc: utime + stime (clock ticks),
//! schedstat (nanoseconds, live threads) and the peak resident set.

use anyhow::{Context, Result};

/// Clock ticks a second (`getconf CLK_TCK`, else 100).
pub fn clock_ticks() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

/// utime + stime of a process (all its threads, live or exited), in clock ticks.
fn cpu_ticks(pid: u32) -> Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after = stat.rsplit_once(')').context("stat")?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // After the command: state is field 3, utime 14, stime 15.
    let field =
        |i: usize| -> Result<u64> { Ok(fields.get(i).context("stat: too few fields")?.parse()?) };
    Ok(field(11)? + field(12)?)
}

/// Time on CPU of a process's live threads, nanoseconds (/proc/<pid>/task/*/schedstat):
/// exact, where utime + stime are sampled at the clock tick.
fn cpu_sched_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// Peak resident set (VmHWM), KiB.
pub fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// CPU seconds (utime + stime) of `pids`, `ticks` clock ticks a second.
pub fn cpu_secs(pids: &[u32], ticks: f64) -> Result<f64> {
    let mut sum = 0;
    for pid in pids {
        sum += cpu_ticks(*pid)?;
    }
    Ok(sum as f64 / ticks)
}

/// CPU seconds of `pids`' live threads from schedstat.
pub fn sched_secs(pids: &[u32]) -> f64 {
    pids.iter().map(|p| cpu_sched_ns(*p)).sum::<u64>() as f64 / 1e9
}
