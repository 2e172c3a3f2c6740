//! The settled keys (docs/providers.md, "Keys, tolerances and answers"): for each, a first
//! delivery, the provider's retry with its per-attempt fields changed, and a second event that
//! looks alike.

use base64::Engine as _;
use inbox::clock::{Clock as _, SystemClock};

use super::{b64, hmac_sha256, receiver, Rx};

/// A stand-in for Discord's application key: the test signs as Discord does; the source holds
/// its public half.
pub(super) fn discord_key() -> ed25519_dalek::SigningKey {
    ed25519_dalek::SigningKey::from_bytes(&[7; 32])
}

/// The answer and whether it was a replay (`Idempotent-Replayed: true`).
async fn sent(rx: &Rx, headers: &[(&str, &str)], body: &str) -> (u16, String, bool) {
    let resp = rx
        .handle(super::post(
            "https://h/webhooks/s",
            headers,
            body.as_bytes(),
        ))
        .await;
    let replayed = resp
        .headers()
        .get(inbox::receiver::REPLAYED_HEADER)
        .is_some_and(|v| v.as_bytes() == b"true");
    let status = resp.status().as_u16();
    let text = String::from_utf8_lossy(&resp.into_body()).into_owned();
    (status, text, replayed)
}

/// Issue 35 item 2, the settled keys: a first delivery, the provider's retry with its
/// per-attempt fields changed, and a second event that looks alike. Linear re-sends with a
/// fresh `webhookTimestamp` ("when the webhook was sent"), so the body differs per attempt and
/// only the delivery header holds the two attempts together; a second update of the same issue
/// in the same millisecond is another delivery.
#[tokio::test]
async fn linears_retry_is_a_duplicate_and_a_look_alike_update_a_new_event() {
    let (rx, kept) = receiver(r#"{"preset": "linear", "signature": {"secrets": ["env:S"]}}"#).await;
    let now = SystemClock.now_ms();
    let body = |sent_at: i64| {
        format!(
            r#"{{"action":"update","type":"Issue","createdAt":"2026-12-07T01:00:00.000Z","data":{{"id":"9cfb482a-81e3-4154-b5b9-2c805e70a02d","title":"Fix"}},"webhookId":"w1","webhookTimestamp":{sent_at}}}"#
        )
    };
    let rx = &rx;
    let signed = |delivery: &'static str, body: String| async move {
        let signature = hex::encode(hmac_sha256(body.as_bytes()));
        sent(
            rx,
            &[
                ("linear-signature", &signature),
                ("linear-delivery", delivery),
            ],
            &body,
        )
        .await
    };
    let first = signed("234d1a4e-b617-4388-90fe-adc3633d6b72", body(now - 20_000)).await;
    assert_eq!((first.0, first.2), (200, false), "{}", first.1);
    // The retry: the same delivery, a fresh webhookTimestamp.
    let retry = signed("234d1a4e-b617-4388-90fe-adc3633d6b72", body(now)).await;
    assert_eq!((retry.0, retry.2), (200, true), "{}", retry.1);
    // Another update of the same issue, alike in every field but its delivery.
    let other = signed("7f0e3b7c-5d0a-4a53-9d8e-1b2f3c4d5e6f", body(now)).await;
    assert_eq!((other.0, other.2), (200, false), "{}", other.1);
    // Two events. The retry is the same payload (`attempt_fields` `/webhookTimestamp`), so
    // behind its RECEIVED claim it was sent again under the first's deduplication id (one
    // SQS message); before that field was listed it was a payload mismatch, not sent.
    assert_eq!(
        kept.keys(),
        [
            "s:234d1a4e-b617-4388-90fe-adc3633d6b72",
            "s:7f0e3b7c-5d0a-4a53-9d8e-1b2f3c4d5e6f"
        ]
    );
    assert_eq!(kept.len(), 3);
}

/// DocuSign's JSON SIM message carries `retryCount`, which a retry changes; the key is what
/// happened to which envelope when the message was generated: a retry is a duplicate, the
/// same event of another recipient of the envelope, generated a millisecond later, a new event.
#[tokio::test]
async fn docusigns_retry_is_a_duplicate_and_another_recipients_event_a_new_one() {
    let (rx, kept) =
        receiver(r#"{"preset": "docusign", "signature": {"secrets": ["env:S"]}}"#).await;
    let message = |retry: u32, at: &str, recipient: &str| {
        format!(
            r#"{{"event":"recipient-completed","apiVersion":"v2.1","retryCount":{retry},"configurationId":10418278,"generatedDateTime":"{at}","data":{{"accountId":"f1e2d3c4","envelopeId":"a3b2c1d4-5e6f-7a8b-9c0d-1e2f3a4b5c6d","recipientId":"{recipient}"}}}}"#
        )
    };
    let rx = &rx;
    let signed = |body: String| async move {
        let signature = b64(&hmac_sha256(body.as_bytes()));
        sent(rx, &[("x-docusign-signature-1", &signature)], &body).await
    };
    let first = signed(message(0, "2026-12-07T01:00:51.789Z", "1")).await;
    assert_eq!((first.0, first.2), (200, false), "{}", first.1);
    let retry = signed(message(1, "2026-12-07T01:00:51.789Z", "1")).await;
    assert_eq!((retry.0, retry.2), (200, true), "{}", retry.1);
    let other = signed(message(0, "2026-12-07T01:00:51.790Z", "2")).await;
    assert_eq!((other.0, other.2), (200, false), "{}", other.1);
    // `retryCount` is left out of the payload hash (`attempt_fields`): the retry, while the
    // first is still RECEIVED (no consumer here), is a duplicate of the same payload and is
    // sent behind it under the same key; two events in all.
    assert_eq!(kept.len(), 3);
    assert_eq!(kept.keys().len(), 2);
}

/// Bitbucket retries a request, counting attempts in `X-Attempt-Number`: the retry under the
/// same `X-Request-UUID` is a duplicate; an attempt that came under a new UUID with the same
/// body is refused by the body guard (409), never a second event; another push is a new event.
#[tokio::test]
async fn bitbuckets_retry_is_a_duplicate_and_never_a_second_event() {
    let (rx, kept) =
        receiver(r#"{"preset": "bitbucket", "signature": {"secrets": ["env:S"]}}"#).await;
    let push = |hash: &str| {
        format!(
            r#"{{"push":{{"changes":[{{"new":{{"type":"branch","name":"main","target":{{"hash":"{hash}"}}}}}}]}},"repository":{{"full_name":"team/repo"}}}}"#
        )
    };
    let rx = &rx;
    let signed = |uuid: &'static str, attempt: &'static str, body: String| async move {
        let signature = format!("sha256={}", hex::encode(hmac_sha256(body.as_bytes())));
        let headers = [
            ("x-hub-signature", signature.as_str()),
            ("x-request-uuid", uuid),
            ("x-attempt-number", attempt),
            ("x-event-key", "repo:push"),
        ];
        sent(rx, &headers, &body).await
    };
    let first = signed("0b6c6a4e-0001-4f00-8000-000000000001", "1", push("a1b2c3d")).await;
    assert_eq!((first.0, first.2), (200, false), "{}", first.1);
    let retry = signed("0b6c6a4e-0001-4f00-8000-000000000001", "2", push("a1b2c3d")).await;
    assert_eq!((retry.0, retry.2), (200, true), "{}", retry.1);
    let renamed = signed("0b6c6a4e-0001-4f00-8000-000000000009", "3", push("a1b2c3d")).await;
    assert_eq!(
        (renamed.0, renamed.1.as_str()),
        (409, r#"{"error":"replayed_body"}"#)
    );
    let other = signed("0b6c6a4e-0001-4f00-8000-000000000002", "1", push("e4f5a6b")).await;
    assert_eq!((other.0, other.2), (200, false), "{}", other.1);
    // Two events: the retry is the first's key (a duplicate of a RECEIVED claim may put its
    // stored event on the queue again, under the same key), the renamed attempt is nothing.
    assert_eq!(
        kept.keys(),
        [
            "s:0b6c6a4e-0001-4f00-8000-000000000001",
            "s:0b6c6a4e-0001-4f00-8000-000000000002"
        ]
    );
    let claimed: Vec<String> = (rx.ledger().snapshot().iter())
        .map(|item| item.key.clone())
        .filter(|key| key.starts_with("s:0b6c"))
        .collect();
    assert_eq!(claimed.len(), 2, "{claimed:?}");
}

/// Discord's Webhook Events carry no event id; the key is the body's hash. A retry resends the
/// event (nothing in the documented payload changes per attempt): a duplicate. Two users
/// authorising the app at the same timestamp are two events, which the key proposed earlier
/// (`/application_id` + `/event/type` + `/event/timestamp`) would have merged.
#[tokio::test]
async fn discord_events_keeps_two_look_alike_events_apart() {
    use ed25519_dalek::Signer as _;
    let (rx, kept) =
        receiver(r#"{"preset": "discord-events", "signature": {"secrets": ["env:ED25519"]}}"#)
            .await;
    let rx = &rx;
    let event = |user: &str| {
        format!(
            r#"{{"version":1,"application_id":"1234560123453231555","type":1,"event":{{"type":"APPLICATION_AUTHORIZED","timestamp":"2026-12-07T01:00:00.000000","data":{{"integration_type":0,"scopes":["applications.commands"],"user":{{"id":"{user}","username":"someone"}}}}}}}}"#
        )
    };
    let signed = |body: String| async move {
        let t = SystemClock.now_secs().to_string();
        let signature = discord_key().sign(format!("{t}{body}").as_bytes());
        let signature = hex::encode(signature.to_bytes());
        let headers = [
            ("x-signature-ed25519", signature.as_str()),
            ("x-signature-timestamp", t.as_str()),
        ];
        sent(rx, &headers, &body).await
    };
    let first = signed(event("111")).await;
    assert_eq!((first.0, first.2), (204, false), "{}", first.1);
    let retry = signed(event("111")).await;
    assert_eq!((retry.0, retry.2), (204, true), "{}", retry.1);
    let other = signed(event("222")).await;
    assert_eq!((other.0, other.2), (204, false), "{}", other.1);
    let claimed: Vec<String> = (rx.ledger().snapshot().iter())
        .map(|item| item.key.clone())
        .collect();
    assert_eq!(claimed.len(), 2, "{claimed:?}");
    assert_eq!(kept.keys().len(), 2, "two events on the queue");
}

/// Sanity's body is the webhook's GROQ projection: two mutations of two documents can project to
/// the same bytes, so the key is the delivery's `idempotency-key`, not the body. Its retry (the
/// same key, a fresh signature time) is a duplicate; the look-alike another event.
#[tokio::test]
async fn sanitys_look_alike_projections_are_two_events_and_a_retry_one() {
    let (rx, kept) = receiver(r#"{"preset": "sanity", "signature": {"secrets": ["env:S"]}}"#).await;
    let rx = &rx;
    let body = r#"{"_type":"post","slug":"hello"}"#;
    let signed = |key: &'static str, t: i64| async move {
        let mac = hmac_sha256(format!("{t}.{body}").as_bytes());
        let signature = format!(
            "t={t},v1={}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac)
        );
        let headers = [
            ("sanity-webhook-signature", signature.as_str()),
            ("idempotency-key", key),
            ("sanity-operation", "update"),
        ];
        sent(rx, &headers, body).await
    };
    let now = SystemClock.now_ms();
    let first = signed("a1b2c3d4-0000-4000-8000-000000000001", now - 30_000).await;
    assert_eq!((first.0, first.2), (200, false), "{}", first.1);
    let retry = signed("a1b2c3d4-0000-4000-8000-000000000001", now).await;
    assert_eq!((retry.0, retry.2), (200, true), "{}", retry.1);
    let other = signed("a1b2c3d4-0000-4000-8000-000000000002", now).await;
    assert_eq!((other.0, other.2), (200, false), "{}", other.1);
    assert_eq!(
        kept.keys(),
        [
            "s:a1b2c3d4-0000-4000-8000-000000000001",
            "s:a1b2c3d4-0000-4000-8000-000000000002"
        ]
    );
}
