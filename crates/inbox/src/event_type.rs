//! An event's type, read where its source says (a header, a JSON pointer, a form field):
//! carried in the envelope and the ledger item, logged, and what routing filters on. Read
//! after the signature check, from the sender's own request; never an error: a type that is
//! absent, not text, longer than [`MAX_EVENT_TYPE_BYTES`], or holding a control character, a
//! noncharacter (U+FFFE, U+FFFF, …) or any character SQS refuses in a message body is no type
//! (the envelope carries the type as text: SQS would refuse every send of it).

use http::HeaderMap;

use crate::config::{EventTypeSpec, MAX_EVENT_TYPE_BYTES};
use crate::json_fields::{self, Field};

/// The event type `spec` points at in this request, if usable.
pub fn read(spec: &EventTypeSpec, headers: &HeaderMap, body: &[u8]) -> Option<String> {
    let text = match spec {
        EventTypeSpec::Header(name) => headers.get(name)?.to_str().ok()?.trim().to_owned(),
        EventTypeSpec::Json(pointer) => {
            match json_fields::read(body, &[pointer.as_str()])
                .ok()?
                .get(pointer)?
            {
                Field::String(text) | Field::Number(text) => text.clone(),
                _ => return None,
            }
        }
        EventTypeSpec::Form(name) => {
            match json_fields::read_form(body, &[name.as_str()])
                .ok()?
                .get(name)?
            {
                Field::String(text) => text.clone(),
                _ => return None,
            }
        }
    };
    let usable = !text.is_empty()
        && text.len() <= MAX_EVENT_TYPE_BYTES
        // What SQS refuses in a body below U+10000 is a control or U+FFFE/U+FFFF (Rust's
        // `char` holds no surrogate): both refused here.
        && !text
            .chars()
            .any(|c| c.is_control() || crate::key::is_noncharacter(c));
    usable.then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn a_type_is_read_from_a_header_a_pointer_or_a_form_field() {
        let mut headers = HeaderMap::new();
        headers.insert("x-github-event", HeaderValue::from_static("push"));
        let header = EventTypeSpec::Header(http::HeaderName::from_static("x-github-event"));
        assert_eq!(read(&header, &headers, b"").as_deref(), Some("push"));
        let json = EventTypeSpec::Json("/type".into());
        let body = br#"{"type":"invoice.paid"}"#;
        assert_eq!(read(&json, &headers, body).as_deref(), Some("invoice.paid"));
        assert_eq!(
            read(&json, &headers, br#"{"type":2}"#).as_deref(),
            Some("2")
        );
        let form = EventTypeSpec::Form("SmsStatus".into());
        let body = b"MessageSid=SM1&SmsStatus=delivered";
        assert_eq!(read(&form, &headers, body).as_deref(), Some("delivered"));
    }

    #[test]
    fn an_unusable_type_is_no_type() {
        let headers = HeaderMap::new();
        let json = EventTypeSpec::Json("/type".into());
        for body in [
            &br#"{"type":{"a":1}}"#[..],
            br#"{"type":""}"#,
            br#"{"type":"a\u0000b"}"#,
            br#"{"type":"a\ufffeb"}"#,
            br#"{"type":"\uffff"}"#,
            br#"{"type":"a\ufdd0"}"#,
            br#"{"other":"x"}"#,
            b"not json",
        ] {
            assert_eq!(read(&json, &headers, body), None, "{body:?}");
        }
        let long = format!(r#"{{"type":"{}"}}"#, "a".repeat(MAX_EVENT_TYPE_BYTES + 1));
        assert_eq!(read(&json, &headers, long.as_bytes()), None);
        let header = EventTypeSpec::Header(http::HeaderName::from_static("x-github-event"));
        assert_eq!(read(&header, &headers, b""), None);
    }
}
