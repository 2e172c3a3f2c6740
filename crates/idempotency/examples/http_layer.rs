//! A `lambda_http` function behind the idempotency layer: `POST /orders` with an
//! `Idempotency-Key` header runs once; a retry gets the first response with
//! `Idempotent-Replayed: true`. Deployed, swap the memory store for
//! `lambda_idempotency::dynamodb::DynamoStore` (see the `dynamodb_store` example).

use lambda_http::tower::ServiceBuilder;
use lambda_http::{service_fn, Body, Error, Request, Response};
use lambda_idempotency::http::IdempotencyLayer;
use lambda_idempotency::memory::MemoryStore;
use lambda_idempotency::Idempotency;

async fn create_order(req: Request) -> Result<Response<Body>, Error> {
    let body = match req.body() {
        Body::Text(t) => t.clone(),
        _ => String::new(),
    };
    Ok(Response::builder()
        .status(201)
        .header("content-type", "application/json")
        .body(Body::from(format!(r#"{{"created":{body}}}"#)))?)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_http::lambda_runtime::tracing::init_default_subscriber();
    let idem = Idempotency::new(MemoryStore::new()).cache_bytes(1 << 20);
    let app = ServiceBuilder::new()
        .layer(IdempotencyLayer::new(idem))
        .service(service_fn(create_order));
    lambda_http::run(app).await
}
