//! A source's `signature` object read into its [`Scheme`]: the named schemes, and the
//! families written out field by field (`hmac`, `ed25519`, `ecdsa-p256`, `token`, `basic`),
//! which is how every provider preset is declared (docs/configuration.md, "Signature").

use serde::Deserialize;

use crate::signature::{
    Algorithm, Carrier, Encoding, HmacSpec, KeyEncoding, Location, Scheme, Signed, SignedContent,
    TimeUnit, TimestampFrom, TimestampSpec, TokenAt,
};

use super::{field_error, ConfigError};

/// The `signature` object as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSignature {
    pub scheme: String,
    #[serde(default)]
    pub secrets: Vec<String>,
    #[serde(default)]
    pub tolerance_seconds: Option<u64>,
    /// The signature's header (`hmac-sha256`, the families), or a token's.
    #[serde(default)]
    header: Option<String>,
    /// Several headers, any of which may carry a signature (DocuSign's `-1`, `-2`).
    #[serde(default)]
    headers: Option<Vec<String>>,
    /// The signature (or a token) in the JSON body instead of a header.
    #[serde(default)]
    pointer: Option<String>,
    #[serde(default)]
    encoding: Option<String>,
    #[serde(default)]
    prefix: Option<String>,
    #[serde(default)]
    algorithm: Option<String>,
    #[serde(default)]
    items: Option<String>,
    #[serde(default)]
    pairs: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    timestamp: Option<RawTimestamp>,
    #[serde(default)]
    key_encoding: Option<String>,
    /// `false`: a signed value may hold the literal that follows it in `content` (Adyen's).
    #[serde(default)]
    separator_check: Option<bool>,
}

/// Where the signed timestamp is: exactly one of `header`, `field` (of the signature value)
/// or `pointer`, and its `unit`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTimestamp {
    #[serde(default)]
    header: Option<String>,
    #[serde(default)]
    field: Option<String>,
    #[serde(default)]
    pointer: Option<String>,
    #[serde(default)]
    unit: Option<String>,
}

const SCHEMES: &str =
    "standard-webhooks, stripe, github, shopify, hmac-sha256, hmac, ed25519, ecdsa-p256, token, basic, aws-sns, paypal, none";

/// `signature.scheme` and the fields that scheme takes; a field the scheme does not take is
/// an error, never ignored.
pub(super) fn parse_scheme(source: &str, sig: &RawSignature) -> Result<Scheme, ConfigError> {
    let scheme = match sig.scheme.as_str() {
        "standard-webhooks" => Scheme::StandardWebhooks,
        "stripe" => Scheme::Stripe,
        "github" => Scheme::Github,
        "shopify" => Scheme::Shopify,
        "none" => Scheme::None,
        "aws-sns" => Scheme::AwsSns,
        "paypal" => Scheme::Paypal,
        "basic" => Scheme::Basic,
        "hmac-sha256" => Scheme::HmacSha256(parse_hmac_sha256(source, sig)?),
        "hmac" => Scheme::Hmac {
            algorithm: parse_algorithm(source, sig.algorithm.as_deref())?,
            signed: parse_signed(source, sig)?,
        },
        "ed25519" => Scheme::Ed25519(parse_signed(source, sig)?),
        "ecdsa-p256" => Scheme::EcdsaP256(parse_signed(source, sig)?),
        "token" => Scheme::Token(parse_token(source, sig)?),
        other => {
            return Err(field_error(
                source,
                "signature.scheme",
                format!("unknown scheme `{other}` ({SCHEMES})"),
            ))
        }
    };
    check_fields_taken(source, sig)?;
    Ok(scheme)
}

/// The fields each scheme takes; any other present is refused by name.
fn check_fields_taken(source: &str, sig: &RawSignature) -> Result<(), ConfigError> {
    let present = [
        ("header", sig.header.is_some()),
        ("headers", sig.headers.is_some()),
        ("pointer", sig.pointer.is_some()),
        ("encoding", sig.encoding.is_some()),
        ("prefix", sig.prefix.is_some()),
        ("algorithm", sig.algorithm.is_some()),
        ("items", sig.items.is_some()),
        ("pairs", sig.pairs.is_some()),
        ("name", sig.name.is_some()),
        ("content", sig.content.is_some()),
        ("timestamp", sig.timestamp.is_some()),
        ("key_encoding", sig.key_encoding.is_some()),
        ("separator_check", sig.separator_check.is_some()),
    ];
    let family = [
        "header",
        "headers",
        "pointer",
        "encoding",
        "prefix",
        "items",
        "pairs",
        "name",
        "content",
        "timestamp",
        "key_encoding",
        "separator_check",
    ];
    let taken: &[&str] = match sig.scheme.as_str() {
        "hmac-sha256" => &["header", "encoding", "prefix"],
        "hmac" => &[
            "header",
            "headers",
            "pointer",
            "encoding",
            "prefix",
            "algorithm",
            "items",
            "pairs",
            "name",
            "content",
            "timestamp",
            "key_encoding",
            "separator_check",
        ],
        "ed25519" | "ecdsa-p256" => &family,
        "token" => &["header", "pointer", "prefix"],
        _ => &[],
    };
    match present
        .iter()
        .find(|(field, set)| *set && !taken.contains(field))
    {
        Some((field, _)) => Err(field_error(
            source,
            "signature",
            format!("scheme `{}` does not take `{field}`", sig.scheme),
        )),
        None => Ok(()),
    }
}

fn parse_algorithm(source: &str, algorithm: Option<&str>) -> Result<Algorithm, ConfigError> {
    match algorithm {
        Some("sha1") => Ok(Algorithm::Sha1),
        None | Some("sha256") => Ok(Algorithm::Sha256),
        Some("sha512") => Ok(Algorithm::Sha512),
        Some(other) => Err(field_error(
            source,
            "signature.algorithm",
            format!("unknown `{other}` (sha1, sha256, sha512)"),
        )),
    }
}

fn parse_encoding(source: &str, encoding: Option<&str>) -> Result<Encoding, ConfigError> {
    match encoding {
        Some("hex") => Ok(Encoding::Hex),
        Some("base64") => Ok(Encoding::Base64),
        Some("base64url") => Ok(Encoding::Base64Url),
        _ => Err(field_error(
            source,
            "signature.encoding",
            "needs `encoding`: \"hex\", \"base64\" or \"base64url\"",
        )),
    }
}

fn header_name(source: &str, field: &'static str, name: &str) -> Result<String, ConfigError> {
    http::HeaderName::from_bytes(name.as_bytes())
        .map(|h| h.as_str().to_owned())
        .map_err(|_| field_error(source, field, format!("`{name}` is not a header name")))
}

fn pointer(source: &str, field: &'static str, pointer: &str) -> Result<String, ConfigError> {
    if pointer.starts_with('/') {
        Ok(pointer.to_owned())
    } else {
        Err(field_error(
            source,
            field,
            format!("`{pointer}` is not a JSON pointer (it must start with '/')"),
        ))
    }
}

/// The generic scheme's `header`, `encoding` and `prefix`.
fn parse_hmac_sha256(source: &str, sig: &RawSignature) -> Result<HmacSpec, ConfigError> {
    let header = sig.header.as_deref().ok_or_else(|| {
        field_error(
            source,
            "signature.header",
            "hmac-sha256 needs the header name",
        )
    })?;
    Ok(HmacSpec {
        header: header_name(source, "signature.header", header)?,
        encoding: parse_encoding(source, sig.encoding.as_deref())?,
        prefix: sig.prefix.clone().unwrap_or_default(),
    })
}

/// Where the signature is: `header`, `headers` or `pointer`, exactly one.
fn parse_location(source: &str, sig: &RawSignature) -> Result<Location, ConfigError> {
    match (&sig.header, &sig.headers, &sig.pointer) {
        (Some(one), None, None) => Ok(Location::Headers(vec![header_name(
            source,
            "signature.header",
            one,
        )?])),
        (None, Some(many), None) if !many.is_empty() => Ok(Location::Headers(
            many.iter()
                .map(|h| header_name(source, "signature.headers", h))
                .collect::<Result<_, _>>()?,
        )),
        (None, None, Some(p)) => Ok(Location::Json(pointer(source, "signature.pointer", p)?)),
        _ => Err(field_error(
            source,
            "signature",
            "say where the signature is: one of `header`, `headers` (a non-empty list) or `pointer`",
        )),
    }
}

/// A signed message's declaration: the HMAC, Ed25519 and ECDSA families.
fn parse_signed(source: &str, sig: &RawSignature) -> Result<Signed, ConfigError> {
    let carrier = Carrier {
        location: parse_location(source, sig)?,
        prefix: sig.prefix.clone().unwrap_or_default(),
        items: sig.items.clone(),
        pairs: sig.pairs.clone(),
        name: sig.name.clone(),
        encoding: parse_encoding(source, sig.encoding.as_deref())?,
    };
    let mut content = SignedContent::parse(sig.content.as_deref().unwrap_or("{body}"))
        .map_err(|message| field_error(source, "signature.content", message))?;
    if sig.separator_check == Some(false) {
        content = content.without_separator_check();
    }
    let timestamp = match &sig.timestamp {
        None => None,
        Some(raw) => Some(parse_timestamp(source, raw)?),
    };
    let key_encoding = match sig.key_encoding.as_deref() {
        None | Some("raw") => KeyEncoding::Raw,
        Some("base64") => KeyEncoding::Base64,
        Some("hex") => KeyEncoding::Hex,
        Some("whsec") => KeyEncoding::Whsec,
        Some(other) => {
            return Err(field_error(
                source,
                "signature.key_encoding",
                format!("unknown `{other}` (raw, base64, hex, whsec)"),
            ))
        }
    };
    Ok(Signed {
        carrier,
        content,
        timestamp,
        key_encoding,
    })
}

fn parse_timestamp(source: &str, raw: &RawTimestamp) -> Result<TimestampSpec, ConfigError> {
    let from = match (&raw.header, &raw.field, &raw.pointer) {
        (Some(h), None, None) => {
            TimestampFrom::Header(header_name(source, "signature.timestamp.header", h)?)
        }
        (None, Some(f), None) if !f.is_empty() => TimestampFrom::Signature(f.clone()),
        (None, None, Some(p)) => {
            TimestampFrom::Json(pointer(source, "signature.timestamp.pointer", p)?)
        }
        _ => {
            return Err(field_error(
                source,
                "signature.timestamp",
                "one of `header`, `field` (of the signature value) or `pointer`",
            ))
        }
    };
    let unit = match raw.unit.as_deref() {
        None | Some("seconds") => TimeUnit::Seconds,
        Some("millis") => TimeUnit::Millis,
        Some("rfc3339") => TimeUnit::Rfc3339,
        Some(other) => {
            return Err(field_error(
                source,
                "signature.timestamp.unit",
                format!("unknown `{other}` (seconds, millis, rfc3339)"),
            ))
        }
    };
    Ok(TimestampSpec { from, unit })
}

/// Where a shared token is sent: a `header` (after a `prefix`) or a body `pointer`.
fn parse_token(source: &str, sig: &RawSignature) -> Result<TokenAt, ConfigError> {
    match (&sig.header, &sig.pointer) {
        (Some(h), None) => Ok(TokenAt::Header {
            name: header_name(source, "signature.header", h)?,
            prefix: sig.prefix.clone().unwrap_or_default(),
        }),
        (None, Some(p)) if sig.prefix.is_none() => {
            Ok(TokenAt::Json(pointer(source, "signature.pointer", p)?))
        }
        _ => Err(field_error(
            source,
            "signature",
            "a token is in a `header` (with an optional `prefix`) or at a body `pointer`",
        )),
    }
}
