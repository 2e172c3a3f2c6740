//! What each signature family costs to verify (BENCHMARKS.md "Signature families"):
//! a preset's verifier, built as the receiver builds it (`SourceSpecs` → `resolve`), over a
//! 2 KiB body signed as its provider signs it. Ed25519 and ECDSA P-256 are public-key
//! verifications; the HMACs and the shared token are a hash or two.
//!
//! `cargo bench -p inbox --bench families`

use std::collections::HashMap;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use ed25519_dalek::Signer as _;
use hmac::{Hmac, Mac};
use http::{HeaderMap, HeaderName, HeaderValue};
use inbox::clock::{Clock, SystemClock};
use inbox::config::{SecretRef, SecretResolver};
use inbox::signature::{Inbound, Verifier};
use inbox::SourceSpecs;

const SECRET: &str = "bench-secret-of-thirty-two-bytes";
const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

struct Fixed(HashMap<String, String>);

impl SecretResolver for Fixed {
    async fn resolve(&self, reference: &SecretRef) -> Result<String, String> {
        let (SecretRef::Env(name) | SecretRef::SecretsManager(name)) = reference;
        self.0.get(name).cloned().ok_or_else(|| name.clone())
    }
}

/// The verifier the receiver builds for `preset` with `secret`.
fn verifier(rt: &tokio::runtime::Runtime, preset: &str, secret: &str) -> Verifier {
    let config =
        format!(r#"{{"s": {{"preset": "{preset}", "signature": {{"secrets": ["env:K"]}}}}}}"#);
    let resolver = Fixed(HashMap::from([("K".to_owned(), secret.to_owned())]));
    let sources = rt
        .block_on(
            SourceSpecs::parse(&config)
                .expect("preset")
                .resolve(&resolver),
        )
        .expect("resolved");
    sources
        .get("s")
        .and_then(|s| s.verifier.clone())
        .expect("a verifier")
}

fn mac<M: Mac + hmac::digest::KeyInit>(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    let mut m = <M as hmac::digest::KeyInit>::new_from_slice(key).expect("any key length");
    for p in parts {
        m.update(p);
    }
    m.finalize().into_bytes().to_vec()
}

fn headers(pairs: &[(&str, String)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (k, v) in pairs {
        map.insert(
            HeaderName::from_bytes(k.as_bytes()).expect("name"),
            HeaderValue::from_str(v).expect("value"),
        );
    }
    map
}

/// One case per family: its name, its verifier, the headers its provider sends.
fn cases(
    rt: &tokio::runtime::Runtime,
    body: &[u8],
    t: i64,
) -> Vec<(&'static str, Verifier, HeaderMap)> {
    let ts = t.to_string();
    let sha256 = hex::encode(mac::<Hmac<sha2::Sha256>>(SECRET.as_bytes(), &[body]));
    let sha1 = hex::encode(mac::<Hmac<sha1::Sha1>>(SECRET.as_bytes(), &[body]));
    let key = B64
        .decode(WHSEC.trim_start_matches("whsec_"))
        .expect("whsec");
    let sw = B64.encode(mac::<Hmac<sha2::Sha256>>(
        &key,
        &[b"msg_1.", ts.as_bytes(), b".", body],
    ));
    let ed = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
    let ed_sig = ed.sign(&[ts.as_bytes(), body].concat());
    let ec = p256::ecdsa::SigningKey::from_slice(&[9; 32]).expect("a P-256 key");
    let ec_sig: p256::ecdsa::Signature = ec.sign(&[ts.as_bytes(), body].concat());
    // SendGrid's dashboard shows DER; a SEC1 point costs the verifier the same.
    let ec_public = ec
        .verifying_key()
        .to_encoded_point(false)
        .as_bytes()
        .to_vec();
    vec![
        (
            "hmac-sha256 (github)",
            verifier(rt, "github", SECRET),
            headers(&[
                ("x-hub-signature-256", format!("sha256={sha256}")),
                ("x-github-delivery", "d-1".into()),
            ]),
        ),
        (
            "hmac-sha1 (intercom)",
            verifier(rt, "intercom", SECRET),
            headers(&[("x-hub-signature", format!("sha1={sha1}"))]),
        ),
        (
            "standard-webhooks (openai)",
            verifier(rt, "openai", WHSEC),
            headers(&[
                ("webhook-id", "msg_1".into()),
                ("webhook-timestamp", ts.clone()),
                ("webhook-signature", format!("v1,{sw}")),
            ]),
        ),
        (
            "ed25519 (discord)",
            verifier(rt, "discord", &hex::encode(ed.verifying_key().as_bytes())),
            headers(&[
                ("x-signature-ed25519", hex::encode(ed_sig.to_bytes())),
                ("x-signature-timestamp", ts.clone()),
            ]),
        ),
        (
            "ecdsa-p256 (sendgrid)",
            verifier(rt, "sendgrid", &B64.encode(ec_public)),
            headers(&[
                (
                    "x-twilio-email-event-webhook-signature",
                    B64.encode(ec_sig.to_der().as_bytes()),
                ),
                ("x-twilio-email-event-webhook-timestamp", ts),
            ]),
        ),
        (
            "token (gitlab)",
            verifier(rt, "gitlab", SECRET),
            headers(&[("x-gitlab-token", SECRET.into())]),
        ),
    ]
}

fn families(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let body: Vec<u8> = {
        let mut b = br#"{"id":"evt_1","type":"invoice.paid","pad":""#.to_vec();
        b.extend(std::iter::repeat_n(b'x', 2048 - b.len() - 2));
        b.extend_from_slice(br#""}"#);
        b
    };
    let now = SystemClock.now_secs();
    let mut group = c.benchmark_group("family");
    group.throughput(Throughput::Bytes(body.len() as u64));
    for (name, verifier, headers) in cases(&rt, &body, now) {
        let inbound = Inbound::post(&headers, &body);
        verifier
            .verify_request(&inbound, now)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        group.bench_function(name, |b| {
            b.iter(|| verifier.verify_request(black_box(&inbound), now))
        });
    }
    group.finish();
}

criterion_group!(benches, families);
criterion_main!(benches);
