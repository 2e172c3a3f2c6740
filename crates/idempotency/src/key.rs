//! Keys and payload fingerprints.
//!
//! A key says what the request *is*: the sender's identifier for the operation (a header, a
//! field of the body, an event's id). Never derive one from when the request was seen or from
//! randomness: a repeat arrives at another time, so such a key cannot recognise it.

use std::fmt;

use sha2::{Digest, Sha256};

/// The longest key accepted, in bytes (DynamoDB allows 2048 for a partition key; the rest
/// is left for a prefix).
pub const MAX_KEY_BYTES: usize = 1024;

/// A key that could not be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The value is empty (or only whitespace).
    #[error("the idempotency key is empty")]
    Empty,
    /// The value is longer than [`MAX_KEY_BYTES`].
    #[error("the idempotency key is {0} bytes long, more than {MAX_KEY_BYTES}")]
    TooLong(usize),
    /// The value holds a control character.
    #[error("the idempotency key holds a control character")]
    ControlCharacter,
    /// The request or event does not carry what the key is made of.
    #[error("no idempotency key: {0} is missing")]
    Missing(String),
}

/// An idempotency key: what identifies the operation, the same on every retry of it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key(String);

impl Key {
    /// A key from a value the caller derived from the request (checked: not empty, at most
    /// [`MAX_KEY_BYTES`], no control characters).
    pub fn new(value: impl Into<String>) -> Result<Key, KeyError> {
        let value = value.into();
        if value.trim().is_empty() {
            return Err(KeyError::Empty);
        }
        if value.len() > MAX_KEY_BYTES {
            return Err(KeyError::TooLong(value.len()));
        }
        if value.chars().any(char::is_control) {
            return Err(KeyError::ControlCharacter);
        }
        Ok(Key(value))
    }

    /// A key from the string at a JSON pointer (RFC 6901) of a JSON body, e.g. `/id` or
    /// `/order/id`; a number there is taken as its text.
    pub fn from_json_pointer(body: &[u8], pointer: &str) -> Result<Key, KeyError> {
        let value: serde_json::Value =
            serde_json::from_slice(body).map_err(|_| KeyError::Missing(pointer.to_owned()))?;
        match value.pointer(pointer) {
            Some(serde_json::Value::String(s)) => Key::new(s.clone()),
            Some(serde_json::Value::Number(n)) => Key::new(n.to_string()),
            _ => Err(KeyError::Missing(pointer.to_owned())),
        }
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// This key under a namespace (`<prefix>:<key>`), so that two functions sharing a table
    /// never share a key.
    pub fn prefixed(&self, prefix: &str) -> String {
        if prefix.is_empty() {
            self.0.clone()
        } else {
            format!("{prefix}:{}", self.0)
        }
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<&str> for Key {
    type Error = KeyError;
    fn try_from(value: &str) -> Result<Key, KeyError> {
        Key::new(value)
    }
}

impl TryFrom<String> for Key {
    type Error = KeyError;
    fn try_from(value: String) -> Result<Key, KeyError> {
        Key::new(value)
    }
}

/// SHA-256 hex of a payload: stored with the first call, compared on every later one.
pub fn payload_sha256(payload: &[u8]) -> String {
    hex::encode(Sha256::digest(payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_checked() {
        assert_eq!(Key::new(""), Err(KeyError::Empty));
        assert_eq!(Key::new("  "), Err(KeyError::Empty));
        assert_eq!(Key::new("a\nb"), Err(KeyError::ControlCharacter));
        assert_eq!(
            Key::new("x".repeat(MAX_KEY_BYTES + 1)),
            Err(KeyError::TooLong(MAX_KEY_BYTES + 1))
        );
        assert_eq!(
            Key::new("evt_1").map(|k| k.prefixed("orders")),
            Ok("orders:evt_1".into())
        );
    }

    #[test]
    fn a_json_pointer_names_the_key() {
        let body = br#"{"id":"evt_1","order":{"id":42}}"#;
        assert_eq!(
            Key::from_json_pointer(body, "/id").map(|k| k.0),
            Ok("evt_1".into())
        );
        assert_eq!(
            Key::from_json_pointer(body, "/order/id").map(|k| k.0),
            Ok("42".into())
        );
        assert_eq!(
            Key::from_json_pointer(body, "/nope"),
            Err(KeyError::Missing("/nope".into()))
        );
        assert_eq!(
            Key::from_json_pointer(b"not json", "/id"),
            Err(KeyError::Missing("/id".into()))
        );
    }
}
