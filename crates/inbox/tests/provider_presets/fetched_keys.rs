//! Issue 38 item 2, the fetched-key rules, on the aws-sns preset (docs/providers.md, "Fetched
//! keys"): what the table above does not reach because only an attacker or an outage sends it.
//! The messages are sign.py's (signed with a certificate the test made, checked by npm
//! `sns-validator` first); the certificate is served by a local server through the test-only
//! setting, or not served at all.

use super::*;

use inbox::key_fetch::{KeyFetcher, TEST_ORIGIN_ENV};
use inbox::test_ca::TEST_CA_ENV;

fn sns_cases() -> Vec<Case> {
    let python = root().join(".venv-providers/bin/python");
    cases_from(
        python,
        "tests/providers/sign.py",
        SystemClock.now_secs(),
        Some(&["aws-sns"]),
    )
}

fn named<'a>(cases: &'a [Case], start: &str) -> &'a Case {
    cases
        .iter()
        .find(|c| c.name.starts_with(start))
        .unwrap_or_else(|| panic!("no aws-sns case {start}"))
}

/// A receiver of the aws-sns source whose fetches go to `origin` (none: to a port nothing
/// listens on, so every fetch fails).
async fn sns_receiver(case: &Case, origin: Option<String>) -> (Rx, MemoryQueue) {
    let mut without = case.source.clone();
    without.remove("test_certificates");
    let bare = Case {
        preset: case.preset.clone(),
        kind: case.kind.clone(),
        name: case.name.clone(),
        signed_by: case.signed_by.clone(),
        secret: case.secret.clone(),
        wrong_secret: case.wrong_secret.clone(),
        source: without,
        request: Req {
            method: case.request.method.clone(),
            path: case.request.path.clone(),
            query: case.request.query.clone(),
            headers: case.request.headers.clone(),
            body_base64: case.request.body_base64.clone(),
        },
        expect: case.expect.clone(),
    };
    let (rx, kept) = receiver(&bare, Some(&case.secret)).await;
    let origin = origin.unwrap_or_else(|| {
        // A port bound then released: nothing answers there.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a port")
            .port();
        format!("http://127.0.0.1:{port}")
    });
    let fetcher = KeyFetcher::new(Some(&origin)).expect("an origin");
    (rx.with_key_fetcher(fetcher), kept)
}

fn certificates(case: &Case) -> HashMap<String, String> {
    serde_json::from_value(case.source["test_certificates"].clone()).expect("certificates")
}

fn error_code(answer: &Answer) -> String {
    serde_json::from_slice::<Value>(&answer.body)
        .ok()
        .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_default()
}

/// `body` with `field`'s string value replaced by `value` (the signature left as it was).
fn with_field(body: &[u8], field: &str, value: &str) -> Vec<u8> {
    let mut message: serde_json::Map<String, Value> =
        serde_json::from_slice(body).expect("an SNS message");
    message.insert(field.to_owned(), json!(value));
    serde_json::to_vec(&message).expect("json")
}

/// Each of `cases` accepted (200) and in the ledger under its preset's key, the certificate
/// fetched once for all of them.
async fn accepted_with_one_fetch(rx: &Rx, cases: &[&Case]) {
    for case in cases {
        let answer = send(rx, &case.request, body_of(&case.request)).await;
        assert_eq!(answer.status, 200, "{}", case.name);
    }
    let keys: Vec<String> = rx.ledger().snapshot().into_iter().map(|r| r.key).collect();
    for case in cases {
        let key = format!(
            "{}:{}",
            case.preset,
            case.expect["key"].as_str().expect("key")
        );
        assert!(keys.contains(&key), "{key} not in {keys:?}");
    }
    assert_eq!(
        rx.key_fetcher().fetches(),
        1,
        "the certificate fetched again"
    );
}

fn nothing_written(rx: &Rx, kept: &MemoryQueue, what: &str) {
    assert!(rx.ledger().snapshot().is_empty(), "{what}: a ledger write");
    assert!(kept.is_empty(), "{what}: a message sent");
}

#[tokio::test]
async fn a_certificate_url_off_the_sns_hosts_is_refused_without_a_fetch() {
    let cases = sns_cases();
    let event = named(&cases, "Notification, SignatureVersion 1");
    let (rx, kept) = sns_receiver(event, Some(cert_server(certificates(event)))).await;
    for url in [
        "https://sns.us-east-1.amazonaws.com.evil.example/SimpleNotificationService-1.pem",
        "https://evil.example/SimpleNotificationService-1.pem",
        "http://sns.us-east-1.amazonaws.com/SimpleNotificationService-1.pem",
        "https://sns.us-east-1.amazonaws.com:8443/SimpleNotificationService-1.pem",
    ] {
        let body = with_field(&body_of(&event.request), "SigningCertURL", url);
        let answer = send(&rx, &event.request, body).await;
        assert_eq!(answer.status, 401, "{url}");
        assert_eq!(error_code(&answer), "invalid_signature", "{url}");
    }
    assert_eq!(rx.key_fetcher().fetches(), 0, "a foreign host was fetched");
    nothing_written(&rx, &kept, "a foreign certificate host");
}

#[tokio::test]
async fn a_topic_the_source_does_not_accept_is_refused_without_a_fetch() {
    let cases = sns_cases();
    let event = named(&cases, "Notification, SignatureVersion 1");
    let (rx, kept) = sns_receiver(event, Some(cert_server(certificates(event)))).await;
    let body = with_field(&body_of(&event.request), "TopicArn", &event.wrong_secret);
    let answer = send(&rx, &event.request, body).await;
    assert_eq!(
        (answer.status, error_code(&answer).as_str()),
        (401, "invalid_signature")
    );
    assert_eq!(rx.key_fetcher().fetches(), 0);
    nothing_written(&rx, &kept, "another topic");
}

#[tokio::test]
async fn a_certificate_that_cannot_be_fetched_is_503_and_writes_nothing() {
    let cases = sns_cases();
    let event = named(&cases, "Notification, SignatureVersion 1");
    // Nothing listens, then a server without the certificate (404), then one whose body is
    // not a certificate: each 503 key_unavailable, never an acceptance.
    let not_a_cert: HashMap<String, String> = certificates(event)
        .into_keys()
        .map(|path| (path, "not a certificate".to_owned()))
        .collect();
    for origin in [
        None,
        Some(cert_server(HashMap::new())),
        Some(cert_server(not_a_cert)),
    ] {
        let what = format!("{origin:?}");
        let (rx, kept) = sns_receiver(event, origin).await;
        let answer = send(&rx, &event.request, body_of(&event.request)).await;
        assert_eq!(answer.status, 503, "{what}");
        assert_eq!(error_code(&answer), "key_unavailable", "{what}");
        assert_eq!(rx.key_fetcher().fetches(), 1, "{what}");
        assert_eq!(rx.key_fetcher().cached(), 0, "{what}: a failure cached");
        nothing_written(&rx, &kept, &what);
    }
}

#[tokio::test]
async fn a_subscription_whose_url_cannot_be_visited_is_503_and_unconfirmed() {
    let cases = sns_cases();
    let confirm = named(&cases, "SubscriptionConfirmation");
    // The certificate is served, the SubscribeURL visit is not (404).
    let server = tiny_http::Server::http("127.0.0.1:0").expect("a port");
    let origin = format!("http://{}", server.server_addr());
    let certs = certificates(confirm);
    std::thread::spawn(move || {
        for request in server.incoming_requests() {
            let response = match certs.get(request.url()) {
                Some(pem) => tiny_http::Response::from_string(pem.clone()),
                None => tiny_http::Response::from_string("").with_status_code(404),
            };
            let _ = request.respond(response);
        }
    });
    let (rx, kept) = sns_receiver(confirm, Some(origin)).await;
    let answer = send(&rx, &confirm.request, body_of(&confirm.request)).await;
    assert_eq!(
        (answer.status, error_code(&answer).as_str()),
        (503, "subscription_not_confirmed")
    );
    nothing_written(&rx, &kept, "an unconfirmed subscription");
    // A SubscribeURL off the SNS hosts is never visited: the signature no longer matches
    // either, but the host is refused first for the visit's sake.
    let foreign = with_field(
        &body_of(&confirm.request),
        "SubscribeURL",
        "https://evil.example/?Action=ConfirmSubscription",
    );
    let fetched = rx.key_fetcher().fetches();
    let answer = send(&rx, &confirm.request, foreign).await;
    assert_eq!(answer.status, 401);
    assert_eq!(
        rx.key_fetcher().fetches(),
        fetched,
        "a foreign SubscribeURL visited"
    );
}

#[tokio::test]
async fn a_bad_signature_is_401_and_the_certificate_is_fetched_once_per_instance() {
    let cases = sns_cases();
    let first = named(&cases, "Notification, SignatureVersion 1");
    let alike = named(&cases, "a look-alike");
    let (rx, kept) = sns_receiver(first, Some(cert_server(certificates(first)))).await;
    // The look-alike's body under the first's signature (both are genuine SNS messages).
    let first_signature = serde_json::from_slice::<Value>(&body_of(&first.request)).expect("json")
        ["Signature"]
        .as_str()
        .expect("Signature")
        .to_owned();
    let forged = with_field(&body_of(&alike.request), "Signature", &first_signature);
    let answer = send(&rx, &alike.request, forged).await;
    assert_eq!(
        (answer.status, error_code(&answer).as_str()),
        (401, "invalid_signature")
    );
    nothing_written(&rx, &kept, "a bad signature");
    // The genuine ones: accepted, each under its MessageId, one certificate fetch in all.
    accepted_with_one_fetch(&rx, &[first, alike]).await;
    assert_eq!(rx.key_fetcher().cached(), 1);
}

/// Neither test-only setting is in the template or samconfig.toml: the fetch origin, nor the
/// CA the HTTPS clients would also trust (`inbox::test_ca`).
#[test]
fn the_template_never_sets_the_test_only_fetch_origin_or_ca() {
    assert_eq!(TEST_ORIGIN_ENV, "KEY_FETCH_TEST_ORIGIN");
    assert_eq!(TEST_CA_ENV, "HTTPS_TEST_CA_FILE");
    for file in ["template.yaml", "samconfig.toml"] {
        let text = std::fs::read_to_string(root().join(file)).expect(file);
        for setting in [TEST_ORIGIN_ENV, TEST_CA_ENV] {
            assert!(
                !text.contains(setting),
                "{file} sets the test-only {setting}"
            );
        }
    }
    // And the setting is refused unless it is a bare origin.
    assert!(KeyFetcher::new(Some("http://127.0.0.1:1/certs")).is_err());
}

/// The paypal preset's cases from sign.py (signed with a certificate the test made).
fn paypal_cases() -> Vec<Case> {
    let python = root().join(".venv-providers/bin/python");
    cases_from(
        python,
        "tests/providers/sign.py",
        SystemClock.now_secs(),
        Some(&["paypal"]),
    )
}

/// `req` with header `name` set to `value`.
fn with_header(req: &Req, name: &str, value: &str) -> Req {
    let mut headers = req.headers.clone();
    headers.retain(|k, _| !k.eq_ignore_ascii_case(name));
    headers.insert(name.to_owned(), value.to_owned());
    Req {
        method: req.method.clone(),
        path: req.path.clone(),
        query: req.query.clone(),
        headers,
        body_base64: req.body_base64.clone(),
    }
}

#[tokio::test]
async fn a_paypal_certificate_url_off_paypals_hosts_is_refused_without_a_fetch() {
    let cases = paypal_cases();
    let event = cases
        .iter()
        .find(|c| c.kind == "event")
        .expect("a paypal event");
    let (rx, kept) = sns_receiver(event, Some(cert_server(certificates(event)))).await;
    let path = certificates(event).into_keys().next().expect("a path");
    for url in [
        format!("https://api.paypal.com.evil.example{path}"),
        format!("https://evil.example{path}"),
        format!("http://api.paypal.com{path}"),
        format!("https://api.paypal.com:8443{path}"),
        format!("https://www.paypal.com{path}"),
        "https://api.paypal.com/v1/other/CERT-1".to_owned(),
    ] {
        let req = with_header(&event.request, "PAYPAL-CERT-URL", &url);
        let answer = send(&rx, &req, body_of(&req)).await;
        assert_eq!(
            (answer.status, error_code(&answer).as_str()),
            (401, "invalid_signature"),
            "{url}"
        );
    }
    let sha1 = with_header(&event.request, "PAYPAL-AUTH-ALGO", "SHA1withRSA");
    let answer = send(&rx, &sha1, body_of(&sha1)).await;
    assert_eq!(answer.status, 401, "SHA1withRSA");
    assert_eq!(rx.key_fetcher().fetches(), 0, "a foreign host was fetched");
    nothing_written(&rx, &kept, "a foreign certificate host");
}

#[tokio::test]
async fn a_paypal_certificate_that_cannot_be_fetched_is_503_and_writes_nothing() {
    let cases = paypal_cases();
    let event = cases
        .iter()
        .find(|c| c.kind == "event")
        .expect("a paypal event");
    let not_a_cert: HashMap<String, String> = certificates(event)
        .into_keys()
        .map(|path| (path, "not a certificate".to_owned()))
        .collect();
    for origin in [
        None,
        Some(cert_server(HashMap::new())),
        Some(cert_server(not_a_cert)),
    ] {
        let what = format!("{origin:?}");
        let (rx, kept) = sns_receiver(event, origin).await;
        let answer = send(&rx, &event.request, body_of(&event.request)).await;
        assert_eq!(
            (answer.status, error_code(&answer).as_str()),
            (503, "key_unavailable"),
            "{what}"
        );
        assert_eq!(rx.key_fetcher().fetches(), 1, "{what}");
        assert_eq!(rx.key_fetcher().cached(), 0, "{what}: a failure cached");
        nothing_written(&rx, &kept, &what);
    }
}

#[tokio::test]
async fn a_paypal_bad_signature_is_401_and_the_certificate_is_fetched_once() {
    let cases = paypal_cases();
    let first = cases.iter().find(|c| c.kind == "event").expect("an event");
    let alike = cases
        .iter()
        .find(|c| c.kind == "distinct")
        .expect("a look-alike");
    let (rx, kept) = sns_receiver(first, Some(cert_server(certificates(first)))).await;
    // The look-alike's body and transmission under the first's signature.
    let signature = &first.request.headers["PAYPAL-TRANSMISSION-SIG"];
    let forged = with_header(&alike.request, "PAYPAL-TRANSMISSION-SIG", signature);
    let answer = send(&rx, &forged, body_of(&forged)).await;
    assert_eq!(
        (answer.status, error_code(&answer).as_str()),
        (401, "invalid_signature")
    );
    nothing_written(&rx, &kept, "a bad signature");
    accepted_with_one_fetch(&rx, &[first, alike]).await;
}
