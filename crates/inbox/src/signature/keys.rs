//! The keys a verifier holds, made once from the secrets' text at start-up (checked then:
//! an Ed25519 or P-256 key that is not a valid point stops start-up), and the one place a
//! candidate signature is compared with what the keys give.

use std::borrow::Cow;

use ed25519_dalek::Verifier as _;
use hmac::{Hmac, Mac};
use p256::pkcs8::DecodePublicKey as _;
use sha2::{Digest, Sha256, Sha512};
use subtle::{Choice, ConstantTimeEq};

use super::carrier::decode_base64_key;
use super::spec::{Algorithm, KeyEncoding};

/// The shortest secret the shared-secret schemes take at start-up, in bytes: 128 bits.
pub const MIN_SECRET_BYTES: usize = 16;

/// One HMAC key, keyed once (its inner and outer pads computed), cloned per request.
#[derive(Clone)]
pub(super) enum MacKey {
    Sha1(Hmac<sha1::Sha1>),
    Sha256(Hmac<Sha256>),
    Sha512(Hmac<Sha512>),
}

impl MacKey {
    fn new(algorithm: Algorithm, key: &[u8]) -> Option<MacKey> {
        Some(match algorithm {
            Algorithm::Sha1 => MacKey::Sha1(Hmac::new_from_slice(key).ok()?),
            Algorithm::Sha256 => MacKey::Sha256(Hmac::new_from_slice(key).ok()?),
            Algorithm::Sha512 => MacKey::Sha512(Hmac::new_from_slice(key).ok()?),
        })
    }

    fn mac(&self, pieces: &[Cow<'_, [u8]>]) -> Vec<u8> {
        fn run<M: Mac + Clone>(key: &M, pieces: &[Cow<'_, [u8]>]) -> Vec<u8> {
            let mut mac = key.clone();
            for piece in pieces {
                mac.update(piece);
            }
            mac.finalize().into_bytes().to_vec()
        }
        match self {
            MacKey::Sha1(key) => run(key, pieces),
            MacKey::Sha256(key) => run(key, pieces),
            MacKey::Sha512(key) => run(key, pieces),
        }
    }
}

/// Which kind of key a scheme needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Hmac(Algorithm),
    Ed25519,
    P256,
    /// A shared token or `user:password`, compared as sent.
    Shared,
    /// An SNS topic ARN a source accepts (not a key: the key is the fetched certificate's).
    Topic,
    /// A PayPal webhook id a source accepts (not a key either).
    WebhookId,
}

/// The keys of one verifier.
#[derive(Clone)]
pub(super) enum Keys {
    Hmac(Vec<MacKey>),
    Ed25519(Vec<ed25519_dalek::VerifyingKey>),
    P256(Vec<p256::ecdsa::VerifyingKey>),
    /// SHA-256 of each shared secret: compared digest to digest, so neither the secret's
    /// length nor its bytes show in the time taken.
    Shared(Vec<[u8; 32]>),
    /// The SNS topic ARNs accepted.
    Topics(Vec<String>),
    /// The PayPal webhook ids accepted.
    WebhookIds(Vec<String>),
}

impl Keys {
    pub fn len(&self) -> usize {
        match self {
            Keys::Hmac(k) => k.len(),
            Keys::Ed25519(k) => k.len(),
            Keys::P256(k) => k.len(),
            Keys::Shared(k) => k.len(),
            Keys::Topics(k) | Keys::WebhookIds(k) => k.len(),
        }
    }

    /// The keys from the secrets' text; errors name the secret by 1-based position and never
    /// hold secret material.
    pub fn new(kind: Kind, encoding: KeyEncoding, secrets: &[String]) -> Result<Keys, String> {
        let mut keys = match kind {
            Kind::Hmac(_) => Keys::Hmac(Vec::new()),
            Kind::Ed25519 => Keys::Ed25519(Vec::new()),
            Kind::P256 => Keys::P256(Vec::new()),
            Kind::Shared => Keys::Shared(Vec::new()),
            Kind::Topic => Keys::Topics(Vec::new()),
            Kind::WebhookId => Keys::WebhookIds(Vec::new()),
        };
        for (index, secret) in secrets.iter().enumerate() {
            let position = index + 1;
            let bytes = key_bytes(encoding, position, secret)?;
            match (&mut keys, kind) {
                (Keys::Hmac(list), Kind::Hmac(algorithm)) => list.push(
                    MacKey::new(algorithm, &bytes)
                        .ok_or_else(|| format!("secret #{position} cannot be an HMAC key"))?,
                ),
                (Keys::Ed25519(list), _) => {
                    let array: [u8; 32] = bytes.as_slice().try_into().map_err(|_| {
                        format!(
                            "secret #{position} is {} bytes; an Ed25519 public key is 32",
                            bytes.len()
                        )
                    })?;
                    list.push(
                        ed25519_dalek::VerifyingKey::from_bytes(&array).map_err(|_| {
                            format!("secret #{position} is not a valid Ed25519 public key")
                        })?,
                    );
                }
                (Keys::P256(list), _) => list.push(
                    p256::ecdsa::VerifyingKey::from_public_key_der(&bytes)
                        .or_else(|_| p256::ecdsa::VerifyingKey::from_sec1_bytes(&bytes))
                        .map_err(|_| {
                            format!("secret #{position} is not a P-256 public key (DER or SEC1)")
                        })?,
                ),
                (Keys::Shared(list), _) => list.push(Sha256::digest(&bytes).into()),
                (Keys::Topics(list), _) => {
                    if !super::sns::is_topic_arn(secret) {
                        return Err(format!(
                            "secret #{position} is not an SNS topic ARN (arn:aws:sns:<region>:<account>:<topic>)"
                        ));
                    }
                    list.push(secret.clone());
                }
                (Keys::WebhookIds(list), _) => {
                    if !super::paypal::is_webhook_id(secret) {
                        return Err(format!(
                            "secret #{position} is not a PayPal webhook id (letters and digits, at most 50)"
                        ));
                    }
                    list.push(secret.clone());
                }
                _ => unreachable!("the list matches its kind"),
            }
        }
        Ok(keys)
    }

    /// The HMAC-SHA256 of `message` under the first key, for a handshake's answer; `None`
    /// unless the keys are HMAC-SHA256 keys.
    pub fn first_mac_sha256(&self, message: &[u8]) -> Option<Vec<u8>> {
        match self {
            Keys::Hmac(keys) => match keys.first()? {
                key @ MacKey::Sha256(_) => Some(key.mac(&[Cow::Borrowed(message)])),
                _ => None,
            },
            _ => None,
        }
    }

    /// The PayPal webhook ids accepted (none for another kind).
    pub fn webhook_ids(&self) -> &[String] {
        match self {
            Keys::WebhookIds(ids) => ids,
            _ => &[],
        }
    }

    /// Whether `arn` is one of the SNS topics accepted.
    pub fn has_topic(&self, arn: &str) -> bool {
        matches!(self, Keys::Topics(topics) if topics.iter().any(|t| t == arn))
    }

    /// Whether any candidate is a valid signature of `pieces` under any key. The HMAC and
    /// shared comparisons run over every key and candidate in constant time.
    pub fn matches(&self, pieces: &[Cow<'_, [u8]>], candidates: &[Vec<u8>]) -> bool {
        match self {
            // Never a match here: an SNS message is verified against its fetched certificate.
            Keys::Topics(_) | Keys::WebhookIds(_) => false,
            Keys::Hmac(keys) => {
                let mut matched = Choice::from(0);
                for key in keys {
                    let expected = key.mac(pieces);
                    for candidate in candidates {
                        matched |= expected.as_slice().ct_eq(candidate.as_slice());
                    }
                }
                bool::from(matched)
            }
            Keys::Shared(digests) => {
                let mut matched = Choice::from(0);
                for candidate in candidates {
                    let sent: [u8; 32] = Sha256::digest(candidate).into();
                    for digest in digests {
                        matched |= digest.ct_eq(&sent);
                    }
                }
                bool::from(matched)
            }
            Keys::Ed25519(keys) => {
                let message = pieces.concat();
                candidates.iter().any(|candidate| {
                    let Ok(bytes) = <[u8; 64]>::try_from(candidate.as_slice()) else {
                        return false;
                    };
                    let signature = ed25519_dalek::Signature::from_bytes(&bytes);
                    keys.iter()
                        .any(|key| key.verify_strict(&message, &signature).is_ok())
                })
            }
            Keys::P256(keys) => {
                let message = pieces.concat();
                candidates.iter().any(|candidate| {
                    let parsed = p256::ecdsa::Signature::from_der(candidate)
                        .or_else(|_| p256::ecdsa::Signature::from_slice(candidate));
                    let Ok(signature) = parsed else {
                        return false;
                    };
                    let signature = signature.normalize_s().unwrap_or(signature);
                    keys.iter()
                        .any(|key| key.verify(&message, &signature).is_ok())
                })
            }
        }
    }
}

/// The key bytes of secret number `position` (1-based).
fn key_bytes(encoding: KeyEncoding, position: usize, secret: &str) -> Result<Vec<u8>, String> {
    if secret.is_empty() {
        return Err(format!("secret #{position} is empty"));
    }
    if secret.trim() != secret {
        return Err(format!(
            "secret #{position} has leading or trailing whitespace"
        ));
    }
    let bytes = match encoding {
        KeyEncoding::Raw => secret.as_bytes().to_vec(),
        KeyEncoding::Hex => {
            hex::decode(secret).map_err(|_| format!("secret #{position} is not hexadecimal"))?
        }
        KeyEncoding::Base64 => {
            decode_base64_key(secret).ok_or_else(|| format!("secret #{position} is not base64"))?
        }
        KeyEncoding::Whsec => {
            crate::whsec::decode(secret).map_err(|e| format!("secret #{position} {e}"))?
        }
    };
    Ok(bytes)
}

/// Checks secret number `position` is long enough: its key 24 to 64 bytes for a `whsec_`
/// secret, at least [`MIN_SECRET_BYTES`] for the other shared secrets (public keys are
/// checked by being parsed).
pub(super) fn check_length(
    scheme: &str,
    kind: Kind,
    encoding: KeyEncoding,
    position: usize,
    secret: &str,
    min_bytes: usize,
) -> Result<(), String> {
    let bytes = key_bytes(encoding, position, secret)?;
    match (kind, encoding) {
        (Kind::Ed25519 | Kind::P256 | Kind::Topic | Kind::WebhookId, _) => {
            Keys::new(kind, encoding, &[secret.to_owned()])
                .map(|_| ())
                .map_err(|e| e.replace("secret #1", &format!("secret #{position}")))
        }
        (_, KeyEncoding::Whsec) => {
            crate::whsec::check_length(&bytes).map_err(|e| format!("secret #{position} {e}"))
        }
        _ if bytes.len() < min_bytes => Err(format!(
            "secret #{position} is {} bytes; the {scheme} scheme needs at least {min_bytes}",
            bytes.len()
        )),
        _ => Ok(()),
    }
}
