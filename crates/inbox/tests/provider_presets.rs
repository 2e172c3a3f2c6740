//! Every preset proven with what its provider produces: the requests come from
//! `tests/providers/sign.py` and `sign.mjs`, which sign them with each provider's own library
//! where it publishes one (else by the documented algorithm, with the documentation's example
//! values where it gives some) and check them with that library's verifier first. One table,
//! one loop:
//!
//! - an event is accepted (200) under the key the provider's retries keep, with its type;
//! - the same request with one byte of the body changed (where the signature covers the
//!   body) and the source configured with another key are 401, and write nothing;
//! - a stale request (signed 7200 s ago) is 401, and so is a batch with one bad event where
//!   each event is signed (Adyen's);
//! - an event answered as its preset answers, and a duplicate answered the same;
//! - a signed part of an event reused under another body (Mailgun's signature block) is that
//!   event's duplicate, never a new one;
//! - each handshake is answered as the provider checks it, claiming and sending nothing;
//! - every event resent as its provider resends it (the signer run again 30 s
//!   later as attempt 1, re-signed with a new timestamp where the provider signs one, its
//!   per-attempt fields changed: `attemptNumber`, `delivery_attempts`, `retryCount`,
//!   `attempt_number`, `meta.attempt`, Mux's `attempts`, Linear's `webhookTimestamp`,
//!   `X-Attempt-Number`, `X-Atlassian-Webhook-Retry`, `X-Slack-Retry-Num`) is its first
//!   delivery's duplicate: the same key, the same answer, marked replayed, nothing new
//!   claimed, and the same payload (no `PayloadMismatch`: a field that changes per attempt
//!   is in the preset's `attempt_fields`);
//! - a distinct event that looks like an earlier one gets its own key, a new ledger item.

use std::collections::{BTreeMap, HashMap};
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use inbox::clock::{Clock, SystemClock};
use inbox::config::presets;
use inbox::config::{SecretRef, SecretResolver};
use inbox::ledger::memory::MemoryLedger;
use inbox::metrics::{tally, Metric, Metrics};
use inbox::queue::MemoryQueue;
use inbox::receiver::{Receiver, ReceiverSettings};
use inbox::SourceSpecs;
use lambda_http::Body;
use serde::Deserialize;
use serde_json::{json, Value};

/// Issue 38: the fetched-key rules (aws-sns's certificate) where only an attacker or an
/// outage reaches them.
#[path = "provider_presets/fetched_keys.rs"]
mod fetched_keys;

const BASE_URL: &str = "https://abc123.execute-api.us-east-1.amazonaws.com";

#[derive(Debug, Deserialize)]
struct Case {
    preset: String,
    kind: String,
    name: String,
    signed_by: String,
    secret: String,
    wrong_secret: String,
    #[serde(default)]
    source: Map,
    request: Req,
    expect: Value,
}

type Map = serde_json::Map<String, Value>;

#[derive(Debug, Deserialize)]
struct Req {
    method: String,
    path: String,
    query: Option<String>,
    headers: BTreeMap<String, String>,
    body_base64: String,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs one signer with `now` and returns its cases: of every preset it knows, or of `presets`.
fn cases_from(program: PathBuf, script: &str, now: i64, presets: Option<&[&str]>) -> Vec<Case> {
    let mut child = Command::new(&program)
        .arg(root().join(script))
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "{} {script}: {e} (make test installs it)",
                program.display()
            )
        });
    let input = json!({"now": now, "base_url": BASE_URL, "presets": presets}).to_string();
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("output");
    assert!(
        out.status.success(),
        "{script} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    #[derive(Deserialize)]
    struct Out {
        cases: Vec<Case>,
    }
    serde_json::from_slice::<Out>(&out.stdout)
        .expect("the signer's cases")
        .cases
}

fn all_cases(now: i64) -> Vec<Case> {
    let python = root().join(".venv-providers/bin/python");
    let mut cases = cases_from(python, "tests/providers/sign.py", now, None);
    cases.extend(cases_from(
        PathBuf::from("node"),
        "tests/providers/sign.mjs",
        now,
        None,
    ));
    cases
}

/// Secrets by name, as the test configures them (`env:` references resolved from a map).
struct Secrets(HashMap<String, String>);

impl SecretResolver for Secrets {
    async fn resolve(&self, reference: &SecretRef) -> Result<String, String> {
        let name = match reference {
            SecretRef::Env(name) | SecretRef::SecretsManager(name) => name,
        };
        self.0
            .get(name)
            .cloned()
            .ok_or_else(|| format!("{name} unset"))
    }
}

type Rx = Receiver<MemoryLedger, MemoryQueue, SystemClock>;
type Lines = Arc<Mutex<Vec<String>>>;

/// A receiver with the one source `preset`, keyed by `secret` (none: Asana's established by
/// its handshake), plus the case's own fields.
async fn receiver(case: &Case, secret: Option<&str>) -> (Rx, MemoryQueue) {
    let (rx, kept, _) = receiver_counted(case, secret).await;
    (rx, kept)
}

/// [`receiver`], with its metric lines.
async fn receiver_counted(case: &Case, secret: Option<&str>) -> (Rx, MemoryQueue, Lines) {
    let mut entry = case.source.clone();
    let mut values = HashMap::new();
    if let Some(token) = entry.remove("verify_token") {
        values.insert(
            "VERIFY".to_owned(),
            token.as_str().unwrap_or_default().to_owned(),
        );
        entry.insert("verify_token".into(), json!("env:VERIFY"));
    }
    // A fetched-key preset's certificates (aws-sns), served from a local server through the
    // test-only setting (KEY_FETCH_TEST_ORIGIN's fetcher).
    let served = entry.remove("test_certificates").map(|certs| {
        let certs: HashMap<String, String> =
            serde_json::from_value(certs).expect("test_certificates: {path: PEM}");
        cert_server(certs)
    });
    entry.insert("preset".into(), json!(case.preset));
    let secrets = match secret {
        Some(secret) => {
            values.insert("SECRET".to_owned(), secret.to_owned());
            json!(["env:SECRET"])
        }
        None => json!([]),
    };
    entry.insert("signature".into(), json!({ "secrets": secrets }));
    let config = json!({ case.preset.clone(): entry }).to_string();
    let sources = SourceSpecs::parse(&config)
        .unwrap_or_else(|e| panic!("{}: {e}", case.preset))
        .resolve(&Secrets(values))
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", case.preset));
    let kept = MemoryQueue::new();
    let (metrics, lines) = Metrics::memory("receiver");
    let rx = Receiver::new(
        sources,
        MemoryLedger::new(),
        kept.clone(),
        SystemClock,
        ReceiverSettings::default(),
        metrics,
    );
    let rx = match served {
        Some(origin) => rx.with_key_fetcher(
            inbox::key_fetch::KeyFetcher::new(Some(&origin)).expect("a local origin"),
        ),
        None => rx,
    };
    (rx, kept, lines)
}

/// A local server answering the certificates by path, and 200 to any `/?Action=...` (SNS's
/// `SubscribeURL` visit); its origin. It serves until the test binary ends.
fn cert_server(certs: HashMap<String, String>) -> String {
    let server = tiny_http::Server::http("127.0.0.1:0").expect("a local port");
    let origin = format!("http://{}", server.server_addr());
    std::thread::spawn(move || {
        for request in server.incoming_requests() {
            let url = request.url().to_owned();
            let response = match certs.get(&url) {
                Some(pem) => tiny_http::Response::from_string(pem.clone()),
                None if url.starts_with("/?Action=") => tiny_http::Response::from_string(""),
                None => tiny_http::Response::from_string("").with_status_code(404),
            };
            let _ = request.respond(response);
        }
    });
    origin
}

fn request(req: &Req, body: Vec<u8>) -> lambda_http::Request {
    let uri = match &req.query {
        Some(q) => format!("{BASE_URL}{}?{q}", req.path),
        None => format!("{BASE_URL}{}", req.path),
    };
    let mut builder = http::Request::builder()
        .method(req.method.as_str())
        .uri(uri);
    for (name, value) in &req.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    builder.body(Body::from(body)).expect("a request")
}

fn body_of(req: &Req) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(&req.body_base64)
        .expect("base64 body")
}

struct Answer {
    status: u16,
    headers: http::HeaderMap,
    body: Vec<u8>,
}

async fn send(rx: &Rx, req: &Req, body: Vec<u8>) -> Answer {
    let resp = rx.handle(request(req, body)).await;
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.into_body().to_vec();
    Answer {
        status,
        headers,
        body,
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    inbox::key::sha256_hex(bytes)
}

fn label(case: &Case) -> String {
    format!(
        "{} / {} ({}) [{}]",
        case.preset, case.name, case.kind, case.signed_by
    )
}

/// The answer an event case expects: its status (200 unless it says), and its body, JSON and
/// content type where it names them.
fn check_answer_as_expected(what: &str, case: &Case, answer: &Answer) {
    let status = case
        .expect
        .get("status")
        .and_then(Value::as_u64)
        .unwrap_or(200);
    assert_eq!(
        u64::from(answer.status),
        status,
        "{what}: {}",
        String::from_utf8_lossy(&answer.body)
    );
    if let Some(body) = case.expect.get("body").and_then(Value::as_str) {
        assert_eq!(String::from_utf8_lossy(&answer.body), body, "{what}");
    }
    if let Some(wanted) = case.expect.get("json") {
        let got: Value = serde_json::from_slice(&answer.body).expect("a JSON answer");
        assert_eq!(&got, wanted, "{what}");
    }
    if let Some(prefix) = case.expect.get("content_type").and_then(Value::as_str) {
        let got = answer
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        assert!(got.starts_with(prefix), "{what}: content type {got}");
    }
}

/// An event: accepted under its key, with its type, on the queue once, answered as the preset
/// answers (200 `{"key":…}` unless the case says otherwise); the same request again gets the
/// same answer, marked replayed, and sends nothing.
async fn check_event(rx: &Rx, kept: &MemoryQueue, case: &Case) -> (String, Answer) {
    let what = label(case);
    let before = kept.len();
    let items = rx.ledger().snapshot().len();
    let answer = send(rx, &case.request, body_of(&case.request)).await;
    check_marked_duplicate(rx, case, &answer, items);
    // A batch sends one message per event (a retry of one already taken, none).
    let events = (kept.len() - before).max(1);
    check_answer_as_expected(&what, case, &answer);
    let key = format!(
        "{}:{}",
        case.preset,
        case.expect["key"].as_str().expect("expect.key")
    );
    let stored: Vec<String> = rx.ledger().snapshot().into_iter().map(|r| r.key).collect();
    assert!(stored.contains(&key), "{what}: {key} not in {stored:?}");
    let envelope = kept
        .last_of_key(&key)
        .unwrap_or_else(|| panic!("{what}: no message for {key}"));
    assert_eq!(
        envelope.event_type.as_deref(),
        case.expect["event_type"].as_str(),
        "{what}: event type"
    );
    // A secret the body carries (Figma's passcode) is taken out before the envelope.
    let carried = envelope.body_bytes().expect("the envelope's body");
    // (aws-sns's "secrets" are the topic ARNs it accepts: public, and named by every message.)
    assert!(
        scheme_of(&case.preset) == "aws-sns"
            || !String::from_utf8_lossy(&carried).contains(case.secret.as_str()),
        "{what}: the secret travels in the envelope"
    );
    // Its payload hash: of the body as carried, the preset's per-attempt members left out
    // (`attempt_fields`: `attempt_number`, `attemptNumber`, ...), each with the comma beside it.
    let attempt_fields: Vec<String> = inbox::config::presets::get(&case.preset)
        .and_then(|p| p.source.get("attempt_fields"))
        .and_then(|f| serde_json::from_value(f.clone()).ok())
        .unwrap_or_default();
    let mut hashed = carried.clone();
    for pointer in &attempt_fields {
        if let Some(rest) = inbox::json_fields::without_member(&hashed, pointer)
            .unwrap_or_else(|e| panic!("{what}: {pointer}: {e}"))
        {
            hashed = rest;
        }
    }
    assert_eq!(
        envelope.payload_sha256,
        sha256_hex(&hashed),
        "{what}: the body's hash"
    );
    let sent = kept.len();
    let again = send(rx, &case.request, body_of(&case.request)).await;
    assert_eq!(
        (again.status, &again.body),
        (answer.status, &answer.body),
        "{what}: a duplicate's answer"
    );
    assert!(
        again.headers.contains_key("idempotent-replayed"),
        "{what}: a duplicate not marked replayed"
    );
    // Behind a RECEIVED claim the stored event is sent again (one SQS message per id).
    assert!(
        kept.len() <= sent + events,
        "{what}: a duplicate sent more than once"
    );
    (key, answer)
}

fn ledger_keys(rx: &Rx) -> Vec<String> {
    let mut keys: Vec<String> = rx.ledger().snapshot().into_iter().map(|r| r.key).collect();
    keys.sort();
    keys
}

/// An event resent as its provider resends it: its first delivery's duplicate (the same
/// answer, marked replayed), nothing new claimed, the same payload.
async fn check_retry(rx: &Rx, lines: &Lines, case: &Case, first: &HashMap<String, Answer>) {
    let what = label(case);
    let key = format!(
        "{}:{}",
        case.preset,
        case.expect["key"].as_str().expect("expect.key")
    );
    let original = first
        .get(&key)
        .unwrap_or_else(|| panic!("{what}: {key} was not accepted first"));
    let before = ledger_keys(rx);
    let mismatches = |l: &Lines| {
        tally(
            &l.lock().expect("lines"),
            &case.preset,
            Metric::PayloadMismatch,
        )
    };
    let counted = mismatches(lines);
    let answer = send(rx, &case.request, body_of(&case.request)).await;
    assert_eq!(
        (answer.status, &answer.body),
        (original.status, &original.body),
        "{what}: the retry's answer: {}",
        String::from_utf8_lossy(&answer.body)
    );
    assert!(
        answer.headers.contains_key("idempotent-replayed"),
        "{what}: the retry not answered as a duplicate"
    );
    assert_eq!(ledger_keys(rx), before, "{what}: a new ledger item");
    assert_eq!(
        mismatches(lines),
        counted,
        "{what}: the retry is another payload (a field that changes per attempt is not in the preset's attempt_fields)"
    );
}

/// A retry as the provider sends it (`"duplicate": true`): the earlier event's duplicate,
/// answered from the ledger, nothing new claimed (behind a RECEIVED claim the stored event may
/// be sent again under its own id, as for any duplicate). `items`: the ledger before it.
fn check_marked_duplicate(rx: &Rx, case: &Case, answer: &Answer, items: usize) {
    if case.expect.get("duplicate") != Some(&Value::Bool(true)) {
        return;
    }
    let what = label(case);
    assert!(
        answer.headers.contains_key("idempotent-replayed"),
        "{what}: a retry not answered as a duplicate ({})",
        answer.status
    );
    assert_eq!(
        rx.ledger().snapshot().len(),
        items,
        "{what}: a retry claimed anew"
    );
}

/// A signed part of an earlier event reused under another body: that event's key again,
/// answered as its duplicate; nothing new claimed, nothing sent.
async fn check_reused(rx: &Rx, kept: &MemoryQueue, case: &Case) {
    let what = label(case);
    let key = format!(
        "{}:{}",
        case.preset,
        case.expect["key"].as_str().expect("expect.key")
    );
    let before: Vec<String> = rx.ledger().snapshot().into_iter().map(|r| r.key).collect();
    assert!(before.contains(&key), "{what}: {key} not accepted first");
    let sent = kept.len();
    let answer = send(rx, &case.request, body_of(&case.request)).await;
    let after: Vec<String> = rx.ledger().snapshot().into_iter().map(|r| r.key).collect();
    assert_eq!(after, before, "{what}: a ledger write");
    assert_eq!(kept.len(), sent, "{what}: a message sent");
    let replayed = answer.headers.contains_key("idempotent-replayed");
    assert!(
        replayed || (400..500).contains(&answer.status),
        "{what}: answered {} as a new event",
        answer.status
    );
}

/// A request that must be refused: 401, nothing claimed, nothing sent.
async fn check_refused(rx: &Rx, kept: &MemoryQueue, case: &Case, body: Vec<u8>, why: &str) {
    let (items, sent) = (rx.ledger().snapshot().len(), kept.len());
    let answer = send(rx, &case.request, body).await;
    // 401 unless the provider documents another refusal (Figma: 400 stops its webhook), or
    // a refused case says its status (an Adyen item re-split out of shape: 400).
    let refused = case
        .expect
        .get("refused_status")
        .or_else(|| case.expect.get("status").filter(|_| case.kind == "refused"))
        .and_then(Value::as_u64)
        .unwrap_or(401);
    assert_eq!(u64::from(answer.status), refused, "{} {why}", label(case));
    assert_eq!(
        rx.ledger().snapshot().len(),
        items,
        "{} {why}: a ledger write",
        label(case)
    );
    assert_eq!(kept.len(), sent, "{} {why}: a message sent", label(case));
}

/// A handshake: answered as the provider checks it, nothing claimed or sent.
async fn check_handshake(rx: &Rx, kept: &MemoryQueue, case: &Case) {
    let what = label(case);
    let (items, sent) = (rx.ledger().snapshot().len(), kept.len());
    let answer = send(rx, &case.request, body_of(&case.request)).await;
    let expect = &case.expect;
    assert_eq!(
        i64::from(answer.status),
        expect["status"].as_i64().expect("expect.status"),
        "{what}: {}",
        String::from_utf8_lossy(&answer.body)
    );
    if let Some(body) = expect.get("body").and_then(Value::as_str) {
        assert_eq!(String::from_utf8_lossy(&answer.body), body, "{what}");
    }
    if let Some(wanted) = expect.get("json") {
        let got: Value = serde_json::from_slice(&answer.body).expect("a JSON answer");
        assert_eq!(&got, wanted, "{what}");
    }
    for (name, value) in expect
        .get("headers")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let got = answer
            .headers
            .get(name.as_str())
            .and_then(|v| v.to_str().ok());
        assert_eq!(got, value.as_str(), "{what}: header {name}");
    }
    if let Some(prefix) = expect.get("content_type").and_then(Value::as_str) {
        let got = answer
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        assert!(got.starts_with(prefix), "{what}: content type {got}");
    }
    assert_eq!(rx.ledger().snapshot().len(), items, "{what}: a claim");
    assert_eq!(kept.len(), sent, "{what}: a message sent");
}

/// The preset's signature scheme, as presets.json names it.
fn scheme_of(preset: &str) -> String {
    presets::get(preset)
        .and_then(|p| p.source.get("signature"))
        .and_then(|s| s.get("scheme"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// Whether the preset's signature covers the body (a token, basic auth and Mailgun's do not:
/// docs/providers.md says so, and the audit flags them).
fn covers_body(preset: &str) -> bool {
    let specs = SourceSpecs::parse(
        &json!({"s": {"preset": preset, "signature": {"secrets": ["env:X"]},
                       "public_url": "https://x.example/webhooks/s",
                       "verify_token": "env:V"}})
        .to_string(),
    );
    match specs {
        Ok(specs) => specs.iter().all(|s| s.scheme.covers_body()),
        // verify_token or public_url not taken by this preset: parse without them.
        Err(_) => SourceSpecs::parse(
            &json!({"s": {"preset": preset, "signature": {"secrets": ["env:X"]}}}).to_string(),
        )
        .map(|specs| specs.iter().all(|s| s.scheme.covers_body()))
        .unwrap_or(true),
    }
}

#[allow(
    clippy::too_many_lines,
    reason = "one preset's table of cases, kind by kind, in the order they build on each other"
)]
async fn prove(preset: &str, cases: &[&Case]) {
    let first = cases[0];
    let established = preset == "asana";
    let (rx, kept, lines) =
        receiver_counted(first, (!established).then_some(first.secret.as_str())).await;
    if established {
        // The operator opens the window the first handshake keeps its secret in.
        let until = SystemClock.now_secs() + 600;
        let opened = inbox::ledger::LedgerStore::open_handshake(rx.ledger(), preset, until).await;
        assert_eq!(opened.ok(), Some(true), "{preset}: the window");
    }
    // Handshakes first: Asana's establishes the secret its events are signed with.
    for case in cases.iter().filter(|c| c.kind == "handshake") {
        check_handshake(&rx, &kept, case).await;
    }
    for case in cases.iter().filter(|c| c.kind == "stale") {
        check_refused(
            &rx,
            &kept,
            case,
            body_of(&case.request),
            "signed 7200 s ago",
        )
        .await;
    }
    // A batch with one bad event (each event signed on its own, Adyen's): refused whole.
    for case in cases.iter().filter(|c| c.kind == "refused") {
        check_refused(
            &rx,
            &kept,
            case,
            body_of(&case.request),
            "with a bad or re-split event",
        )
        .await;
    }
    let mut answers: HashMap<String, Answer> = HashMap::new();
    for case in cases.iter().filter(|c| c.kind == "event") {
        if covers_body(preset) {
            let mut changed = body_of(&case.request);
            let middle = changed.len() / 2;
            changed[middle] ^= 0x01;
            check_refused(&rx, &kept, case, changed, "with one body byte changed").await;
        }
        let (key, answer) = check_event(&rx, &kept, case).await;
        answers.insert(key, answer);
        let (wrong, wrong_kept) = receiver(case, Some(&case.wrong_secret)).await;
        check_refused(
            &wrong,
            &wrong_kept,
            case,
            body_of(&case.request),
            "under another key",
        )
        .await;
    }
    for case in cases.iter().filter(|c| c.kind == "reused") {
        check_reused(&rx, &kept, case).await;
    }
    for case in cases.iter().filter(|c| c.kind == "retry") {
        check_retry(&rx, &lines, case, &answers).await;
    }
    for case in cases.iter().filter(|c| c.kind == "distinct") {
        let what = label(case);
        let key = format!(
            "{}:{}",
            case.preset,
            case.expect["key"].as_str().expect("expect.key")
        );
        let before = ledger_keys(&rx);
        assert!(!before.contains(&key), "{what}: {key} taken before");
        let (_, answer) = check_event(&rx, &kept, case).await;
        assert!(
            !answer.headers.contains_key("idempotent-replayed"),
            "{what}: answered as a duplicate of an earlier event"
        );
        assert_eq!(
            ledger_keys(&rx).len(),
            before.len() + 1,
            "{what}: not its own item"
        );
    }
}

#[tokio::test]
async fn every_preset_accepts_what_its_provider_signs_and_refuses_the_rest() {
    let now = SystemClock.now_secs();
    let cases = all_cases(now);
    let mut by_preset: BTreeMap<&str, Vec<&Case>> = BTreeMap::new();
    for case in &cases {
        assert!(
            presets::get(&case.preset).is_some(),
            "a case for an unknown preset {}",
            case.preset
        );
        by_preset
            .entry(case.preset.as_str())
            .or_default()
            .push(case);
    }
    // One receiver per preset and secret (a preset both signers produce has two).
    let mut by_key: BTreeMap<(&str, &str), Vec<&Case>> = BTreeMap::new();
    for case in &cases {
        by_key
            .entry((case.preset.as_str(), case.secret.as_str()))
            .or_default()
            .push(case);
    }
    for name in presets::all().keys() {
        let cases = by_preset
            .get(name.as_str())
            .map(Vec::as_slice)
            .unwrap_or_default();
        assert!(
            cases.iter().any(|c| c.kind == "event"),
            "preset {name} has no event case in tests/providers"
        );
    }
    for ((preset, _), cases) in &by_key {
        prove(preset, cases).await;
    }
}
