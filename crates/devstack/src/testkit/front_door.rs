//! The receiver behind a loopback HTTP front door, as API Gateway puts it behind
//! `https://<api>/webhooks/{source}`: each HTTP request becomes the HTTP API event (payload
//! 2.0, built by [`super::apigw`]) that the receiver's Lambda handler takes, and the handler's
//! answer becomes the HTTP response. For clients that speak plain HTTP (`inbox-ops smoke`)
//! without `cargo lambda watch` and a build of the function binary.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use aws_lambda_events::apigw::ApiGatewayV2httpResponse;
use aws_lambda_events::encodings::Body;
use base64::Engine as _;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use super::apigw::ApiGatewayEvent;
use super::TestReceiver;

/// The receiver served on a loopback port until dropped.
pub struct FrontDoor {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl FrontDoor {
    /// Serves `receiver` on a free loopback port (connections handled on the caller's runtime).
    pub async fn start(receiver: TestReceiver) -> anyhow::Result<FrontDoor> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .context("binding loopback")?;
        let addr = listener.local_addr()?;
        let receiver = Arc::new(receiver);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let receiver = receiver.clone();
                let service = service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let receiver = receiver.clone();
                    async move { Ok::<_, Infallible>(answer(&receiver, req).await) }
                });
                tokio::spawn(http1::Builder::new().serve_connection(TokioIo::new(stream), service));
            }
        });
        Ok(FrontDoor { addr, task })
    }

    /// The URL as the stack's `WebhookUrl` output gives it: `http://127.0.0.1:<port>/webhooks/{source}`.
    pub fn webhook_url(&self) -> String {
        format!("http://{}/webhooks/{{source}}", self.addr)
    }
}

impl Drop for FrontDoor {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One request through the receiver's Lambda handler.
async fn answer(
    receiver: &TestReceiver,
    req: http::Request<hyper::body::Incoming>,
) -> http::Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let body = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return response(400, Bytes::new(), Vec::new()),
    };
    let headers = parts
        .headers
        .iter()
        .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)));
    let event = ApiGatewayEvent::new(parts.method.as_str(), parts.uri.path()).headers(headers);
    // As API Gateway: text travels as text, anything else base64-encoded.
    let event = match std::str::from_utf8(&body) {
        Ok(_) => event.body(&body),
        Err(_) => event.base64_body(&body),
    };
    let Ok(out) = receiver.handle_event(event.lambda_event()).await;
    from_apigw(out)
}

/// The HTTP response API Gateway makes of the handler's answer.
fn from_apigw(out: ApiGatewayV2httpResponse) -> http::Response<Full<Bytes>> {
    let body = match out.body {
        Some(Body::Text(text)) if out.is_base64_encoded => {
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .map(Bytes::from)
                .unwrap_or_default()
        }
        Some(Body::Text(text)) => Bytes::from(text),
        Some(Body::Binary(bytes)) => Bytes::from(bytes),
        _ => Bytes::new(),
    };
    let headers = out
        .headers
        .iter()
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    response(u16::try_from(out.status_code).unwrap_or(502), body, headers)
}

fn response(
    status: u16,
    body: Bytes,
    headers: Vec<(http::HeaderName, http::HeaderValue)>,
) -> http::Response<Full<Bytes>> {
    let mut resp = http::Response::new(Full::new(body));
    *resp.status_mut() =
        http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::BAD_GATEWAY);
    for (name, value) in headers {
        resp.headers_mut().append(name, value);
    }
    resp
}
