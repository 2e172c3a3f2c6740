//! GitHub samples: a push, its redelivery, a tampered body, no delivery id, a base64 body.

use super::request::{post, push, tampered};
use super::{Expected, Sample, FIXED_EPOCH_S};
use devstack::senders::{GitHub, Sender as _};
use devstack::testkit::TEST_SECRET;

pub fn samples(out: &mut Vec<Sample>) {
    const ID: &str = "6b1f2a40-b0a1-11f1-8f3e-2d9c7e5a4b01";
    const ID_B64: &str = "6b1f2a40-b0a1-11f1-8f3e-2d9c7e5a4b02";
    const ID_BAD: &str = "6b1f2a40-b0a1-11f1-8f3e-2d9c7e5a4b03";
    let t = FIXED_EPOCH_S;
    let body = br#"{"ref":"refs/heads/main","before":"9f2c1e0d8b7a","after":"1a2b3c4d5e6f","repository":{"full_name":"acme/widgets"},"pusher":{"name":"octocat"}}"#;
    let headers = |id: &str, signed: &[u8]| {
        let mut h = GitHub::new(TEST_SECRET).headers(id, t, signed);
        h.push(("user-agent", "GitHub-Hookshot/5b4c2a1".to_owned()));
        h.push(("x-github-hook-id", "512345678".to_owned()));
        h
    };
    let key = format!("github:{ID}");
    push(
        out,
        "github-first",
        post("github", headers(ID, body), body, "gh-first", t),
        Expected::accepted(&key),
        "GitHub push (`X-Hub-Signature-256`), key `X-GitHub-Delivery`",
        false,
    );
    push(
        out,
        "github-duplicate",
        post("github", headers(ID, body), body, "gh-dup", t),
        Expected::replayed(&key),
        "the same delivery again (GitHub's \"Redeliver\"): the first answer, replayed",
        false,
    );
    let tampered = tampered(body, "octocat", "mallory");
    push(
        out,
        "github-bad-signature",
        post("github", headers(ID_BAD, body), &tampered, "gh-bad", t),
        Expected::error(401, "invalid_signature"),
        "body changed after signing",
        false,
    );
    let mut no_id = headers(ID, body);
    no_id.retain(|(name, _)| *name != "x-github-delivery");
    push(
        out,
        "github-missing-key",
        post("github", no_id, body, "gh-nokey", t),
        Expected::error(400, "missing_idempotency_key"),
        "signed, but no `X-GitHub-Delivery`: never guessed",
        false,
    );
    let b64 = post("github", headers(ID_B64, body), body, "gh-b64", t).base64_body(body);
    push(
        out,
        "github-base64",
        b64,
        Expected::accepted(&format!("github:{ID_B64}")),
        "`isBase64Encoded: true`: decoded, then verified over the raw bytes",
        false,
    );
}
