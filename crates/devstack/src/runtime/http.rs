//! A small HTTP/1.1 server (hyper): enough for the Runtime API emulator and the counting
//! proxy. Keep-alive connections, one task each, every request's body collected first.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// A response with a complete body (hyper adds `content-length`).
pub type HttpResponse = Response<Full<Bytes>>;

pub fn respond(status: u16, body: impl Into<Bytes>) -> HttpResponse {
    let mut resp = Response::new(Full::new(body.into()));
    *resp.status_mut() = http::StatusCode::from_u16(status).expect("status code");
    resp
}

/// Serves keep-alive connections, one task per connection, each request's body collected
/// before `handler` sees it; `connections` counts the accepted TCP connections.
pub fn serve<H, F>(listener: TcpListener, handler: H, connections: Arc<AtomicU64>)
where
    H: Fn(Request<Bytes>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = HttpResponse> + Send + 'static,
{
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            connections.fetch_add(1, Ordering::Relaxed);
            let _ = stream.set_nodelay(true);
            let handler = handler.clone();
            let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                let handler = handler.clone();
                async move {
                    let (parts, body) = req.into_parts();
                    let body = body.collect().await?.to_bytes();
                    Ok::<_, hyper::Error>(handler(Request::from_parts(parts, body)).await)
                }
            });
            tokio::spawn(
                http1::Builder::new()
                    .keep_alive(true)
                    .auto_date_header(false)
                    .serve_connection(TokioIo::new(stream), service),
            );
        }
    });
}
