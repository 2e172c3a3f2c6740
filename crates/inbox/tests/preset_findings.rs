//! Issue 35's security findings on the presets, each closed by what the preset declares
//! (docs/providers.md, "Answers, content checks and replay guards"): what the providers' own
//! requests (provider_presets.rs) do not reach, because only an attacker sends it.

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use hmac::{Hmac, Mac};
use inbox::clock::SystemClock;
use inbox::config::{SecretRef, SecretResolver};
use inbox::ledger::memory::MemoryLedger;
use inbox::metrics::Metrics;
use inbox::queue::{MemoryQueue, Outgoing, Queue, QueueError};
use inbox::receiver::{Receiver, ReceiverSettings};
use inbox::SourceSpecs;
use lambda_http::Body;

/// Issue 35 item 2: the keys settled without a provider's statement, each shown with a first
/// delivery, the provider's retry and a look-alike event.
#[path = "preset_findings/settled_keys.rs"]
mod settled_keys;

const SECRET: &str = "a-secret-of-enough-bytes";

struct Secrets;

impl SecretResolver for Secrets {
    async fn resolve(&self, reference: &SecretRef) -> Result<String, String> {
        // `env:BASIC`: a basic-auth secret (`user:password`); any other: SECRET.
        Ok(match reference {
            SecretRef::Env(name) if name == "BASIC" => format!("postmark:{SECRET}"),
            SecretRef::Env(name) if name == "ED25519" => {
                hex::encode(settled_keys::discord_key().verifying_key().as_bytes())
            }
            _ => SECRET.to_owned(),
        })
    }
}

type Rx = Receiver<MemoryLedger, MemoryQueue, SystemClock>;

async fn receiver(entry: &str) -> (Rx, MemoryQueue) {
    let sources = SourceSpecs::parse(&format!(r#"{{"s": {entry}}}"#))
        .expect("config")
        .resolve(&Secrets)
        .await
        .expect("secrets");
    let kept = MemoryQueue::new();
    let rx = Receiver::new(
        sources,
        MemoryLedger::new(),
        kept.clone(),
        SystemClock,
        ReceiverSettings::default(),
        Metrics::memory("receiver").0,
    );
    (rx, kept)
}

fn post(uri: &str, headers: &[(&str, &str)], body: &[u8]) -> lambda_http::Request {
    let mut builder = http::Request::builder().method("POST").uri(uri);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(Body::from(body.to_vec())).expect("a request")
}

fn hmac_sha256(data: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(SECRET.as_bytes()).expect("key");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

async fn answer<Q: Queue, C: inbox::clock::Clock>(
    rx: &Receiver<MemoryLedger, Q, C>,
    req: lambda_http::Request,
) -> (u16, String) {
    let resp = rx.handle(req).await;
    let status = resp.status().as_u16();
    (
        status,
        String::from_utf8_lossy(&resp.into_body()).into_owned(),
    )
}

#[tokio::test]
async fn x_refuses_a_post_signed_with_a_crc_answer_whose_body_is_not_a_json_object() {
    let (rx, kept) = receiver(r#"{"preset": "x", "signature": {"secrets": ["env:S"]}}"#).await;
    // Anyone may ask for the CRC answer of a token of their choosing...
    let get = http::Request::builder()
        .uri("https://h/webhooks/s?crc_token=forged")
        .body(Body::Empty)
        .expect("a request");
    let (status, crc) = answer(&rx, get).await;
    assert_eq!(status, 200, "{crc}");
    let crc: serde_json::Value = serde_json::from_str(&crc).expect("JSON");
    let signature = crc["response_token"].as_str().expect("a token").to_owned();
    assert_eq!(
        signature,
        format!("sha256={}", b64(&hmac_sha256(b"forged")))
    );
    // ...which is the signature of a POST whose body is that token: not an event.
    let forged = post(
        "https://h/webhooks/s",
        &[("x-twitter-webhooks-signature", &signature)],
        b"forged",
    );
    assert_eq!(
        answer(&rx, forged).await,
        (400, r#"{"error":"malformed_body"}"#.to_owned())
    );
    for body in [&b"[1]"[..], b"\"forged\"", b"{\"a\":1} x"] {
        let signature = format!("sha256={}", b64(&hmac_sha256(body)));
        let req = post(
            "https://h/webhooks/s",
            &[("x-twitter-webhooks-signature", &signature)],
            body,
        );
        assert_eq!(answer(&rx, req).await.0, 400, "{body:?}");
    }
    assert!(rx.ledger().snapshot().is_empty(), "a ledger write");
    assert_eq!(kept.len(), 0, "a message sent");
    // An object is an event.
    let body = br#"{"for_user_id":"2244994945","tweet_create_events":[]}"#;
    let signature = format!("sha256={}", b64(&hmac_sha256(body)));
    let req = post(
        "https://h/webhooks/s",
        &[("x-twitter-webhooks-signature", &signature)],
        body,
    );
    assert_eq!(answer(&rx, req).await.0, 200);
}

/// Twilio's signature: HMAC-SHA1 of the URL and the form's names and values, sorted by name,
/// run together.
fn twilio_signature(url: &str, form: &[(&str, &str)]) -> String {
    let mut pairs = form.to_vec();
    pairs.sort();
    let mut signed = url.to_owned();
    for (name, value) in pairs {
        signed.push_str(name);
        signed.push_str(value);
    }
    let mut mac = Hmac::<sha1::Sha1>::new_from_slice(SECRET.as_bytes()).expect("key");
    mac.update(signed.as_bytes());
    b64(&mac.finalize().into_bytes())
}

fn form_body(form: &[(&str, &str)]) -> String {
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish()
}

#[tokio::test]
async fn twilio_refuses_a_captured_request_split_into_another_event() {
    let url = "https://h.example/webhooks/s";
    let (rx, kept) = receiver(&format!(
        r#"{{"preset": "twilio", "signature": {{"secrets": ["env:S"]}}, "public_url": "{url}"}}"#
    ))
    .await;
    let sid = "SM0123456789abcdef0123456789abcdef";
    let real = [
        ("AccountSid", "AC0123456789abcdef0123456789abcdef"),
        ("MessageSid", sid),
        ("SmsStatus", "delivered"),
        ("To", "+15558675310"),
    ];
    let signature = twilio_signature(url, &real);
    let send = |form: &[(&str, &str)], signature: &str| {
        post(
            "https://h/webhooks/s",
            &[
                ("x-twilio-signature", signature),
                ("content-type", "application/x-www-form-urlencoded"),
            ],
            form_body(form).as_bytes(),
        )
    };
    let (status, body) = answer(&rx, send(&real, &signature)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(kept.len(), 1);
    // The same signed bytes, `To` run into the status: a new status, so a new key.
    let resplit = [
        ("AccountSid", "AC0123456789abcdef0123456789abcdef"),
        ("MessageSid", sid),
        ("SmsStatus", "deliveredTo+15558675310"),
    ];
    assert_eq!(twilio_signature(url, &resplit), signature, "the same bytes");
    let items = rx.ledger().snapshot().len();
    assert_eq!(
        answer(&rx, send(&resplit, &signature)).await,
        (400, r#"{"error":"malformed_body"}"#.to_owned())
    );
    assert_eq!(rx.ledger().snapshot().len(), items, "a ledger write");
    assert_eq!(kept.len(), 1, "a message sent");
}

#[tokio::test]
async fn figmas_passcode_is_taken_out_of_the_body_and_every_other_byte_kept() {
    let (rx, kept) = receiver(r#"{"preset": "figma", "signature": {"secrets": ["env:S"]}}"#).await;
    let body = format!(
        r#"{{"event_type":"FILE_UPDATE","file_key":"zH7","passcode":"{SECRET}", "timestamp":"2024-05-01T14:00:00Z","webhook_id":"22","n":1.50}}"#
    );
    let req = post("https://h/webhooks/s", &[], body.as_bytes());
    let (status, answered) = answer(&rx, req).await;
    assert_eq!(status, 200, "{answered}");
    let envelope = kept.last().expect("a message");
    let carried = String::from_utf8(envelope.body_bytes().expect("a body")).expect("text");
    assert_eq!(
        carried,
        r#"{"event_type":"FILE_UPDATE","file_key":"zH7","timestamp":"2024-05-01T14:00:00Z","webhook_id":"22","n":1.50}"#
    );
    assert_eq!(
        envelope.payload_sha256,
        inbox::key::sha256_hex(carried.as_bytes())
    );
    let items = rx.ledger().snapshot();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].payload_sha256, envelope.payload_sha256);
    assert!(
        !format!("{items:?}").contains(SECRET),
        "the ledger holds it"
    );
    // A wrong passcode is refused with the 400 Figma asks for ("If you receive a request with
    // the wrong passcode, you should respond with a 400 Bad Request HTTP response which will
    // immediately stop the webhook", developers.figma.com/docs/rest-api/webhooks-security),
    // not 401, after which Figma would keep sending; nothing written.
    let wrong = body.replace(SECRET, "not-the-passcode-at-all");
    let req = post("https://h/webhooks/s", &[], wrong.as_bytes());
    assert_eq!(
        answer(&rx, req).await,
        (400, r#"{"error":"invalid_signature"}"#.to_owned())
    );
    let missing = body.replace(&format!(r#""passcode":"{SECRET}", "#), "");
    let req = post("https://h/webhooks/s", &[], missing.as_bytes());
    assert_eq!(answer(&rx, req).await.0, 400, "no passcode at all");
    assert_eq!((rx.ledger().snapshot().len(), kept.len()), (1, 1));
    // The status is the preset's: a token source of its own still answers 401.
    let (own, _) = receiver(r#"{"signature": {"scheme": "token", "pointer": "/passcode", "secrets": ["env:S"]}, "key": {"from": "payload_sha256"}}"#).await;
    let req = post("https://h/webhooks/s", &[], wrong.as_bytes());
    assert_eq!(answer(&own, req).await.0, 401);
}

/// Postmark's inbound webhook posts one parsed mail per request, named by its `MessageID`;
/// a failed post is retried (10 times over about 10.5 h) or retried by hand
/// (`PUT /messages/inbound/{messageid}/retry`): the same mail, the same `MessageID`
/// (postmarkapp.com/support/article/understanding-inbound-webhook-retries-in-postmark). The
/// `postmark-inbound` preset keys on it: a retry is a duplicate, another mail with the same
/// subject and text another event.
#[tokio::test]
async fn postmark_inbound_keys_each_mail_by_its_message_id() {
    let (rx, kept) =
        receiver(r#"{"preset": "postmark-inbound", "signature": {"secrets": ["env:BASIC"]}}"#)
            .await;
    let auth = format!("Basic {}", b64(format!("postmark:{SECRET}").as_bytes()));
    let mail = |id: &str| {
        format!(
            r#"{{"From":"support@postmarkapp.com","To":"yourhash+SampleHash@inbound.postmarkapp.com","Subject":"Test subject","MessageID":"{id}","TextBody":"This is a test text body.","Attachments":[]}}"#
        )
    };
    let first = mail("73e6d360-66eb-11e1-8e72-a8904824019b");
    let send = |body: String| {
        post(
            "https://h/webhooks/s",
            &[("authorization", auth.as_str())],
            body.as_bytes(),
        )
    };
    let (status, said) = answer(&rx, send(first.clone())).await;
    assert_eq!(
        (status, said.as_str()),
        (
            200,
            r#"{"key":"s:73e6d360-66eb-11e1-8e72-a8904824019b","status":"accepted"}"#
        )
    );
    // Postmark's retry of the same mail: its first answer, nothing sent again.
    let resp = rx.handle(send(first)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()
            .get(inbox::receiver::REPLAYED_HEADER)
            .map(|v| v.as_bytes()),
        Some(b"true".as_slice())
    );
    // Another mail with the same subject and text: its own event.
    let (status, said) = answer(&rx, send(mail("8d1b7d2e-66eb-11e1-8e72-a8904824019b"))).await;
    assert_eq!(status, 200, "{said}");
    assert_eq!(
        kept.keys(),
        [
            "s:73e6d360-66eb-11e1-8e72-a8904824019b",
            "s:8d1b7d2e-66eb-11e1-8e72-a8904824019b"
        ]
    );
    // A mail without its MessageID is refused, never keyed on something else.
    let (status, said) = answer(&rx, send(r#"{"Subject":"Test subject"}"#.to_owned())).await;
    assert_eq!(
        (status, said.as_str()),
        (400, r#"{"error":"missing_idempotency_key"}"#)
    );
}

#[tokio::test]
async fn a_body_keyed_on_an_unsigned_header_is_not_a_new_event_under_a_new_delivery_id() {
    for (preset, signature_header, key_header, prefix) in [
        (
            "github",
            "x-hub-signature-256",
            "x-github-delivery",
            "sha256=",
        ),
        ("bitbucket", "x-hub-signature", "x-request-uuid", "sha256="),
        (
            "jira",
            "x-hub-signature",
            "x-atlassian-webhook-identifier",
            "sha256=",
        ),
        ("sentry", "sentry-hook-signature", "request-id", ""),
        (
            "razorpay",
            "x-razorpay-signature",
            "x-razorpay-event-id",
            "",
        ),
        ("shopify", "x-shopify-hmac-sha256", "x-shopify-event-id", ""),
    ] {
        let (rx, kept) = receiver(&format!(
            r#"{{"preset": "{preset}", "signature": {{"secrets": ["env:S"]}}}}"#
        ))
        .await;
        let body = br#"{"id":1,"event":"payment.captured","webhookEvent":"x"}"#;
        let mac = hmac_sha256(body);
        let encoded = if preset == "shopify" {
            b64(&mac)
        } else {
            hex::encode(&mac)
        };
        let signature = format!("{prefix}{encoded}");
        let send = |delivery: &str| {
            post(
                "https://h/webhooks/s",
                &[(signature_header, &signature), (key_header, delivery)],
                body,
            )
        };
        assert_eq!(answer(&rx, send("delivery-1")).await.0, 200, "{preset}");
        assert_eq!(answer(&rx, send("delivery-1")).await.0, 200, "{preset}");
        let items = rx.ledger().snapshot().len();
        assert_eq!(
            answer(&rx, send("delivery-2")).await,
            (409, r#"{"error":"replayed_body"}"#.to_owned()),
            "{preset}"
        );
        assert_eq!(
            rx.ledger().snapshot().len(),
            items,
            "{preset}: a ledger write"
        );
        // (The duplicate behind the RECEIVED claim sent the first event again: same key.)
        assert_eq!(kept.keys(), ["s:delivery-1"], "{preset}: a message sent");
    }
}

#[tokio::test]
async fn asanas_first_handshake_is_kept_only_in_a_window_an_operator_opened() {
    use inbox::clock::{Clock as _, ManualClock};
    use inbox::ledger::LedgerStore as _;
    let clock = ManualClock::at_ms(1_700_000_000_000);
    let sources = SourceSpecs::parse(r#"{"s": {"preset": "asana", "signature": {"secrets": []}}}"#)
        .expect("config")
        .resolve(&Secrets)
        .await
        .expect("secrets");
    let rx = Receiver::new(
        sources,
        MemoryLedger::new(),
        MemoryQueue::new(),
        clock.clone(),
        ReceiverSettings::default(),
        Metrics::memory("receiver").0,
    );
    let secret = "kept-secret-0123456789abcdef";
    let shake = || post("https://h/webhooks/s", &[("x-hook-secret", secret)], b"");
    // Whoever posts first, with no window open: refused, nothing kept.
    assert_eq!(answer(&rx, shake()).await.0, 401);
    assert_eq!(rx.ledger().hook_secret("s").await.ok(), Some(None));
    // A window that has closed keeps nothing either.
    let now = clock.now_secs();
    assert_eq!(
        rx.ledger().open_handshake("s", now - 1).await.ok(),
        Some(true)
    );
    assert_eq!(answer(&rx, shake()).await.0, 401);
    // Inside the window: kept, echoed.
    assert_eq!(
        rx.ledger().open_handshake("s", now + 600).await.ok(),
        Some(true)
    );
    assert_eq!(answer(&rx, shake()).await.0, 200);
    assert_eq!(
        rx.ledger().hook_secret("s").await.ok().flatten().as_deref(),
        Some(secret)
    );
    // The events it signs verify; once an operator deletes it, a warm instance stops
    // trusting its copy within five minutes.
    let body = br#"{"events":[{"action":"changed"}]}"#;
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).expect("key");
    mac.update(body);
    let signature = hex::encode(mac.finalize().into_bytes());
    let event = || {
        post(
            "https://h/webhooks/s",
            &[("x-hook-signature", &signature)],
            body,
        )
    };
    assert_eq!(answer(&rx, event()).await.0, 200);
    rx.ledger().forget_hook_secret("s");
    clock.advance_ms(300_000);
    assert_eq!(answer(&rx, event()).await.0, 401);
}

/// Xero wants `200` "with no body in the response" ("Respond with a 200 ... within 5
/// seconds", developer.xero.com/documentation/webhooks/configuring-your-server), Okta's event
/// hooks an empty `200` or `204` (responses "should all be empty", okta-developer-docs
/// `event-hooks/index.md`): their presets answer `empty`, a duplicate too, and still queue
/// every event of the batch.
#[tokio::test]
async fn xero_and_okta_are_answered_200_with_no_body_first_and_on_a_retry() {
    let (xero, xero_kept) =
        receiver(r#"{"preset": "xero", "signature": {"secrets": ["env:S"]}}"#).await;
    let body = r#"{"events":[{"resourceUrl":"https://api.xero.com/api.xro/2.0/Invoices/1","resourceId":"1","eventDateUtc":"2026-12-07T01:00:00.000","eventType":"UPDATE","eventCategory":"INVOICE","tenantId":"t-1","tenantType":"ORGANISATION"},{"resourceUrl":"https://api.xero.com/api.xro/2.0/Invoices/2","resourceId":"2","eventDateUtc":"2026-12-07T01:00:01.000","eventType":"CREATE","eventCategory":"INVOICE","tenantId":"t-1","tenantType":"ORGANISATION"}],"firstEventSequence":1,"lastEventSequence":2,"entropy":"QWERTY"}"#;
    let signature = b64(&hmac_sha256(body.as_bytes()));
    for round in ["first", "retry"] {
        let req = post(
            "https://h/webhooks/s",
            &[("x-xero-signature", &signature)],
            body.as_bytes(),
        );
        assert_eq!(answer(&xero, req).await, (200, String::new()), "{round}");
    }
    // The retry finds the claims RECEIVED and sends them again under the same deduplication
    // ids (SQS FIFO keeps one of each): two events.
    let distinct = |kept: &MemoryQueue| {
        kept.keys()
            .into_iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    };
    assert_eq!(distinct(&xero_kept), 2, "two events");

    let (okta, okta_kept) =
        receiver(r#"{"preset": "okta", "signature": {"secrets": ["env:S"]}}"#).await;
    let body = r#"{"eventType":"com.okta.event_hook","eventTypeVersion":"1.0","cloudEventsVersion":"0.1","source":"https://example.okta.com/api/v1/eventHooks/who8","eventId":"b5a188b9","data":{"events":[{"uuid":"5a5d1f4e-0000-4000-8000-000000000001","eventType":"user.session.start","published":"2026-12-07T01:00:00.000Z"}]},"eventTime":"2026-12-07T01:00:00.000Z","contentType":"application/json"}"#;
    for round in ["first", "retry"] {
        let req = post(
            "https://h/webhooks/s",
            &[("authorization", SECRET)],
            body.as_bytes(),
        );
        assert_eq!(answer(&okta, req).await, (200, String::new()), "{round}");
    }
    assert_eq!(distinct(&okta_kept), 1, "one event");
}

/// A queue whose first send never returns (the receiver's process froze there and was
/// dropped, its claim applied and nothing sent), then keeps what it is given.
#[derive(Clone, Default)]
struct DiesOnce {
    entered: Arc<tokio::sync::Notify>,
    died: Arc<Mutex<bool>>,
    kept: MemoryQueue,
}

impl Queue for DiesOnce {
    async fn send(&self, msg: Outgoing) -> Result<(), QueueError> {
        let dies = !std::mem::replace(&mut *self.died.lock().expect("died"), true);
        if dies {
            self.entered.notify_one();
            std::future::pending::<()>().await;
        }
        self.kept.send(msg).await
    }
}

#[tokio::test]
async fn coinbase_commerces_retry_with_a_new_attempt_number_sends_the_event_its_dead_first_delivery_never_sent(
) {
    let sources = SourceSpecs::parse(
        r#"{"s": {"preset": "coinbase-commerce", "signature": {"secrets": ["env:SECRET"]}}}"#,
    )
    .expect("config")
    .resolve(&Secrets)
    .await
    .expect("secrets");
    let queue = DiesOnce::default();
    let rx = Receiver::new(
        sources,
        MemoryLedger::new(),
        queue.clone(),
        SystemClock,
        ReceiverSettings::default(),
        Metrics::memory("receiver").0,
    );
    // Coinbase Commerce's body: `attempt_number` at the top level, one more per retry.
    let delivery = |attempt: u32| {
        let body = format!(
            r#"{{"id":1,"scheduled_for":"2026-12-07T01:00:00Z","attempt_number":{attempt},"event":{{"id":"24934862-d980-46cb-9402-43c81b0cdba6","resource":"event","type":"charge:created","api_version":"2018-03-22","created_at":"2026-12-07T01:00:00Z","data":{{"code":"66BEOV2A","name":"The Sovereign Individual"}}}}}}"#
        );
        let sig = hex::encode(hmac_sha256(body.as_bytes()));
        post(
            "https://h/webhooks/s",
            &[("x-cc-webhook-signature", sig.as_str())],
            body.as_bytes(),
        )
    };
    // The first delivery: claimed, then the receiver dies in its send (dropped there).
    tokio::select! {
        _ = rx.handle(delivery(1)) => panic!("the first delivery's send never returns"),
        () = queue.entered.notified() => {}
    }
    assert_eq!(queue.kept.len(), 0);
    // Coinbase's retry, `attempt_number` 2: the same payload, so a duplicate of the claim
    // left RECEIVED, which it marks resent and sends (no payload mismatch).
    let (status, said) = answer(&rx, delivery(2)).await;
    assert_eq!(status, 200, "{said}");
    assert_eq!(
        queue.kept.keys(),
        ["s:24934862-d980-46cb-9402-43c81b0cdba6"]
    );
    let sent = queue.kept.last().expect("a message");
    // What is queued is the retry's bytes as sent, counter and all; its hash leaves the
    // counter out.
    assert!(sent.body.contains(r#""attempt_number":2"#), "{}", sent.body);
    let without = sent.body.replace(r#""attempt_number":2,"#, "");
    assert_eq!(
        sent.payload_sha256,
        inbox::key::sha256_hex(without.as_bytes())
    );
    // A third attempt while the item is still RECEIVED (no consumer here): the same payload
    // again, sent behind under the same key and hash (the consumer takes one of them).
    let (status, said) = answer(&rx, delivery(3)).await;
    assert_eq!(status, 200, "{said}");
    assert_eq!(queue.kept.len(), 2);
    assert_eq!(queue.kept.last().expect("a message").key, sent.key);
    assert_eq!(
        queue.kept.last().expect("a message").payload_sha256,
        sent.payload_sha256
    );
}
