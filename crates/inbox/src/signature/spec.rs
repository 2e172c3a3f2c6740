//! What a scheme declares: where the signature is written and how, what is signed, where the
//! signed timestamp is, and how a secret's text becomes a key. Plain data, checked by
//! [`super::Verifier::new`]; the named schemes (`stripe`, `github`, ...) are fixed values of
//! these types ([`super::Scheme::family`]).

use super::content::SignedContent;

/// The hash an HMAC is keyed over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    Sha1,
    Sha256,
    Sha512,
}

impl Algorithm {
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Sha1 => "sha1",
            Algorithm::Sha256 => "sha256",
            Algorithm::Sha512 => "sha512",
        }
    }
}

/// How a signature is written in its header or field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// Lowercase or uppercase hexadecimal.
    Hex,
    /// Standard base64 (padding optional).
    Base64,
    /// URL-safe base64 (padding optional).
    Base64Url,
}

/// How a secret's text becomes the key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyEncoding {
    /// The text's bytes.
    Raw,
    Base64,
    Hex,
    /// An optional `whsec_` prefix, then base64 (Standard Webhooks).
    Whsec,
}

/// Where the signature value is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// One of these headers (lowercase); several where a provider writes one per key
    /// (DocuSign's `-1`, `-2`): any present one may match.
    Headers(Vec<String>),
    /// A string in the JSON body at this pointer (Mailgun).
    Json(String),
}

/// Where the signature is and how its value is parsed into candidates.
///
/// The value (after `prefix`) is split on `items` (if set); with `pairs`, each item is
/// `<name><pairs><value>` and only items called `name` are signatures (others, like Stripe's
/// `t=`, are fields); without `pairs` every item is a signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Carrier {
    pub location: Location,
    pub prefix: String,
    pub items: Option<String>,
    pub pairs: Option<String>,
    pub name: Option<String>,
    pub encoding: Encoding,
}

/// Where a signed timestamp is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TimestampFrom {
    /// A header (lowercase).
    Header(String),
    /// A field of the signature value (Stripe's `t`).
    Signature(String),
    /// A JSON pointer into the body.
    Json(String),
}

/// How a timestamp is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    Seconds,
    Millis,
    Rfc3339,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimestampSpec {
    pub from: TimestampFrom,
    pub unit: TimeUnit,
}

/// A signed message: where its signature is, what it signs, the timestamp it signs, the key's
/// encoding. Shared by the HMAC, Ed25519 and ECDSA families.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signed {
    pub carrier: Carrier,
    pub content: SignedContent,
    pub timestamp: Option<TimestampSpec>,
    pub key_encoding: KeyEncoding,
}

/// Where a shared token is sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenAt {
    /// A header (lowercase), after a literal prefix such as `Bearer `.
    Header { name: String, prefix: String },
    /// A string in the JSON body (Figma's passcode).
    Json(String),
}

/// A generic HMAC-SHA256 of the body, in a declared header (the `hmac-sha256` scheme).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HmacSpec {
    /// Header carrying the MAC (any case).
    pub header: String,
    /// How the MAC is encoded.
    pub encoding: Encoding,
    /// Required literal before the MAC, e.g. `sha256=`; empty for none.
    pub prefix: String,
}
