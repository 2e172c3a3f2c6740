//! `make demo`: the inbox end to end on this machine (see `demo`).
//!
//! ```text
//! demo [run] [--events N] [--copies N] [--concurrency N] [--instances N] [--console]
//! demo serve [--address A] [--port P] [--instances N]   # the stack and its console, waiting for `cargo lambda invoke`
//! demo check-events                                     # every events/*.json through the emulator
//! ```
//! Ctrl-C (or SIGTERM) stops everything it started.

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

/// The inbox end to end on this machine: moto, both functions under `cargo lambda watch`, a
/// system of record, and senders driving it over HTTP.
#[derive(Parser, Debug)]
#[command(name = "demo", args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// `demo` alone is `demo run`.
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The demo: sample webhooks, a retry storm, crashes and late redeliveries, then the count
    /// (the default).
    Run(RunArgs),
    /// The stack on a fixed address, waiting for `cargo lambda invoke --data-file events/…`.
    Serve(ServeArgs),
    /// Every file in `events/` invoked through the emulator and checked against its expected
    /// answer.
    CheckEvents,
}

#[derive(Args, Debug)]
struct RunArgs {
    /// Distinct events in the retry storm.
    #[arg(long = "events", value_name = "N", default_value_t = demo::Options::default().storm_events)]
    storm_events: usize,
    /// Deliveries of each storm event.
    #[arg(long = "copies", value_name = "N", default_value_t = demo::Options::default().storm_copies)]
    storm_copies: usize,
    /// Senders at once.
    #[arg(long, value_name = "N", default_value_t = demo::Options::default().concurrency)]
    concurrency: usize,
    /// Instances per function (`cargo lambda watch --concurrency`).
    #[arg(long, value_name = "N", default_value_t = demo::Options::default().instances)]
    instances: u32,
    /// After the count, serve `inbox-ops console` on the demo's stack (the run's figures
    /// included) until Ctrl-C.
    #[arg(long)]
    console: bool,
}

impl RunArgs {
    fn options(&self) -> demo::Options {
        demo::Options {
            storm_events: self.storm_events,
            storm_copies: self.storm_copies,
            concurrency: self.concurrency,
            instances: self.instances,
            console: self.console,
            ..demo::Options::default()
        }
    }
}

#[derive(Args, Debug)]
struct ServeArgs {
    /// Where `cargo lambda watch` listens (`::`: every interface).
    #[arg(long, value_name = "A", default_value = "::")]
    address: String,
    /// Its port (`cargo lambda invoke`'s default is 9000).
    #[arg(long, value_name = "P", default_value_t = 9000)]
    port: u16,
    /// Instances per function.
    #[arg(long, value_name = "N", default_value_t = 1)]
    instances: u32,
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

impl Cli {
    fn mode(self) -> Mode {
        match self.command {
            None => Mode::Run(self.run.options()),
            Some(Command::Run(run)) => Mode::Run(run.options()),
            Some(Command::Serve(s)) => Mode::Serve {
                address: s.address,
                port: s.port,
                instances: s.instances,
            },
            Some(Command::CheckEvents) => Mode::CheckEvents,
        }
    }
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
    let mode = Cli::parse().mode();
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
