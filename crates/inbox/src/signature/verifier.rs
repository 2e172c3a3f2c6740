//! [`Verifier`]: one scheme's check of a request against one or more secrets, built once at
//! cold start from the scheme's family ([`Scheme::family`]) and the resolved secrets.

use std::borrow::Cow;
use std::fmt;

use http::HeaderMap;

use super::keys::Keys;
use super::{
    carrier, content, header, key_kind, Encoding, Family, Inbound, Location, Scheme,
    SignatureError, TimestampFrom, TimestampSpec, TokenAt,
};

/// Verifies requests for one scheme against one or more secrets.
#[derive(Clone)]
pub struct Verifier {
    scheme: Scheme,
    family: Family,
    keys: Keys,
    tolerance_seconds: u64,
    pointers: Vec<String>,
    /// Where each event carries its own signature: the JSON pointer of the array of events
    /// ([`Verifier::each_event_at`]); `None`: the request is signed.
    events_at: Option<String>,
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Verifier")
            .field("scheme", &self.scheme)
            .field("secrets", &format_args!("<{} redacted>", self.keys.len()))
            .field("tolerance_seconds", &self.tolerance_seconds)
            .field("events_at", &self.events_at)
            .finish_non_exhaustive()
    }
}

impl Verifier {
    /// Builds a verifier from resolved secret strings.
    ///
    /// Each secret's text becomes a key by the scheme's `key_encoding` (`standard-webhooks`:
    /// `whsec_<base64>`, prefix optional; Stripe the whole `whsec_...` string as is; Ed25519
    /// and P-256 the provider's public key, checked to be a valid point). `none` takes no
    /// secrets, every other scheme at least one. Errors name the secret by 1-based position
    /// (`secret #1` is the first) and never include secret material.
    pub fn new(
        scheme: Scheme,
        secrets: Vec<String>,
        tolerance_seconds: u64,
    ) -> Result<Verifier, String> {
        let family = scheme.family();
        check_family(&family)?;
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
        if family == Family::Basic {
            if let Some(position) = secrets.iter().position(|s| !s.contains(':')) {
                return Err(format!("secret #{} is not `user:password`", position + 1));
            }
        }
        let (kind, encoding) = key_kind(&family);
        let keys = Keys::new(kind, encoding, &secrets)?;
        let pointers = scheme.pointers();
        Ok(Verifier {
            scheme,
            family,
            keys,
            tolerance_seconds,
            pointers,
            events_at: None,
        })
    }

    /// The same verifier checking each element of the JSON array at `at` (`""`: the body
    /// itself) as if it were the body: a batch whose every event carries its own signature
    /// (Adyen's `hmacSignature`, Microsoft Graph's `clientState`; docs/design.md §14). A
    /// request verifies when it has at least one event and every event verifies; what lies
    /// outside the events is signed by none of them and is not delivered (each event's bytes
    /// are).
    pub fn each_event_at(mut self, at: Option<&str>) -> Verifier {
        self.events_at = at.map(str::to_owned);
        self
    }

    /// The scheme this verifier checks.
    pub fn scheme(&self) -> &Scheme {
        &self.scheme
    }

    /// Checks a `POST` of `body` (the raw bytes as received) against the scheme's headers.
    pub fn verify(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        now_unix_secs: i64,
    ) -> Result<(), SignatureError> {
        self.verify_request(&Inbound::post(headers, body), now_unix_secs)
    }

    /// Checks a request.
    ///
    /// Timestamped schemes check the signature first, then that the timestamp is within
    /// the tolerance of `now_unix_secs` either way, so `TimestampOutOfTolerance` means
    /// "authentic but stale (or from the future)".
    pub fn verify_request(
        &self,
        request: &Inbound<'_>,
        now_unix_secs: i64,
    ) -> Result<(), SignatureError> {
        let Some(at) = &self.events_at else {
            return self.verify_one(request, now_unix_secs);
        };
        let events = crate::json_fields::array_elements(request.body, at).map_err(|_| {
            SignatureError::Malformed(format!("no array of signed events at `{at}`"))
        })?;
        if events.is_empty() {
            return Err(SignatureError::Malformed(
                "no event to verify: each event carries the signature".to_owned(),
            ));
        }
        for (index, &(start, end)) in events.iter().enumerate() {
            let event = Inbound {
                body: &request.body[start..end],
                ..*request
            };
            // Which event failed, never what it holds; a mismatch stays a mismatch (a rotated
            // secret is tried on it).
            self.verify_one(&event, now_unix_secs)
                .map_err(|why| match why {
                    SignatureError::MissingHeader(what) => {
                        SignatureError::MissingHeader(format!("{what} (event {index})"))
                    }
                    SignatureError::Malformed(what) => {
                        SignatureError::Malformed(format!("event {index}: {what}"))
                    }
                    other => other,
                })?;
        }
        Ok(())
    }

    /// One signed message: the request, or one event of it.
    fn verify_one(&self, request: &Inbound<'_>, now_unix_secs: i64) -> Result<(), SignatureError> {
        let json = if self.pointers.is_empty() {
            None
        } else {
            let pointers: Vec<&str> = self.pointers.iter().map(String::as_str).collect();
            Some(
                crate::json_fields::read(request.body, &pointers).map_err(|_| {
                    SignatureError::Malformed(
                        "the body is not JSON, and the signature is read from it".to_owned(),
                    )
                })?,
            )
        };
        match &self.family {
            Family::None => Ok(()),
            // Its certificate is fetched: the receiver verifies it (receiver::sns), never here.
            Family::AwsSns => Err(SignatureError::Malformed(
                "aws-sns messages are verified against their fetched certificate".to_owned(),
            )),
            // Likewise PayPal's (receiver::paypal).
            Family::Paypal => Err(SignatureError::Malformed(
                "paypal transmissions are verified against their fetched certificate".to_owned(),
            )),
            Family::Token(at) => {
                let sent = match at {
                    TokenAt::Header { name, prefix } => {
                        let value = header(request.headers, name)?;
                        value
                            .strip_prefix(prefix.as_str())
                            .ok_or_else(|| {
                                SignatureError::Malformed(format!(
                                    "{name} does not start with the declared prefix"
                                ))
                            })?
                            .to_owned()
                    }
                    TokenAt::Json(pointer) => content::json_text(json.as_ref(), pointer)?,
                };
                self.check(&[], &[sent.into_bytes()])
            }
            Family::Basic => {
                let value = header(request.headers, "authorization")?;
                let encoded = value
                    .strip_prefix("Basic ")
                    .or_else(|| value.strip_prefix("basic "))
                    .ok_or_else(|| {
                        SignatureError::Malformed("authorization is not Basic".to_owned())
                    })?;
                let decoded = carrier::decode(Encoding::Base64, encoded.trim(), "authorization")?;
                self.check(&[], &[decoded])
            }
            Family::Hmac { signed, .. } | Family::Ed25519(signed) | Family::EcdsaP256(signed) => {
                // The signed headers first: a missing or ambiguous id is refused before the
                // signature is even parsed.
                for name in signed.content.header_names() {
                    header(request.headers, name)?;
                }
                let values = carrier::read(&signed.carrier, request, json.as_ref())?;
                let timestamp = match &signed.timestamp {
                    Some(spec) => Some(carrier::timestamp(spec, request, &values, json.as_ref())?),
                    None => None,
                };
                let pieces = signed.content.render(
                    request,
                    timestamp.as_ref().map(|(text, _)| text.as_str()),
                    json.as_ref(),
                )?;
                self.check(&pieces, &values.candidates)?;
                match timestamp {
                    Some((_, seconds)) => self.check_tolerance(seconds, now_unix_secs),
                    None => Ok(()),
                }
            }
        }
    }

    /// The answer a handshake signs with this verifier's first key: hex or base64 of the
    /// HMAC-SHA256 of `message` (Zoom's `encryptedToken`, X's `response_token`). `None` for
    /// a verifier without a shared secret.
    pub fn handshake_mac(&self, message: &[u8]) -> Option<Vec<u8>> {
        self.keys.first_mac_sha256(message)
    }

    /// Whether `arn` is an SNS topic this verifier's source accepts (`aws-sns`).
    pub fn accepts_topic(&self, arn: &str) -> bool {
        self.keys.has_topic(arn)
    }

    /// The PayPal webhook ids this verifier's source accepts (`paypal`).
    pub fn webhook_ids(&self) -> &[String] {
        self.keys.webhook_ids()
    }

    /// The signed timestamp's tolerance, in seconds.
    pub fn tolerance_seconds(&self) -> u64 {
        self.tolerance_seconds
    }

    /// [`Verifier::check_tolerance`] for a scheme that reads its timestamp itself (`aws-sns`).
    pub fn within_tolerance(&self, timestamp: i64, now: i64) -> Result<(), SignatureError> {
        self.check_tolerance(timestamp, now)
    }

    fn check(
        &self,
        pieces: &[Cow<'_, [u8]>],
        candidates: &[Vec<u8>],
    ) -> Result<(), SignatureError> {
        if self.keys.matches(pieces, candidates) {
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

/// A family's declaration checked where the parser cannot: header names, prefixes.
pub(super) fn check_family(family: &Family) -> Result<(), String> {
    if let Some(signed) = family.signed() {
        if let Location::Headers(names) = &signed.carrier.location {
            if names.is_empty() {
                return Err("the signature needs a header".to_owned());
            }
            for name in names {
                http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                    format!("signature header {name:?} is not a valid HTTP header name")
                })?;
            }
        }
        if !signed.carrier.prefix.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(format!(
                "signature prefix {:?} must be visible ASCII without spaces",
                signed.carrier.prefix
            ));
        }
        if signed.carrier.pairs.is_some() != signed.carrier.name.is_some() {
            return Err("`pairs` and `name` go together".to_owned());
        }
        if matches!(
            signed.timestamp,
            Some(TimestampSpec {
                from: TimestampFrom::Signature(_),
                ..
            })
        ) && signed.carrier.pairs.is_none()
        {
            return Err("a timestamp read from the signature needs `pairs` and `name`".to_owned());
        }
        let names_timestamp = signed.content.parts().contains(&content::Part::Timestamp);
        // A timestamp in the body is signed with it (Linear's `webhookTimestamp`).
        let in_signed_body = matches!(
            signed.timestamp,
            Some(TimestampSpec {
                from: TimestampFrom::Json(_),
                ..
            })
        ) && signed.content.covers_body();
        if names_timestamp != signed.timestamp.is_some() && !in_signed_body {
            return Err(
                "the signed content names {timestamp} exactly when a `timestamp` is declared (or the timestamp is a field of the signed body)"
                    .to_owned(),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "a-long-enough-shared-secret";

    fn token_verifier() -> Verifier {
        Verifier::new(
            Scheme::Token(TokenAt::Json("/s".into())),
            vec![SECRET.into()],
            300,
        )
        .expect("a verifier")
    }

    #[test]
    fn each_event_is_verified_and_one_bad_event_or_none_refuses_the_request() {
        let each = token_verifier().each_event_at(Some("/value"));
        let headers = HeaderMap::new();
        let ok = format!(r#"{{"value":[{{"s":"{SECRET}","n":1}},{{"n":2,"s":"{SECRET}"}}]}}"#);
        assert_eq!(each.verify(&headers, ok.as_bytes(), 0), Ok(()));
        let one_bad = format!(r#"{{"value":[{{"s":"{SECRET}","n":1}},{{"s":"another","n":2}}]}}"#);
        assert_eq!(
            each.verify(&headers, one_bad.as_bytes(), 0),
            Err(SignatureError::Mismatch)
        );
        let unsigned = format!(r#"{{"value":[{{"s":"{SECRET}"}},{{"n":2}}]}}"#);
        assert_eq!(
            each.verify(&headers, unsigned.as_bytes(), 0),
            Err(SignatureError::MissingHeader(
                "body field /s (event 1)".into()
            ))
        );
        assert_eq!(
            each.verify(&headers, br#"{"value":[]}"#, 0),
            Err(SignatureError::Malformed(
                "no event to verify: each event carries the signature".into()
            ))
        );
        assert_eq!(
            each.verify(&headers, br#"{"value":{}}"#, 0),
            Err(SignatureError::Malformed(
                "no array of signed events at `/value`".into()
            ))
        );
        // Signed over the request, the same batch has no token where the scheme reads it.
        assert_eq!(
            token_verifier().verify(&headers, ok.as_bytes(), 0),
            Err(SignatureError::MissingHeader("body field /s".into()))
        );
    }
}
