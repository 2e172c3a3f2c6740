//! The senders' signature schemes (docs/design.md §3; each in docs/configuration.md, the
//! providers' presets in docs/providers.md).
//!
//! Four families, each written once and parameterised ([`spec`]): a keyed HMAC (SHA-1,
//! SHA-256 or SHA-512) over a content template, Ed25519 and ECDSA P-256 over the same
//! templates, and a shared token or basic auth sent as is. The named schemes (`stripe`,
//! `github`, `shopify`, `standard-webhooks`, `hmac-sha256`) are fixed HMAC configurations
//! ([`Scheme::family`]). Comparison is constant-time where a secret is compared, any of
//! several secrets may match (rotation), and no input makes verification panic.

mod carrier;
pub mod content;
mod keys;
pub mod paypal;
pub mod sns;
pub mod spec;
mod verifier;

use http::HeaderMap;

pub use content::SignedContent;
pub use keys::MIN_SECRET_BYTES;
pub use spec::{
    Algorithm, Carrier, Encoding, HmacSpec, KeyEncoding, Location, Signed, TimeUnit, TimestampFrom,
    TimestampSpec, TokenAt,
};

use keys::Kind;
pub use verifier::Verifier;

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
    /// The HMAC family, every parameter declared.
    Hmac {
        algorithm: Algorithm,
        signed: Signed,
    },
    /// Ed25519 with the provider's public key.
    Ed25519(Signed),
    /// ECDSA P-256 with SHA-256 and the provider's public key.
    EcdsaP256(Signed),
    /// A shared token sent as is in every request.
    Token(TokenAt),
    /// HTTP basic auth; the secret is `user:password`.
    Basic,
    /// AWS SNS: RSA under a certificate fetched from an SNS host ([`sns`]); the "secrets" are
    /// the topic ARNs the source accepts.
    AwsSns,
    /// PayPal: RSA under a certificate fetched from a PayPal API host ([`paypal`]); the
    /// "secrets" are the webhook ids the source accepts.
    Paypal,
    /// No verification at all.
    None,
}

/// What a scheme is, its named form lowered to its family.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Family {
    Hmac {
        algorithm: Algorithm,
        signed: Signed,
    },
    Ed25519(Signed),
    EcdsaP256(Signed),
    Token(TokenAt),
    Basic,
    AwsSns,
    Paypal,
    None,
}

impl Family {
    fn signed(&self) -> Option<&Signed> {
        match self {
            Family::Hmac { signed, .. } | Family::Ed25519(signed) | Family::EcdsaP256(signed) => {
                Some(signed)
            }
            _ => None,
        }
    }
}

fn named(
    header: &str,
    prefix: &str,
    encoding: Encoding,
    content: &str,
    timestamp: Option<TimestampSpec>,
    key_encoding: KeyEncoding,
) -> Family {
    Family::Hmac {
        algorithm: Algorithm::Sha256,
        signed: Signed {
            carrier: Carrier {
                location: Location::Headers(vec![header.to_ascii_lowercase()]),
                prefix: prefix.to_owned(),
                items: None,
                pairs: None,
                name: None,
                encoding,
            },
            content: SignedContent::parse(content).unwrap_or_else(|_| SignedContent::body()),
            timestamp,
            key_encoding,
        },
    }
}

impl Scheme {
    /// The scheme as its family: the named schemes are fixed HMAC configurations.
    #[allow(
        clippy::too_many_lines,
        reason = "one arm per scheme, each a fixed configuration read in one place"
    )]
    pub fn family(&self) -> Family {
        let with_items = |family: Family, items: &str, pairs: &str, name: &str| match family {
            Family::Hmac {
                algorithm,
                mut signed,
            } => {
                signed.carrier.items = Some(items.to_owned());
                signed.carrier.pairs = Some(pairs.to_owned());
                signed.carrier.name = Some(name.to_owned());
                Family::Hmac { algorithm, signed }
            }
            other => other,
        };
        match self {
            Scheme::StandardWebhooks => with_items(
                named(
                    "webhook-signature",
                    "",
                    Encoding::Base64,
                    "{header:webhook-id}.{timestamp}.{body}",
                    Some(TimestampSpec {
                        from: TimestampFrom::Header("webhook-timestamp".to_owned()),
                        unit: TimeUnit::Seconds,
                    }),
                    KeyEncoding::Whsec,
                ),
                " ",
                ",",
                "v1",
            ),
            Scheme::Stripe => with_items(
                named(
                    "stripe-signature",
                    "",
                    Encoding::Hex,
                    "{timestamp}.{body}",
                    Some(TimestampSpec {
                        from: TimestampFrom::Signature("t".to_owned()),
                        unit: TimeUnit::Seconds,
                    }),
                    KeyEncoding::Raw,
                ),
                ",",
                "=",
                "v1",
            ),
            Scheme::Github => named(
                "x-hub-signature-256",
                "sha256=",
                Encoding::Hex,
                "{body}",
                None,
                KeyEncoding::Raw,
            ),
            Scheme::Shopify => named(
                "x-shopify-hmac-sha256",
                "",
                Encoding::Base64,
                "{body}",
                None,
                KeyEncoding::Raw,
            ),
            Scheme::HmacSha256(spec) => named(
                &spec.header,
                &spec.prefix,
                spec.encoding,
                "{body}",
                None,
                KeyEncoding::Raw,
            ),
            Scheme::Hmac { algorithm, signed } => Family::Hmac {
                algorithm: *algorithm,
                signed: signed.clone(),
            },
            Scheme::Ed25519(signed) => Family::Ed25519(signed.clone()),
            Scheme::EcdsaP256(signed) => Family::EcdsaP256(signed.clone()),
            Scheme::Token(at) => Family::Token(at.clone()),
            Scheme::Basic => Family::Basic,
            Scheme::AwsSns => Family::AwsSns,
            Scheme::Paypal => Family::Paypal,
            Scheme::None => Family::None,
        }
    }

    /// Whether the scheme signs a timestamp (and so has a `tolerance_seconds`).
    pub fn has_timestamp(&self) -> bool {
        self.fetches_key()
            || self
                .family()
                .signed()
                .is_some_and(|s| s.timestamp.is_some())
    }

    /// Whether the scheme signs the body alone (no id, no timestamp): a captured request
    /// verifies again under any delivery id, at any time.
    pub fn signs_body_only(&self) -> bool {
        self.family()
            .signed()
            .is_some_and(|s| s.timestamp.is_none() && s.content.is_body_only())
    }

    /// Whether the secret travels in every request (a token, basic auth): weaker than a
    /// signature, which the audit says.
    pub fn sends_secret(&self) -> bool {
        matches!(self.family(), Family::Token(_) | Family::Basic)
    }

    /// Whether the signature covers the body (Mailgun's covers a token and a timestamp only).
    pub fn covers_body(&self) -> bool {
        self.fetches_key()
            || self
                .family()
                .signed()
                .is_some_and(|s| s.content.covers_body())
    }

    /// Whether the key is a certificate fetched at run time (`aws-sns`, `paypal`: the
    /// receiver verifies these, [`crate::key_fetch`]).
    pub fn fetches_key(&self) -> bool {
        matches!(self, Scheme::AwsSns | Scheme::Paypal)
    }

    /// The declaration checked where its parser cannot: header names, prefixes, the
    /// timestamp against the content ([`Verifier::new`] checks it again).
    pub fn check(&self) -> Result<(), String> {
        verifier::check_family(&self.family())
    }

    /// Whether the scheme is a keyed HMAC (the handshakes that answer with an HMAC need one).
    pub fn is_hmac(&self) -> bool {
        matches!(self.family(), Family::Hmac { .. })
    }

    /// Whether the signed content holds the URL the sender called (`{url}`: Twilio, Square,
    /// HubSpot), which the source's `public_url` then gives.
    pub fn signs_url(&self) -> bool {
        self.family()
            .signed()
            .is_some_and(|s| s.content.parts().contains(&content::Part::Url))
    }

    /// The scheme's configuration name.
    pub fn name(&self) -> &'static str {
        match self {
            Scheme::StandardWebhooks => "standard-webhooks",
            Scheme::Stripe => "stripe",
            Scheme::Github => "github",
            Scheme::Shopify => "shopify",
            Scheme::HmacSha256(_) => "hmac-sha256",
            Scheme::Hmac { .. } => "hmac",
            Scheme::Ed25519(_) => "ed25519",
            Scheme::EcdsaP256(_) => "ecdsa-p256",
            Scheme::Token(_) => "token",
            Scheme::Basic => "basic",
            Scheme::AwsSns => "aws-sns",
            Scheme::Paypal => "paypal",
            Scheme::None => "none",
        }
    }

    /// The signature headers this scheme reads, lowercase: what the queue envelope carries
    /// along. Never a header that holds the secret itself (a token, basic auth).
    pub fn header_names(&self) -> Vec<String> {
        // In the order verification reads them: the signed headers, the timestamp, the
        // signature.
        let mut names: Vec<String> = Vec::new();
        if let Some(signed) = self.family().signed() {
            names.extend(signed.content.header_names().map(str::to_owned));
            if let Some(TimestampSpec {
                from: TimestampFrom::Header(name),
                ..
            }) = &signed.timestamp
            {
                names.push(name.clone());
            }
            if let Location::Headers(headers) = &signed.carrier.location {
                names.extend(headers.iter().cloned());
            }
        }
        let mut seen = std::collections::HashSet::new();
        names.retain(|name| seen.insert(name.clone()));
        names
    }

    /// The JSON pointers verification reads from the body.
    pub fn pointers(&self) -> Vec<String> {
        let family = self.family();
        let mut pointers = Vec::new();
        if let Some(signed) = family.signed() {
            if let Location::Json(p) = &signed.carrier.location {
                pointers.push(p.clone());
            }
            if let Some(TimestampSpec {
                from: TimestampFrom::Json(p),
                ..
            }) = &signed.timestamp
            {
                pointers.push(p.clone());
            }
            pointers.extend(signed.content.pointers().map(str::to_owned));
        }
        if let Family::Token(TokenAt::Json(p)) = &family {
            pointers.push(p.clone());
        }
        pointers
    }
}

/// Why a request's signature was rejected.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignatureError {
    /// A required header (or body field) is absent or empty.
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

/// What verification sees of a request.
#[derive(Clone, Copy, Debug)]
pub struct Inbound<'a> {
    /// `POST`, `GET`...
    pub method: &'a str,
    pub headers: &'a HeaderMap,
    /// The raw bytes as received.
    pub body: &'a [u8],
    /// The query string as received, without `?`.
    pub query: Option<&'a str>,
    /// The URL the sender calls (the source's `public_url`), for `{url}`.
    pub public_url: Option<&'a str>,
}

impl<'a> Inbound<'a> {
    /// A `POST` with these headers and body, no query, no public URL.
    pub fn post(headers: &'a HeaderMap, body: &'a [u8]) -> Inbound<'a> {
        Inbound {
            method: "POST",
            headers,
            body,
            query: None,
            public_url: None,
        }
    }
}

/// The kind of key and its text's encoding a family takes.
fn key_kind(family: &Family) -> (Kind, KeyEncoding) {
    match family {
        Family::Hmac { algorithm, signed } => (Kind::Hmac(*algorithm), signed.key_encoding),
        Family::Ed25519(signed) => (Kind::Ed25519, signed.key_encoding),
        Family::EcdsaP256(signed) => (Kind::P256, signed.key_encoding),
        Family::AwsSns => (Kind::Topic, KeyEncoding::Raw),
        Family::Paypal => (Kind::WebhookId, KeyEncoding::Raw),
        Family::Token(_) | Family::Basic | Family::None => (Kind::Shared, KeyEncoding::Raw),
    }
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

/// The key lengths a `standard-webhooks` secret decodes to, in bytes (the specification's
/// 24 to 64; the same bounds as the forward signing secret's).
pub const STANDARD_WEBHOOKS_KEY_BYTES: std::ops::RangeInclusive<usize> =
    crate::whsec::MIN_KEY_BYTES..=crate::whsec::MAX_KEY_BYTES;

/// Checks secret number `position` (1-based) is fit for `scheme`: its key (a `whsec_`
/// secret decoded) 24 to 64 bytes, a public key a valid point, at least
/// [`MIN_SECRET_BYTES`] for the other shared secrets. The receiver's cold start runs it on
/// every configured secret; the message never holds secret material.
pub fn check_secret_length(scheme: &Scheme, position: usize, secret: &str) -> Result<(), String> {
    check_secret_length_at_least(scheme, position, secret, MIN_SECRET_BYTES)
}

/// [`check_secret_length`] with a provider's own floor for the secrets it issues (Dropbox's
/// app secrets are 15 characters: docs/providers.md).
pub fn check_secret_length_at_least(
    scheme: &Scheme,
    position: usize,
    secret: &str,
    min_bytes: usize,
) -> Result<(), String> {
    let family = scheme.family();
    if family == Family::None {
        return Ok(());
    }
    let (kind, encoding) = key_kind(&family);
    keys::check_length(scheme.name(), kind, encoding, position, secret, min_bytes)
}
