//! The idempotency key: the operation, not the delivery.
//!
//! A key comes only from what the sender sent (a header, values in the body, or, where a
//! source declares it, the body's hash), so anyone holding the same logical request derives
//! the same key at any time. Never the time of receipt, a random number or a request id.
//! The FIFO group, derived from the same parts, is [`crate::fifo`]'s.

use sha2::{Digest, Sha256};

use crate::config::{GroupSpec, KeySpec, MAX_KEY_VALUE_BYTES};
use crate::json_fields::{self, Field, Fields, FieldsError};

/// Why no key could be derived.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyError {
    /// The declared header or pointer is absent (or empty, or null).
    #[error("the declared idempotency key ({0}) is absent")]
    Missing(String),
    /// Present but unusable as a key: too long, a control character, an object or array.
    #[error("the idempotency key ({0}) is not usable: {1}")]
    Invalid(String, &'static str),
    /// A pointer needs a JSON body and the body is not JSON.
    #[error("the body is not JSON")]
    NotJson,
    /// A member on a key or group pointer's path appears twice in its object.
    #[error("a member on the path of {0} appears more than once")]
    Duplicate(String),
}

/// Lowercase hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The payload hash (docs/design.md, "payload hash"): the SHA-256 of the body with each of
/// `attempt_fields` (the source's per-attempt members, JSON pointers) taken out as
/// [`json_fields::without_member`] takes it out: the member's bytes and one comma beside it,
/// every other byte as sent (no number re-serialised), in the order listed. A pointer the
/// body has no member at is skipped; a body that is not JSON, or gives a member on a
/// pointer's path twice, is hashed as sent. With no `attempt_fields`, [`sha256_hex`] of the
/// body. Two deliveries of one event that differ only in those members have one hash.
pub fn payload_sha256(body: &[u8], attempt_fields: &[String]) -> String {
    let mut kept: Option<Vec<u8>> = None;
    for pointer in attempt_fields {
        let current = kept.as_deref().unwrap_or(body);
        match json_fields::without_member(current, pointer) {
            Ok(Some(rest)) => kept = Some(rest),
            Ok(None) => {}
            Err(_) => return sha256_hex(body),
        }
    }
    sha256_hex(kept.as_deref().unwrap_or(body))
}

/// The values at the source's key and group pointers, read from the body in one pass
/// ([`json_fields`]), only where a pointer needs it.
pub fn fields(body: &[u8], key: &KeySpec, group: &GroupSpec) -> Result<Fields, KeyError> {
    if let KeySpec::Form(names) = key {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        return json_fields::read_form(body, &names).map_err(|e| match e {
            FieldsError::NotJson => KeyError::NotJson,
            FieldsError::Duplicate(name) => KeyError::Duplicate(name),
        });
    }
    let mut pointers: Vec<&str> = Vec::new();
    if let KeySpec::Json(p) = key {
        pointers.extend(p.iter().map(String::as_str));
    }
    if let GroupSpec::Json(p) = group {
        pointers.extend(p.iter().map(String::as_str));
    }
    json_fields::read(body, &pointers).map_err(|e| match e {
        FieldsError::NotJson => KeyError::NotJson,
        FieldsError::Duplicate(pointer) => KeyError::Duplicate(pointer),
    })
}

/// Derives `<source>:<value>`.
///
/// `json` is the body's [`fields`] when the spec needs them; `body_sha256` is the body's hash (hex).
pub fn derive(
    source: &str,
    spec: &KeySpec,
    headers: &http::HeaderMap,
    json: Option<&Fields>,
    body_sha256: &str,
) -> Result<String, KeyError> {
    let value = match spec {
        KeySpec::Header(name) => {
            let what = || format!("header {name}");
            let raw = headers.get(name).ok_or_else(|| KeyError::Missing(what()))?;
            let text = raw
                .to_str()
                .map_err(|_| KeyError::Invalid(what(), "not visible ASCII"))?
                .trim();
            check_value(text, what)?;
            text.to_owned()
        }
        KeySpec::Json(pointers) => {
            let json = json.ok_or(KeyError::NotJson)?;
            let mut parts = Vec::with_capacity(pointers.len());
            for pointer in pointers {
                parts.push(pointer_value(json, pointer)?);
            }
            join_parts(&parts)
        }
        KeySpec::PayloadSha256 => body_sha256.to_owned(),
        KeySpec::Form(names) => {
            let form = json.ok_or(KeyError::NotJson)?;
            let mut parts = Vec::with_capacity(names.len());
            for name in names {
                parts.push(pointer_value(form, name)?);
            }
            join_parts(&parts)
        }
    };
    if value.len() > MAX_KEY_VALUE_BYTES {
        return Err(KeyError::Invalid(spec.describe(), "longer than 1024 bytes"));
    }
    let key = format!("{source}:{value}");
    check(source, &key)?;
    Ok(key)
}

/// The key rules, for a key read back from anywhere (the receiver's own derivation ends with
/// it, the consumer admits a queue message's key by it): `<source>:<value>`, the value 1 to
/// 1024 bytes with no control, space, separator, invisible format character or noncharacter.
/// So no key holds the ` to:` of an (event, destination) pair's item, nor any text that
/// would move a terminal.
pub fn check(source: &str, key: &str) -> Result<(), KeyError> {
    let what = || "the key".to_owned();
    let value = key
        .strip_prefix(source)
        .and_then(|rest| rest.strip_prefix(':'))
        .ok_or_else(|| KeyError::Invalid(what(), "not of its source"))?;
    check_value(value, what)
}

fn check_value(text: &str, what: impl Fn() -> String) -> Result<(), KeyError> {
    if text.is_empty() {
        return Err(KeyError::Missing(what()));
    }
    if text.chars().any(char::is_control) {
        return Err(KeyError::Invalid(what(), "holds a control character"));
    }
    if text.chars().any(char::is_whitespace) {
        return Err(KeyError::Invalid(what(), "holds a space or separator"));
    }
    if text.chars().any(is_format) {
        return Err(KeyError::Invalid(
            what(),
            "holds an invisible format character",
        ));
    }
    if text.chars().any(is_noncharacter) {
        return Err(KeyError::Invalid(what(), "holds a noncharacter"));
    }
    if text.len() > MAX_KEY_VALUE_BYTES {
        return Err(KeyError::Invalid(what(), "longer than 1024 bytes"));
    }
    Ok(())
}

/// Unicode's format characters (general category Cf, Unicode 16): bidirectional controls,
/// zero-width characters, invisible operators, tags. Invisible in logs and consoles.
const FORMAT: &[(char, char)] = &[
    ('\u{AD}', '\u{AD}'),
    ('\u{600}', '\u{605}'),
    ('\u{61C}', '\u{61C}'),
    ('\u{6DD}', '\u{6DD}'),
    ('\u{70F}', '\u{70F}'),
    ('\u{890}', '\u{891}'),
    ('\u{8E2}', '\u{8E2}'),
    ('\u{180E}', '\u{180E}'),
    ('\u{200B}', '\u{200F}'),
    ('\u{202A}', '\u{202E}'),
    ('\u{2060}', '\u{2064}'),
    ('\u{2066}', '\u{206F}'),
    ('\u{FEFF}', '\u{FEFF}'),
    ('\u{FFF9}', '\u{FFFB}'),
    ('\u{110BD}', '\u{110BD}'),
    ('\u{110CD}', '\u{110CD}'),
    ('\u{13430}', '\u{1343F}'),
    ('\u{1BCA0}', '\u{1BCA3}'),
    ('\u{1D173}', '\u{1D17A}'),
    ('\u{E0001}', '\u{E0001}'),
    ('\u{E0020}', '\u{E007F}'),
];

/// A format character (Cf).
pub fn is_format(c: char) -> bool {
    FORMAT.iter().any(|&(lo, hi)| (lo..=hi).contains(&c))
}

/// A noncharacter: U+FDD0..U+FDEF and the last two code points of every plane.
pub fn is_noncharacter(c: char) -> bool {
    let code = u32::from(c);
    (0xFDD0..=0xFDEF).contains(&code) || code & 0xFFFE == 0xFFFE
}

/// The value at a pointer, as a key part: a non-empty string, an integer or a boolean.
///
/// A number keys by its text as sent, where that text is an integer written plainly
/// (`-?[1-9][0-9]*` or `0`): exact at any length. A fraction, an exponent or `-0` is refused
/// (`1e3` and `1000` are one number written two ways; an id is neither).
pub(crate) fn pointer_value(json: &Fields, pointer: &str) -> Result<String, KeyError> {
    let what = || format!("body {pointer}");
    match json.get(pointer) {
        None | Some(Field::Null) => Err(KeyError::Missing(what())),
        Some(Field::String(s)) => {
            check_value(s, what)?;
            Ok(s.clone())
        }
        Some(Field::Number(text)) => {
            let digits = text.strip_prefix('-').unwrap_or(text);
            if !digits.bytes().all(|b| b.is_ascii_digit()) || text == "-0" {
                return Err(KeyError::Invalid(what(), "a number that is not an integer"));
            }
            if text.len() > MAX_KEY_VALUE_BYTES {
                return Err(KeyError::Invalid(what(), "longer than 1024 bytes"));
            }
            Ok(text.clone())
        }
        Some(Field::Bool(b)) => Ok(b.to_string()),
        Some(Field::Compound) => Err(KeyError::Invalid(what(), "an object or array, not a value")),
    }
}

/// Joins composite values unambiguously: `|` separates, `\` escapes `\` and `|`.
pub(crate) fn join_parts(parts: &[String]) -> String {
    if let [only] = parts {
        return only.clone();
    }
    let mut out = String::new();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push('|');
        }
        for c in part.chars() {
            if c == '|' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{HeaderMap, HeaderName, HeaderValue};
    use serde_json::json;

    /// `derive` over a JSON body, its fields read as the receiver reads them.
    fn derive_json(
        source: &str,
        spec: &KeySpec,
        body: &serde_json::Value,
    ) -> Result<String, KeyError> {
        let bytes = serde_json::to_vec(body).unwrap();
        let fields = fields(&bytes, spec, &GroupSpec::Key)?;
        derive(source, spec, &HeaderMap::new(), Some(&fields), "h")
    }

    fn derive_text(spec: &KeySpec, body: &str) -> Result<String, KeyError> {
        let fields = fields(body.as_bytes(), spec, &GroupSpec::Key)?;
        derive("s", spec, &HeaderMap::new(), Some(&fields), "h")
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                HeaderName::from_static(k),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn header_key_is_namespaced_by_source() {
        let spec = KeySpec::Header(HeaderName::from_static("x-github-delivery"));
        let h = headers(&[("x-github-delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")]);
        assert_eq!(
            derive("github", &spec, &h, None, "ignored").unwrap(),
            "github:72d3162e-cc78-11e3-81ab-4c9367dc0958"
        );
        assert_eq!(
            derive("other", &spec, &h, None, "ignored").unwrap(),
            "other:72d3162e-cc78-11e3-81ab-4c9367dc0958"
        );
    }

    #[test]
    fn absent_or_empty_header_is_missing_never_guessed() {
        let spec = KeySpec::Header(HeaderName::from_static("webhook-id"));
        assert!(matches!(
            derive("a", &spec, &HeaderMap::new(), None, "h"),
            Err(KeyError::Missing(_))
        ));
        let h = headers(&[("webhook-id", "  ")]);
        assert!(matches!(
            derive("a", &spec, &h, None, "h"),
            Err(KeyError::Missing(_))
        ));
    }

    #[test]
    fn json_pointer_keys() {
        let body = json!({"id": "evt_1", "type": "invoice.paid", "data": {"object": {"id": "in_9", "n": 42}}});
        let one = KeySpec::Json(vec!["/id".into()]);
        assert_eq!(derive_json("stripe", &one, &body).unwrap(), "stripe:evt_1");
        let two = KeySpec::Json(vec!["/type".into(), "/data/object/id".into()]);
        assert_eq!(
            derive_json("stripe", &two, &body).unwrap(),
            "stripe:invoice.paid|in_9"
        );
        let num = KeySpec::Json(vec!["/data/object/n".into()]);
        assert_eq!(derive_json("s", &num, &body).unwrap(), "s:42");
        let absent = KeySpec::Json(vec!["/nope".into()]);
        assert!(matches!(
            derive_json("s", &absent, &body),
            Err(KeyError::Missing(_))
        ));
        let obj = KeySpec::Json(vec!["/data".into()]);
        assert!(matches!(
            derive_json("s", &obj, &body),
            Err(KeyError::Invalid(..))
        ));
        assert_eq!(
            derive("s", &one, &HeaderMap::new(), None, "h"),
            Err(KeyError::NotJson)
        );
    }

    #[test]
    fn composite_keys_do_not_collide() {
        let spec = KeySpec::Json(vec!["/a".into(), "/b".into()]);
        let k1 = derive_json("s", &spec, &json!({"a": "x|", "b": "y"})).unwrap();
        let k2 = derive_json("s", &spec, &json!({"a": "x", "b": "|y"})).unwrap();
        assert_ne!(k1, k2);
    }

    #[test]
    fn control_characters_and_long_values_are_invalid() {
        let spec = KeySpec::Json(vec!["/id".into()]);
        let e = derive_json("s", &spec, &json!({"id": "a\u{0}b"}));
        assert!(matches!(e, Err(KeyError::Invalid(..))));
        let long = "k".repeat(MAX_KEY_VALUE_BYTES + 1);
        let e = derive_json("s", &spec, &json!({ "id": long }));
        assert!(matches!(e, Err(KeyError::Invalid(..))));
    }

    #[test]
    fn payload_hash_only_where_declared() {
        let hash = sha256_hex(b"hello");
        let fields = vec!["/attempt_number".to_owned(), "/n".to_owned()];
        let first = br#"{"attempt_number": 1, "event": {"id": 12345678901234567890}}"#;
        let retry = br#"{"attempt_number": 2, "event": {"id": 12345678901234567890}}"#;
        let other = br#"{"attempt_number": 1, "event": {"id": 12345678901234567891}}"#;
        assert_eq!(
            payload_sha256(first, &fields),
            payload_sha256(retry, &fields)
        );
        assert_eq!(
            payload_sha256(first, &fields),
            sha256_hex(br#"{"event": {"id": 12345678901234567890}}"#)
        );
        assert_ne!(
            payload_sha256(first, &fields),
            payload_sha256(other, &fields)
        );
        assert_eq!(payload_sha256(first, &[]), sha256_hex(first));
        assert_eq!(
            payload_sha256(b"not json", &fields),
            sha256_hex(b"not json")
        );
        assert_eq!(
            derive("p", &KeySpec::PayloadSha256, &HeaderMap::new(), None, &hash).unwrap(),
            format!("p:{hash}")
        );
        assert_eq!(
            hash,
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
    }

    #[test]
    fn numeric_keys_are_the_text_as_sent_and_only_integers() {
        let spec = KeySpec::Json(vec!["/id".into()]);
        let a = derive_text(&spec, r#"{"id": 12345678901234567890123}"#).unwrap();
        let b = derive_text(&spec, r#"{"id": 12345678901234567890124}"#).unwrap();
        assert_eq!(a, "s:12345678901234567890123");
        assert_ne!(a, b);
        assert_eq!(derive_text(&spec, r#"{"id": -42}"#).unwrap(), "s:-42");
        assert_eq!(
            derive_text(&spec, r#"{"id": "7"}"#),
            derive_text(&spec, r#"{"id": 7}"#)
        );
        for not_integer in ["1e3", "1000.0", "1.5", "-0", "1E+3"] {
            let body = format!(r#"{{"id": {not_integer}}}"#);
            assert!(
                matches!(derive_text(&spec, &body), Err(KeyError::Invalid(..))),
                "{not_integer}"
            );
        }
        let long = format!(r#"{{"id": {}}}"#, "9".repeat(MAX_KEY_VALUE_BYTES + 1));
        assert!(matches!(
            derive_text(&spec, &long),
            Err(KeyError::Invalid(..))
        ));
    }

    #[test]
    fn a_duplicated_member_on_a_key_or_group_path_is_refused() {
        let spec = KeySpec::Json(vec!["/id".into()]);
        assert_eq!(
            derive_text(&spec, r#"{"id":"a","id":"b"}"#),
            Err(KeyError::Duplicate("/id".into()))
        );
        let group = GroupSpec::Json(vec!["/customer".into()]);
        assert_eq!(
            fields(
                br#"{"customer":"a","customer":"b"}"#,
                &KeySpec::PayloadSha256,
                &group
            ),
            Err(KeyError::Duplicate("/customer".into()))
        );
        assert!(fields(br#"{"id":"a","x":1,"x":2}"#, &spec, &GroupSpec::Key).is_ok());
    }

    #[test]
    fn invisible_separator_and_noncharacters_are_invalid() {
        let spec = KeySpec::Json(vec!["/id".into()]);
        for bad in [
            "a\u{202E}b", // right-to-left override
            "a\u{200B}b", // zero-width space
            "a\u{2066}b", // left-to-right isolate
            "\u{FEFF}ab", // byte order mark
            "a\u{AD}b",   // soft hyphen
            "a\u{E0041}", // tag
            "a b",        // space
            "a\u{A0}b",   // no-break space
            "a\u{3000}b", // ideographic space
            "a\u{2028}b", // line separator
            "a\u{2029}b", // paragraph separator
            "a\u{FFFE}",
            "a\u{FFFF}",
            "a\u{FDD0}",
            "a\u{10FFFF}",
        ] {
            assert!(
                matches!(
                    derive_json("s", &spec, &json!({ "id": bad })),
                    Err(KeyError::Invalid(..))
                ),
                "{bad:?}"
            );
        }
        let header = KeySpec::Header(HeaderName::from_static("webhook-id"));
        assert!(matches!(
            derive(
                "s",
                &header,
                &headers(&[("webhook-id", "msg a")]),
                None,
                "h"
            ),
            Err(KeyError::Invalid(..))
        ));
        for good in ["caf\u{e9}", "\u{4e2d}\u{6587}", "a-b_c.d:e/f", "\u{1F600}"] {
            assert!(
                derive_json("s", &spec, &json!({ "id": good })).is_ok(),
                "{good:?}"
            );
        }
    }
}
