//! Who is asking and for which source: the invocation (lease owner and deadline), the
//! source from the path, and the headers the envelope carries.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use http::HeaderMap;
use lambda_http::{Request, RequestExt};

use crate::config::Source;
use crate::lease;

/// Who is asking: the invocation's request id (the lease owner) and deadline.
#[derive(Clone, Debug)]
pub(super) struct Caller {
    pub(super) request_id: String,
    pub(super) deadline_ms: Option<i64>,
}

static LOCAL_INVOCATIONS: AtomicU64 = AtomicU64::new(0);

pub(super) fn caller(req: &Request) -> Caller {
    match req.lambda_context_ref() {
        Some(ctx) if !ctx.request_id.is_empty() => Caller {
            request_id: ctx.request_id.clone(),
            deadline_ms: lease::deadline_ms(ctx),
        },
        // No Lambda context: a unique owner for this process's call, never a key.
        _ => Caller {
            request_id: format!(
                "local-{}-{}",
                std::process::id(),
                LOCAL_INVOCATIONS.fetch_add(1, Ordering::Relaxed)
            ),
            deadline_ms: None,
        },
    }
}

/// The source: API Gateway's `{source}` path parameter, else the last segment of a path
/// `/webhooks/<source>` (function URLs, `cargo lambda watch`).
pub(super) fn source_name(req: &Request) -> Option<String> {
    source_from(
        req.path_parameters_ref().and_then(|p| p.first("source")),
        req.uri().path(),
    )
}

pub(super) fn source_from(path_parameter: Option<&str>, path: &str) -> Option<String> {
    if let Some(source) = path_parameter {
        return Some(source.to_owned());
    }
    let mut segments = path.trim_end_matches('/').rsplit('/');
    let last = segments.next()?;
    (segments.next() == Some("webhooks") && !last.is_empty()).then(|| last.to_owned())
}

/// The headers the envelope carries: the source's signature, id and content-type headers.
pub(super) fn envelope_headers(source: &Source, headers: &HeaderMap) -> BTreeMap<String, String> {
    source
        .envelope_headers
        .iter()
        .filter_map(|name| {
            let value = headers.get(name.as_str())?.to_str().ok()?.to_owned();
            Some((name.clone(), value))
        })
        .collect()
}

/// The event as `lambda_http` may convert it. It builds a URL from the `Host` and
/// `X-Forwarded-Proto` headers and the path, and panics where they do not parse (a `Host` of
/// `a b`, an `X-Forwarded-Proto` of `1`, a path longer than an `http::Uri` holds): a panic
/// is a function error, a 5xx to the sender and a tick of `ReceiverErrorsAlarm`. The
/// receiver reads neither header, so a value that is not a plain host or `http`/`https` is
/// dropped (the conversion then takes API Gateway's own domain name); whatever still panics
/// the conversion is a 400 `malformed_request`.
pub(super) fn into_request(
    mut payload: aws_lambda_events::apigw::ApiGatewayV2httpRequest,
) -> Result<Request, &'static str> {
    let headers = &mut payload.headers;
    let proto_ok = |v: &http::HeaderValue| v.as_bytes() == b"https" || v.as_bytes() == b"http";
    if headers
        .get("x-forwarded-proto")
        .is_some_and(|v| !proto_ok(v))
    {
        headers.remove("x-forwarded-proto");
    }
    if headers
        .get(http::header::HOST)
        .is_some_and(|v| !plain_host(v.as_bytes()))
    {
        headers.remove(http::header::HOST);
    }
    let lambda = lambda_http::request::LambdaRequest::ApiGatewayV2(payload);
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| Request::from(lambda)))
        .map_err(|_| "the request's URL could not be built")
}

/// A host name or address, with an optional port: letters, digits, `.`, `-`, `:` and the
/// brackets of an IPv6 literal, at most 261 bytes (a 253-byte name and a port).
fn plain_host(host: &[u8]) -> bool {
    !host.is_empty()
        && host.len() <= 261
        && host
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'))
}

/// The sender's trace context: its one `traceparent` header where it reads as W3C Trace
/// Context says ([`crate::trace::TraceContext::parse`]); else none, a new trace starts, and a
/// line says why (input: never a refusal). `tracestate` is not carried.
pub(super) fn sender_trace(headers: &HeaderMap) -> Option<crate::trace::TraceContext> {
    let mut values = headers.get_all(crate::trace::TRACEPARENT).iter();
    let first = values.next()?;
    let read = if values.next().is_some() {
        Err("more than one traceparent header".to_owned())
    } else {
        first
            .to_str()
            .map_err(|_| "traceparent is not visible ASCII".to_owned())
            .and_then(|text| crate::trace::TraceContext::parse(text).map_err(|e| e.to_string()))
    };
    match read {
        Ok(cx) => Some(cx),
        Err(reason) => {
            tracing::info!(
                reason,
                "the sender's traceparent is not taken: a new trace starts"
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_lambda_events::apigw::ApiGatewayV2httpRequest;

    fn event(headers: &[(&str, &[u8])]) -> ApiGatewayV2httpRequest {
        let mut payload = ApiGatewayV2httpRequest::default();
        payload.raw_path = Some("/webhooks/github".into());
        payload.request_context.http.method = http::Method::POST;
        payload.request_context.http.path = Some("/webhooks/github".into());
        payload.request_context.domain_name =
            Some("abc.execute-api.eu-west-1.amazonaws.com".into());
        for (name, value) in headers {
            payload.headers.insert(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                http::HeaderValue::from_bytes(value).unwrap(),
            );
        }
        payload
    }

    fn converted(headers: &[(&str, &[u8])]) -> Request {
        into_request(event(headers)).expect("converted")
    }

    #[test]
    fn the_raw_query_string_reaches_the_handshakes_and_the_signed_url_as_sent() {
        let mut payload = event(&[]);
        payload.request_context.http.method = http::Method::GET;
        let raw = "hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=a%2Bb%20c";
        payload.raw_query_string = Some(raw.into());
        let req = into_request(payload).expect("converted");
        assert_eq!(req.uri().query(), Some(raw));
    }

    #[test]
    fn the_request_keeps_its_method_path_and_plain_headers() {
        let req = converted(&[
            ("host", b"hooks.example.com:8443"),
            ("x-forwarded-proto", b"http"),
            ("x-github-delivery", b"d-1"),
        ]);
        assert_eq!(req.method(), http::Method::POST);
        assert_eq!(req.uri().path(), "/webhooks/github");
        assert_eq!(req.uri().host(), Some("hooks.example.com"));
        assert_eq!(req.uri().scheme_str(), Some("http"));
        assert_eq!(req.headers()["x-github-delivery"], "d-1");
        assert_eq!(req.headers()["x-forwarded-proto"], "http");
        let req = converted(&[("x-forwarded-proto", b"https")]);
        assert_eq!(req.headers()["x-forwarded-proto"], "https");
        assert_eq!(
            req.uri().host(),
            Some("abc.execute-api.eu-west-1.amazonaws.com"),
            "no Host: API Gateway's domain name"
        );
    }

    #[test]
    fn a_host_or_proto_that_would_not_parse_is_dropped_not_a_panic() {
        let req = converted(&[("host", b"a b"), ("x-forwarded-proto", b"1")]);
        assert!(req.headers().get("host").is_none());
        assert!(req.headers().get("x-forwarded-proto").is_none());
        assert_eq!(
            req.uri().host(),
            Some("abc.execute-api.eu-west-1.amazonaws.com")
        );
        assert_eq!(req.uri().path(), "/webhooks/github");
        for proto in [&b"ftp"[..], b"httpx", b"HTTPS "] {
            let req = converted(&[("x-forwarded-proto", proto)]);
            assert!(
                req.headers().get("x-forwarded-proto").is_none(),
                "{proto:?}"
            );
        }
    }

    #[test]
    fn a_plain_host_is_letters_digits_dots_dashes_colons_and_brackets_up_to_261_bytes() {
        for host in [
            &b"example.com"[..],
            b"a-b.example.com:443",
            b"[::1]:3000",
            b"127.0.0.1",
        ] {
            assert!(plain_host(host), "{host:?}");
        }
        let longest = "a".repeat(261);
        assert!(plain_host(longest.as_bytes()));
        assert!(!plain_host(format!("{longest}a").as_bytes()));
        for host in [&b""[..], b"a b", b"a/b", b"a@b", b"a_b", b"\x7f"] {
            assert!(!plain_host(host), "{host:?}");
        }
        // Each forbidden byte alone, between allowed ones.
        assert!(!plain_host(b"a.b-c:d[e]f g"));
    }
}
