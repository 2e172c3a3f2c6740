//! The `lambda-idempotency` library against DynamoDB as two independent local servers serve
//! it (moto and dynalite), beside its in-memory store:
//!
//! - the transition scenarios (`crates/idempotency/tests/scenarios/`), each run on memory,
//!   moto and dynalite, with identical traces required;
//! - one DynamoDB call for a first claim and one for a duplicate, counted at the SDK layer
//!   (Powertools #3327 / #1573: two calls where one suffices);
//! - each entry point on moto: the HTTP layer, an SQS batch (FIFO groups), an event's natural
//!   key, any async function.
//!
//! The library itself depends on none of the project's crates; only this test does (for the
//! local servers).

#[path = "../crates/idempotency/tests/scenarios/mod.rs"]
mod scenarios;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType, TableStatus,
};
use devstack::faults::{self, Faults};
use devstack::testkit::unique;
use lambda_idempotency::dynamodb::DynamoStore;
use lambda_idempotency::memory::MemoryStore;
use lambda_idempotency::{idempotent, Deadline, Error, Idempotency, Key};

/// A fresh table (partition key `pk`, a string) through `client`, once it is ACTIVE.
async fn table(client: &aws_sdk_dynamodb::Client, label: &str) -> String {
    let name = unique(label);
    let key = KeySchemaElement::builder()
        .attribute_name("pk")
        .key_type(KeyType::Hash)
        .build()
        .expect("key schema");
    let attribute = AttributeDefinition::builder()
        .attribute_name("pk")
        .attribute_type(ScalarAttributeType::S)
        .build()
        .expect("attribute");
    client
        .create_table()
        .table_name(&name)
        .key_schema(key)
        .attribute_definitions(attribute)
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await
        .unwrap_or_else(|e| panic!("creating {name}: {e:?}"));
    for _ in 0..6000 {
        let described = client.describe_table().table_name(&name).send().await;
        let status = described
            .ok()
            .and_then(|d| d.table()?.table_status().cloned());
        if status == Some(TableStatus::Active) {
            return name;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    panic!("table {name} never became ACTIVE");
}

async fn moto_sdk() -> aws_config::SdkConfig {
    devstack::moto::shared();
    aws_config::load_from_env().await
}

async fn moto_store(label: &str) -> DynamoStore {
    let client = aws_sdk_dynamodb::Client::new(&moto_sdk().await);
    let name = table(&client, label).await;
    DynamoStore::new(client, name)
}

async fn dynalite_store(label: &str) -> DynamoStore {
    let client = devstack::dynalite::shared().client();
    let name = table(&client, label).await;
    DynamoStore::new(client, name)
}

fn assert_same(backend: &str, memory: &[String], other: &[String]) {
    for (i, (m, o)) in memory.iter().zip(other).enumerate() {
        assert_eq!(m, o, "step {i}: memory and {backend} differ");
    }
    assert_eq!(
        memory.len(),
        other.len(),
        "memory and {backend}: step counts"
    );
}

macro_rules! on_every_store {
    ($($name:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let memory = scenarios::$name(&MemoryStore::new()).await;
            let moto = scenarios::$name(&moto_store("idem").await).await;
            assert_same("moto", &memory, &moto);
            let dynalite = scenarios::$name(&dynalite_store("idem").await).await;
            assert_same("dynalite", &memory, &dynalite);
        }
    )*};
}

on_every_store!(
    first_call,
    duplicate_after_completion,
    duplicate_while_in_flight,
    failure_then_retry,
    failure_recorded_then_retry,
    timeout_then_retry,
    changed_payload,
    expired_counts_as_absent,
    lock_not_held_is_left_alone,
);

fn tally(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(op, n)| ((*op).to_owned(), *n)).collect()
}

/// Powertools #3327 / #1573: a first call is one UpdateItem (the claim) and one UpdateItem
/// (the result); a duplicate, done or in flight, is one UpdateItem and nothing else (the old
/// item comes back with the refused condition, `ALL_OLD`): no GetItem anywhere. The retry
/// after a call that timed out in the handler is two calls too: its claim takes the abandoned
/// record over in the same one write, then the result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_dynamodb_call_per_claim_and_per_duplicate() {
    let sdk = moto_sdk().await;
    let counted = Faults::new();
    let client = faults::dynamo_client(&sdk, &counted);
    let name = table(&client, "idem-calls").await;
    let idem = Idempotency::new(DynamoStore::new(client, name));
    let k = Key::new("calls-1").expect("key");
    counted.reset_calls();
    let first = idem
        .run(&k, b"p", &Deadline::none(), || async { Ok::<_, String>(1) })
        .await
        .expect("first");
    assert!(!first.replayed);
    assert_eq!(counted.all_calls(), tally(&[("UpdateItem", 2)]));
    counted.reset_calls();
    let again = idem
        .run(&k, b"p", &Deadline::none(), || async { Ok::<_, String>(2) })
        .await
        .expect("duplicate");
    assert_eq!((again.value, again.replayed), (1, true));
    assert_eq!(counted.all_calls(), tally(&[("UpdateItem", 1)]));
    // In flight: the nested duplicate is answered from its one PutItem too.
    let busy = Key::new("calls-2").expect("key");
    let nested_calls = std::sync::Mutex::new(BTreeMap::new());
    idem.run(&busy, b"p", &Deadline::none(), || async {
        counted.reset_calls();
        let r = idem
            .run(&busy, b"p", &Deadline::none(), || async {
                Ok::<_, String>(0)
            })
            .await;
        assert!(matches!(r, Err(Error::InFlight { .. })));
        *nested_calls.lock().expect("calls") = counted.all_calls();
        Ok::<_, String>(1)
    })
    .await
    .expect("first of calls-2");
    assert_eq!(
        *nested_calls.lock().expect("calls"),
        tally(&[("UpdateItem", 1)])
    );
    // The retry after a timeout: a claim left PROCESSING by an invocation that died, its
    // lease (the deadline) run out 9 s ago; the retry runs in 2 calls.
    let timed_out = Key::new("calls-3").expect("key");
    let now = lambda_idempotency::system_now_ms();
    let dead = scenarios::hand_claim("calls-3", "dead-invocation", now - 10_000, 1_000, b"p");
    let claimed = lambda_idempotency::Store::claim(idem.store(), &dead)
        .await
        .expect("claim");
    assert_eq!(claimed, lambda_idempotency::machine::ClaimOutcome::Claimed);
    counted.reset_calls();
    let retry = idem
        .run(&timed_out, b"p", &Deadline::none(), || async {
            Ok::<_, String>(3)
        })
        .await
        .expect("the retry runs");
    assert_eq!((retry.value, retry.replayed), (3, false));
    assert_eq!(counted.all_calls(), tally(&[("UpdateItem", 2)]));
    let rec = lambda_idempotency::Store::get(idem.store(), "calls-3")
        .await
        .expect("get")
        .expect("kept");
    assert_eq!(
        (rec.status, rec.attempts),
        (lambda_idempotency::Status::Completed, 2)
    );
}

/// Any async function, on moto: `idempotent(&store, key, payload, deadline, f)`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_function_runs_once_on_dynamodb() {
    let store = moto_store("idem-fn").await;
    let runs = AtomicU32::new(0);
    let k = Key::new("charge-9").expect("key");
    let deadline = Deadline::at_epoch_ms(lambda_idempotency::system_now_ms() + 10_000);
    for _ in 0..3 {
        let charged = idempotent(&store, &k, b"{\"cents\":500}", &deadline, || async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>("ch_1".to_owned())
        })
        .await
        .expect("charged");
        assert_eq!(charged.value, "ch_1");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// One request through a service (ready, then called).
async fn send<Svc>(
    svc: &mut Svc,
    req: lambda_http::Request,
) -> lambda_http::Response<lambda_http::Body>
where
    Svc: lambda_http::Service<
        lambda_http::Request,
        Response = lambda_http::Response<lambda_http::Body>,
    >,
    Svc::Error: std::fmt::Debug,
{
    futures::future::poll_fn(|cx| svc.poll_ready(cx))
        .await
        .expect("ready");
    svc.call(req).await.expect("a response")
}

fn post(key: Option<&str>, body: &str) -> lambda_http::Request {
    let mut builder = http::Request::builder().method("POST").uri("/orders");
    if let Some(k) = key {
        builder = builder.header("Idempotency-Key", k);
    }
    builder
        .body(lambda_http::Body::Text(body.to_owned()))
        .expect("request")
}

fn text(response: &lambda_http::Response<lambda_http::Body>) -> String {
    match response.body() {
        lambda_http::Body::Text(t) => t.clone(),
        lambda_http::Body::Binary(b) => String::from_utf8_lossy(b).into_owned(),
        _ => String::new(),
    }
}

/// The HTTP layer on moto, per draft-ietf-httpapi-idempotency-key-header: 400 without the
/// key, the first response replayed with `Idempotent-Replayed: true`, 422 for the key with
/// another body, 409 with `Retry-After` while the first is in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_layer_on_dynamodb() {
    use lambda_http::tower::Layer;
    use lambda_idempotency::http::IdempotencyLayer;

    let store = moto_store("idem-http").await;
    let runs = Arc::new(AtomicU32::new(0));
    let counter = runs.clone();
    let handler = lambda_http::service_fn(move |req: lambda_http::Request| {
        let counter = counter.clone();
        async move {
            let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
            let body = format!("order {n} for {}", text_of(&req));
            lambda_http::Response::builder()
                .status(201)
                .header("content-type", "text/plain")
                .body(lambda_http::Body::Text(body))
                .map_err(lambda_http::Error::from)
        }
    });
    let mut svc = IdempotencyLayer::new(Idempotency::new(store.clone())).layer(handler);

    let missing = send(&mut svc, post(None, "a")).await;
    assert_eq!(missing.status(), 400);
    let first = send(&mut svc, post(Some("\"ord-1\""), "a")).await;
    assert_eq!(
        (first.status().as_u16(), text(&first)),
        (201, "order 1 for a".to_owned())
    );
    assert!(first.headers().get("idempotent-replayed").is_none());
    let again = send(&mut svc, post(Some("\"ord-1\""), "a")).await;
    assert_eq!(
        (again.status().as_u16(), text(&again)),
        (201, "order 1 for a".to_owned())
    );
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(again.headers()["content-type"], "text/plain");
    let other = send(&mut svc, post(Some("\"ord-1\""), "b")).await;
    assert_eq!(other.status(), 422);
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // In flight: a claim held by another invocation, its lease 30 s ahead.
    let now = lambda_idempotency::system_now_ms();
    let held = scenarios::hand_claim("ord-2", "another", now, 30_000, b"POST /orders\na");
    let _ = lambda_idempotency::Store::claim(&store, &held)
        .await
        .expect("claim");
    let busy = send(&mut svc, post(Some("ord-2"), "a")).await;
    assert_eq!(busy.status(), 409);
    let retry: u64 = busy.headers()["retry-after"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("secs");
    assert!((29..=31).contains(&retry), "Retry-After {retry}");
}

fn text_of(req: &lambda_http::Request) -> String {
    match req.body() {
        lambda_http::Body::Text(t) => t.clone(),
        _ => String::new(),
    }
}

fn sqs_message(id: &str, group: Option<&str>, body: &str) -> aws_lambda_events::sqs::SqsMessage {
    let mut m = aws_lambda_events::sqs::SqsMessage::default();
    m.message_id = Some(id.to_owned());
    m.body = Some(body.to_owned());
    if let Some(g) = group {
        m.attributes.insert("MessageGroupId".into(), g.into());
        m.event_source_arn = Some("arn:aws:sqs:us-east-1:123456789012:q.fifo".into());
    }
    m
}

/// An SQS FIFO batch on moto: a group's records after a failure fail without running, other
/// groups go on; a redelivered batch runs nothing that completed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqs_fifo_batch_on_dynamodb() {
    use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
    use lambda_idempotency::sqs::process_batch;

    let idem = Idempotency::new(moto_store("idem-sqs").await);
    let mut event = SqsEvent::default();
    event.records = vec![
        sqs_message("a1", Some("a"), "ok"),
        sqs_message("a2", Some("a"), "fail"),
        sqs_message("a3", Some("a"), "ok"),
        sqs_message("b1", Some("b"), "ok"),
        sqs_message("b2", Some("b"), "ok"),
    ];
    let ran = std::sync::Mutex::new(Vec::new());
    let batch = |event: SqsEvent| {
        let ran = &ran;
        let idem = &idem;
        async move {
            process_batch(
                idem,
                event,
                &Deadline::none(),
                |m: &SqsMessage| Key::new(m.message_id.clone().unwrap_or_default()),
                |m: SqsMessage| async move {
                    ran.lock()
                        .expect("ran")
                        .push(m.message_id.clone().unwrap_or_default());
                    match m.body.as_deref() {
                        Some("fail") => Err("refused".to_owned()),
                        _ => Ok(()),
                    }
                },
            )
            .await
        }
    };
    let response = batch(event.clone()).await;
    let mut failed: Vec<String> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect();
    failed.sort();
    assert_eq!(failed, ["a2", "a3"]);
    assert_eq!(*ran.lock().expect("ran"), ["a1", "a2", "b1", "b2"]);
    // Redelivered: nothing completed runs again; the failed record runs again (and fails).
    ran.lock().expect("ran").clear();
    let response = batch(event).await;
    assert_eq!(response.batch_item_failures.len(), 2);
    assert_eq!(*ran.lock().expect("ran"), ["a2"]);
}

/// An event's natural key on moto: an SNS record delivered twice runs once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn natural_key_on_dynamodb() {
    use aws_lambda_events::sns::SnsRecord;
    use lambda_idempotency::events::NaturalKey;

    let idem = Idempotency::new(moto_store("idem-events").await);
    let mut record = SnsRecord::default();
    record.sns.message_id = "95df01b4-ee98-5cb9-9903-4c221d41eb5e".into();
    record.sns.message = "{\"order\":7}".into();
    let runs = AtomicU32::new(0);
    for _ in 0..2 {
        let key = record.natural_key().expect("a key");
        let out = idem
            .run(
                &key,
                record.sns.message.as_bytes(),
                &Deadline::none(),
                || async {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, String>(7)
                },
            )
            .await
            .expect("ran");
        assert_eq!(out.value, 7);
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// Each package of a Cargo.lock with its version(s).
fn locked(path: &str) -> BTreeMap<String, Vec<String>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let mut versions: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut name = None;
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("name = ") {
            name = Some(n.trim_matches('"').to_owned());
        } else if let (Some(v), Some(n)) = (line.strip_prefix("version = "), name.take()) {
            versions
                .entry(n)
                .or_default()
                .push(v.trim_matches('"').to_owned());
        }
    }
    versions
}

/// The Lambda project outside the workspace (examples/outside-workspace/, checked by make
/// lint with `--locked` in the workspace's target directory) resolves every dependency to the
/// workspace's version: so its check reuses the workspace's build, and it is the build a user
/// of the library gets with this lockfile. Out of step after a `cargo update`, or a dependency
/// the library gained: `cp Cargo.lock examples/outside-workspace/ && cargo tree --manifest-path
/// examples/outside-workspace/Cargo.toml > /dev/null` (cargo keeps the versions and prunes).
#[test]
fn the_outside_example_locks_the_workspaces_versions() {
    let workspace = locked("../Cargo.lock");
    let outside = locked("../examples/outside-workspace/Cargo.lock");
    assert!(
        outside.contains_key("lambda-idempotency") && outside.contains_key("aws-sdk-dynamodb"),
        "the example's lockfile holds the library and the SDK: {:?}",
        outside.keys().collect::<Vec<_>>()
    );
    for (name, versions) in &outside {
        if name == "idempotent-lambdas" {
            continue;
        }
        let theirs = workspace.get(name).cloned().unwrap_or_default();
        for v in versions {
            assert!(
                theirs.contains(v),
                "{name} {v} in the example's lockfile, {theirs:?} in the workspace's"
            );
        }
    }
}
