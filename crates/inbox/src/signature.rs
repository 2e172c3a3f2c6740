//! The senders' signature schemes (docs/design.md §3; each scheme in docs/configuration.md).
//!
//! Every scheme is HMAC-SHA256 underneath; they differ in which headers carry what, what
//! exactly is signed, and how the MAC is encoded. Comparison is constant-time, any of several
//! secrets may match (rotation), and no input makes verification panic.

use std::fmt;

use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine as _;
use hmac::{Hmac, Mac};
use http::{HeaderMap, HeaderName};
use sha2::Sha256;
use subtle::{Choice, ConstantTimeEq};

type HmacSha256 = Hmac<Sha256>;

/// Standard base64; padding optional; non-canonical trailing bits rejected.
const SIGNATURE_B64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// How a MAC is written in a header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// Lowercase or uppercase hexadecimal.
    Hex,
    /// Standard base64 (padding optional).
    Base64,
}

/// A generic HMAC-SHA256 of the body, in a declared header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HmacSpec {
    /// Header carrying the MAC (any case).
    pub header: String,
    /// How the MAC is encoded.
    pub encoding: Encoding,
    /// Required literal before the MAC, e.g. `sha256=`; empty for none.
    pub prefix: String,
}

/// A sender's signature scheme.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64> ...`.
    StandardWebhooks,
    /// `Stripe-Signature: t=...,v1=<hex>,...`.
    Stripe,
    /// `X-Hub-Signature-256: sha256=<hex>`.
    Github,
    /// `X-Shopify-Hmac-Sha256: <base64>`.
    Shopify,
    /// HMAC-SHA256 of the body in a declared header.
    HmacSha256(HmacSpec),
    /// No verification at all.
    None,
}

impl Scheme {
    /// Whether the scheme signs a timestamp (and so has a `tolerance_seconds`).
    pub fn has_timestamp(&self) -> bool {
        matches!(self, Scheme::StandardWebhooks | Scheme::Stripe)
    }

    /// Whether the scheme signs the body alone (no id, no timestamp): a captured request
    /// verifies again under any delivery id, at any time.
    pub fn signs_body_only(&self) -> bool {
        matches!(
            self,
            Scheme::Github | Scheme::Shopify | Scheme::HmacSha256(_)
        )
    }

    /// The scheme's configuration name.
    pub fn name(&self) -> &'static str {
        match self {
            Scheme::StandardWebhooks => "standard-webhooks",
            Scheme::Stripe => "stripe",
            Scheme::Github => "github",
            Scheme::Shopify => "shopify",
            Scheme::HmacSha256(_) => "hmac-sha256",
            Scheme::None => "none",
        }
    }

    /// The headers this scheme reads, lowercase.
    pub fn header_names(&self) -> Vec<String> {
        let names: &[&str] = match self {
            Scheme::StandardWebhooks => &["webhook-id", "webhook-timestamp", "webhook-signature"],
            Scheme::Stripe => &["stripe-signature"],
            Scheme::Github => &["x-hub-signature-256"],
            Scheme::Shopify => &["x-shopify-hmac-sha256"],
            Scheme::HmacSha256(spec) => return vec![spec.header.to_ascii_lowercase()],
            Scheme::None => &[],
        };
        names.iter().map(|name| (*name).to_owned()).collect()
    }
}

/// Why a request's signature was rejected.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignatureError {
    /// A required header is absent or empty.
    #[error("missing header {0}")]
    MissingHeader(String),
    /// A header is present but cannot be parsed.
    #[error("malformed signature header: {0}")]
    Malformed(String),
    /// The signature is valid but the timestamp is too far from now.
    #[error("timestamp outside tolerance")]
    TimestampOutOfTolerance,
    /// Well-formed, but no signature matched any secret.
    #[error("no signature matched")]
    Mismatch,
}

/// Verifies requests for one scheme against one or more secrets.
#[derive(Clone)]
pub struct Verifier {
    scheme: Scheme,
    /// One keyed MAC per secret; cloned per request.
    keys: Vec<HmacSha256>,
    tolerance_seconds: u64,
    /// Normalised header name for [`Scheme::HmacSha256`].
    custom_header: Option<HeaderName>,
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Verifier")
            .field("scheme", &self.scheme)
            .field("secrets", &format_args!("<{} redacted>", self.keys.len()))
            .field("tolerance_seconds", &self.tolerance_seconds)
            .finish_non_exhaustive()
    }
}

impl Verifier {
    /// Builds a verifier from resolved secret strings.
    ///
    /// `standard-webhooks` secrets are `whsec_<base64>` (prefix optional); the other schemes
    /// use the secret string's bytes as the key (for Stripe the whole `whsec_...` string).
    /// `none` takes no secrets, every other scheme at least one. Errors name the secret by
    /// 1-based position (`secret #1` is the first) and never include secret material.
    pub fn new(
        scheme: Scheme,
        secrets: Vec<String>,
        tolerance_seconds: u64,
    ) -> Result<Verifier, String> {
        let custom_header = match &scheme {
            Scheme::HmacSha256(spec) => Some(check_spec(spec)?),
            _ => None,
        };
        if scheme == Scheme::None {
            if !secrets.is_empty() {
                return Err(format!(
                    "the none scheme takes no secrets, but {} were given",
                    secrets.len()
                ));
            }
        } else if secrets.is_empty() {
            return Err(format!(
                "the {} scheme needs at least one secret",
                scheme.name()
            ));
        }
        let keys = secrets
            .iter()
            .enumerate()
            .map(|(index, secret)| {
                let bytes = key_bytes(&scheme, index + 1, secret)?;
                HmacSha256::new_from_slice(&bytes)
                    .map_err(|_| format!("secret #{} cannot be used as an HMAC key", index + 1))
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Verifier {
            scheme,
            keys,
            tolerance_seconds,
            custom_header,
        })
    }

    /// Checks `body` (the raw bytes as received) against the scheme's headers.
    ///
    /// Timestamped schemes check the MAC first, then that the timestamp is within the
    /// tolerance of `now_unix_secs` either way, so `TimestampOutOfTolerance` means "authentic
    /// but stale (or from the future)".
    pub fn verify(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        now_unix_secs: i64,
    ) -> Result<(), SignatureError> {
        match &self.scheme {
            Scheme::None => Ok(()),
            Scheme::StandardWebhooks => self.verify_standard_webhooks(headers, body, now_unix_secs),
            Scheme::Stripe => self.verify_stripe(headers, body, now_unix_secs),
            Scheme::Github => {
                let name = "x-hub-signature-256";
                let value = header(headers, name)?;
                let mac = decode_mac(value, name, Encoding::Hex, "sha256=")?;
                self.check_any(&[mac], &[body])
            }
            Scheme::Shopify => {
                let name = "x-shopify-hmac-sha256";
                let value = header(headers, name)?;
                let mac = decode_mac(value, name, Encoding::Base64, "")?;
                self.check_any(&[mac], &[body])
            }
            Scheme::HmacSha256(spec) => {
                let name = self
                    .custom_header
                    .as_ref()
                    .map_or(spec.header.as_str(), HeaderName::as_str);
                let value = header(headers, name)?;
                let mac = decode_mac(value, name, spec.encoding, &spec.prefix)?;
                self.check_any(&[mac], &[body])
            }
        }
    }

    /// The scheme this verifier checks.
    pub fn scheme(&self) -> &Scheme {
        &self.scheme
    }

    fn verify_standard_webhooks(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        now: i64,
    ) -> Result<(), SignatureError> {
        let id = header(headers, "webhook-id")?;
        // The signed content is `id.timestamp.body`: an id holding `.` could move the first
        // boundary (`a.b` + `c` and `a` + `b.c`...), so it is refused before any MAC.
        if id.contains('.') {
            return Err(malformed("webhook-id contains '.'"));
        }
        let timestamp =
            parse_timestamp(header(headers, "webhook-timestamp")?, "webhook-timestamp")?;
        let signatures = header(headers, "webhook-signature")?;

        let mut candidates = Vec::new();
        for entry in signatures.split_ascii_whitespace() {
            let (version, encoded) = entry
                .split_once(',')
                .ok_or_else(|| malformed("webhook-signature entry is not <version>,<signature>"))?;
            if version != "v1" {
                continue;
            }
            let mac = SIGNATURE_B64
                .decode(encoded)
                .map_err(|_| malformed("webhook-signature v1 entry is not valid base64"))?;
            candidates.push(mac);
        }
        if candidates.is_empty() {
            return Err(malformed("webhook-signature has no v1 entry"));
        }

        let timestamp_text = timestamp.to_string();
        self.check_any(
            &candidates,
            &[id.as_bytes(), b".", timestamp_text.as_bytes(), b".", body],
        )?;
        self.check_tolerance(timestamp, now)
    }

    fn verify_stripe(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        now: i64,
    ) -> Result<(), SignatureError> {
        let value = header(headers, "stripe-signature")?;
        let mut timestamp = None;
        let mut candidates = Vec::new();
        for item in value.split(',').map(str::trim_ascii) {
            if item.is_empty() {
                continue;
            }
            let (key, field) = item
                .split_once('=')
                .ok_or_else(|| malformed("stripe-signature item is not <key>=<value>"))?;
            match key {
                "t" => {
                    if timestamp.is_some() {
                        return Err(malformed("stripe-signature has more than one t="));
                    }
                    timestamp = Some(parse_timestamp(field, "stripe-signature t=")?);
                }
                "v1" => candidates.push(
                    hex::decode(field)
                        .map_err(|_| malformed("stripe-signature v1= is not valid hex"))?,
                ),
                _ => {}
            }
        }
        let timestamp = timestamp.ok_or_else(|| malformed("stripe-signature has no t="))?;
        if candidates.is_empty() {
            return Err(malformed("stripe-signature has no v1="));
        }

        let timestamp_text = timestamp.to_string();
        self.check_any(&candidates, &[timestamp_text.as_bytes(), b".", body])?;
        self.check_tolerance(timestamp, now)
    }

    /// Ok if any candidate equals the MAC of `parts` under any secret (constant-time).
    fn check_any(&self, candidates: &[Vec<u8>], parts: &[&[u8]]) -> Result<(), SignatureError> {
        let mut matched = Choice::from(0);
        for key in &self.keys {
            let mut mac = key.clone();
            for part in parts {
                mac.update(part);
            }
            let expected = mac.finalize().into_bytes();
            for candidate in candidates {
                matched |= expected.as_slice().ct_eq(candidate.as_slice());
            }
        }
        if bool::from(matched) {
            Ok(())
        } else {
            Err(SignatureError::Mismatch)
        }
    }

    fn check_tolerance(&self, timestamp: i64, now: i64) -> Result<(), SignatureError> {
        let distance = (i128::from(now) - i128::from(timestamp)).unsigned_abs();
        if distance > u128::from(self.tolerance_seconds) {
            Err(SignatureError::TimestampOutOfTolerance)
        } else {
            Ok(())
        }
    }
}

fn malformed(message: &str) -> SignatureError {
    SignatureError::Malformed(message.to_owned())
}

/// The single, non-empty, visible-ASCII value of header `name`, trimmed.
fn header<'a>(headers: &'a HeaderMap, name: &str) -> Result<&'a str, SignatureError> {
    let mut values = headers.get_all(name).iter();
    let value = values
        .next()
        .ok_or_else(|| SignatureError::MissingHeader(name.to_owned()))?;
    if values.next().is_some() {
        return Err(SignatureError::Malformed(format!(
            "{name} appears more than once"
        )));
    }
    let text = value
        .to_str()
        .map_err(|_| SignatureError::Malformed(format!("{name} is not visible ASCII")))?
        .trim_ascii();
    if text.is_empty() {
        return Err(SignatureError::MissingHeader(name.to_owned()));
    }
    Ok(text)
}

/// Unix seconds written as plain decimal digits.
fn parse_timestamp(text: &str, what: &str) -> Result<i64, SignatureError> {
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(SignatureError::Malformed(format!(
            "{what} is not a unix timestamp"
        )));
    }
    text.parse::<i64>()
        .map_err(|_| SignatureError::Malformed(format!("{what} is out of range")))
}

fn decode_mac(
    value: &str,
    name: &str,
    encoding: Encoding,
    prefix: &str,
) -> Result<Vec<u8>, SignatureError> {
    let encoded = value
        .strip_prefix(prefix)
        .ok_or_else(|| SignatureError::Malformed(format!("{name} does not start with {prefix}")))?;
    match encoding {
        Encoding::Hex => hex::decode(encoded)
            .map_err(|_| SignatureError::Malformed(format!("{name} is not valid hex"))),
        Encoding::Base64 => SIGNATURE_B64
            .decode(encoded)
            .map_err(|_| SignatureError::Malformed(format!("{name} is not valid base64"))),
    }
}

fn check_spec(spec: &HmacSpec) -> Result<HeaderName, String> {
    let name = HeaderName::from_bytes(spec.header.as_bytes()).map_err(|_| {
        format!(
            "hmac-sha256 header {:?} is not a valid HTTP header name",
            spec.header
        )
    })?;
    if !spec.prefix.bytes().all(|byte| byte.is_ascii_graphic()) {
        return Err(format!(
            "hmac-sha256 prefix {:?} must be visible ASCII without spaces",
            spec.prefix
        ));
    }
    Ok(name)
}

/// The shortest secret the raw-secret schemes take at start-up, in bytes: 128 bits.
pub const MIN_SECRET_BYTES: usize = 16;
/// The key lengths a `standard-webhooks` secret decodes to, in bytes (the specification's
/// 24 to 64; the same bounds as the forward signing secret's).
pub const STANDARD_WEBHOOKS_KEY_BYTES: std::ops::RangeInclusive<usize> =
    crate::whsec::MIN_KEY_BYTES..=crate::whsec::MAX_KEY_BYTES;

/// Checks secret number `position` (1-based) is long enough for `scheme`: its key (the
/// `whsec_` secret decoded) 24 to 64 bytes for `standard-webhooks`, at least
/// [`MIN_SECRET_BYTES`] for the others. The receiver's cold start runs it on every
/// configured secret; the message never holds secret material.
pub fn check_secret_length(scheme: &Scheme, position: usize, secret: &str) -> Result<(), String> {
    let key = key_bytes(scheme, position, secret)?;
    match scheme {
        Scheme::StandardWebhooks => {
            crate::whsec::check_length(&key).map_err(|e| format!("secret #{position} {e}"))
        }
        Scheme::None => Ok(()),
        _ if key.len() < MIN_SECRET_BYTES => Err(format!(
            "secret #{position} is {} bytes; the {} scheme needs at least {MIN_SECRET_BYTES}",
            key.len(),
            scheme.name()
        )),
        _ => Ok(()),
    }
}

/// The HMAC key for secret number `position` (1-based).
fn key_bytes(scheme: &Scheme, position: usize, secret: &str) -> Result<Vec<u8>, String> {
    if secret.is_empty() {
        return Err(format!("secret #{position} is empty"));
    }
    if secret.trim() != secret {
        return Err(format!(
            "secret #{position} has leading or trailing whitespace"
        ));
    }
    match scheme {
        Scheme::StandardWebhooks => {
            crate::whsec::decode(secret).map_err(|e| format!("secret #{position} {e}"))
        }
        _ => Ok(secret.as_bytes().to_vec()),
    }
}
