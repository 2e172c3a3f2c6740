//! Every outcome of both functions, logged with its source, key and request id, and counted
//! exactly once in the metrics.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "sets the global subscriber: run by logs_and_metrics::in_its_own_process"]
#[allow(
    clippy::too_many_lines,
    reason = "a scenario read top to bottom; its steps share the stack it sets up"
)]
async fn every_outcome_is_logged_with_source_key_and_request_id_and_counted_exactly() {
    let logs = logs();
    let aws = LocalAws::new("logs").await;
    let sor = SystemOfRecord::start();
    let (rx, rx_metrics) = aws.receiver(ReceiverSettings::default()).await;
    let (cx, cx_metrics) = aws.consumer(testkit::forwarder(sor.url()));
    let gh = github_headers;

    // Receiver: accepted, replayed, replayed with another body, bad signature.
    let (a, a2) = (body(1), body(2));
    let (s, rid_accepted) = post(&rx, "github", &gh("logs-a", &a), &a).await;
    assert_eq!(s, 200);
    let (s, rid_replayed) = post(&rx, "github", &gh("logs-a", &a), &a).await;
    assert_eq!(s, 200);
    let (s, rid_mismatch) = post(&rx, "github", &gh("logs-a", &a2), &a2).await;
    assert_eq!(s, 200);
    let mut bad = gh("logs-b", &a);
    bad[2].1 = testkit::github_signature(b"another body");
    let (s, rid_badsig) = post(&rx, "github", &bad, &a).await;
    assert_eq!(s, 401);

    // The queue refuses once: the claim is released, 500; the retry is accepted.
    let c = body(3);
    aws.faults.fail("SendMessage", When::Before, 1);
    let (s, rid_released) = post(&rx, "github", &gh("logs-c", &c), &c).await;
    assert_eq!(s, 500);
    let (s, rid_retry) = post(&rx, "github", &gh("logs-c", &c), &c).await;
    assert_eq!(s, 200);

    // A first delivery still between claim and enqueue (another invocation holds it): the
    // duplicate sends the event itself and replays the first answer.
    let d = body(4);
    let now = testkit::now_ms();
    aws.ledger()
        .claim(&Claim {
            key: "github:logs-d".into(),
            source: "github".into(),
            payload_sha256: inbox::key::sha256_hex(&d),
            owner: "first-invocation".into(),
            now_ms: now,
            lease_until_ms: now + 60_000,
            expires_at: now / 1000 + 3600,
            response_status: 200,
            response_body: accepted_response("github:logs-d").1,
            event_type: None,
            trace_id: None,
        })
        .await
        .expect("claim");
    let (s, rid_in_progress) = post(&rx, "github", &gh("logs-d", &d), &d).await;
    assert_eq!(s, 200);

    // No key: 400.
    let mut no_key = gh("logs-x", &d);
    no_key.remove(0);
    let (s, rid_no_key) = post(&rx, "github", &no_key, &d).await;
    assert_eq!(s, 400);

    // Another source.
    let stripe = format!(r#"{{"id":"evt_logs_1","note":"{BODY_MARKER}-s"}}"#).into_bytes();
    let stripe_sig = testkit::stripe_signature(&stripe, testkit::now_ms() / 1000);
    let (s, rid_stripe) = post(
        &rx,
        "stripe",
        &[("stripe-signature", stripe_sig.clone())],
        &stripe,
    )
    .await;
    assert_eq!(s, 200);

    // Consumer: the system of record fails logs-c once; the same batch delivered twice.
    sor.fail_key("github:logs-c", 1);
    let bridge = Bridge::new(aws.sqs.clone(), &aws.resources.queue_url)
        .await
        .expect("bridge");
    let messages = aws.receive_all(&aws.resources.queue_url).await;
    assert_eq!(
        messages.len(),
        4,
        "logs-a, logs-c, logs-d (sent by its duplicate) and evt_logs_1 are queued"
    );
    let id_of = |key: &str| {
        messages
            .iter()
            .find(|m| {
                m.attributes()
                    .and_then(|a| a.get(&Sys::MessageGroupId))
                    .map(String::as_str)
                    == Some(key)
            })
            .and_then(|m| m.message_id())
            .expect("message of the key")
            .to_owned()
    };
    let (first, rid_batch1) = invoke(&cx, bridge.event(&messages)).await;
    assert_eq!(failed_ids(&first), vec![id_of("github:logs-c")]);
    let (second, rid_batch2) = invoke(&cx, bridge.event(&messages)).await;
    assert_eq!(failed_ids(&second), Vec::<String>::new());

    // Lease lost: the side effect runs, but another invocation took the key meanwhile.
    let e = body(5);
    let (s, rid_accepted_e) = post(&rx, "github", &gh("logs-e", &e), &e).await;
    assert_eq!(s, 200);
    let thief = LeaseThief::start(&aws);
    let (cx_thief, cx_thief_metrics) = aws.consumer(testkit::forwarder(&thief.url));
    let messages_e = aws.receive_all(&aws.resources.queue_url).await;
    assert_eq!(messages_e.len(), 1);
    let (third, rid_batch3) = invoke(&cx_thief, bridge.event(&messages_e)).await;
    assert_eq!(
        failed_ids(&third),
        vec![messages_e[0].message_id().unwrap_or_default().to_owned()],
        "the lease was lost: the message comes back rather than leave the key in PROCESSING"
    );
    drop(thief);

    // --- the logs ---
    let text = logs.text();
    let lines = parsed(&text);
    let one = |name: &str, key: Option<&str>, rid: &str| -> &Line {
        let found = outcome(&lines, name, key, rid);
        assert_eq!(
            found.len(),
            1,
            "one `{name}` line for {key:?} in {rid}:\n{text}"
        );
        found[0]
    };
    let a_key = Some("github:logs-a");
    one("accepted", a_key, &rid_accepted);
    one("replayed", a_key, &rid_replayed);
    one("replayed", a_key, &rid_mismatch);
    assert!(
        lines
            .iter()
            .any(|l| l.request_id() == Some(rid_mismatch.as_str())
                && l.get("key") == a_key
                && l.get("message") == Some("same key, different payload")),
        "the payload mismatch is logged with its key"
    );
    let badsig = one("rejected", None, &rid_badsig);
    assert_eq!(badsig.get("error"), Some("invalid_signature"));
    assert_eq!(
        badsig.get("reason"),
        Some("invalid signature: no signature matched")
    );
    assert_eq!(
        badsig.get("key"),
        None,
        "no key is derived before the signature holds"
    );
    let c_key = Some("github:logs-c");
    one("released", c_key, &rid_released);
    let internal = one("rejected", c_key, &rid_released);
    assert_eq!(internal.get("error"), Some("internal"));
    one("accepted", c_key, &rid_retry);
    let busy = one("replayed", Some("github:logs-d"), &rid_in_progress);
    assert_eq!(busy.get("status"), Some("RECEIVED"));
    let missing = one("rejected", None, &rid_no_key);
    assert_eq!(missing.get("error"), Some("missing_idempotency_key"));
    assert!(missing
        .get("reason")
        .is_some_and(|r| r.contains("x-github-delivery")));
    let s_key = Some("stripe:evt_logs_1");
    one("accepted", s_key, &rid_stripe);
    one("completed", a_key, &rid_batch1);
    one("completed", s_key, &rid_batch1);
    let failed = one("failed", c_key, &rid_batch1);
    assert_eq!(
        failed.get("error"),
        Some("forward answered 500 Internal Server Error")
    );
    one("duplicate", a_key, &rid_batch2);
    one("duplicate", s_key, &rid_batch2);
    one("completed", c_key, &rid_batch2);
    one("accepted", Some("github:logs-e"), &rid_accepted_e);
    one("lease_lost", Some("github:logs-e"), &rid_batch3);

    let ours: Vec<&Line> = lines
        .iter()
        .filter(|l| {
            l.get("key")
                .is_some_and(|k| k.contains(":logs-") || k.contains("evt_logs_"))
        })
        .collect();
    for line in &ours {
        assert!(
            line.get("source").is_some(),
            "source on every line: {}",
            line.0
        );
        assert!(
            line.request_id().is_some(),
            "request id on every line: {}",
            line.0
        );
    }
    let whsec_bytes = TEST_WHSEC.trim_start_matches("whsec_");
    let mut signatures: Vec<String> = [&a, &a2, &c, &d, &e]
        .iter()
        .map(|b| testkit::github_signature(b))
        .collect();
    signatures.push(stripe_sig);
    let mut never = vec![TEST_SECRET, TEST_WHSEC, whsec_bytes, BODY_MARKER];
    never.extend(signatures.iter().map(String::as_str));
    for secret in never {
        assert!(
            !text.contains(secret),
            "a log line holds `{secret}`:\n{text}"
        );
    }

    // --- the metrics ---
    let mut emf = rx_metrics.lock().expect("metrics").clone();
    emf.extend(cx_metrics.lock().expect("metrics").iter().cloned());
    emf.extend(cx_thief_metrics.lock().expect("metrics").iter().cloned());
    let expected_github = [
        (Metric::Accepted, 3),
        (Metric::Replayed, 3),
        (Metric::SignatureRejected, 1),
        (Metric::PayloadMismatch, 1),
        (Metric::Released, 1),
        (Metric::Rejected, 2),
        // logs-a, logs-c and logs-d (which its duplicate enqueued).
        (Metric::Completed, 3),
        (Metric::Failed, 1),
        (Metric::DuplicateDelivery, 2),
        (Metric::LeaseLost, 1),
    ];
    let expected_stripe = [
        (Metric::Accepted, 1),
        (Metric::Completed, 1),
        (Metric::DuplicateDelivery, 1),
    ];
    let all_metrics = expected_github.map(|(m, _)| m);
    for (source, expected) in [
        ("github", &expected_github[..]),
        ("stripe", &expected_stripe[..]),
    ] {
        for metric in all_metrics {
            let want = expected
                .iter()
                .find(|(m, _)| *m == metric)
                .map_or(0, |(_, n)| *n);
            assert_eq!(
                tally(&emf, source, metric),
                want,
                "{source} {}",
                metric.name()
            );
        }
    }
    for line in &emf {
        assert!(
            !line.contains(BODY_MARKER) && !line.contains(TEST_SECRET),
            "{line}"
        );
    }
    assert_eq!(
        sor.calls_for("github:logs-a"),
        1,
        "the duplicate ran no side effect"
    );
}

/// The caller's path segment is the `source` of the rejection's line and of
/// the request's span; it reaches the log capped, however long it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "sets the global subscriber: run by logs_and_metrics::in_its_own_process"]
async fn a_long_path_segment_is_logged_capped() {
    let logs = logs();
    let aws = LocalAws::new("logs-cap").await;
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    // Long, though within what an http::Uri holds (lambda_http builds one from the path).
    let segment = "s".repeat(8_000);
    let (status, request_id) = post(&rx, &segment, &[], b"{}").await;
    assert_eq!(status, 404);
    let lines = parsed(&logs.text());
    let rejected = outcome(&lines, "rejected", None, &request_id);
    assert_eq!(rejected.len(), 1);
    let logged = rejected[0].get("source").expect("a source field");
    assert_eq!(logged, &segment[..inbox::log_text::MAX_LOGGED_BYTES]);
    let text = logs.text();
    let this_request: Vec<&str> = text.lines().filter(|l| l.contains(&request_id)).collect();
    assert!(!this_request.is_empty());
    for line in this_request {
        assert!(
            line.len() < 4 * inbox::log_text::MAX_LOGGED_BYTES + 1024,
            "a line of {} bytes",
            line.len()
        );
    }
}
