//! What the receiver answers: every rejection mapped to its status and stable code in one
//! function, the accepted answer every duplicate replays, and the API Gateway response.

use aws_lambda_events::apigw::ApiGatewayV2httpResponse;
use base64::Engine as _;
use http::{HeaderValue, StatusCode};
use lambda_http::{Body, Response};

use crate::key::KeyError;
use crate::signature::SignatureError;

/// Why a request was not accepted. Mapped to its status and stable code in one place:
/// [`Rejection::status_and_code`].
#[derive(Debug, thiserror::Error)]
pub enum Rejection {
    #[error("method not allowed")]
    MethodNotAllowed,
    #[error("unknown source")]
    UnknownSource,
    #[error("body too large: {0}")]
    PayloadTooLarge(&'static str),
    #[error("malformed body: {0}")]
    MalformedBody(&'static str),
    #[error("malformed request: {0}")]
    MalformedRequest(&'static str),
    #[error("invalid signature: {0}")]
    InvalidSignature(#[from] SignatureError),
    #[error("{0}")]
    MissingKey(KeyError),
    #[error("{0}")]
    InvalidKey(KeyError),
    #[error("same key, different payload")]
    PayloadMismatch,
    #[error("this body came within the replay guard's window under another key")]
    ReplayedBody,
    /// A `pending` source whose secret is not stored yet (or not readable, or not valid):
    /// nothing is accepted unsigned, the sender is asked to come back.
    #[error("source pending: {0}")]
    SourcePending(String),
    /// A provider's key or certificate could not be fetched (AWS SNS's): never accepted,
    /// nothing written; the provider retries.
    #[error("the signing key could not be fetched: {0}")]
    KeyUnavailable(String),
    /// AWS SNS's `SubscribeURL` could not be visited: the subscription is not confirmed, and
    /// SNS sends the confirmation again.
    #[error("the subscription could not be confirmed: {0}")]
    SubscriptionNotConfirmed(String),
    #[error("the batch holds {0} events, over the source's max_events")]
    TooManyEvents(usize),
    #[error("internal: {0}")]
    Internal(String),
}

impl From<KeyError> for Rejection {
    fn from(e: KeyError) -> Self {
        match e {
            KeyError::Missing(_) => Rejection::MissingKey(e),
            KeyError::Invalid(..) => Rejection::InvalidKey(e),
            KeyError::NotJson => {
                Rejection::MalformedBody("not JSON where a key pointer needs JSON")
            }
            KeyError::Duplicate(_) => {
                Rejection::MalformedBody("a member on a key or group path appears twice")
            }
        }
    }
}

impl Rejection {
    /// The one mapping from error to HTTP status and `error` code.
    pub fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            Rejection::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
            Rejection::UnknownSource => (StatusCode::NOT_FOUND, "unknown_source"),
            Rejection::PayloadTooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
            Rejection::MalformedBody(_) => (StatusCode::BAD_REQUEST, "malformed_body"),
            Rejection::MalformedRequest(_) => (StatusCode::BAD_REQUEST, "malformed_request"),
            Rejection::InvalidSignature(_) => (StatusCode::UNAUTHORIZED, "invalid_signature"),
            Rejection::MissingKey(_) => (StatusCode::BAD_REQUEST, "missing_idempotency_key"),
            Rejection::InvalidKey(_) => (StatusCode::BAD_REQUEST, "invalid_idempotency_key"),
            Rejection::PayloadMismatch => (StatusCode::UNPROCESSABLE_ENTITY, "payload_mismatch"),
            Rejection::ReplayedBody => (StatusCode::CONFLICT, "replayed_body"),
            Rejection::SourcePending(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                crate::config::SOURCE_PENDING_CODE,
            ),
            Rejection::KeyUnavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "key_unavailable"),
            Rejection::SubscriptionNotConfirmed(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "subscription_not_confirmed",
            ),
            Rejection::TooManyEvents(_) => (StatusCode::PAYLOAD_TOO_LARGE, "too_many_events"),
            Rejection::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        }
    }

    /// The response: the code only; the reason goes to the log, never to the sender.
    pub fn into_response(self) -> Response<Body> {
        let (status, code) = self.status_and_code();
        let mut resp = json_response(status, serde_json::json!({ "error": code }).to_string());
        match self {
            Rejection::MethodNotAllowed => {
                resp.headers_mut()
                    .insert(http::header::ALLOW, HeaderValue::from_static("POST"));
            }
            Rejection::SourcePending(_) => {
                resp.headers_mut().insert(
                    http::header::RETRY_AFTER,
                    HeaderValue::from(PENDING_RETRY_AFTER_SECONDS),
                );
            }
            _ => {}
        }
        resp
    }
}

/// `Retry-After` on a pending source's 503, in seconds: a hint (Stripe and Slack retry on
/// their own schedules); the receiver reads the secret again at most every
/// [`crate::receiver::SECRET_RETRY_MS`].
pub const PENDING_RETRY_AFTER_SECONDS: u64 = 60;

pub(super) fn json_response(status: StatusCode, body: String) -> Response<Body> {
    let mut resp = Response::new(Body::Text(body));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// The empty TwiML document Twilio's incoming-message and incoming-call webhooks are
/// answered with (`"answer": "twiml"`): "do nothing", as XML, which Twilio requires there.
pub const EMPTY_TWIML: &str = r#"<?xml version="1.0" encoding="UTF-8"?><Response/>"#;

/// A stored answer (an accepted event's, given again to its duplicates): its JSON; Adyen's
/// `[accepted]` as text; where it is an XML document (TwiML: a JSON answer never starts with
/// `<`), that document as `text/xml`; or no body at all where it is empty or the status is 204
/// (Discord's Webhook Events want 204 and nothing; an item the consumer's take created holds
/// the default body).
pub(super) fn stored_response(status: u16, body: String) -> Response<Body> {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    if body.is_empty() || status == StatusCode::NO_CONTENT {
        let mut resp = Response::new(Body::Empty);
        *resp.status_mut() = status;
        return resp;
    }
    let text_type = if body == super::preset_rules::ADYEN_ACCEPTED {
        Some("text/plain; charset=utf-8")
    } else if body.starts_with('<') {
        Some("text/xml")
    } else {
        None
    };
    if let Some(content_type) = text_type {
        let mut resp = Response::new(Body::Text(body));
        *resp.status_mut() = status;
        resp.headers_mut().insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static(content_type),
        );
        return resp;
    }
    json_response(status, body)
}

/// An `http::Response` as API Gateway (payload v2) wants it.
pub fn to_apigw_v2(response: Response<Body>) -> ApiGatewayV2httpResponse {
    let (parts, body) = response.into_parts();
    let mut out = ApiGatewayV2httpResponse::default();
    out.status_code = i64::from(parts.status.as_u16());
    out.headers = parts.headers;
    out.is_base64_encoded = false;
    out.body = match body {
        Body::Empty => None,
        Body::Text(text) => Some(Body::Text(text)),
        Body::Binary(bytes) => {
            out.is_base64_encoded = true;
            Some(Body::Text(
                base64::engine::general_purpose::STANDARD.encode(bytes),
            ))
        }
        _ => None,
    };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_204_or_empty_answer_has_no_body_and_a_json_one_its_type() {
        for (status, body) in [
            (204, r#"{"key":"s:1","status":"accepted"}"#),
            (204, ""),
            (200, ""),
        ] {
            let resp = stored_response(status, body.to_owned());
            assert_eq!(resp.status().as_u16(), status);
            assert!(matches!(resp.body(), Body::Empty), "{status} {body}");
            assert!(resp.headers().get(http::header::CONTENT_TYPE).is_none());
        }
        let resp = stored_response(200, r#"{"type":5}"#.to_owned());
        assert_eq!(
            resp.headers()[http::header::CONTENT_TYPE],
            "application/json"
        );
        assert!(matches!(resp.body(), Body::Text(t) if t == r#"{"type":5}"#));
        let resp = stored_response(200, EMPTY_TWIML.to_owned());
        assert_eq!(resp.headers()[http::header::CONTENT_TYPE], "text/xml");
        assert!(matches!(resp.body(), Body::Text(t) if t == EMPTY_TWIML));
    }
}
