//! The providers' URL checks (docs/providers.md, "Handshakes"), answered as each provider
//! checks them, without claiming a key or sending anything to the queue.
//!
//! A `GET` check (Meta, Dropbox, X, Okta) is answered before any signature, each after its
//! own proof where the provider sends one (Meta's verify token, Okta's authorization). A
//! signed `POST` check (Slack, Zoom, Twitch, Xero, Discord) is answered only once its
//! signature verified, so a forged check is a 401 like any forged event.

use base64::Engine as _;
use http::{HeaderValue, Method, StatusCode};
use lambda_http::{Body, Request, Response};
use subtle::ConstantTimeEq as _;

use crate::config::{Handshake, Source};
use crate::json_fields::{self, Field};
use crate::signature::{Inbound, SignatureError, Verifier};

use super::answer::{json_response, Rejection};

/// The longest challenge echoed back: every provider's is far shorter.
const MAX_CHALLENGE_BYTES: usize = 512;

/// A `GET` of a source whose handshake is a `GET` check: its answer, or why not.
pub(super) fn answer_get(
    source: &Source,
    verifier: Option<&Verifier>,
    handshake: Handshake,
    req: &Request,
    now_secs: i64,
) -> Result<Response<Body>, Rejection> {
    let query = req.uri().query().unwrap_or_default();
    let param = |name: &str| -> Option<String> {
        form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    match handshake {
        Handshake::Meta => {
            let token = source
                .verify_token
                .as_deref()
                .ok_or(Rejection::InvalidSignature(SignatureError::Mismatch))?;
            let sent = param("hub.verify_token").unwrap_or_default();
            let matches: bool = sent.as_bytes().ct_eq(token.as_bytes()).into();
            if param("hub.mode").as_deref() != Some("subscribe") || !matches {
                return Err(Rejection::InvalidSignature(SignatureError::Mismatch));
            }
            Ok(text(&challenge(param("hub.challenge"))?))
        }
        Handshake::Dropbox => Ok(text(&challenge(param("challenge"))?)),
        Handshake::X => {
            // Only a token that cannot be a JSON body is signed: the answer is the same HMAC
            // as an event's signature, so a crc_token of `{...}` would forge one.
            let token = challenge(param("crc_token"))?;
            if !token
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_=.~".contains(&b))
            {
                return Err(Rejection::MalformedRequest(
                    "crc_token is not a plain token",
                ));
            }
            let mac = verifier
                .and_then(|v| v.handshake_mac(token.as_bytes()))
                .ok_or(Rejection::InvalidSignature(SignatureError::Mismatch))?;
            let answer = format!(
                "sha256={}",
                base64::engine::general_purpose::STANDARD.encode(mac)
            );
            Ok(json(&serde_json::json!({ "response_token": answer })))
        }
        Handshake::Okta => {
            let verifier = verifier.ok_or(Rejection::InvalidSignature(SignatureError::Mismatch))?;
            let inbound = Inbound {
                method: "GET",
                headers: req.headers(),
                body: b"",
                query: req.uri().query(),
                public_url: None,
            };
            verifier.verify_request(&inbound, now_secs)?;
            let value = req
                .headers()
                .get("x-okta-verification-challenge")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            Ok(json(
                &serde_json::json!({ "verification": challenge(value)? }),
            ))
        }
        _ => Err(Rejection::MethodNotAllowed),
    }
}

/// A verified `POST` that is the source's handshake rather than an event: its answer.
pub(super) fn answer_signed_post(
    source: &Source,
    verifier: Option<&Verifier>,
    req: &Request,
    body: &[u8],
) -> Result<Option<Response<Body>>, Rejection> {
    let Some(handshake) = source.spec.handshake else {
        return Ok(None);
    };
    let field = |pointer: &str| -> Option<Field> {
        json_fields::read(body, &[pointer])
            .ok()
            .and_then(|f| f.get(pointer).cloned())
    };
    let string = |pointer: &str| match field(pointer) {
        Some(Field::String(s)) => Some(s),
        _ => None,
    };
    Ok(match handshake {
        Handshake::Slack if string("/type").as_deref() == Some("url_verification") => {
            Some(text(&challenge(string("/challenge"))?))
        }
        Handshake::Zoom if string("/event").as_deref() == Some("endpoint.url_validation") => {
            let plain = challenge(string("/payload/plainToken"))?;
            let mac = verifier
                .and_then(|v| v.handshake_mac(plain.as_bytes()))
                .ok_or(Rejection::InvalidSignature(SignatureError::Mismatch))?;
            Some(json(&serde_json::json!({
                "plainToken": plain,
                "encryptedToken": hex::encode(mac),
            })))
        }
        Handshake::Twitch
            if req
                .headers()
                .get("twitch-eventsub-message-type")
                .is_some_and(|v| v == "webhook_callback_verification") =>
        {
            Some(text(&challenge(string("/challenge"))?))
        }
        Handshake::Xero if matches!(field("/events"), Some(Field::Compound)) && no_events(body) => {
            let mut resp = Response::new(Body::Empty);
            *resp.status_mut() = StatusCode::OK;
            Some(resp)
        }
        Handshake::Discord => match field("/type") {
            // Interactions' PING.
            Some(Field::Number(n)) if n == "1" && field("/event").is_none() => {
                Some(json(&serde_json::json!({ "type": 1 })))
            }
            // Webhook Events' PING.
            Some(Field::Number(n)) if n == "0" => {
                let mut resp = Response::new(Body::Empty);
                *resp.status_mut() = StatusCode::NO_CONTENT;
                Some(resp)
            }
            _ => None,
        },
        _ => None,
    })
}

/// Microsoft Graph's validation of a notification URL: a `POST` whose query holds
/// `validationToken` (no `clientState`, nothing signed), answered 200 with the token decoded,
/// as `text/plain`, `nosniff`, within Graph's 10 seconds: nothing claimed or sent, no AWS
/// call. The token is echoed only when it is 1 to 512 bytes of visible ASCII and spaces
/// (Graph's holds spaces); `None` for any other request.
pub(super) fn graph_validation(
    source: &Source,
    req: &Request,
) -> Option<Result<Response<Body>, Rejection>> {
    if source.spec.handshake != Some(Handshake::Graph) || req.method() != Method::POST {
        return None;
    }
    let query = req.uri().query()?;
    let token = form_urlencoded::parse(query.as_bytes())
        .find(|(name, _)| name == "validationToken")
        .map(|(_, value)| value.into_owned())?;
    Some(
        if !token.is_empty()
            && token.len() <= MAX_CHALLENGE_BYTES
            && token.bytes().all(|b| b.is_ascii_graphic() || b == b' ')
        {
            Ok(text(&token))
        } else {
            Err(Rejection::MalformedRequest(
                "validationToken is missing or not a short visible-ASCII token",
            ))
        },
    )
}

/// Whether Asana's handshake: a `POST` with `X-Hook-Secret` (and the secret it carries).
pub(super) fn asana_secret(source: &Source, req: &Request) -> Option<String> {
    if source.spec.handshake != Some(Handshake::Asana) || req.method() != Method::POST {
        return None;
    }
    req.headers()
        .get("x-hook-secret")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

/// Asana's answer: the secret echoed in the same header, 200 and no body.
pub(super) fn asana_answer(secret: &str) -> Result<Response<Body>, Rejection> {
    let value = HeaderValue::from_str(secret)
        .map_err(|_| Rejection::MalformedRequest("X-Hook-Secret is not a header value"))?;
    let mut resp = Response::new(Body::Empty);
    *resp.status_mut() = StatusCode::OK;
    resp.headers_mut().insert("x-hook-secret", value);
    Ok(resp)
}

/// Xero's intent-to-receive carries an empty `events` array.
fn no_events(body: &[u8]) -> bool {
    matches!(
        json_fields::read(body, &["/events/0"]).map(|f| f.get("/events/0").cloned()),
        Ok(None)
    )
}

/// A challenge to echo: present, short, and visible ASCII (it goes back as text).
fn challenge(value: Option<String>) -> Result<String, Rejection> {
    match value {
        Some(v)
            if !v.is_empty()
                && v.len() <= MAX_CHALLENGE_BYTES
                && v.bytes().all(|b| b.is_ascii_graphic()) =>
        {
            Ok(v)
        }
        _ => Err(Rejection::MalformedRequest(
            "the handshake's challenge is missing or not a short visible-ASCII token",
        )),
    }
}

/// A handshake's answer with a body: it echoes what the caller sent from the inbox's own URL,
/// so never sniffed into another type (HTML, script) than it says.
fn echo(mut resp: Response<Body>) -> Response<Body> {
    resp.headers_mut().insert(
        http::header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    resp
}

fn text(body: &str) -> Response<Body> {
    let mut resp = Response::new(Body::Text(body.to_owned()));
    *resp.status_mut() = StatusCode::OK;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    echo(resp)
}

fn json(value: &serde_json::Value) -> Response<Body> {
    echo(json_response(StatusCode::OK, value.to_string()))
}

/// `GET` is allowed on this source (its handshake is a `GET` check).
pub(super) fn get_handshake(source: &Source) -> Option<Handshake> {
    source.spec.handshake.filter(|h| h.uses_get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_challenge_is_short_visible_ascii() {
        assert_eq!(challenge(Some("abc".into())).unwrap(), "abc");
        for bad in [
            None,
            Some(String::new()),
            Some("a b".into()),
            Some("x".repeat(513)),
        ] {
            assert!(
                matches!(
                    challenge(bad.clone()),
                    Err(Rejection::MalformedRequest(why)) if why.starts_with("the handshake's challenge")
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn xero_intent_to_receive_is_an_empty_events_array() {
        assert!(no_events(br#"{"events":[],"firstEventSequence":0}"#));
        assert!(!no_events(br#"{"events":[{"eventType":"UPDATE"}]}"#));
    }
}
