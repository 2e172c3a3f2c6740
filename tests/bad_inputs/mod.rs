//! Bad input, end to end: a corpus of malformed, unsigned, mis-signed, stale, oversized and
//! otherwise wrong requests. Each must get its documented status and JSON error (README,
//! "Receiver"), none may panic, and none may write anything: no DynamoDB or SQS call is made
//! at all (the interceptor's counts), the table scans empty and the queue is empty.
//!
//! Every case runs twice: as an `http::Request` through `Receiver::handle`, and as the API
//! Gateway (HTTP API, payload v2) JSON event Lambda hands the function, through
//! `Receiver::handle_event`. A few more cases exist only as events (the `isBase64Encoded`
//! flag).
//!
//! The corpus, by topic: `signatures` (401), `keys_and_bodies` (400, 413), `routes` (404,
//! 405), `edges` (exact numbers, duplicated members, invisible characters, a `.`
//! in a Standard Webhooks id); `case` holds what a case is, `entries` runs one through both entries and checks it.

mod case;
mod edges;
mod entries;
mod keys_and_bodies;
mod routes;
mod signatures;

use std::panic::AssertUnwindSafe;

use base64::Engine as _;
use devstack::testkit::{now_ms, LocalAws};
use futures::FutureExt as _;
use inbox::receiver::ReceiverSettings;

use case::{case, nested_arrays, nested_objects, stripe, Case, MALFORMED, SIG, TOO_LARGE};
use entries::{check, event_body, event_for, run, B64};

/// Every bad request, each with its documented answer.
fn corpus() -> Vec<Case> {
    let mut cases = signatures::cases();
    cases.extend(keys_and_bodies::cases());
    cases.extend(routes::cases());
    cases.extend(edges::cases());
    cases
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_input_gets_its_documented_answer_and_writes_nothing() {
    let aws = LocalAws::new("bad-corpus").await;
    let rx = aws.receiver(ReceiverSettings::default()).await.0;
    let started = std::time::Instant::now();
    let cases = corpus();
    assert!(cases.len() >= 50, "a corpus of {}", cases.len());
    let mut wrong = Vec::new();
    for c in &cases {
        wrong.extend(run(&rx, c).await);
    }
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );

    // Not one call to DynamoDB or SQS, so not one write.
    assert_eq!(aws.faults.all_calls(), Default::default());
    assert!(aws.ledger_items().await.is_empty(), "no ledger item");
    assert!(
        aws.receive_all(&aws.resources.queue_url).await.is_empty(),
        "no queue message"
    );
    eprintln!(
        "bad input: {} requests, each through handle and handle_event ({} answers) in {:.1?}",
        cases.len(),
        2 * cases.len(),
        started.elapsed()
    );
}

/// The `isBase64Encoded` flag, only expressible as an API Gateway event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "a scenario read top to bottom; its steps share the stack it sets up"
)]
async fn a_wrong_base64_flag_is_a_400_or_a_401_never_a_panic_nor_a_write() {
    let aws = LocalAws::new("bad-b64").await;
    let rx = aws.receiver(ReceiverSettings::default()).await.0;
    let t = now_ms() / 1000;
    let evt = br#"{"id":"evt_b64"}"#.to_vec();
    let encoded = B64.encode(&evt);
    let signed = |body: &[u8]| case("", "stripe", stripe(body, t), body, MALFORMED);
    let with = |name: &str, c: Case, expect: (u16, &'static str)| Case {
        name: name.to_owned(),
        status: expect.0,
        code: expect.1,
        ..c
    };
    let events = vec![
        // Flagged base64, but not base64.
        (
            with("true on raw JSON", signed(&evt), MALFORMED),
            String::from_utf8(evt.clone()).expect("utf-8"),
            true,
        ),
        (
            with("true on garbage", signed(&evt), MALFORMED),
            "***not base64***".to_owned(),
            true,
        ),
        (
            with("true on truncated base64", signed(&evt), MALFORMED),
            encoded[..encoded.len() - 3].to_owned(),
            true,
        ),
        (
            with("true on base64 with whitespace", signed(&evt), MALFORMED),
            format!("{} {}", &encoded[..8], &encoded[8..]),
            true,
        ),
        // Base64 sent unflagged: the signature is over the raw bytes, not their encoding.
        (
            with("false on a base64 body", signed(&evt), SIG),
            encoded.clone(),
            false,
        ),
        // Flagged and decodable, but the sender signed the encoded text.
        (
            with(
                "true, signed over the encoding",
                signed(encoded.as_bytes()),
                SIG,
            ),
            encoded.clone(),
            true,
        ),
        // Decodes to something that is not JSON.
        (
            with(
                "true on base64 of invalid UTF-8",
                signed(b"\xff\xfe\xfd"),
                MALFORMED,
            ),
            B64.encode(b"\xff\xfe\xfd"),
            true,
        ),
        // Decodes to over the limit (MAX_BODY_BYTES + 1).
        (
            with(
                "true on base64 of MAX_BODY_BYTES + 1",
                case("", "github", vec![], b"", TOO_LARGE),
                TOO_LARGE,
            ),
            B64.encode(vec![
                b'a';
                usize::try_from(
                    inbox::config::env::DEFAULT_MAX_BODY_BYTES
                )
                .expect("fits")
                    + 1
            ]),
            true,
        ),
    ];
    let mut wrong = Vec::new();
    for (c, body, flag) in &events {
        match AssertUnwindSafe(rx.handle_event(event_for(c, body, *flag)))
            .catch_unwind()
            .await
        {
            Ok(Ok(resp)) => wrong.extend(check(
                c,
                "handle_event",
                u16::try_from(resp.status_code).unwrap_or(0),
                &resp.headers,
                &event_body(&resp),
            )),
            Ok(Err(never)) => match never {},
            Err(_) => wrong.push(format!("{}: PANICKED", c.name)),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(aws.faults.all_calls(), Default::default());
    assert!(aws.ledger_items().await.is_empty());
    assert!(aws.receive_all(&aws.resources.queue_url).await.is_empty());
    eprintln!("bad input: {} base64-flag events", events.len());
}

/// The key reader stops at its nesting limit (128) with an error: no stack overflow, at any
/// depth tried.
#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    for depth in [129, 1_000, 10_000, 100_000] {
        assert!(
            inbox::json_fields::read(&nested_arrays(depth), &["/id"]).is_err(),
            "{depth} arrays"
        );
        assert!(
            inbox::json_fields::read(&nested_objects(depth), &["/id"]).is_err(),
            "{depth} objects"
        );
    }
    assert!(inbox::json_fields::read(&nested_arrays(100), &["/id"]).is_ok());
}
