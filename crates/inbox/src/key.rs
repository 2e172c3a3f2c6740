//! The idempotency key: the operation, not the delivery.
//!
//! A key comes only from what the sender sent (a header, values in the body, or, where a
//! source declares it, the body's hash), so anyone holding the same logical request derives
//! the same key at any time. Never the time of receipt, a random number or a request id.
//! The FIFO group, derived from the same parts, is [`crate::fifo`]'s.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::config::{KeySpec, MAX_KEY_VALUE_BYTES};

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
}

/// Lowercase hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The body parsed as JSON, once, only where a key or group pointer needs it.
pub fn parse_json(body: &[u8]) -> Result<Value, KeyError> {
    serde_json::from_slice(body).map_err(|_| KeyError::NotJson)
}

/// Derives `<source>:<value>`.
///
/// `json` is the parsed body when the spec needs it; `body_sha256` is the body's hash (hex).
pub fn derive(
    source: &str,
    spec: &KeySpec,
    headers: &http::HeaderMap,
    json: Option<&Value>,
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
    };
    if value.len() > MAX_KEY_VALUE_BYTES {
        return Err(KeyError::Invalid(spec.describe(), "longer than 1024 bytes"));
    }
    Ok(format!("{source}:{value}"))
}

fn check_value(text: &str, what: impl Fn() -> String) -> Result<(), KeyError> {
    if text.is_empty() {
        return Err(KeyError::Missing(what()));
    }
    if text.chars().any(char::is_control) {
        return Err(KeyError::Invalid(what(), "holds a control character"));
    }
    if text.len() > MAX_KEY_VALUE_BYTES {
        return Err(KeyError::Invalid(what(), "longer than 1024 bytes"));
    }
    Ok(())
}

/// The value at a pointer, as a key part: a non-empty string, a number or a boolean.
pub(crate) fn pointer_value(json: &Value, pointer: &str) -> Result<String, KeyError> {
    let what = || format!("body {pointer}");
    match json.pointer(pointer) {
        None | Some(Value::Null) => Err(KeyError::Missing(what())),
        Some(Value::String(s)) => {
            check_value(s, what)?;
            Ok(s.clone())
        }
        Some(v @ (Value::Number(_) | Value::Bool(_))) => Ok(v.to_string()),
        Some(Value::Array(_) | Value::Object(_)) => {
            Err(KeyError::Invalid(what(), "an object or array, not a value"))
        }
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
        assert_eq!(
            derive("stripe", &one, &HeaderMap::new(), Some(&body), "h").unwrap(),
            "stripe:evt_1"
        );
        let two = KeySpec::Json(vec!["/type".into(), "/data/object/id".into()]);
        assert_eq!(
            derive("stripe", &two, &HeaderMap::new(), Some(&body), "h").unwrap(),
            "stripe:invoice.paid|in_9"
        );
        let num = KeySpec::Json(vec!["/data/object/n".into()]);
        assert_eq!(
            derive("s", &num, &HeaderMap::new(), Some(&body), "h").unwrap(),
            "s:42"
        );
        let absent = KeySpec::Json(vec!["/nope".into()]);
        assert!(matches!(
            derive("s", &absent, &HeaderMap::new(), Some(&body), "h"),
            Err(KeyError::Missing(_))
        ));
        let obj = KeySpec::Json(vec!["/data".into()]);
        assert!(matches!(
            derive("s", &obj, &HeaderMap::new(), Some(&body), "h"),
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
        let k1 = derive(
            "s",
            &spec,
            &HeaderMap::new(),
            Some(&json!({"a": "x|", "b": "y"})),
            "h",
        )
        .unwrap();
        let k2 = derive(
            "s",
            &spec,
            &HeaderMap::new(),
            Some(&json!({"a": "x", "b": "|y"})),
            "h",
        )
        .unwrap();
        assert_ne!(k1, k2);
    }

    #[test]
    fn control_characters_and_long_values_are_invalid() {
        let spec = KeySpec::Json(vec!["/id".into()]);
        let e = derive(
            "s",
            &spec,
            &HeaderMap::new(),
            Some(&json!({"id": "a\u{0}b"})),
            "h",
        );
        assert!(matches!(e, Err(KeyError::Invalid(..))));
        let long = "k".repeat(MAX_KEY_VALUE_BYTES + 1);
        let e = derive(
            "s",
            &spec,
            &HeaderMap::new(),
            Some(&json!({ "id": long })),
            "h",
        );
        assert!(matches!(e, Err(KeyError::Invalid(..))));
    }

    #[test]
    fn payload_hash_only_where_declared() {
        let hash = sha256_hex(b"hello");
        assert_eq!(
            derive("p", &KeySpec::PayloadSha256, &HeaderMap::new(), None, &hash).unwrap(),
            format!("p:{hash}")
        );
        assert_eq!(
            hash,
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
    }
}
