//! What a preset declares beyond its signature (docs/providers.md, "Answers and content
//! checks"): the answer an accepted event gets (`answer`), the shape the verified content must
//! have (`body_check`), the token a body carries taken out of it before anything keeps it
//! (Figma's passcode), and the requests answered without a claim (WooCommerce's creation
//! ping, Discord's autocomplete).

use std::borrow::Cow;

use http::{Method, StatusCode};
use lambda_http::{Body, Request, Response};

use crate::config::{AcceptedAnswer, BodyCheck, Handshake, Source};
use crate::json_fields::{self, Field, FieldsError};
use crate::signature::{Family, TokenAt};

use super::accepted_response;
use super::answer::{stored_response, Rejection};

/// Discord's interaction types the answer depends on.
const DISCORD_MESSAGE_COMPONENT: &str = "3";
const DISCORD_AUTOCOMPLETE: &str = "4";

/// The answer to an accepted event, as the source declares it: the status and the body the
/// claim stores and every duplicate gets again (an empty body is sent as none).
/// What Adyen's standard notifications must be answered with (text, not JSON).
pub(crate) const ADYEN_ACCEPTED: &str = "[accepted]";

pub(super) fn accepted_answer(source: &Source, key: &str, body: &[u8]) -> (u16, String) {
    match source.spec.answer {
        AcceptedAnswer::Key => accepted_response(key),
        AcceptedAnswer::NoContent => (204, String::new()),
        AcceptedAnswer::Empty => (200, String::new()),
        AcceptedAnswer::AdyenAccepted => (200, ADYEN_ACCEPTED.to_owned()),
        AcceptedAnswer::DiscordInteraction => {
            // DEFERRED_UPDATE_MESSAGE for a component, DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE
            // for a command or a modal's submission.
            let deferred = match interaction_type(body).as_deref() {
                Some(DISCORD_MESSAGE_COMPONENT) => 6,
                _ => 5,
            };
            (200, format!(r#"{{"type":{deferred}}}"#))
        }
        AcceptedAnswer::Twiml => (200, super::answer::EMPTY_TWIML.to_owned()),
    }
}

/// A request the preset answers without claiming or sending anything, once verified where it
/// is signed: Discord's autocomplete (not supported: no choices offered).
pub(super) fn answered_unclaimed(source: &Source, body: &[u8]) -> Option<Response<Body>> {
    if source.spec.answer == AcceptedAnswer::DiscordInteraction
        && interaction_type(body).as_deref() == Some(DISCORD_AUTOCOMPLETE)
    {
        return Some(stored_response(
            200,
            r#"{"data":{"choices":[]},"type":8}"#.to_owned(),
        ));
    }
    None
}

/// WooCommerce's creation ping: an unsigned `POST` of the form `webhook_id=<digits>` with no
/// signature header, answered 200 with no body before any signature check (WooCommerce
/// shows an error for any other status). Nothing is claimed, sent or kept; anything else
/// goes on to the signature check.
pub(super) fn woocommerce_ping(source: &Source, req: &Request) -> Option<Response<Body>> {
    if source.spec.handshake != Some(Handshake::WooCommerce)
        || req.method() != Method::POST
        || req.headers().contains_key("x-wc-webhook-signature")
    {
        return None;
    }
    let id = req.body().as_ref().strip_prefix(b"webhook_id=")?;
    let digits = !id.is_empty() && id.len() <= 20 && id.iter().all(u8::is_ascii_digit);
    digits.then(|| {
        let mut resp = Response::new(Body::Empty);
        *resp.status_mut() = StatusCode::OK;
        resp
    })
}

/// The verified content's shape, where the source declares one: 400 `malformed_body`
/// otherwise, before the key, so nothing is written.
pub(super) fn check_body(source: &Source, body: &[u8]) -> Result<(), Rejection> {
    match source.spec.body_check {
        None => Ok(()),
        Some(BodyCheck::JsonObject) => {
            let object = body
                .iter()
                .find(|b| !b" \t\r\n".contains(b))
                .is_some_and(|&b| b == b'{');
            if object && json_fields::read(body, &[]).is_ok() {
                Ok(())
            } else {
                Err(Rejection::MalformedBody("not a JSON object"))
            }
        }
        Some(BodyCheck::TwilioForm) => twilio_form(body),
        Some(BodyCheck::AdyenItems) => adyen_items(body),
    }
}

/// Adyen signs `pspReference:originalReference:merchantAccountCode:merchantReference:value:
/// currency:eventCode:success` with no escaping, and a `merchantReference` may hold a `:`.
/// The key (`pspReference`, `eventCode`, `success`) stays the one Adyen signed when the first
/// two fields and the last two hold no `:` and `success` is `true` or `false`: a re-split
/// then moves only boundaries among the middle fields (the same key, another payload).
fn adyen_items(body: &[u8]) -> Result<(), Rejection> {
    const ITEM: &str = "/NotificationRequestItem";
    let out_of_shape = Rejection::MalformedBody(
        "an Adyen item's pspReference, originalReference or eventCode holds a `:`, or its success is not true or false",
    );
    let items = json_fields::array_elements(body, "/notificationItems")
        .map_err(|_| Rejection::MalformedBody("no `notificationItems` array"))?;
    let pointers = [
        format!("{ITEM}/pspReference"),
        format!("{ITEM}/originalReference"),
        format!("{ITEM}/eventCode"),
        format!("{ITEM}/success"),
    ];
    let pointers: Vec<&str> = pointers.iter().map(String::as_str).collect();
    for (start, end) in items {
        let fields = json_fields::read(&body[start..end], &pointers)
            .map_err(|_| Rejection::MalformedBody("an Adyen item is not JSON"))?;
        let text = |pointer: &str| match fields.get(pointer) {
            Some(Field::String(text)) => Some(text.as_str()),
            _ => None,
        };
        let joined_safely = |pointer: &str, required: bool| match fields.get(pointer) {
            Some(Field::String(text)) => !text.contains(':'),
            None | Some(Field::Null) => !required,
            Some(_) => false,
        };
        let fits = joined_safely(pointers[0], true)
            && joined_safely(pointers[1], false)
            && joined_safely(pointers[2], true)
            && matches!(text(pointers[3]), Some("true" | "false"));
        if !fits {
            return Err(out_of_shape);
        }
    }
    Ok(())
}

/// Twilio signs `{url}` and the form's names and values run together, sorted by name: with
/// no separators, `SmsStatus=delivered&To=…` and `SmsStatus=deliveredTo…` sign the same
/// bytes. Refused: a name that is not Twilio's shape (`[A-Z][A-Za-z0-9]*`) or comes twice, a
/// `…Sid` that is not empty or a SID (two capitals, 32 lower-case hex digits), a
/// `…Status` that is not lower-case letters, `_` and `-` (Voice's `in-progress`). A re-split
/// that would move a key boundary then leaves a name or a value out of shape (but free text
/// someone else writes, an inbound `Body`, can be crafted around: docs/providers.md).
fn twilio_form(body: &[u8]) -> Result<(), Rejection> {
    let bad = |why| Err(Rejection::MalformedBody(why));
    if std::str::from_utf8(body).is_err() {
        return bad("not a form");
    }
    let mut names: Vec<Cow<str>> = Vec::new();
    for (name, value) in form_urlencoded::parse(body) {
        let mut chars = name.bytes();
        let shaped = chars.next().is_some_and(|b| b.is_ascii_uppercase())
            && chars.all(|b| b.is_ascii_alphanumeric());
        if !shaped {
            return bad("a form name that is not Twilio's");
        }
        if names.contains(&name) {
            return bad("a form name twice");
        }
        let sid = |v: &str| {
            let v = v.as_bytes();
            v.len() == 34
                && v[..2].iter().all(u8::is_ascii_uppercase)
                && v[2..]
                    .iter()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
        };
        if name.ends_with("Sid") && !value.is_empty() && !sid(&value) {
            return bad("a Twilio SID out of shape");
        }
        let status = |v: &str| {
            v.bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'_' || b == b'-')
        };
        if name.ends_with("Status") && !status(&value) {
            return bad("a Twilio status out of shape");
        }
        names.push(name);
    }
    Ok(())
}

/// The body without the token it carries (Figma's passcode, at the source's token
/// pointer): exactly that member and one comma beside it taken out, every other byte kept.
/// A body without it is as it was (the signature check has refused it already).
pub(super) fn without_body_token<'b>(
    source: &Source,
    body: &'b [u8],
) -> Result<Cow<'b, [u8]>, Rejection> {
    let Family::Token(TokenAt::Json(pointer)) = source.spec.scheme.family() else {
        return Ok(Cow::Borrowed(body));
    };
    match json_fields::without_member(body, &pointer) {
        Ok(Some(stripped)) => Ok(Cow::Owned(stripped)),
        Ok(None) => Ok(Cow::Borrowed(body)),
        Err(FieldsError::NotJson) => Err(Rejection::MalformedBody("not JSON")),
        Err(FieldsError::Duplicate(_)) => {
            Err(Rejection::MalformedBody("the token's member appears twice"))
        }
    }
}

/// An interaction's `type`, as written.
fn interaction_type(body: &[u8]) -> Option<String> {
    match json_fields::read(body, &["/type"]).ok()?.get("/type") {
        Some(Field::Number(n)) => Some(n.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_adyen_item_resplit_into_a_new_key_is_refused_and_the_real_one_passes() {
        let item = |psp: &str, code: &str, success: &str| {
            format!(
                r#"{{"live":"false","notificationItems":[{{"NotificationRequestItem":{{"pspReference":"{psp}","merchantReference":"order:1","eventCode":"{code}","success":"{success}"}}}}]}}"#
            )
        };
        assert!(adyen_items(item("7914073381342284", "AUTHORISATION", "true").as_bytes()).is_ok());
        // The signed `7914073381342284::ACCT:order:1:1130:EUR:AUTHORISATION:true` re-split so
        // that the key changes: a `:` moved into the pspReference, the eventCode or success.
        for bad in [
            item("7914073381342284:", "AUTHORISATION", "true"),
            item("7914073381342284", "EUR:AUTHORISATION", "true"),
            item("7914073381342284", "EUR", "AUTHORISATION:true"),
            item("7914073381342284", "AUTHORISATION", "yes"),
        ] {
            assert!(
                matches!(adyen_items(bad.as_bytes()), Err(Rejection::MalformedBody(why)) if why.contains("holds a `:`")),
                "{bad}"
            );
        }
        assert!(matches!(
            adyen_items(br#"{"notificationItems":{}}"#),
            Err(Rejection::MalformedBody("no `notificationItems` array"))
        ));
    }

    #[test]
    fn a_twilio_form_resplit_is_refused_and_the_real_one_passes() {
        let sid = "SM0123456789abcdef0123456789abcdef";
        let real = format!("MessageSid={sid}&SmsStatus=delivered&To=%2B15558675310");
        assert!(twilio_form(real.as_bytes()).is_ok());
        // The same signed bytes, split another way: a new status, and a new key.
        let resplit = format!("MessageSid={sid}&SmsStatus=deliveredTo%2B15558675310");
        let refused = |body: &str| match twilio_form(body.as_bytes()) {
            Err(Rejection::MalformedBody(why)) => why,
            other => panic!("{body}: {other:?}"),
        };
        assert_eq!(refused(&resplit), "a Twilio status out of shape");
        for (bad, why) in [
            (
                format!("MessageSid={sid}To&SmsStatus=delivered"),
                "a Twilio SID out of shape",
            ),
            (
                format!("MessageSid={sid}&SmsStatus=delivered&to=x"),
                "a form name that is not Twilio's",
            ),
            (
                format!("MessageSid={sid}&MessageSid={sid}"),
                "a form name twice",
            ),
            (
                "Body=hi&MessageSid=SMx".to_owned(),
                "a Twilio SID out of shape",
            ),
            ("1a=b".to_owned(), "a form name that is not Twilio's"),
        ] {
            assert_eq!(refused(&bad), why, "{bad}");
        }
        assert!(twilio_form(b"MessagingServiceSid=&Body=Hello+World%21").is_ok());
    }
}
