//! A function that cannot start says why in one readable line: each binary (the receiver's and
//! the consumer's own sources, built as bins of this package), run with a bad variable of its
//! own and no Lambda Runtime API to reach, prints the configuration error's documented message
//! (docs/configuration.md, "When a function cannot start") as one ERROR log line, JSON where
//! `AWS_LAMBDA_LOG_FORMAT=JSON` as the template sets it, and exits 1. Never the error's
//! `Debug` form (`Error: BadVar { name: … }`), which `main` returning the error would print.
//! The test-only CA (`HTTPS_TEST_CA_FILE`) too: a bad file stops each function, a good one is
//! logged at WARN.

use std::process::{Command, Output};

use serde_json::Value;

const SOURCES: &str = r#"{"s": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "payload_sha256"}}}"#;

/// Runs `binary` with only `vars` (and the runtime's API pointing nowhere), in `format`.
fn run(binary: &str, format: Option<&str>, vars: &[(&str, &str)]) -> Output {
    let mut command = Command::new(binary);
    command
        .env_clear()
        // Nothing listens there: a function that got as far as the runtime would fail there.
        .env("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9")
        .env("AWS_REGION", "eu-west-1")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .envs(vars.iter().copied());
    if let Some(format) = format {
        command.env("AWS_LAMBDA_LOG_FORMAT", format);
    }
    command.output().expect("the binary runs")
}

/// The function stopped with `message` (the error's Display, whole) as its one ERROR line, in
/// both formats, exit status 1, nothing on stderr (no panic, no `Error: …` of a returned error).
fn stops_saying(binary: &str, vars: &[(&str, &str)], message: &str) {
    for format in [Some("JSON"), None] {
        let out = run(binary, format, vars);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let context = format!("{binary} {format:?}\nstdout:\n{stdout}\nstderr:\n{stderr}");
        assert_eq!(out.status.code(), Some(1), "{context}");
        assert!(stderr.is_empty(), "nothing but the log line: {context}");
        for debug in ["BadVar", "MissingVar", "NotAnObject", "Error: ", "{ name"] {
            assert!(
                !stdout.contains(debug),
                "no Debug form ({debug}): {context}"
            );
        }
        let errors: Vec<&str> = stdout.lines().filter(|l| l.contains("ERROR")).collect();
        assert_eq!(errors.len(), 1, "one line says why: {context}");
        let line = errors[0];
        assert_eq!(
            stdout.lines().last(),
            Some(line),
            "it is the last: {context}"
        );
        match format {
            Some(_) => {
                let json: Value = serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("a JSON log line ({e}): {context}"));
                assert_eq!(json["level"], "ERROR", "{context}");
                assert_eq!(json["fields"]["message"], message, "{context}");
            }
            None => assert!(
                line.trim_end().ends_with(&format!("ERROR {message}")),
                "the message, as it is: {context}"
            ),
        }
    }
}

#[test]
fn the_receiver_that_cannot_start_says_why_in_one_line() {
    let receiver = env!("CARGO_BIN_EXE_chaos-receiver");
    let base = [
        ("LEDGER_TABLE", "ledger"),
        ("QUEUE_URL", "http://q.invalid/q.fifo"),
    ];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut vars = base.to_vec();
        vars.extend_from_slice(extra);
        vars
    };
    stops_saying(
        receiver,
        &with(&[("WEBHOOK_SOURCES", "not json")]),
        "WEBHOOK_SOURCES is not a JSON object: expected ident at line 1 column 2",
    );
    stops_saying(
        receiver,
        &with(&[("WEBHOOK_SOURCES", SOURCES), ("MAX_BODY_BYTES", "0")]),
        "environment variable MAX_BODY_BYTES: must be between 1 and 6291456",
    );
    stops_saying(
        receiver,
        &[
            ("WEBHOOK_SOURCES", SOURCES),
            ("QUEUE_URL", "http://q.invalid/q.fifo"),
        ],
        "environment variable LEDGER_TABLE is required but not set",
    );
}

#[test]
fn the_consumer_that_cannot_start_says_why_in_one_line() {
    let consumer = env!("CARGO_BIN_EXE_chaos-consumer");
    let base = [
        ("LEDGER_TABLE", "ledger"),
        ("FORWARD_URL", "https://records.invalid/hooks"),
        ("WEBHOOK_SOURCES", SOURCES),
    ];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut vars = base.to_vec();
        vars.extend_from_slice(extra);
        vars
    };
    stops_saying(
        consumer,
        &with(&[(
            "WEBHOOK_DESTINATIONS",
            r#"{"d1": {"target": "https://crm.invalid/hooks", "sources": ["s"], "timeout_ms": 0}}"#,
        )]),
        "environment variable WEBHOOK_DESTINATIONS: destination `d1`, field `timeout_ms`: must be between 1 and 900000",
    );
    stops_saying(
        consumer,
        &with(&[("WEBHOOK_DESTINATIONS", "[]")]),
        "environment variable WEBHOOK_DESTINATIONS: not a JSON object of destinations: invalid type: sequence, expected a JSON object at line 1 column 0",
    );
    stops_saying(
        consumer,
        &with(&[("FORWARD_TIMEOUT_MS", "0")]),
        "environment variable FORWARD_TIMEOUT_MS: 0 must be between 1 and 900000",
    );
}

/// A pending source whose secret cannot be read does not stop the receiver: a WARN line names
/// it (`error: source_pending`, never a value) and start-up goes on to the runtime (here,
/// nowhere: that is the one ERROR). The same source not pending stops start-up, naming it.
#[test]
fn a_pending_source_without_its_secret_does_not_stop_the_receiver() {
    let receiver = env!("CARGO_BIN_EXE_chaos-receiver");
    let sources = |pending: bool| {
        format!(
            r#"{{"stripe": {{"preset": "stripe", "pending": {pending}, "signature": {{"secrets": ["secretsmanager:webhook-inbox/stripe"]}}}}}}"#
        )
    };
    let vars = |sources: &str| {
        vec![
            ("LEDGER_TABLE", "ledger".to_owned()),
            ("QUEUE_URL", "http://q.invalid/q.fifo".to_owned()),
            ("WEBHOOK_SOURCES", sources.to_owned()),
            // Secrets Manager unreachable: the secret cannot be read.
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:9".to_owned()),
            ("AWS_MAX_ATTEMPTS", "1".to_owned()),
        ]
    };
    let pending = vars(&sources(true));
    let pending: Vec<(&str, &str)> = pending.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = run(receiver, Some("JSON"), &pending);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let waiting = lines
        .iter()
        .find(|l| l["fields"]["error"] == "source_pending")
        .unwrap_or_else(|| panic!("a source_pending line: {stdout}"));
    assert_eq!(waiting["level"], "WARN", "{stdout}");
    assert_eq!(waiting["fields"]["source"], "stripe", "{stdout}");
    assert!(
        !stdout.contains("field `signature.secrets`"),
        "start-up went on: {stdout}"
    );

    let plain = vars(&sources(false));
    let plain: Vec<(&str, &str)> = plain.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = run(receiver, Some("JSON"), &plain);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(
            "source `stripe`, field `signature.secrets`: `secretsmanager:webhook-inbox/stripe`"
        ),
        "{stdout}"
    );
}

/// The test-only CA (`HTTPS_TEST_CA_FILE`, docs/configuration.md): a file that is missing, not
/// PEM, or more than one certificate stops each function with one line naming the variable
/// and the file; a good one is logged at WARN, loudly, naming it, and start-up goes on (to the
/// runtime, which stops here for want of its own variables).
#[test]
fn the_test_only_ca_stops_start_up_when_bad_and_is_logged_loudly_when_set() {
    let certificates = devstack::testkit::TestCertificates::new();
    let good = certificates.ca_pem_path().to_string_lossy().into_owned();
    let dir = std::env::temp_dir();
    let not_pem = dir.join(devstack::testkit::unique("not-a-ca"));
    std::fs::write(&not_pem, "not a certificate\n").expect("a file");
    let two = dir.join(devstack::testkit::unique("two-cas"));
    std::fs::write(&two, certificates.ca_pem().repeat(2)).expect("a file");
    let (not_pem, two) = (
        not_pem.to_string_lossy().into_owned(),
        two.to_string_lossy().into_owned(),
    );
    let missing = "/nonexistent/test-ca.pem";
    let functions = [
        (
            env!("CARGO_BIN_EXE_chaos-receiver"),
            ("QUEUE_URL", "http://q.invalid/q.fifo"),
        ),
        (
            env!("CARGO_BIN_EXE_chaos-consumer"),
            ("FORWARD_URL", "https://records.invalid/hooks"),
        ),
    ];
    for (binary, own) in functions {
        let with = |ca: &str| {
            vec![
                ("LEDGER_TABLE", "ledger".to_owned()),
                ("WEBHOOK_SOURCES", SOURCES.to_owned()),
                (own.0, own.1.to_owned()),
                ("HTTPS_TEST_CA_FILE", ca.to_owned()),
            ]
        };
        for (ca, message) in [
            (
                missing.to_owned(),
                format!("environment variable HTTPS_TEST_CA_FILE: cannot read `{missing}`: No such file or directory (os error 2)"),
            ),
            (
                not_pem.clone(),
                format!("environment variable HTTPS_TEST_CA_FILE: `{not_pem}` holds no PEM certificate (`-----BEGIN CERTIFICATE-----`)"),
            ),
            (
                two.clone(),
                format!("environment variable HTTPS_TEST_CA_FILE: `{two}` holds 2 certificates; exactly one CA certificate is expected"),
            ),
        ] {
            let vars = with(&ca);
            let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
            stops_saying(binary, &vars, &message);
        }

        let vars = with(&good);
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        warns_of_the_ca_and_goes_on(binary, &vars, &good);
    }
    for file in [not_pem, two] {
        let _ = std::fs::remove_file(file);
    }
}

/// `binary` with these variables (a good `HTTPS_TEST_CA_FILE`, at `path`) logs one WARN line
/// naming the setting and the file, and goes on past its configuration to the runtime.
fn warns_of_the_ca_and_goes_on(binary: &str, vars: &[(&str, &str)], path: &str) {
    let out = run(binary, Some("JSON"), vars);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let warned: Vec<&Value> = lines
        .iter()
        .filter(|l| l["fields"]["setting"] == "HTTPS_TEST_CA_FILE")
        .collect();
    assert_eq!(warned.len(), 1, "one warning: {stdout}");
    assert_eq!(warned[0]["level"], "WARN", "{stdout}");
    assert_eq!(warned[0]["fields"]["path"], path, "{stdout}");
    assert!(
        warned[0]["fields"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("TEST-ONLY SETTING: ")),
        "{stdout}"
    );
    // Start-up went on past the configuration (no ERROR line) to the runtime, which stops on
    // the function name this run does not set.
    assert!(
        lines.iter().all(|l| l["level"] != "ERROR"),
        "no configuration error: {stdout}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Missing AWS_LAMBDA_FUNCTION_NAME"),
        "the runtime was reached: {stderr}"
    );
}
