//! A tower [`Layer`] for `lambda_http` handlers: the `Idempotency-Key` request header, with
//! the answers of the IETF draft `draft-ietf-httpapi-idempotency-key-header`:
//!
//! | case | answer |
//! | --- | --- |
//! | first request with a key | the handler runs; a response below 500 is stored |
//! | the same request again | the stored response, with `Idempotent-Replayed: true` |
//! | the key missing where required | 400 |
//! | the key reused with another request (method, path or body) | 422 |
//! | the first request still in flight | 409 with `Retry-After` |
//! | the handler failed (an error or a 5xx) | its answer as is; the claim given up, so a retry runs |
//! | the store did not answer | 503 with `Retry-After: 1` |
//!
//! Errors are `application/problem+json`. Only `POST` and `PATCH` are guarded by default
//! ([`IdempotencyLayer::methods`]): the other methods are idempotent already.
//!
//! ```no_run
//! use lambda_http::{service_fn, tower::ServiceBuilder, Body, Error, Request, Response};
//! use lambda_idempotency::http::IdempotencyLayer;
//! use lambda_idempotency::{memory::MemoryStore, Idempotency};
//!
//! async fn create_order(_req: Request) -> Result<Response<Body>, Error> {
//!     Ok(Response::builder().status(201).body(Body::from("created"))?)
//! }
//!
//! # async fn main_() -> Result<(), Error> {
//! let idem = Idempotency::new(MemoryStore::new());
//! let app = ServiceBuilder::new()
//!     .layer(IdempotencyLayer::new(idem))
//!     .service(service_fn(create_order));
//! lambda_http::run(app).await
//! # }
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use base64::Engine as _;
use http::{HeaderName, HeaderValue, Method, Response, StatusCode};
use lambda_http::{Body, Request, RequestExt};
use serde::{Deserialize, Serialize};
use tower_layer::Layer;
use tower_service::Service;

use crate::{Deadline, Error, Idempotency, Key, Store};

/// The request header that carries the key.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";
/// The response header set on a replayed response.
pub const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";

#[derive(Clone, Debug)]
struct Settings {
    header: HeaderName,
    required: bool,
    methods: Vec<Method>,
}

/// The layer: wraps a `lambda_http` service so each keyed request runs once.
#[derive(Clone, Debug)]
pub struct IdempotencyLayer<S> {
    idem: Idempotency<S>,
    settings: Arc<Settings>,
}

impl<S> IdempotencyLayer<S> {
    /// Over `idem`: the `Idempotency-Key` header, required on `POST` and `PATCH`.
    pub fn new(idem: Idempotency<S>) -> Self {
        IdempotencyLayer {
            idem,
            settings: Arc::new(Settings {
                header: HeaderName::from_static(IDEMPOTENCY_KEY),
                required: true,
                methods: vec![Method::POST, Method::PATCH],
            }),
        }
    }

    /// Another header name for the key.
    pub fn header(mut self, name: HeaderName) -> Self {
        Arc::make_mut(&mut self.settings).header = name;
        self
    }

    /// Whether a guarded request without the key is refused (400, the default) or passed
    /// through unguarded.
    pub fn required(mut self, required: bool) -> Self {
        Arc::make_mut(&mut self.settings).required = required;
        self
    }

    /// The methods guarded (the others pass through).
    pub fn methods(mut self, methods: impl IntoIterator<Item = Method>) -> Self {
        Arc::make_mut(&mut self.settings).methods = methods.into_iter().collect();
        self
    }
}

impl<S: Clone, I> Layer<I> for IdempotencyLayer<S> {
    type Service = IdempotencyService<S, I>;
    fn layer(&self, inner: I) -> Self::Service {
        IdempotencyService {
            idem: self.idem.clone(),
            settings: self.settings.clone(),
            inner,
        }
    }
}

/// The service [`IdempotencyLayer`] makes.
#[derive(Clone, Debug)]
pub struct IdempotencyService<S, I> {
    idem: Idempotency<S>,
    settings: Arc<Settings>,
    inner: I,
}

/// A response as stored with the key.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
struct StoredResponse {
    status: u16,
    headers: Vec<(String, String)>,
    /// Text, or base64 where `binary`.
    body: String,
    binary: bool,
}

impl StoredResponse {
    fn from_response(response: Response<Body>) -> StoredResponse {
        let (parts, body) = response.into_parts();
        let headers = parts
            .headers
            .iter()
            .filter_map(|(name, value)| Some((name.to_string(), value.to_str().ok()?.to_owned())))
            .collect();
        let (body, binary) = match body {
            Body::Empty => (String::new(), false),
            Body::Text(text) => (text, false),
            Body::Binary(bytes) => (
                base64::engine::general_purpose::STANDARD.encode(bytes),
                true,
            ),
            // Body is non-exhaustive in principle; anything else is stored empty.
            #[allow(unreachable_patterns)]
            _ => (String::new(), false),
        };
        StoredResponse {
            status: parts.status.as_u16(),
            headers,
            body,
            binary,
        }
    }

    fn into_response(self, replayed: bool) -> Response<Body> {
        let body = match (self.binary, self.body.is_empty()) {
            (_, true) => Body::Empty,
            (false, false) => Body::Text(self.body),
            (true, false) => base64::engine::general_purpose::STANDARD
                .decode(&self.body)
                .map(Body::Binary)
                .unwrap_or(Body::Empty),
        };
        let mut response = Response::new(body);
        *response.status_mut() = StatusCode::from_u16(self.status).unwrap_or(StatusCode::OK);
        let headers = response.headers_mut();
        for (name, value) in self.headers {
            if let (Ok(name), Ok(value)) =
                (HeaderName::try_from(name), HeaderValue::try_from(value))
            {
                headers.append(name, value);
            }
        }
        if replayed {
            headers.insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
        }
        response
    }
}

/// Why the handler's answer is not stored.
enum Failure<E> {
    Inner(E),
    ServerError(Response<Body>),
}

impl<E: fmt::Display> fmt::Display for Failure<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Inner(e) => write!(f, "{e}"),
            Failure::ServerError(r) => write!(f, "the handler answered {}", r.status()),
        }
    }
}

/// An `application/problem+json` answer.
fn problem(status: StatusCode, title: &str, retry_after_s: Option<u64>) -> Response<Body> {
    let body =
        serde_json::json!({ "type": "about:blank", "title": title, "status": status.as_u16() });
    let mut response = Response::new(Body::Text(body.to_string()));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/problem+json"),
    );
    if let Some(seconds) = retry_after_s {
        headers.insert(http::header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// The key from the header: an sf-string (`"…"`) or a bare token; `Ok(None)` where absent.
fn key_of(req: &Request, header: &HeaderName) -> Result<Option<Key>, ()> {
    let Some(value) = req.headers().get(header) else {
        return Ok(None);
    };
    let text = value.to_str().map_err(|_| ())?.trim();
    let text = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text);
    Key::new(text).map(Some).map_err(|_| ())
}

/// What the key must always come with: the method, the path and the body.
fn fingerprint(req: &Request) -> Vec<u8> {
    let mut bytes = format!("{} {}\n", req.method(), req.uri().path()).into_bytes();
    match req.body() {
        Body::Text(text) => bytes.extend_from_slice(text.as_bytes()),
        Body::Binary(b) => bytes.extend_from_slice(b),
        _ => {}
    }
    bytes
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, I> Service<Request> for IdempotencyService<S, I>
where
    S: Store + Clone + 'static,
    I: Service<Request, Response = Response<Body>> + Clone + Send + 'static,
    I::Future: Send,
    I::Error: fmt::Display + Send,
{
    type Response = Response<Body>;
    type Error = I::Error;
    type Future = BoxFuture<Result<Response<Body>, I::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        // The inner service that was polled ready is the one called (tower's clone dance).
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        let idem = self.idem.clone();
        let settings = self.settings.clone();
        Box::pin(guarded(idem, settings, inner, req))
    }
}

async fn guarded<S, I>(
    idem: Idempotency<S>,
    settings: Arc<Settings>,
    mut inner: I,
    req: Request,
) -> Result<Response<Body>, I::Error>
where
    S: Store + Clone + 'static,
    I: Service<Request, Response = Response<Body>> + Send + 'static,
    I::Future: Send,
    I::Error: fmt::Display + Send,
{
    if !settings.methods.contains(req.method()) {
        return inner.call(req).await;
    }
    let key = match key_of(&req, &settings.header) {
        Ok(Some(key)) => key,
        Ok(None) if !settings.required => return inner.call(req).await,
        Ok(None) => {
            let title = format!("the {} header is required", settings.header);
            return Ok(problem(StatusCode::BAD_REQUEST, &title, None));
        }
        Err(()) => {
            let title = format!("the {} header is not a valid key", settings.header);
            return Ok(problem(StatusCode::BAD_REQUEST, &title, None));
        }
    };
    let payload = fingerprint(&req);
    let deadline = req
        .lambda_context_ref()
        .map(Deadline::from)
        .unwrap_or_default();
    let run = idem.run(&key, &payload, &deadline, || async move {
        let response = inner.call(req).await.map_err(Failure::Inner)?;
        if response.status().is_server_error() {
            return Err(Failure::ServerError(response));
        }
        Ok(StoredResponse::from_response(response))
    });
    match run.await {
        Ok(outcome) => Ok(outcome.value.into_response(outcome.replayed)),
        Err(Error::Handler(Failure::Inner(e))) => Err(e),
        Err(Error::Handler(Failure::ServerError(response))) => Ok(response),
        Err(Error::PayloadMismatch { .. }) => Ok(problem(
            StatusCode::UNPROCESSABLE_ENTITY,
            "the idempotency key was used with another request",
            None,
        )),
        Err(Error::InFlight { retry_after, .. }) => Ok(problem(
            StatusCode::CONFLICT,
            "a request with this idempotency key is still being processed",
            Some(retry_after.as_secs().max(1)),
        )),
        Err(_) => Ok(problem(
            StatusCode::SERVICE_UNAVAILABLE,
            "the idempotency store is unavailable",
            Some(1),
        )),
    }
}
