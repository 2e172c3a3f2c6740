//! API Gateway HTTP API (payload format 2.0) events, as API Gateway hands a request to the
//! receiver: the one builder behind `events/`, the bench's invocations and the tests' events.
//!
//! ```
//! use devstack::testkit::apigw::ApiGatewayEvent;
//!
//! let event = ApiGatewayEvent::post("github")
//!     .headers(devstack::testkit::github_headers("d-1", b"{}"))
//!     .body(b"{}")
//!     .request_id("r-1")
//!     .at_s(1_796_083_200);
//! let request = event.request();
//! assert_eq!(request.raw_path.as_deref(), Some("/webhooks/github"));
//! assert_eq!(event.to_json()["requestContext"]["time"], "01/Dec/2026:00:00:00 +0000");
//! ```
//!
//! The JSON is the source of truth (it is what `events/*.json` hold, field for field, and has no
//! field API Gateway would not send); [`ApiGatewayEvent::request`] reads it into the
//! `aws_lambda_events` type the receiver takes, as the Lambda runtime does.

use aws_lambda_events::apigw::ApiGatewayV2httpRequest;
use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::{context, now_ms, unique};

/// The route of template.yaml: every method of `/webhooks/{source}`.
pub const ROUTE_KEY: &str = "ANY /webhooks/{source}";
/// The account, API and host the events claim to come through.
pub const ACCOUNT_ID: &str = "123456789012";
pub const API_ID: &str = "abc123";
pub const DOMAIN_NAME: &str = "abc123.execute-api.us-east-1.amazonaws.com";
/// The sender's address (TEST-NET-1).
pub const SOURCE_IP: &str = "192.0.2.10";
/// `requestContext.http.userAgent` when the request has no `User-Agent`.
pub const DEFAULT_USER_AGENT: &str = "webhook-sender";

/// How the body travels.
#[derive(Clone, Debug)]
enum EventBody {
    /// As text (`isBase64Encoded: false`; bytes that are not UTF-8 are replaced).
    Text(Vec<u8>),
    /// Base64 of the bytes (`isBase64Encoded: true`).
    Base64(Vec<u8>),
    /// This exact string with this flag (a body that does not decode, say).
    Raw { body: String, is_base64: bool },
}

/// One API Gateway v2 request event; build it with the methods, read it with
/// [`to_json`](Self::to_json), [`to_text`](Self::to_text), [`request`](Self::request) or
/// [`lambda_event`](Self::lambda_event).
#[derive(Clone, Debug)]
pub struct ApiGatewayEvent {
    method: String,
    raw_path: String,
    headers: Vec<(String, String)>,
    body: EventBody,
    request_id: String,
    time_epoch_ms: i64,
    route_key: String,
    gateway_headers: bool,
}

impl ApiGatewayEvent {
    /// `method` on `raw_path`, empty body, a fresh request id, sent now.
    pub fn new(method: &str, raw_path: &str) -> ApiGatewayEvent {
        ApiGatewayEvent {
            method: method.to_owned(),
            raw_path: raw_path.to_owned(),
            headers: Vec::new(),
            body: EventBody::Text(Vec::new()),
            request_id: unique("apigw"),
            time_epoch_ms: now_ms(),
            route_key: ROUTE_KEY.to_owned(),
            gateway_headers: true,
        }
    }

    /// `POST /webhooks/<source>`.
    pub fn post(source: &str) -> ApiGatewayEvent {
        ApiGatewayEvent::new("POST", &format!("/webhooks/{source}"))
    }

    pub fn method(mut self, method: &str) -> Self {
        self.method = method.to_owned();
        self
    }

    /// The raw path; `pathParameters.source` is its last segment when it is
    /// `/webhooks/<one segment>`, and absent otherwise.
    pub fn path(mut self, raw_path: &str) -> Self {
        self.raw_path = raw_path.to_owned();
        self
    }

    /// Adds a header; names are lower-cased and a repeated header is joined with commas, as
    /// API Gateway does. A header set here replaces the one API Gateway would add itself.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        let name = name.to_ascii_lowercase();
        match self.headers.iter_mut().find(|(n, _)| *n == name) {
            Some((_, old)) => {
                old.push(',');
                old.push_str(value);
            }
            None => self.headers.push((name, value.to_owned())),
        }
        self
    }

    /// Adds each header, as [`header`](Self::header).
    pub fn headers<N: AsRef<str>, V: AsRef<str>>(
        mut self,
        headers: impl IntoIterator<Item = (N, V)>,
    ) -> Self {
        for (name, value) in headers {
            self = self.header(name.as_ref(), value.as_ref());
        }
        self
    }

    /// The body, as text.
    pub fn body(mut self, body: &[u8]) -> Self {
        self.body = EventBody::Text(body.to_vec());
        self
    }

    /// The body, base64-encoded with `isBase64Encoded: true`.
    pub fn base64_body(mut self, body: &[u8]) -> Self {
        self.body = EventBody::Base64(body.to_vec());
        self
    }

    /// The `body` field exactly as given, with this `isBase64Encoded` (for a body that does
    /// not decode).
    pub fn raw_body(mut self, body: &str, is_base64: bool) -> Self {
        self.body = EventBody::Raw {
            body: body.to_owned(),
            is_base64,
        };
        self
    }

    pub fn request_id(mut self, request_id: &str) -> Self {
        self.request_id = request_id.to_owned();
        self
    }

    /// When API Gateway received it, epoch seconds.
    pub fn at_s(self, epoch_s: i64) -> Self {
        self.at_ms(epoch_s.saturating_mul(1000))
    }

    /// When API Gateway received it, epoch milliseconds.
    pub fn at_ms(mut self, epoch_ms: i64) -> Self {
        self.time_epoch_ms = epoch_ms;
        self
    }

    /// The route key (`ANY /webhooks/{source}` unless changed).
    pub fn route_key(mut self, route_key: &str) -> Self {
        self.route_key = route_key.to_owned();
        self
    }

    /// Only the headers given, without the `content-length`, `host` and `x-forwarded-*`
    /// API Gateway adds.
    pub fn without_gateway_headers(mut self) -> Self {
        self.gateway_headers = false;
        self
    }

    /// The body's bytes as the sender sent them (what `content-length` counts).
    fn body_len(&self) -> usize {
        match &self.body {
            EventBody::Text(b) | EventBody::Base64(b) => b.len(),
            EventBody::Raw { body, is_base64 } => {
                let decoded = is_base64
                    .then(|| base64::engine::general_purpose::STANDARD.decode(body).ok())
                    .flatten();
                decoded.map_or(body.len(), |d| d.len())
            }
        }
    }

    /// `pathParameters.source`: the segment after `/webhooks/`, when it is the only one.
    fn source(&self) -> Option<&str> {
        self.raw_path
            .strip_prefix("/webhooks/")
            .filter(|s| !s.is_empty() && !s.contains('/'))
    }

    /// The event as API Gateway writes it.
    pub fn to_json(&self) -> Value {
        let mut headers = Map::new();
        for (name, value) in &self.headers {
            headers.insert(name.clone(), Value::String(value.clone()));
        }
        if self.gateway_headers {
            let gateway = [
                ("content-length", self.body_len().to_string()),
                ("host", DOMAIN_NAME.to_owned()),
                ("x-forwarded-for", SOURCE_IP.to_owned()),
                ("x-forwarded-proto", "https".to_owned()),
            ];
            for (name, value) in gateway {
                headers.entry(name).or_insert_with(|| Value::String(value));
            }
        }
        let user_agent = headers
            .get("user-agent")
            .and_then(Value::as_str)
            .unwrap_or(DEFAULT_USER_AGENT)
            .to_owned();
        let (body, is_base64) = match &self.body {
            EventBody::Text(b) => (String::from_utf8_lossy(b).into_owned(), false),
            EventBody::Base64(b) => (base64::engine::general_purpose::STANDARD.encode(b), true),
            EventBody::Raw { body, is_base64 } => (body.clone(), *is_base64),
        };
        let mut event = json!({
            "version": "2.0",
            "routeKey": self.route_key,
            "rawPath": self.raw_path,
            "rawQueryString": "",
            "headers": headers,
            "requestContext": {
                "accountId": ACCOUNT_ID,
                "apiId": API_ID,
                "domainName": DOMAIN_NAME,
                "domainPrefix": API_ID,
                "http": {
                    "method": self.method,
                    "path": self.raw_path,
                    "protocol": "HTTP/1.1",
                    "sourceIp": SOURCE_IP,
                    "userAgent": user_agent
                },
                "requestId": self.request_id,
                "routeKey": self.route_key,
                "stage": "$default",
                "time": clf_time(self.time_epoch_ms),
                "timeEpoch": self.time_epoch_ms
            },
            "body": body,
            "isBase64Encoded": is_base64
        });
        if let Some(source) = self.source() {
            event["pathParameters"] = json!({ "source": source });
        }
        event
    }

    /// [`to_json`](Self::to_json) as compact text (what the Runtime API hands the function).
    pub fn to_text(&self) -> String {
        self.to_json().to_string()
    }

    /// The event as the receiver takes it, read from [`to_json`](Self::to_json) the way the
    /// Lambda runtime reads it.
    pub fn request(&self) -> ApiGatewayV2httpRequest {
        serde_json::from_value(self.to_json())
            .expect("the builder writes events aws_lambda_events reads")
    }

    /// [`request`](Self::request) in an invocation with its own request id and 10 s to run.
    pub fn lambda_event(&self) -> lambda_runtime::LambdaEvent<ApiGatewayV2httpRequest> {
        lambda_runtime::LambdaEvent::new(self.request(), context(&unique("req"), now_ms() + 10_000))
    }
}

/// API Gateway's `requestContext.time` (common log format, UTC): `01/Dec/2026:00:00:00 +0000`.
pub fn clf_time(epoch_ms: i64) -> String {
    match jiff::Timestamp::from_millisecond(epoch_ms) {
        Ok(t) => t.strftime("%d/%b/%Y:%H:%M:%S +0000").to_string(),
        // Outside jiff's range (years -9999..=9999): no real request is.
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clf_time_formats_api_gateway_style() {
        assert_eq!(clf_time(1_796_083_200_000), "01/Dec/2026:00:00:00 +0000");
        assert_eq!(clf_time(0), "01/Jan/1970:00:00:00 +0000");
        assert_eq!(
            clf_time((951_782_400 + 3_661) * 1000 + 999),
            "29/Feb/2000:01:01:01 +0000"
        );
    }

    #[test]
    fn headers_are_lower_cased_joined_and_override_the_gateway_ones() {
        let e = ApiGatewayEvent::post("github")
            .header("X-Tag", "a")
            .header("x-tag", "b")
            .header("Host", "example.com")
            .body(b"abc")
            .to_json();
        assert_eq!(e["headers"]["x-tag"], "a,b");
        assert_eq!(e["headers"]["host"], "example.com");
        assert_eq!(e["headers"]["content-length"], "3");
        assert_eq!(e["pathParameters"]["source"], "github");
        let bare = ApiGatewayEvent::post("github")
            .without_gateway_headers()
            .to_json();
        assert_eq!(bare["headers"], json!({}));
    }

    #[test]
    fn bodies_travel_as_text_base64_or_exactly_as_given() {
        let b64 = ApiGatewayEvent::post("s").base64_body(b"hi").request();
        assert!(b64.is_base64_encoded);
        assert_eq!(b64.body.as_deref(), Some("aGk="));
        let raw = ApiGatewayEvent::post("s").raw_body("***", true).to_json();
        assert_eq!(raw["body"], "***");
        assert_eq!(raw["isBase64Encoded"], true);
        assert_eq!(raw["headers"]["content-length"], "3");
    }

    #[test]
    fn paths_outside_the_route_have_no_source() {
        let e = ApiGatewayEvent::new("GET", "/webhooks/a/b").to_json();
        assert!(e.get("pathParameters").is_none());
        let r = ApiGatewayEvent::new("GET", "/webhooks/a/b").request();
        assert_eq!(r.request_context.http.method, http::Method::GET);
        assert!(r.path_parameters.is_empty());
    }
}
