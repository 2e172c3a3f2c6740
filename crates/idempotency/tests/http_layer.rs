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
