//! `inbox-ops receive`, the throwaway system of record, as a process: a forward signed with the
//! stack's forward key (as the consumer signs it) prints `verified`; the same with one body byte
//! changed prints `INVALID`; a request with no signature prints `unsigned`. Each answered 200.

use inbox::forward::signing::ForwardSigner;
use tokio::io::{AsyncBufReadExt as _, BufReader};

use super::create_secret;
use devstack::testkit::unique;

/// A forward key as the stack generates it (the system of record's is `whsec_` + this).
const FORWARD_KEY: &str = "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw2m1Q3Z9xP4s=";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receive_prints_each_forward_and_whether_its_signature_verifies() {
    let secret = unique("forward");
    create_secret(&secret, FORWARD_KEY).await;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_inbox-ops"))
        .args([
            "receive",
            "--listen",
            "127.0.0.1:0",
            "--verify-with",
            &secret,
        ])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("run inbox-ops receive");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = lines
        .next_line()
        .await
        .expect("read")
        .expect("a first line");
    let url = first
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("the address in {first:?}"))
        .to_owned();
    assert!(first.ends_with("signatures verified"), "{first}");

    let signer = ForwardSigner::new(&[format!("whsec_{FORWARD_KEY}")]).expect("a key");
    let body = br#"{"id":"evt_1","type":"invoice.paid"}"#;
    let signed = signer.sign(
        "stripe:evt_1",
        None,
        jiff::Timestamp::now().as_second(),
        body,
    );
    let client = reqwest::Client::new();
    let send = |body: &'static [u8], sign: bool| {
        let mut request = client
            .post(format!("{url}hooks"))
            .header("idempotency-key", "stripe:evt_1")
            .body(body);
        if sign {
            request = request
                .header("webhook-id", &signed.id)
                .header("webhook-timestamp", &signed.timestamp)
                .header("webhook-signature", &signed.signature);
        }
        request.send()
    };
    let tampered: &'static [u8] = br#"{"id":"evt_1","type":"invoice.paie"}"#;
    for (body, sign, verdict) in [
        (&body[..], true, "signature=verified"),
        (tampered, true, "signature=INVALID"),
        (&body[..], false, "signature=unsigned"),
    ] {
        let answer = send(body, sign).await.expect("an answer");
        assert_eq!(answer.status(), 200);
        let line = lines.next_line().await.expect("read").expect("a line");
        assert!(
            line.starts_with("POST /hooks idempotency-key=stripe:evt_1 "),
            "{line}"
        );
        assert!(line.contains(verdict), "{verdict}: {line}");
        assert!(line.ends_with(&format!("{} bytes", body.len())), "{line}");
    }
    child.kill().await.expect("stop receive");
}
