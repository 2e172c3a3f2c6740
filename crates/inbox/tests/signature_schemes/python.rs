//! What the real sender libraries produce (`tests/python/sign.py`, run with the workspace's
//! `.venv` Python or `INBOX_PYTHON`): each signature verifies, and fails with the wrong secret
//! or a tampered body.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use http::HeaderMap;
use inbox::signature::{Scheme, SignatureError};

use crate::fixtures::{
    verifier, BINARY_BODY, ID, NOW, RAW_OTHER, RAW_SECRET, STRIPE_OTHER, STRIPE_SECRET, SW_OTHER,
    SW_SECRET,
};
use crate::signer::{header_text, insert};

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> PathBuf {
    let python = std::env::var_os("INBOX_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".venv/bin/python"));
    assert!(
        python.exists(),
        "Python not found at {}: create the venv with `python3 -m venv .venv && \
         .venv/bin/pip install -r requirements-dev.txt` in the workspace root, or set \
         INBOX_PYTHON to an interpreter that has standardwebhooks and stripe installed",
        python.display()
    );
    python
}

struct PySigned {
    headers: HeaderMap,
    package: String,
}

/// Runs sign.py; the body goes through a file when `via_file`, else stdin.
fn py_sign(args: &[&str], body: &[u8], via_file: bool) -> PySigned {
    static FILES: AtomicUsize = AtomicUsize::new(0);
    let script = workspace_root().join("tests/python/sign.py");
    let mut command = Command::new(python());
    command.arg(&script).args(args);
    let body_file = via_file.then(|| {
        let n = FILES.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("inbox-sign-{}-{n}.body", std::process::id()));
        std::fs::write(&path, body).expect("write body file");
        command.arg("--body-file").arg(&path);
        path
    });
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    {
        let mut stdin = child.stdin.take().expect("stdin");
        if !via_file {
            stdin.write_all(body).expect("write body to sign.py");
        }
    }
    let output = child.wait_with_output().expect("sign.py output");
    if let Some(path) = body_file {
        let _ = std::fs::remove_file(path);
    }
    assert!(
        output.status.success(),
        "sign.py {args:?} failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("sign.py prints JSON");
    let echoed = B64
        .decode(json["body_base64"].as_str().expect("body_base64"))
        .expect("base64 body");
    assert_eq!(echoed, body, "sign.py read a different body");
    let mut headers = HeaderMap::new();
    for (name, value) in json["headers"].as_object().expect("headers object") {
        insert(&mut headers, name, value.as_str().expect("string header"));
    }
    PySigned {
        headers,
        package: json["package"].as_str().unwrap_or_default().to_owned(),
    }
}

fn text_bodies() -> Vec<Vec<u8>> {
    vec![
        br#"{"test": 2432232314}"#.to_vec(),
        r#"{"name":"Zoë Łukasiewicz","note":"naïve café ✓ 日本語 🎉"}"#
            .as_bytes()
            .to_vec(),
        "line one\r\nline two\n\ttabbed \\ \"quoted\""
            .as_bytes()
            .to_vec(),
        Vec::new(),
        format!("{{\"pad\":\"{}\"}}", "ü".repeat(20_000)).into_bytes(),
    ]
}

fn check_python_signed(
    scheme: &Scheme,
    secret: &str,
    other: &str,
    signed: &PySigned,
    body: &[u8],
    now: i64,
) {
    let what = format!(
        "{} via {} ({} byte body)",
        scheme.name(),
        signed.package,
        body.len()
    );
    assert_eq!(
        verifier(scheme, &[secret]).verify(&signed.headers, body, now),
        Ok(()),
        "{what}"
    );
    assert_eq!(
        verifier(scheme, &[other]).verify(&signed.headers, body, now),
        Err(SignatureError::Mismatch),
        "{what}: wrong secret"
    );
    let mut tampered = body.to_vec();
    tampered.push(b'!');
    assert_eq!(
        verifier(scheme, &[secret]).verify(&signed.headers, &tampered, now),
        Err(SignatureError::Mismatch),
        "{what}: tampered"
    );
}

#[test]
fn python_standardwebhooks_package_signatures_verify() {
    let ts = NOW.to_string();
    for (i, body) in text_bodies().iter().enumerate() {
        let signed = py_sign(
            &[
                "standard-webhooks",
                "--secret",
                SW_SECRET,
                "--id",
                ID,
                "--timestamp",
                &ts,
            ],
            body,
            i == 1,
        );
        assert_eq!(signed.package, "standardwebhooks 1.1.0");
        check_python_signed(
            &Scheme::StandardWebhooks,
            SW_SECRET,
            SW_OTHER,
            &signed,
            body,
            NOW,
        );
    }
    // The package reproduces the published vector too.
    let signed = py_sign(
        &[
            "standard-webhooks",
            "--secret",
            SW_SECRET,
            "--id",
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            "--timestamp",
            "1614265330",
        ],
        br#"{"test": 2432232314}"#,
        false,
    );
    assert_eq!(
        signed.headers["webhook-signature"],
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
    );
}

#[test]
fn python_stripe_package_signatures_verify() {
    let ts = NOW.to_string();
    for (i, body) in text_bodies().iter().enumerate() {
        let signed = py_sign(
            &["stripe", "--secret", STRIPE_SECRET, "--timestamp", &ts],
            body,
            i == 2,
        );
        assert_eq!(signed.package, "stripe 16.1.0");
        let header = header_text(&signed.headers, "stripe-signature");
        assert!(header.starts_with(&format!("t={NOW},v1=")), "{header}");
        check_python_signed(
            &Scheme::Stripe,
            STRIPE_SECRET,
            STRIPE_OTHER,
            &signed,
            body,
            NOW,
        );
        assert_eq!(
            verifier(&Scheme::Stripe, &[STRIPE_SECRET]).verify(&signed.headers, body, NOW + 301),
            Err(SignatureError::TimestampOutOfTolerance)
        );
    }
}

#[test]
fn python_hmac_github_and_shopify_signatures_verify() {
    let mut bodies = text_bodies();
    bodies.push(BINARY_BODY.to_vec());
    for (i, body) in bodies.iter().enumerate() {
        for (scheme, flag) in [(Scheme::Github, "github"), (Scheme::Shopify, "shopify")] {
            let signed = py_sign(&[flag, "--secret", RAW_SECRET], body, i % 2 == 0);
            check_python_signed(&scheme, RAW_SECRET, RAW_OTHER, &signed, body, NOW);
        }
    }
    // GitHub's documented example, through Python's hmac.
    let signed = py_sign(&["github", "--secret", RAW_SECRET], b"Hello, World!", false);
    assert_eq!(
        signed.headers["x-hub-signature-256"],
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    );
}
