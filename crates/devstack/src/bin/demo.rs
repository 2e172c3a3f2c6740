//! `make demo`: the inbox end to end on this machine (see `devstack::demo`).
//!
//! ```text
//! demo [run] [--events N] [--copies N] [--concurrency N] [--instances N] [--in-progress-wait-ms MS]
//! demo serve [--address A] [--port P]   # the stack, waiting for `cargo lambda invoke`
//! demo check-events                     # every events/*.json through the emulator
//! ```
//! Ctrl-C (or SIGTERM) stops everything it started.

use std::process::ExitCode;

use devstack::demo;

const USAGE: &str = "usage: demo [run] [--events N] [--copies N] [--concurrency N] [--instances N] [--in-progress-wait-ms MS]
       demo serve [--address A] [--port P] [--instances N]
       demo check-events";

fn number<T: std::str::FromStr>(
    args: &mut impl Iterator<Item = String>,
    flag: &str,
) -> Result<T, String> {
    args.next()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("{flag} needs a number\n{USAGE}"))
}

enum Mode {
    Run(demo::Options),
    Serve {
        address: String,
        port: u16,
        instances: u32,
    },
    CheckEvents,
}

fn parse() -> Result<Mode, String> {
    let mut args = std::env::args().skip(1).peekable();
    let mode = match args.peek().map(String::as_str) {
        Some("serve") | Some("check-events") | Some("run") => args.next(),
        _ => None,
    };
    let mut opts = demo::Options::default();
    let (mut address, mut port, mut instances) = ("::".to_owned(), 9000u16, 1u32);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--events" => opts.storm_events = number(&mut args, &arg)?,
            "--copies" => opts.storm_copies = number(&mut args, &arg)?,
            "--concurrency" => opts.concurrency = number(&mut args, &arg)?,
            "--instances" => {
                opts.instances = number(&mut args, &arg)?;
                instances = opts.instances;
            }
            "--in-progress-wait-ms" => opts.in_progress_wait_ms = Some(number(&mut args, &arg)?),
            "--address" => address = args.next().ok_or(USAGE)?,
            "--port" => port = number(&mut args, &arg)?,
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    Ok(match mode.as_deref() {
        Some("serve") => Mode::Serve {
            address,
            port,
            instances,
        },
        Some("check-events") => Mode::CheckEvents,
        _ => Mode::Run(opts),
    })
}

async fn main_mode(mode: Mode) -> ExitCode {
    match mode {
        Mode::Run(opts) => match demo::run(&opts).await {
            Ok(report) => {
                println!("{report}");
                if report.ok() {
                    ExitCode::SUCCESS
                } else {
                    eprintln!("demo: FAILED: side effects do not match the accepted events");
                    ExitCode::FAILURE
                }
            }
            Err(e) => {
                eprintln!("demo: {e:#}");
                ExitCode::FAILURE
            }
        },
        Mode::Serve {
            address,
            port,
            instances,
        } => match demo::serve(&address, port, instances).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("demo serve: {e:#}");
                ExitCode::FAILURE
            }
        },
        Mode::CheckEvents => match demo::check_events().await {
            Ok(checked) => {
                let mut all = true;
                println!("\n  {:<28} {:<4} got", "events/", "ok");
                for c in &checked {
                    all &= c.ok;
                    println!(
                        "  {:<28} {:<4} {}",
                        c.file,
                        if c.ok { "yes" } else { "NO" },
                        c.got
                    );
                    if !c.ok {
                        println!("  {:<28} {:<4} expected {}", "", "", c.expected);
                    }
                }
                if all {
                    println!(
                        "\n  all {} events answered as the README says",
                        checked.len()
                    );
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                }
            }
            Err(e) => {
                eprintln!("demo check-events: {e:#}");
                ExitCode::FAILURE
            }
        },
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let mode = match parse() {
        Ok(m) => m,
        Err(usage) => {
            eprintln!("{usage}");
            return ExitCode::from(2);
        }
    };
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("demo: cannot listen for SIGTERM: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Dropping the running future drops the stack: `cargo lambda watch`'s process group,
    // the system of record and moto are stopped before the process exits.
    tokio::select! {
        code = main_mode(mode) => code,
        _ = tokio::signal::ctrl_c() => {
            eprintln!("\ndemo: interrupted; stopping cargo lambda watch, the system of record and moto");
            ExitCode::from(130)
        }
        _ = term.recv() => {
            eprintln!("\ndemo: terminated; stopping cargo lambda watch, the system of record and moto");
            ExitCode::from(143)
        }
    }
}
