//! Reading a request's signatures and its signed timestamp, as its scheme declares them:
//! the header or body field, the prefix, the item and pair separators, the encoding, the
//! timestamp's place and unit.

use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine as _;

use super::content::json_text;
use super::spec::{Carrier, Encoding, Location, TimeUnit, TimestampFrom, TimestampSpec};
use super::{header, Inbound, SignatureError};
use crate::json_fields::Fields;

/// Standard base64; padding optional; non-canonical trailing bits rejected.
const STANDARD: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);
/// URL-safe base64; padding optional.
const URL_SAFE: GeneralPurpose = GeneralPurpose::new(
    &alphabet::URL_SAFE,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// What a request's signature value holds: the signatures, and its other named fields
/// (Stripe's `t`).
#[derive(Debug, Default)]
pub(super) struct Values {
    pub candidates: Vec<Vec<u8>>,
    pub fields: Vec<(String, String)>,
}

/// The candidates in `request` for `carrier`.
pub(super) fn read(
    carrier: &Carrier,
    request: &Inbound<'_>,
    json: Option<&Fields>,
) -> Result<Values, SignatureError> {
    let mut values = Values::default();
    match &carrier.location {
        Location::Headers(names) => {
            let mut seen = false;
            for name in names {
                if request.headers.get(name.as_str()).is_none() {
                    continue;
                }
                seen = true;
                parse_value(carrier, name, header(request.headers, name)?, &mut values)?;
            }
            if !seen {
                let first = names.first().map_or("", String::as_str);
                return Err(SignatureError::MissingHeader(first.to_owned()));
            }
        }
        Location::Json(pointer) => {
            let text = json_text(json, pointer)?;
            parse_value(carrier, pointer, &text, &mut values)?;
        }
    }
    if values.candidates.is_empty() {
        let wanted = carrier.name.as_deref().unwrap_or("signature");
        return Err(malformed(format!("the signature has no {wanted} entry")));
    }
    Ok(values)
}

fn parse_value(
    carrier: &Carrier,
    what: &str,
    value: &str,
    values: &mut Values,
) -> Result<(), SignatureError> {
    let value = value
        .strip_prefix(carrier.prefix.as_str())
        .ok_or_else(|| malformed(format!("{what} does not start with {}", carrier.prefix)))?;
    let items: Vec<&str> = match carrier.items.as_deref() {
        None => vec![value.trim_ascii()],
        Some(" ") => value.split_ascii_whitespace().collect(),
        Some(separator) => value.split(separator).map(str::trim_ascii).collect(),
    };
    for item in items.into_iter().filter(|item| !item.is_empty()) {
        match carrier.pairs.as_deref() {
            None => values
                .candidates
                .push(decode(carrier.encoding, item, what)?),
            Some(pairs) => {
                let (name, text) = item
                    .split_once(pairs)
                    .ok_or_else(|| malformed(format!("{what} item is not <name>{pairs}<value>")))?;
                if Some(name) == carrier.name.as_deref() {
                    values
                        .candidates
                        .push(decode(carrier.encoding, text, what)?);
                } else {
                    values.fields.push((name.to_owned(), text.to_owned()));
                }
            }
        }
    }
    Ok(())
}

/// A signature's bytes from its text.
pub(super) fn decode(
    encoding: Encoding,
    text: &str,
    what: &str,
) -> Result<Vec<u8>, SignatureError> {
    let decoded = match encoding {
        Encoding::Hex => hex::decode(text).ok(),
        Encoding::Base64 => STANDARD.decode(text).ok(),
        Encoding::Base64Url => URL_SAFE.decode(text).ok(),
    };
    decoded.ok_or_else(|| {
        let name = match encoding {
            Encoding::Hex => "hex",
            Encoding::Base64 => "base64",
            Encoding::Base64Url => "base64url",
        };
        malformed(format!("{what} is not valid {name}"))
    })
}

/// Bytes from base64 in either alphabet, padding optional (keys as dashboards show them).
pub(super) fn decode_base64_key(text: &str) -> Option<Vec<u8>> {
    STANDARD
        .decode(text)
        .ok()
        .or_else(|| URL_SAFE.decode(text).ok())
}

/// The signed timestamp: its text as sent, and its Unix seconds.
pub(super) fn timestamp<'a>(
    spec: &TimestampSpec,
    request: &Inbound<'a>,
    values: &'a Values,
    json: Option<&Fields>,
) -> Result<(String, i64), SignatureError> {
    let (text, what) = match &spec.from {
        TimestampFrom::Header(name) => (header(request.headers, name)?.to_owned(), name.clone()),
        TimestampFrom::Signature(name) => {
            let mut found = values.fields.iter().filter(|(n, _)| n == name);
            let first = found
                .next()
                .ok_or_else(|| malformed(format!("the signature has no {name} field")))?;
            if found.next().is_some() {
                return Err(malformed(format!(
                    "the signature has more than one {name} field"
                )));
            }
            (first.1.clone(), format!("the signature's {name}"))
        }
        TimestampFrom::Json(pointer) => {
            (json_text(json, pointer)?, format!("body field {pointer}"))
        }
    };
    let seconds = parse_time(&text, spec.unit)
        .ok_or_else(|| malformed(format!("{what} is not a timestamp in the declared unit")))?;
    Ok((text, seconds))
}

/// Unix seconds from `text` written in `unit`: digits only for seconds and milliseconds.
fn parse_time(text: &str, unit: TimeUnit) -> Option<i64> {
    let digits = || -> Option<i64> {
        if text.is_empty() || text.len() > 19 || !text.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        text.parse().ok()
    };
    match unit {
        TimeUnit::Seconds => digits(),
        TimeUnit::Millis => digits().map(|ms| ms.div_euclid(1000)),
        TimeUnit::Rfc3339 => text.parse::<jiff::Timestamp>().ok().map(|t| t.as_second()),
    }
}

fn malformed(message: String) -> SignatureError {
    SignatureError::Malformed(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_in_each_unit_and_nothing_else() {
        assert_eq!(
            parse_time("1700000000", TimeUnit::Seconds),
            Some(1_700_000_000)
        );
        assert_eq!(
            parse_time("1700000000999", TimeUnit::Millis),
            Some(1_700_000_000)
        );
        assert_eq!(
            parse_time("2023-11-14T22:13:20.123456789Z", TimeUnit::Rfc3339),
            Some(1_700_000_000)
        );
        for bad in ["", "-1", "+1", "1e9", " 1", "17000000000000000000000"] {
            assert_eq!(parse_time(bad, TimeUnit::Seconds), None, "{bad:?}");
        }
        assert_eq!(parse_time("yesterday", TimeUnit::Rfc3339), None);
    }
}
