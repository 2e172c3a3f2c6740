//! HTTP (API Gateway, function URL): `POST /orders` with an `Idempotency-Key` header runs
//! once; a retry gets the first response back with `Idempotent-Replayed: true`, another body
//! under the same key a 422, a retry while the first runs a 409 with `Retry-After`.

use lambda_http::{service_fn, tower::ServiceBuilder, Body, Error, Request, Response};
use lambda_idempotency::http::IdempotencyLayer;

async fn create_order(_req: Request) -> Result<Response<Body>, Error> {
    Ok(Response::builder()
        .status(201)
        .body(Body::from(r#"{"order":"o-1"}"#))?)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let idem = idempotent_lambdas::idempotency().await?;
    let app = ServiceBuilder::new()
        .layer(IdempotencyLayer::new(idem))
        .service(service_fn(create_order));
    lambda_http::run(app).await
}
