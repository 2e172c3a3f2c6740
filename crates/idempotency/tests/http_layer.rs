//! The HTTP layer on the memory store: the answers of draft-ietf-httpapi-idempotency-key-header.
#![cfg(all(feature = "http", feature = "memory"))]

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use lambda_http::{Body, Request, Response};
use lambda_idempotency::http::IdempotencyLayer;
use lambda_idempotency::memory::MemoryStore;
use lambda_idempotency::Idempotency;
use tower::{Layer, Service, ServiceExt};

fn request(method: &str, key: Option<&str>, body: Body) -> Request {
    let mut b = http::Request::builder().method(method).uri("/pay");
    if let Some(k) = key {
        b = b.header("Idempotency-Key", k);
    }
    b.body(body).expect("request")
}

/// A handler answering `status` with a numbered body, counting its runs.
fn handler(
    runs: Arc<AtomicU32>,
    status: u16,
) -> impl Service<Request, Response = Response<Body>, Error = lambda_http::Error, Future: Send>
       + Clone
       + Send
       + 'static {
    tower::service_fn(move |_req: Request| {
        let runs = runs.clone();
        async move {
            let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
            let response = Response::builder()
                .status(status)
                .body(Body::Binary(vec![0xff, n as u8]))?;
            Ok::<_, lambda_http::Error>(response)
        }
    })
}

async fn call<S>(svc: &mut S, req: Request) -> Response<Body>
where
    S: Service<Request, Response = Response<Body>>,
    S::Error: std::fmt::Debug,
{
    svc.ready()
        .await
        .expect("ready")
        .call(req)
        .await
        .expect("a response")
}

#[tokio::test]
async fn keyed_requests_run_once_and_replay_their_first_response() {
    let runs = Arc::new(AtomicU32::new(0));
    let layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()));
    let mut svc = layer.layer(handler(runs.clone(), 200));
    let first = call(&mut svc, request("POST", Some("k1"), Body::from("a"))).await;
    assert_eq!(first.body(), &Body::Binary(vec![0xff, 1]));
    let again = call(&mut svc, request("POST", Some("k1"), Body::from("a"))).await;
    assert_eq!(
        again.body(),
        &Body::Binary(vec![0xff, 1]),
        "binary bodies replayed intact"
    );
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let other = call(&mut svc, request("POST", Some("k1"), Body::from("b"))).await;
    assert_eq!(other.status(), 422);
    assert_eq!(other.headers()["content-type"], "application/problem+json");
    let missing = call(&mut svc, request("POST", None, Body::from("a"))).await;
    assert_eq!(missing.status(), 400);
    let invalid = call(&mut svc, request("POST", Some("\"\""), Body::from("a"))).await;
    assert_eq!(invalid.status(), 400);
    // GET is not guarded.
    call(&mut svc, request("GET", None, Body::Empty)).await;
    call(&mut svc, request("GET", Some("k1"), Body::Empty)).await;
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_server_error_is_not_stored_and_the_retry_runs() {
    let runs = Arc::new(AtomicU32::new(0));
    let store = MemoryStore::new();
    let layer = IdempotencyLayer::new(Idempotency::new(store.clone()));
    let mut svc = layer.layer(handler(runs.clone(), 503));
    let first = call(&mut svc, request("POST", Some("k"), Body::from("a"))).await;
    assert_eq!(first.status(), 503);
    assert!(store.records().is_empty(), "the claim was released");
    let retry = call(&mut svc, request("POST", Some("k"), Body::from("a"))).await;
    assert_eq!(retry.status(), 503);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn an_optional_key_lets_unkeyed_requests_through() {
    let runs = Arc::new(AtomicU32::new(0));
    let layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new())).required(false);
    let mut svc = layer.layer(handler(runs.clone(), 200));
    call(&mut svc, request("POST", None, Body::from("a"))).await;
    call(&mut svc, request("POST", None, Body::from("a"))).await;
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// The other answers of the draft, and what a replay carries: 409 with `Retry-After` while
/// the first is in flight, 503 where the store does not answer, the key as an sf-string or a
/// token, an unreadable key refused, text bodies and headers replayed, binary bodies
/// fingerprinted, another header or other methods where configured.
mod answers {
    use super::*;

    use http::{HeaderName, HeaderValue, Method};
    use lambda_idempotency::machine::{Claim, ClaimOutcome, Record};
    use lambda_idempotency::{payload_sha256, OnFailure, Status, Store, StoreError};

    /// A handler answering text with a header, counting its runs.
    fn text_handler(
        runs: Arc<AtomicU32>,
    ) -> impl Service<Request, Response = Response<Body>, Error = lambda_http::Error, Future: Send>
           + Clone
           + Send
           + 'static {
        tower::service_fn(move |_req: Request| {
            let runs = runs.clone();
            async move {
                let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
                let response = Response::builder()
                    .status(201)
                    .header("location", format!("/orders/{n}"))
                    .body(Body::Text(format!("order {n}")))?;
                Ok::<_, lambda_http::Error>(response)
            }
        })
    }

    #[tokio::test]
    async fn a_replay_carries_the_first_status_headers_and_text() {
        let runs = Arc::new(AtomicU32::new(0));
        let layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()));
        let mut svc = layer.layer(text_handler(runs.clone()));
        let first = call(&mut svc, request("POST", Some("\"k1\""), Body::from("a"))).await;
        assert_eq!(first.status(), 201);
        assert_eq!(first.body(), &Body::Text("order 1".into()));
        assert!(first.headers().get("idempotent-replayed").is_none());
        // The sf-string "k1" and the token k1 are one key.
        let again = call(&mut svc, request("POST", Some(" k1 "), Body::from("a"))).await;
        assert_eq!(again.status(), 201);
        assert_eq!(again.body(), &Body::Text("order 1".into()));
        assert_eq!(again.headers()["location"], "/orders/1");
        assert_eq!(again.headers()["idempotent-replayed"], "true");
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn binary_bodies_and_empty_ones_are_fingerprinted_and_replayed() {
        let runs = Arc::new(AtomicU32::new(0));
        let layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()));
        let mut svc = layer.layer(handler(runs.clone(), 200));
        let first = call(
            &mut svc,
            request("POST", Some("b"), Body::Binary(vec![1, 2])),
        )
        .await;
        assert_eq!(first.status(), 200);
        let other = call(
            &mut svc,
            request("POST", Some("b"), Body::Binary(vec![1, 3])),
        )
        .await;
        assert_eq!(other.status(), 422, "another binary body under the key");
        let empty = tower::service_fn(|_req: Request| async {
            Ok::<_, lambda_http::Error>(Response::builder().status(204).body(Body::Empty)?)
        });
        let mut svc = IdempotencyLayer::new(Idempotency::new(MemoryStore::new())).layer(empty);
        call(&mut svc, request("POST", Some("e"), Body::Empty)).await;
        let again = call(&mut svc, request("POST", Some("e"), Body::Empty)).await;
        assert_eq!(
            (again.status(), again.body()),
            (http::StatusCode::NO_CONTENT, &Body::Empty)
        );
        assert_eq!(again.headers()["idempotent-replayed"], "true");
    }

    #[tokio::test]
    async fn in_flight_is_409_with_retry_after() {
        let store = MemoryStore::new();
        let now = lambda_idempotency::system_now_ms();
        // The first request's claim, held by another instance for 2.5 s more.
        let held = Claim {
            key: "k".into(),
            owner: "other".into(),
            payload_sha256: payload_sha256(b"POST /pay\na"),
            now_ms: now,
            lease_until_ms: now + 2_500,
            expires_at: now / 1000 + 3600,
        };
        assert_eq!(store.claim(&held).await, Ok(ClaimOutcome::Claimed));
        let runs = Arc::new(AtomicU32::new(0));
        let mut svc =
            IdempotencyLayer::new(Idempotency::new(store)).layer(handler(runs.clone(), 200));
        let busy = call(&mut svc, request("POST", Some("k"), Body::from("a"))).await;
        assert_eq!(busy.status(), 409);
        let retry: u64 = busy.headers()["retry-after"]
            .to_str()
            .expect("ascii")
            .parse()
            .expect("seconds");
        assert!((1..=3).contains(&retry), "retry after {retry}");
        assert_eq!(busy.headers()["content-type"], "application/problem+json");
        let Body::Text(problem) = busy.body() else {
            panic!("a problem body")
        };
        let problem: serde_json::Value = serde_json::from_str(problem).expect("JSON");
        assert_eq!(problem["status"], 409);
        // The same key with another body is refused as such even while in flight.
        let other = call(&mut svc, request("POST", Some("k"), Body::from("b"))).await;
        assert_eq!(other.status(), 422);
        assert_eq!(runs.load(Ordering::SeqCst), 0);
    }

    #[derive(Clone)]
    struct Down;
    impl Store for Down {
        async fn claim(&self, _: &Claim) -> Result<ClaimOutcome, StoreError> {
            Err(StoreError::Unavailable("down".into()))
        }
        async fn complete(&self, _: &str, _: &str, _: &str, _: i64) -> Result<bool, StoreError> {
            Err(StoreError::Unavailable("down".into()))
        }
        async fn release(&self, _: &str, _: &str) -> Result<bool, StoreError> {
            Err(StoreError::Unavailable("down".into()))
        }
        async fn fail(&self, _: &str, _: &str, _: &str, _: i64) -> Result<bool, StoreError> {
            Err(StoreError::Unavailable("down".into()))
        }
        async fn get(&self, _: &str) -> Result<Option<Record>, StoreError> {
            Err(StoreError::Unavailable("down".into()))
        }
    }

    #[tokio::test]
    async fn a_store_that_does_not_answer_is_503() {
        let runs = Arc::new(AtomicU32::new(0));
        let mut svc =
            IdempotencyLayer::new(Idempotency::new(Down)).layer(handler(runs.clone(), 200));
        let r = call(&mut svc, request("POST", Some("k"), Body::from("a"))).await;
        assert_eq!(r.status(), 503);
        assert_eq!(r.headers()["retry-after"], "1");
        assert_eq!(runs.load(Ordering::SeqCst), 0, "not run unguarded");
    }

    #[tokio::test]
    async fn an_unreadable_key_is_400() {
        let runs = Arc::new(AtomicU32::new(0));
        let layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()));
        let mut svc = layer.layer(handler(runs.clone(), 200));
        let mut req = request("POST", None, Body::from("a"));
        req.headers_mut().insert(
            "idempotency-key",
            HeaderValue::from_bytes(b"caf\xe9").expect("opaque bytes"),
        );
        let r = call(&mut svc, req).await;
        assert_eq!(r.status(), 400);
        assert_eq!(runs.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn another_header_and_other_methods_where_configured() {
        let runs = Arc::new(AtomicU32::new(0));
        let layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()))
            .header(HeaderName::from_static("x-request-key"))
            .methods([Method::PUT]);
        let mut svc = layer.layer(handler(runs.clone(), 200));
        // POST is no longer guarded; PUT is, on the other header.
        call(&mut svc, request("POST", None, Body::from("a"))).await;
        let missing = call(&mut svc, request("PUT", Some("ignored"), Body::from("a"))).await;
        assert_eq!(
            missing.status(),
            400,
            "Idempotency-Key is not the header now"
        );
        let put = |body: &str| {
            http::Request::builder()
                .method("PUT")
                .uri("/pay")
                .header("x-request-key", "k")
                .body(Body::from(body.to_owned()))
                .expect("request")
        };
        call(&mut svc, put("a")).await;
        let again = call(&mut svc, put("a")).await;
        assert_eq!(again.headers()["idempotent-replayed"], "true");
        assert_eq!(runs.load(Ordering::SeqCst), 2);
    }

    /// The layer is ready when the service it wraps is: an inner service that refuses
    /// (overloaded) is not called.
    #[tokio::test]
    async fn the_layer_is_ready_when_its_service_is() {
        #[derive(Clone)]
        struct Overloaded;
        impl Service<Request> for Overloaded {
            type Response = Response<Body>;
            type Error = lambda_http::Error;
            type Future = std::future::Ready<Result<Response<Body>, lambda_http::Error>>;
            fn poll_ready(
                &mut self,
                _: &mut std::task::Context<'_>,
            ) -> std::task::Poll<Result<(), Self::Error>> {
                std::task::Poll::Ready(Err("overloaded".into()))
            }
            fn call(&mut self, _: Request) -> Self::Future {
                panic!("called while not ready")
            }
        }
        let mut svc = IdempotencyLayer::new(Idempotency::new(MemoryStore::new())).layer(Overloaded);
        let ready = svc.ready().await.map(|_| ()).map_err(|e| e.to_string());
        assert_eq!(ready, Err("overloaded".to_owned()));
    }

    /// A 5xx recorded as a failure names the status; an inner error is returned as is and
    /// its claim given up, so the retry runs.
    #[tokio::test]
    async fn failures_are_given_up_and_named() {
        let store = MemoryStore::new();
        let runs = Arc::new(AtomicU32::new(0));
        let idem = Idempotency::new(store.clone()).on_failure(OnFailure::Record);
        let mut svc = IdempotencyLayer::new(idem).layer(handler(runs.clone(), 502));
        let r = call(&mut svc, request("POST", Some("k"), Body::from("a"))).await;
        assert_eq!(r.status(), 502);
        let rec = store.records().pop().expect("recorded");
        assert_eq!(rec.status, Status::Failed);
        assert_eq!(
            rec.last_error.as_deref(),
            Some("the handler answered 502 Bad Gateway")
        );

        let broken = tower::service_fn(|_req: Request| async {
            Err::<Response<Body>, lambda_http::Error>("broken".into())
        });
        let store = MemoryStore::new();
        let mut svc = IdempotencyLayer::new(Idempotency::new(store.clone())).layer(broken);
        for _ in 0..2 {
            let r = svc
                .ready()
                .await
                .expect("ready")
                .call(request("POST", Some("k"), Body::from("a")))
                .await;
            assert_eq!(r.err().map(|e| e.to_string()).as_deref(), Some("broken"));
            assert!(store.records().is_empty(), "the claim was released");
        }
    }
}
