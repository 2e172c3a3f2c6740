//! A duplicate on the in-memory ledger, past the replay cache or answered by it: while the
//! item is RECEIVED and the body is the stored one, the stored event is sent again under the
//! same deduplication id; a changed body or a completed item sends nothing.

use http::Request;
use inbox::clock::SystemClock;
use inbox::config::AwsSecretResolver;
use inbox::ledger::memory::MemoryLedger;
use inbox::ledger::{LedgerStore, Take, TakeItem};
use inbox::metrics::Metrics;
use inbox::queue::MemoryQueue;
use inbox::receiver::{Receiver, ReceiverSettings};
use inbox::SourceSpecs;
use lambda_http::Body;

const SOURCES: &str = r#"{"shop": {"signature": {"scheme": "none"}, "allow_unsigned": true,
    "key": {"from": "json", "pointers": ["/id"]}, "on_payload_mismatch": "accept"}}"#;

async fn receiver(
    cache_keys: usize,
) -> (
    Receiver<MemoryLedger, MemoryQueue, SystemClock>,
    MemoryQueue,
) {
    let sources = SourceSpecs::parse(SOURCES)
        .expect("sources")
        .resolve(&AwsSecretResolver::env_only())
        .await
        .expect("resolved");
    let kept = MemoryQueue::new();
    let rx = Receiver::new(
        sources,
        MemoryLedger::new(),
        kept.clone(),
        SystemClock,
        ReceiverSettings::default().with_replay_cache(cache_keys),
        Metrics::memory("receiver").0,
    );
    (rx, kept)
}

fn post(body: &str) -> lambda_http::Request {
    Request::builder()
        .method("POST")
        .uri("https://example.com/webhooks/shop")
        .header("content-type", "application/json")
        .body(Body::from(body.to_owned()))
        .expect("a request")
}

async fn status_of(rx: &Receiver<MemoryLedger, MemoryQueue, SystemClock>, body: &str) -> u16 {
    rx.handle(post(body)).await.status().as_u16()
}

#[tokio::test]
async fn without_the_cache_a_duplicate_of_a_received_item_is_sent_again_its_changed_body_never() {
    let (rx, kept) = receiver(0).await;
    assert_eq!(status_of(&rx, r#"{"id": "o-1"}"#).await, 200);
    assert_eq!(status_of(&rx, r#"{"id": "o-1"}"#).await, 200);
    assert_eq!(
        kept.dedup_ids(),
        ["shop:o-1", "shop:o-1"],
        "sent behind the live claim"
    );
    assert_eq!(
        status_of(&rx, r#"{"id": "o-1", "changed": true}"#).await,
        200
    );
    assert_eq!(
        kept.dedup_ids().len(),
        2,
        "a changed body is answered, never sent"
    );
}

#[tokio::test]
async fn a_duplicate_of_a_completed_item_sends_nothing() {
    let (rx, kept) = receiver(0).await;
    assert_eq!(status_of(&rx, r#"{"id": "o-2"}"#).await, 200);
    let item = rx.ledger().get("shop:o-2").await.unwrap().expect("claimed");
    let now = item.received_at;
    let take = Take {
        key: item.key.clone(),
        source: item.source.clone(),
        payload_sha256: item.payload_sha256.clone(),
        owner: "consumer".into(),
        now_ms: now,
        lease_until_ms: now + 60_000,
        expires_at: item.expires_at,
        response_status: 200,
        response_body: String::new(),
        archived_at: None,
        item: TakeItem::Event,
    };
    rx.ledger().take(&take).await.unwrap();
    assert!(rx
        .ledger()
        .complete("shop:o-2", "consumer", now)
        .await
        .unwrap());
    assert_eq!(status_of(&rx, r#"{"id": "o-2"}"#).await, 200);
    assert_eq!(
        kept.dedup_ids(),
        ["shop:o-2"],
        "completed: answered, not sent"
    );
}

#[tokio::test]
async fn with_the_cache_a_warm_duplicate_is_answered_from_memory() {
    let (rx, kept) = receiver(10).await;
    assert_eq!(status_of(&rx, r#"{"id": "o-3"}"#).await, 200);
    assert_eq!(status_of(&rx, r#"{"id": "o-3"}"#).await, 200);
    assert_eq!(
        kept.dedup_ids(),
        ["shop:o-3"],
        "the cache answered; nothing sent again"
    );
}
