use std::sync::{Mutex, PoisonError};

use super::*;
use crate::redrive::Method;
use crate::stack::DEFAULT_STACK;
use crate::why::DEFAULT_PEEK_SECONDS;
use clap::error::ErrorKind::{
    ArgumentConflict, InvalidSubcommand, InvalidValue, MissingRequiredArgument, UnknownArgument,
    ValueValidation,
};
use std::path::PathBuf;

/// The variables the flags fall back to. Only this module's tests touch them, one test at a
/// time; nothing else in this test binary reads the environment but through `std::env`.
const VARS: [&str; 5] = [
    "LEDGER_TABLE",
    "QUEUE_URL",
    "DLQ_URL",
    "FORWARD_SIGNING_SECRET",
    "PAYLOAD_BUCKET",
];
static ENV: Mutex<()> = Mutex::new(());

fn clear_vars() {
    for name in VARS {
        std::env::remove_var(name);
    }
}

/// Parses `args` with exactly `env` of [`VARS`] set.
fn parse(args: &[&str], env: &[(&str, &str)]) -> Result<Option<Command>, clap::Error> {
    let _one_at_a_time = ENV.lock().unwrap_or_else(PoisonError::into_inner);
    clear_vars();
    for (name, value) in env {
        std::env::set_var(name, value);
    }
    let parsed = Cli::try_parse_from(std::iter::once("inbox-ops").chain(args.iter().copied()));
    clear_vars();
    parsed.map(|cli| cli.command)
}

/// What clap refuses `args` with (the kind of error, so a refusal for another reason fails).
fn refused(args: &[&str], env: &[(&str, &str)]) -> clap::error::ErrorKind {
    match parse(args, env) {
        Ok(parsed) => panic!("{args:?} parsed: {parsed:?}"),
        Err(e) => e.kind(),
    }
}

#[test]
#[allow(clippy::too_many_lines, reason = "one assertion per command line")]
fn parses_each_command_with_env_fallbacks() {
    let env = [("LEDGER_TABLE", "t-env"), ("QUEUE_URL", "q-env")];
    assert_eq!(
        parse(&["why", "--dlq", "d"], &env).unwrap(),
        Some(Command::Why(WhyArgs {
            stack: DEFAULT_STACK.into(),
            dlq: Some("d".into()),
            table: Some("t-env".into()),
            json: false,
            peek: DEFAULT_PEEK_SECONDS
        }))
    );
    assert_eq!(
        parse(
            &["redrive", "--dlq", "d", "--method", "manual", "--wait", "5"],
            &env
        )
        .unwrap(),
        Some(Command::Redrive(RedriveArgs {
            stack: DEFAULT_STACK.into(),
            dlq: Some("d".into()),
            queue: Some("q-env".into()),
            method: Method::Manual,
            wait: 5
        }))
    );
    assert_eq!(
        parse(&["lookup", "--table", "t", "github:abc"], &env).unwrap(),
        Some(Command::Lookup(LookupArgs {
            stack: DEFAULT_STACK.into(),
            table: Some("t".into()),
            key: "github:abc".into(),
            body: false,
            bucket: None
        }))
    );
    assert_eq!(
        parse(
            &["lookup", "--table", "t", "--body", "github:abc"],
            &[("PAYLOAD_BUCKET", "b")]
        )
        .unwrap(),
        Some(Command::Lookup(LookupArgs {
            stack: DEFAULT_STACK.into(),
            table: Some("t".into()),
            key: "github:abc".into(),
            body: true,
            bucket: Some("b".into())
        }))
    );
    let replay_env = [
        ("LEDGER_TABLE", "t"),
        ("QUEUE_URL", "q"),
        ("PAYLOAD_BUCKET", "b"),
    ];
    assert_eq!(
        parse(
            &[
                "replay",
                "--source",
                "github",
                "--from",
                "2026-12-03T13:00:00Z",
                "--to",
                "2026-12-03T14:00:00Z",
                "--status",
                "completed",
                "--dry-run",
                "--rate",
                "5/s"
            ],
            &replay_env
        )
        .unwrap(),
        Some(Command::Replay(ReplayArgs {
            key: None,
            source: Some("github".into()),
            from: Some(1_796_302_800_000),
            to: Some(1_796_306_400_000),
            archive_lag: 1,
            status: StatusFilter::Completed,
            dry_run: true,
            rate: 5,
            replay_id: None,
            destination: None,
            bucket: Some("b".into()),
            table: Some("t".into()),
            queue: Some("q".into()),
            stack: DEFAULT_STACK.into()
        }))
    );
    for (bad, kind) in [
        (&["replay"][..], MissingRequiredArgument),
        (&["replay", "--key", "k", "--source", "s"], ArgumentConflict),
        (
            &["replay", "--source", "s", "--from", "5"],
            MissingRequiredArgument,
        ),
        (&["replay", "--key", "k", "--status", "done"], InvalidValue),
        (&["replay", "--key", "k", "--rate", "0/s"], ValueValidation),
    ] {
        assert_eq!(refused(bad, &replay_env), kind, "{bad:?}");
    }
    assert_eq!(
        parse(&["lookup", "--body", "--stack", "prod", "k"], &[]).unwrap(),
        Some(Command::Lookup(LookupArgs {
            stack: "prod".into(),
            table: None,
            key: "k".into(),
            body: true,
            bucket: None
        })),
        "the table and the bucket from the stack"
    );
    assert_eq!(parse(&[], &env).unwrap(), None, "no command: the help");
    assert_eq!(
        parse(
            &[
                "audit",
                "--sources",
                "s.json",
                "--template",
                "t.yaml",
                "--json"
            ],
            &[]
        )
        .unwrap(),
        Some(Command::Audit(AuditArgs {
            sources_file: Some("s.json".into()),
            template: Some("t.yaml".into()),
            json: true,
            forward_signing_secret: None,
            destinations_file: None,
            forward_url: None,
        }))
    );
}

#[test]
fn preflight_reads_the_files_here_unless_told() {
    assert_eq!(
        parse(&["preflight"], &[]).unwrap(),
        Some(Command::Preflight(PreflightArgs {
            template: "template.yaml".into(),
            config: "samconfig.toml".into(),
            stack: None
        }))
    );
    assert_eq!(
        parse(
            &[
                "preflight",
                "--template",
                "t.yaml",
                "--config",
                "c.toml",
                "--stack",
                "s"
            ],
            &[]
        )
        .unwrap(),
        Some(Command::Preflight(PreflightArgs {
            template: "t.yaml".into(),
            config: "c.toml".into(),
            stack: Some("s".into())
        }))
    );
    assert_eq!(refused(&["preflight", "--stack", ""], &[]), InvalidValue);
}

#[test]
fn refuses_what_it_cannot_run() {
    assert_eq!(
        refused(&["why", "--table", "t"], &[("DLQ_URL", "")]),
        InvalidValue,
        "an empty variable is no value"
    );
    assert_eq!(refused(&["why", "--stack", ""], &[]), InvalidValue);
    assert_eq!(
        refused(&["lookup", "--table", "t"], &[]),
        MissingRequiredArgument
    );
    assert_eq!(
        refused(&["lookup", "--table", "t", "a", "b"], &[]),
        UnknownArgument
    );
    assert_eq!(
        refused(
            &["redrive", "--dlq", "d", "--queue", "q", "--method", "fast"],
            &[]
        ),
        InvalidValue
    );
    assert_eq!(refused(&["frobnicate"], &[]), InvalidSubcommand);
    assert_eq!(
        refused(&["why", "--dlq", "d", "--table", "t", "--colour"], &[]),
        UnknownArgument
    );
    for peek in ["0", "43201", "x"] {
        assert_eq!(
            refused(&["why", "--dlq", "d", "--table", "t", "--peek", peek], &[]),
            ValueValidation,
            "--peek {peek}"
        );
    }
    assert_eq!(refused(&["audit", "--sources"], &[]), InvalidValue);
    assert_eq!(
        parse(&["pause"], &[]).unwrap(),
        Some(Command::Pause(PauseArgs {
            mapping: MappingArgs::default(),
            wait: 60,
            destination: None,
            table: None,
        })),
        "the default stack's mapping (esm::Locator)"
    );
    assert_eq!(
        refused(&["resume", "--uuid", "u", "--stack", "s"], &[]),
        ArgumentConflict,
        "one way to find it"
    );
    assert_eq!(refused(&["status", "--function", ""], &[]), InvalidValue);
}

#[test]
fn pause_resume_and_status_find_the_mapping_one_way() {
    let stack = MappingArgs {
        stack: Some("webhook-inbox".into()),
        ..MappingArgs::default()
    };
    assert_eq!(
        parse(&["pause", "--stack", "webhook-inbox"], &[]).unwrap(),
        Some(Command::Pause(PauseArgs {
            mapping: stack.clone(),
            wait: 60,
            destination: None,
            table: None,
        }))
    );
    assert_eq!(
        parse(&["resume", "--uuid", "u-1", "--wait", "5"], &[]).unwrap(),
        Some(Command::Resume(PauseArgs {
            mapping: MappingArgs {
                uuid: Some("u-1".into()),
                ..MappingArgs::default()
            },
            wait: 5,
            destination: None,
            table: None,
        }))
    );
    assert_eq!(
        parse(
            &[
                "pause",
                "--destination",
                "billing",
                "--table",
                "t",
                "--stack",
                "s"
            ],
            &[]
        )
        .unwrap(),
        Some(Command::Pause(PauseArgs {
            mapping: MappingArgs {
                stack: Some("s".into()),
                ..MappingArgs::default()
            },
            wait: 60,
            destination: Some("billing".into()),
            table: Some("t".into()),
        }))
    );
    // A destination's switch is on the stack's table, not a mapping's.
    assert_eq!(
        refused(&["pause", "--destination", "b", "--uuid", "u"], &[]),
        ArgumentConflict
    );
    assert_eq!(
        refused(&["resume", "--table", "t"], &[]),
        MissingRequiredArgument
    );
    assert_eq!(
        parse(
            &["status", "--function", "consumer", "--json"],
            &[("QUEUE_URL", "q")]
        )
        .unwrap(),
        Some(Command::Status(StatusArgs {
            mapping: MappingArgs {
                function: Some("consumer".into()),
                ..MappingArgs::default()
            },
            queue: Some("q".into()),
            json: true
        }))
    );
}

#[test]
fn the_help_lists_every_command_and_its_variables() {
    Cli::command().debug_assert();
    let help = Cli::command().render_long_help().to_string();
    for command in [
        "preflight",
        "audit",
        "why",
        "lookup",
        "redrive",
        "pause",
        "resume",
        "status",
        "replay",
        "console",
        "handshake",
    ] {
        assert!(help.contains(command), "{help}");
    }
    assert_eq!(
        parse(
            &[
                "handshake",
                "open",
                "asana",
                "--minutes",
                "5",
                "--table",
                "t"
            ],
            &[]
        )
        .unwrap(),
        Some(Command::Handshake(HandshakeCommand::Open(
            HandshakeOpenArgs {
                source: "asana".into(),
                minutes: 5,
                stack: DEFAULT_STACK.into(),
                table: Some("t".into()),
            }
        )))
    );
    let why = Cli::command()
        .find_subcommand_mut("why")
        .expect("why")
        .render_long_help()
        .to_string();
    assert!(
        why.contains("env: DLQ_URL") && why.contains("env: LEDGER_TABLE"),
        "{why}"
    );
}

#[test]
fn secret_set_takes_the_value_one_way_and_never_from_a_bare_argument() {
    assert_eq!(
        parse(&["secret", "set", "stripe", "--from-file", "s.txt"], &[]).unwrap(),
        Some(Command::Secret(SecretCommand::Set(SecretSetArgs {
            source: "stripe".into(),
            stack: DEFAULT_STACK.into(),
            sources_file: None,
            position: None,
            from_file: Some(PathBuf::from("s.txt")),
            value: None,
        })))
    );
    assert!(
        parse(
            &[
                "secret",
                "set",
                "stripe",
                "--from-file",
                "s.txt",
                "--value",
                "v"
            ],
            &[]
        )
        .is_err(),
        "one source of the value"
    );
    assert!(
        parse(&["secret", "set", "stripe", "whsec_abc"], &[]).is_err(),
        "a value is never a bare argument"
    );
    assert!(
        parse(&["secret", "set"], &[]).is_err(),
        "the source is needed"
    );
    let help = Cli::command().render_long_help().to_string();
    assert!(help.contains("secret"), "{help}");
}
