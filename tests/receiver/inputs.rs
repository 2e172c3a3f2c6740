//! What the receiver makes of its input: a changed payload under a known key, every bad
//! input's documented answer, base64 bodies, every scheme and key kind, a long key.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payload_mismatch_is_a_counted_duplicate_or_a_422_where_declared() {
    let aws = LocalAws::new("mismatch").await;
    let (rx, lines) = aws.receiver(ReceiverSettings::default()).await;
    let (a, b) = (gh_body(11), gh_body(12));
    assert_eq!(
        rx.handle(post("github", &github_headers("d-11", &a), &a))
            .await
            .status(),
        200
    );
    let dup = rx
        .handle(post("github", &github_headers("d-11", &b), &b))
        .await;
    assert_eq!(dup.status(), 200);
    assert!(replayed(&dup));
    assert_eq!(
        tally(
            &lines.lock().expect("metrics"),
            "github",
            Metric::PayloadMismatch
        ),
        1
    );

    assert_eq!(
        rx.handle(post("strict", &github_headers("d-11", &a), &a))
            .await
            .status(),
        200
    );
    let rejected = rx
        .handle(post("strict", &github_headers("d-11", &b), &b))
        .await;
    assert_eq!(rejected.status(), 422);
    assert_eq!(
        body_json(&rejected),
        serde_json::json!({"error": "payload_mismatch"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "a scenario read top to bottom; its steps share the stack it sets up"
)]
async fn bad_inputs_get_their_documented_answer_and_write_nothing() {
    let aws = LocalAws::new("bad").await;
    let (rx, lines) = aws.receiver(ReceiverSettings::default()).await;
    let body = gh_body(13);
    let mut bad_sig = github_headers("d-13", &body);
    bad_sig[2].1 = testkit::github_signature(b"another body");
    let mut no_key = github_headers("d-13", &body);
    no_key.remove(0);
    let t = testkit::now_ms() / 1000;
    let not_json = b"not json".to_vec();
    let stripe_not_json = vec![("stripe-signature", testkit::stripe_signature(&not_json, t))];
    let no_id = br#"{"type":"invoice.paid"}"#.to_vec();
    let stripe_no_id = vec![("stripe-signature", testkit::stripe_signature(&no_id, t))];
    let old = br#"{"id":"evt_old"}"#.to_vec();
    let stripe_old = vec![("stripe-signature", testkit::stripe_signature(&old, t - 301))];
    let huge =
        vec![b'x'; usize::try_from(inbox::config::env::DEFAULT_MAX_BODY_BYTES).expect("fits") + 1];

    let cases: Vec<(lambda_http::Request, u16, &str)> = vec![
        (post("github", &bad_sig, &body), 401, "invalid_signature"),
        (post("github", &[], &body), 401, "invalid_signature"),
        (
            post("github", &no_key, &body),
            400,
            "missing_idempotency_key",
        ),
        (
            post("stripe", &stripe_not_json, &not_json),
            400,
            "malformed_body",
        ),
        (
            post("stripe", &stripe_no_id, &no_id),
            400,
            "missing_idempotency_key",
        ),
        (post("stripe", &stripe_old, &old), 401, "invalid_signature"),
        (
            post("nobody", &github_headers("d-13", &body), &body),
            404,
            "unknown_source",
        ),
        (
            post("github", &github_headers("d-13", &huge), &huge),
            413,
            "payload_too_large",
        ),
        (
            {
                let mut r = post("github", &github_headers("d-13", &body), &body);
                *r.method_mut() = http::Method::GET;
                r
            },
            405,
            "method_not_allowed",
        ),
    ];
    for (req, status, code) in cases {
        let resp = rx.handle(req).await;
        assert_eq!(resp.status().as_u16(), status, "{code}");
        assert_eq!(body_json(&resp), serde_json::json!({ "error": code }));
        assert_eq!(
            resp.headers().get("content-type").map(|v| v.as_bytes()),
            Some(&b"application/json"[..])
        );
    }
    assert!(
        aws.ledger_items().await.is_empty(),
        "no ledger write for bad input"
    );
    assert!(
        aws.receive_all(&aws.resources.queue_url).await.is_empty(),
        "no message for bad input"
    );
    assert_eq!(aws.faults.calls("PutItem"), 0);
    let lines = lines.lock().expect("metrics").clone();
    assert_eq!(tally(&lines, "github", Metric::SignatureRejected), 2);
    assert_eq!(tally(&lines, "stripe", Metric::SignatureRejected), 1);
    // A caller-chosen path segment never becomes a metric dimension.
    assert_eq!(tally(&lines, "nobody", Metric::Rejected), 0);
    assert_eq!(
        tally(
            &lines,
            inbox::receiver::UNKNOWN_SOURCE_DIMENSION,
            Metric::Rejected
        ),
        1
    );
}

/// A `POST /webhooks/<source>` event whose `body` field is this text, with this
/// `isBase64Encoded` flag.
fn apigw_event(
    source: &str,
    body: &str,
    base64: bool,
    headers: &[(&str, String)],
) -> lambda_runtime::LambdaEvent<aws_lambda_events::apigw::ApiGatewayV2httpRequest> {
    ApiGatewayEvent::post(source)
        .headers(headers.iter().map(|(k, v)| (*k, v)))
        .raw_body(body, base64)
        .lambda_event()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn base64_bodies_are_decoded_before_verifying_and_bad_base64_is_a_400_not_a_panic() {
    use base64::Engine as _;
    let aws = LocalAws::new("b64").await;
    let (rx, lines) = aws.receiver(ReceiverSettings::default()).await;
    let body = gh_body(14);
    let encoded = base64::engine::general_purpose::STANDARD.encode(&body);
    let ok = rx
        .handle_event(apigw_event(
            "github",
            &encoded,
            true,
            &github_headers("d-14", &body),
        ))
        .await
        .expect("infallible");
    assert_eq!(ok.status_code, 200);

    let bad = rx
        .handle_event(apigw_event(
            "github",
            "***not base64***",
            true,
            &github_headers("d-15", &body),
        ))
        .await
        .expect("infallible");
    assert_eq!(bad.status_code, 400);
    let text = match bad.body {
        Some(Body::Text(t)) => t,
        other => panic!("unexpected body {other:?}"),
    };
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&text).expect("json"),
        serde_json::json!({"error": "malformed_body"})
    );
    assert_eq!(aws.ledger_items().await.len(), 1, "only the good one");
    let lines = lines.lock().expect("metrics").clone();
    assert_eq!(
        tally(&lines, "github", Metric::Rejected),
        1,
        "counted under its source"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scheme_and_key_kind_is_accepted_end_to_end() {
    let aws = LocalAws::new("schemes").await;
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let t = testkit::now_ms() / 1000;

    let stripe = br#"{"id":"evt_1","type":"invoice.paid"}"#.to_vec();
    let r = rx
        .handle(post(
            "stripe",
            &[("stripe-signature", testkit::stripe_signature(&stripe, t))],
            &stripe,
        ))
        .await;
    assert_eq!(
        (r.status().as_u16(), body_json(&r)["key"].clone()),
        (200, "stripe:evt_1".into())
    );

    let acme = br#"{"customer_id":"cus_9","amount":5}"#.to_vec();
    let r = rx
        .handle(post(
            "acme",
            &testkit::standard_webhooks_headers("msg_1", t, &acme),
            &acme,
        ))
        .await;
    assert_eq!(
        (r.status().as_u16(), body_json(&r)["key"].clone()),
        (200, "acme:msg_1".into())
    );

    let shop = br#"{"order":1}"#.to_vec();
    let h = vec![
        ("x-shopify-hmac-sha256", testkit::shopify_signature(&shop)),
        ("x-shopify-event-id", "se-1".to_owned()),
    ];
    let r = rx.handle(post("shop", &h, &shop)).await;
    assert_eq!(
        (r.status().as_u16(), body_json(&r)["key"].clone()),
        (200, "shop:se-1".into())
    );

    let order = br#"{"type":"order.paid","order":{"id":77}}"#.to_vec();
    let r = rx
        .handle(post(
            "orders",
            &[("x-signature", testkit::hmac_hex(&order))],
            &order,
        ))
        .await;
    assert_eq!(
        (r.status().as_u16(), body_json(&r)["key"].clone()),
        (200, "orders:order.paid|77".into())
    );

    let msgs = aws.receive_all(&aws.resources.queue_url).await;
    assert_eq!(msgs.len(), 4);
    use aws_sdk_sqs::types::MessageSystemAttributeName as A;
    let acme_msg = msgs
        .iter()
        .find(|m| m.body().is_some_and(|b| b.contains("acme:msg_1")))
        .expect("acme message");
    assert_eq!(
        acme_msg
            .attributes()
            .and_then(|a| a.get(&A::MessageGroupId))
            .map(String::as_str),
        Some("acme:cus_9"),
        "per-customer group from the configured pointer"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_key_gets_a_hashed_deduplication_id() {
    let aws = LocalAws::new("longkey").await;
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let t = testkit::now_ms() / 1000;
    let id = format!("evt_{}", "z".repeat(300));
    let body = format!(r#"{{"id":"{id}"}}"#).into_bytes();
    let r = rx
        .handle(post(
            "stripe",
            &[("stripe-signature", testkit::stripe_signature(&body, t))],
            &body,
        ))
        .await;
    assert_eq!(r.status(), 200);
    let msgs = aws.receive_all(&aws.resources.queue_url).await;
    use aws_sdk_sqs::types::MessageSystemAttributeName as A;
    let dedup = msgs[0]
        .attributes()
        .and_then(|a| a.get(&A::MessageDeduplicationId))
        .cloned();
    assert_eq!(
        dedup,
        Some(inbox::key::sha256_hex(format!("stripe:{id}").as_bytes()))
    );
}

/// `lambda_http` builds a URL from `Host`, `X-Forwarded-Proto` and the path,
/// and panics where they do not parse; a panic would be a 5xx and a `ReceiverErrorsAlarm`
/// tick. Headers the receiver does not read are dropped when they are not plain; what still
/// cannot be built (a path longer than an `http::Uri` holds) is a 400 `malformed_request`.
/// No request is ever a 500.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_lambda_http_reads_never_panic_the_receiver() {
    let aws = LocalAws::new("uri-edges").await;
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let long_host = "h".repeat(10_000);
    let cases: [(&str, &str); 6] = [
        ("host", "a b"),
        ("host", "exa mple.com"),
        ("host", &long_host),
        ("x-forwarded-proto", "1"),
        ("x-forwarded-proto", "a b"),
        ("x-forwarded-proto", "javascript:alert(1)//"),
    ];
    for (n, (name, value)) in cases.into_iter().enumerate() {
        let body = gh_body(600 + n as u32);
        let id = format!("uri-{n}");
        let event = ApiGatewayEvent::post("github")
            .headers(github_headers(&id, &body).iter().map(|(k, v)| (*k, v)))
            .header(name, value)
            .body(&body)
            .lambda_event();
        let resp = rx.handle_event(event).await.expect("infallible");
        assert_eq!(resp.status_code, 200, "{name}: {:.40}", value);
    }
    // A path past what an http::Uri holds (65,534 bytes).
    let event = ApiGatewayEvent::post(&"s".repeat(70_000))
        .body(b"{}")
        .lambda_event();
    let resp = rx.handle_event(event).await.expect("infallible");
    assert_eq!(resp.status_code, 400);
    let text = match resp.body {
        Some(Body::Text(t)) => t,
        other => panic!("unexpected body {other:?}"),
    };
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&text).expect("json"),
        serde_json::json!({"error": "malformed_request"})
    );
    assert_eq!(
        aws.ledger_items().await.len(),
        6,
        "the six accepted, nothing else"
    );
}
