//! The Standard Webhooks secret format, `whsec_` and the base64 of the key, read in one place:
//! by the verifier of incoming signatures, the signer of forwards, and the senders of the dev
//! stack and `inbox-ops smoke`. A leaf module.
//!
//! One rule for all of them, as lenient as the reference libraries: the prefix is optional,
//! base64 padding is optional and trailing bits are ignored; the key is 24 to 64 bytes
//! ([`check_length`], which the verifier runs at start-up and the signer at once).

use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine as _;

/// The Standard Webhooks specification's bounds on a secret key, in bytes.
pub const MIN_KEY_BYTES: usize = 24;
pub const MAX_KEY_BYTES: usize = 64;

/// The prefix of a Standard Webhooks secret.
pub const PREFIX: &str = "whsec_";

const SECRET_B64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// Why a string is not a `whsec_` secret. The messages never hold secret material; a caller
/// puts the secret's position before them (`secret #2 is not a whsec_ secret: ...`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WhsecError {
    #[error("is not a whsec_ secret: empty")]
    Empty,
    #[error("is not a whsec_ secret: leading or trailing whitespace")]
    Whitespace,
    #[error("is not a whsec_ secret: not valid base64 after the whsec_ prefix")]
    NotBase64AfterPrefix,
    #[error("is not a whsec_ secret: not valid base64 (expected whsec_<base64>)")]
    NotBase64,
    #[error("decodes to {0} bytes; a whsec_ key has {MIN_KEY_BYTES} to {MAX_KEY_BYTES}")]
    Length(usize),
}

/// The key of a `whsec_` secret (the prefix optional): not empty, no surrounding whitespace,
/// base64. Its length is not checked here: [`check_length`].
pub fn decode(secret: &str) -> Result<Vec<u8>, WhsecError> {
    if secret.trim() != secret {
        return Err(WhsecError::Whitespace);
    }
    let (encoded, error) = match secret.strip_prefix(PREFIX) {
        Some(rest) => (rest, WhsecError::NotBase64AfterPrefix),
        None => (secret, WhsecError::NotBase64),
    };
    if encoded.is_empty() {
        return Err(WhsecError::Empty);
    }
    let key = SECRET_B64.decode(encoded).map_err(|_| error)?;
    if key.is_empty() {
        return Err(WhsecError::Empty);
    }
    Ok(key)
}

/// A key within the specification's bounds.
pub fn check_length(key: &[u8]) -> Result<(), WhsecError> {
    if (MIN_KEY_BYTES..=MAX_KEY_BYTES).contains(&key.len()) {
        Ok(())
    } else {
        Err(WhsecError::Length(key.len()))
    }
}

/// [`decode`], then [`check_length`].
pub fn decode_key(secret: &str) -> Result<Vec<u8>, WhsecError> {
    let key = decode(secret)?;
    check_length(&key)?;
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    #[test]
    fn the_prefix_and_the_padding_are_optional() {
        let key = decode_key(SPEC_SECRET).expect("the specification's secret");
        assert_eq!(key.len(), 24);
        assert_eq!(decode_key(&SPEC_SECRET[PREFIX.len()..]), Ok(key.clone()));
        // 32 bytes: base64 with one `=` of padding, accepted with or without it.
        let padded = format!("{PREFIX}{}", "QUFB".repeat(10) + "QUE=");
        let bare = padded.trim_end_matches('=').to_owned();
        assert_eq!(decode_key(&padded), decode_key(&bare));
        assert_eq!(decode_key(&padded).map(|k| k.len()), Ok(32));
    }

    #[test]
    fn each_fault_has_its_own_error() {
        assert_eq!(decode(""), Err(WhsecError::Empty));
        assert_eq!(decode("whsec_"), Err(WhsecError::Empty));
        assert_eq!(decode(" whsec_MfKQ"), Err(WhsecError::Whitespace));
        assert_eq!(
            decode("whsec_not base64!"),
            Err(WhsecError::NotBase64AfterPrefix)
        );
        assert_eq!(decode("not*base64"), Err(WhsecError::NotBase64));
        assert_eq!(decode_key("whsec_c2hvcnQ="), Err(WhsecError::Length(5)));
        let long = format!("{PREFIX}{}", "AQEB".repeat(22));
        assert_eq!(decode_key(&long), Err(WhsecError::Length(66)));
        assert!(!WhsecError::Length(5).to_string().contains("c2hvcnQ"));
    }
}
