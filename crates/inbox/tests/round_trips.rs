//! The receiver's round trips on a body-only source: the body guard and the claim
//! are written side by side, so a first delivery waits for two round trips (guard and claim
//! together, then the send), not three; a replayed body under a new key keeps no claim.

use std::sync::atomic::{AtomicUsize, Ordering};

use http::Request;
use inbox::clock::SystemClock;
use inbox::config::AwsSecretResolver;
use inbox::ledger::memory::MemoryLedger;
use inbox::ledger::{
    BodyGuard, Claim, ClaimOutcome, GuardOutcome, LedgerStore, Record, StoreError, Take,
    TakeOutcome,
};
use inbox::metrics::Metrics;
use inbox::queue::MemoryQueue;
use inbox::receiver::{Receiver, ReceiverSettings};
use inbox::SourceSpecs;
use lambda_http::Body;

/// The memory ledger, noting how many of its calls are in flight at once: each call yields
/// to the executor before it runs, as a network call would.
#[derive(Default)]
struct Overlap {
    inner: MemoryLedger,
    in_flight: AtomicUsize,
    most: AtomicUsize,
}

impl Overlap {
    async fn around<T>(&self, call: impl std::future::Future<Output = T>) -> T {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        let out = call.await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        out
    }
}

impl LedgerStore for Overlap {
    async fn claim(&self, c: &Claim) -> Result<ClaimOutcome, StoreError> {
        self.around(self.inner.claim(c)).await
    }
    async fn release(&self, key: &str, owner: &str, now_ms: i64) -> Result<bool, StoreError> {
        self.around(self.inner.release(key, owner, now_ms)).await
    }
    async fn take(&self, t: &Take) -> Result<TakeOutcome, StoreError> {
        self.around(self.inner.take(t)).await
    }
    async fn complete(&self, key: &str, owner: &str, now_ms: i64) -> Result<bool, StoreError> {
        self.around(self.inner.complete(key, owner, now_ms)).await
    }
    async fn fail(
        &self,
        key: &str,
        owner: &str,
        error: &str,
        now_ms: i64,
    ) -> Result<Option<u32>, StoreError> {
        self.around(self.inner.fail(key, owner, error, now_ms))
            .await
    }
    async fn defer(
        &self,
        key: &str,
        owner: &str,
        reason: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        self.around(self.inner.defer(key, owner, reason, now_ms))
            .await
    }
    async fn note_refusal(&self, key: &str, reason: &str, now_ms: i64) -> Result<bool, StoreError> {
        self.around(self.inner.note_refusal(key, reason, now_ms))
            .await
    }
    async fn keep_hook_secret(
        &self,
        source: &str,
        secret: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        self.inner.keep_hook_secret(source, secret, now_ms).await
    }
    async fn hook_secret(&self, source: &str) -> Result<Option<String>, StoreError> {
        self.inner.hook_secret(source).await
    }
    async fn open_handshake(&self, source: &str, until_s: i64) -> Result<bool, StoreError> {
        self.inner.open_handshake(source, until_s).await
    }
    async fn guard_body(&self, g: &BodyGuard, now_ms: i64) -> Result<GuardOutcome, StoreError> {
        self.around(self.inner.guard_body(g, now_ms)).await
    }
    async fn get(&self, key: &str) -> Result<Option<Record>, StoreError> {
        self.inner.get(key).await
    }
    async fn mark_resent(
        &self,
        key: &str,
        owner: &str,
        payload_sha256: &str,
        now_ms: i64,
    ) -> Result<Option<Option<Record>>, StoreError> {
        self.around(self.inner.mark_resent(key, owner, payload_sha256, now_ms))
            .await
    }
    async fn request_replay(
        &self,
        key: &str,
        payload_sha256: &str,
        replay_id: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        self.around(
            self.inner
                .request_replay(key, payload_sha256, replay_id, now_ms),
        )
        .await
    }
    async fn take_replay(&self, t: &Take, replay_id: &str) -> Result<TakeOutcome, StoreError> {
        self.around(self.inner.take_replay(t, replay_id)).await
    }
    async fn complete_replay(
        &self,
        key: &str,
        owner: &str,
        replay_id: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        self.around(self.inner.complete_replay(key, owner, replay_id, now_ms))
            .await
    }
    async fn give_back_replay(
        &self,
        key: &str,
        owner: &str,
        error: &str,
        failed: bool,
    ) -> Result<Option<u32>, StoreError> {
        self.around(self.inner.give_back_replay(key, owner, error, failed))
            .await
    }
}

/// The template's default source: GitHub's scheme, its delivery id, a 72-hour body guard.
const SOURCES: &str = r#"{"shop": {"signature": {"scheme": "github", "secrets": ["env:INBOX_TEST_ROUND_TRIPS"]},
    "key": {"from": "header", "name": "X-GitHub-Delivery"}, "replay_guard_seconds": 259200}}"#;
const SECRET: &str = "a-secret-of-enough-bytes";

fn post(delivery: &str, body: &str) -> lambda_http::Request {
    use hmac::Mac as _;
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(SECRET.as_bytes()).expect("key");
    mac.update(body.as_bytes());
    let signature = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
    Request::builder()
        .method("POST")
        .uri("https://example.com/webhooks/shop")
        .header("x-github-delivery", delivery)
        .header("x-hub-signature-256", signature)
        .body(Body::from(body.to_owned()))
        .expect("a request")
}

#[tokio::test]
async fn the_guard_and_the_claim_share_one_round_trip_and_a_replay_keeps_no_claim() {
    std::env::set_var("INBOX_TEST_ROUND_TRIPS", SECRET);
    let sources = SourceSpecs::parse(SOURCES)
        .expect("sources")
        .resolve(&AwsSecretResolver::env_only())
        .await
        .expect("resolved");
    let kept = MemoryQueue::new();
    let rx = Receiver::new(
        sources,
        Overlap::default(),
        kept.clone(),
        SystemClock,
        ReceiverSettings::default(),
        Metrics::memory("receiver").0,
    );
    let resp = rx.handle(post("d-1", r#"{"a":1}"#)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(kept.len(), 1);
    assert_eq!(
        rx.ledger().most.load(Ordering::SeqCst),
        2,
        "the guard and the claim were in flight together"
    );
    // The same body under another delivery id: 409, and its claim given back.
    let resp = rx.handle(post("d-2", r#"{"a":1}"#)).await;
    assert_eq!(resp.status(), 409);
    assert!(rx.ledger().inner.get("shop:d-2").await.unwrap().is_none());
    assert!(rx.ledger().inner.get("shop:d-1").await.unwrap().is_some());
    assert_eq!(kept.len(), 1, "nothing sent");
    // The sender's own retry of d-1 passes the guard: the first answer, replayed.
    let resp = rx.handle(post("d-1", r#"{"a":1}"#)).await;
    assert_eq!(resp.status(), 200);
}
