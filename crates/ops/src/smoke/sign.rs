//! A test event signed as its sender would sign it, for every signature family the library
//! verifies ([`inbox::signature::Family`]): the keyed HMAC family (every named scheme is one of
//! its configurations) with its content template, signed timestamp and carrier; a shared token
//! in a header or the body; basic auth; none. Ed25519 and ECDSA P-256 are verified with the
//! provider's public key: only the provider holds the private key, so smoke cannot sign for
//! them ([`Signing::ProviderOnly`]) and sends the event unsigned, expecting the refusal.

use std::borrow::Cow;

use anyhow::{anyhow, bail, Context as _};
use base64::engine::general_purpose::{STANDARD as B64, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine as _;
use hmac::{Hmac, Mac};
use inbox::signature::content::Part;
use inbox::signature::{
    Algorithm, Encoding, Family, KeyEncoding, Location, Scheme, Signed, TimeUnit, TimestampFrom,
    TokenAt,
};
use serde_json::{Map, Value};

/// The body of a test event: a JSON document, or a form (Twilio's `{form_sorted}`).
#[derive(Clone, Debug, PartialEq)]
pub enum Payload {
    Json(Value),
    Form(Vec<(String, String)>),
}

impl Payload {
    /// The bytes sent.
    pub fn bytes(&self) -> Vec<u8> {
        match self {
            Payload::Json(doc) => serde_json::to_vec(doc).unwrap_or_default(),
            Payload::Form(pairs) => form_urlencoded::Serializer::new(String::new())
                .extend_pairs(pairs)
                .finish()
                .into_bytes(),
        }
    }

    /// Its `Content-Type`.
    pub fn content_type(&self) -> &'static str {
        match self {
            Payload::Json(_) => "application/json",
            Payload::Form(_) => "application/x-www-form-urlencoded",
        }
    }

    fn json_mut(&mut self, what: &str) -> anyhow::Result<&mut Value> {
        match self {
            Payload::Json(doc) => Ok(doc),
            Payload::Form(_) => bail!("{what} is read from a JSON body, and this body is a form"),
        }
    }
}

/// Whether smoke can sign for a scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signing {
    /// Smoke holds what the sender signs with (a shared secret, a token, a password).
    Signs,
    /// The scheme verifies the provider's public-key signature (`ed25519`, `ecdsa-p256`):
    /// only the provider holds the private key. The event is sent unsigned and the receiver
    /// must refuse it (401 `invalid_signature`).
    ProviderOnly,
}

impl Signing {
    pub fn of(scheme: &Scheme) -> Signing {
        match scheme.family() {
            Family::Ed25519(_) | Family::EcdsaP256(_) | Family::AwsSns | Family::Paypal => {
                Signing::ProviderOnly
            }
            _ => Signing::Signs,
        }
    }
}

/// The family's name as docs/providers.md's family column writes it.
pub fn family_name(scheme: &Scheme) -> String {
    match scheme.family() {
        Family::Hmac { algorithm, .. } => format!("hmac-{}", algorithm.name()),
        Family::Ed25519(_) => "ed25519".to_owned(),
        Family::EcdsaP256(_) => "ecdsa-p256".to_owned(),
        Family::Token(TokenAt::Header { .. }) => "token (header)".to_owned(),
        Family::Token(TokenAt::Json(_)) => "token (body)".to_owned(),
        Family::Basic => "basic".to_owned(),
        Family::AwsSns => "rsa (aws-sns certificate)".to_owned(),
        Family::Paypal => "rsa (paypal certificate)".to_owned(),
        Family::None => "none".to_owned(),
    }
}

/// What signing needs besides the secret.
#[derive(Clone, Copy, Debug)]
pub struct Context<'a> {
    /// The delivery id: the value of any header or body field the signed content reads that
    /// the event does not already hold (`webhook-id`, `svix-id`, Mailgun's token).
    pub id: &'a str,
    /// The time of sending, epoch milliseconds.
    pub now_ms: i64,
    /// The source's `public_url`, for a content that signs `{url}`.
    pub public_url: Option<&'a str>,
}

/// Signs `payload` per `scheme` with `secret`: the headers to send, and the payload with
/// whatever the scheme writes into the body (a signed timestamp, Mailgun's signature,
/// Figma's passcode). [`Signing::ProviderOnly`] schemes get no signature.
pub fn sign(
    scheme: &Scheme,
    secret: &str,
    ctx: Context<'_>,
    payload: &mut Payload,
) -> anyhow::Result<Vec<(String, String)>> {
    let family = scheme.family();
    if secret.is_empty() && !matches!(family, Family::None) {
        bail!("the secret is empty");
    }
    let mut headers = Vec::new();
    match &family {
        Family::Hmac { algorithm, signed } => {
            hmac_family(*algorithm, signed, secret, ctx, payload, &mut headers)?;
        }
        Family::Ed25519(_)
        | Family::EcdsaP256(_)
        | Family::AwsSns
        | Family::Paypal
        | Family::None => {}
        Family::Token(TokenAt::Header { name, prefix }) => {
            headers.push((name.clone(), format!("{prefix}{secret}")));
        }
        Family::Token(TokenAt::Json(pointer)) => {
            set_pointer(
                payload.json_mut("the token")?,
                pointer,
                Value::String(secret.to_owned()),
            )?;
        }
        Family::Basic => {
            if !secret.contains(':') {
                bail!("the basic-auth secret is not `user:password`");
            }
            headers.push((
                "Authorization".to_owned(),
                format!("Basic {}", B64.encode(secret)),
            ));
        }
    }
    Ok(headers)
}

/// The HMAC family: the timestamp placed where it is read, the values the content reads made
/// up, the MAC over the rendered content, written into the carrier.
fn hmac_family(
    algorithm: Algorithm,
    signed: &Signed,
    secret: &str,
    ctx: Context<'_>,
    payload: &mut Payload,
    headers: &mut Vec<(String, String)>,
) -> anyhow::Result<()> {
    let key = key_bytes(signed.key_encoding, secret)?;
    let timestamp = place_timestamp(signed, ctx.now_ms, payload, headers)?;
    // Every header and body field the content reads, made up where the event has none.
    for part in signed.content.parts() {
        match part {
            Part::Header(name) if !has_header(headers, name) => {
                headers.push((name.clone(), ctx.id.to_owned()));
            }
            Part::Json(pointer) => {
                let doc = payload.json_mut("a signed field")?;
                if doc.pointer(pointer).is_none() {
                    set_pointer(doc, pointer, Value::String(ctx.id.to_owned()))?;
                }
            }
            _ => {}
        }
    }
    let in_body = matches!(signed.carrier.location, Location::Json(_));
    if in_body && signed.content.covers_body() {
        bail!("the signature is written into the body it signs: no sender can do that");
    }
    let body = payload.bytes();
    let mut pieces: Vec<Cow<'_, [u8]>> = Vec::new();
    for part in signed.content.parts() {
        pieces.push(match part {
            Part::Literal(text) => Cow::Owned(text.clone().into_bytes()),
            Part::Body => Cow::Borrowed(&body),
            Part::Timestamp => Cow::Owned(
                timestamp
                    .clone()
                    .ok_or_else(|| anyhow!("the content signs a timestamp the scheme has not"))?
                    .into_bytes(),
            ),
            Part::Header(name) => Cow::Owned(
                headers
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(name))
                    .map(|(_, v)| v.clone().into_bytes())
                    .unwrap_or_default(),
            ),
            Part::Json(pointer) => Cow::Owned(json_text(payload, pointer)?.into_bytes()),
            // Absent from the event: signed as nothing, as the sender does (Adyen's).
            Part::JsonOrEmpty(pointer) => {
                Cow::Owned(json_text(payload, pointer).unwrap_or_default().into_bytes())
            }
            Part::Url => Cow::Owned(
                ctx.public_url
                    .ok_or_else(|| {
                        anyhow!("the scheme signs the URL and the source has no public_url")
                    })?
                    .as_bytes()
                    .to_vec(),
            ),
            Part::Method => Cow::Borrowed(b"POST".as_slice()),
            Part::FormSorted => Cow::Owned(form_sorted(payload)?),
        });
    }
    let mac = mac(algorithm, &key, &pieces);
    let encoded = match signed.carrier.encoding {
        Encoding::Hex => hex::encode(mac),
        Encoding::Base64 => B64.encode(mac),
        Encoding::Base64Url => URL_SAFE_NO_PAD.encode(mac),
    };
    write_carrier(signed, timestamp.as_deref(), &encoded, payload, headers)
}

/// The signed timestamp's text, placed where the scheme reads it (a header, a body field; a
/// signature field is written with the signature).
fn place_timestamp(
    signed: &Signed,
    now_ms: i64,
    payload: &mut Payload,
    headers: &mut Vec<(String, String)>,
) -> anyhow::Result<Option<String>> {
    let Some(spec) = &signed.timestamp else {
        return Ok(None);
    };
    let (text, json) = match spec.unit {
        TimeUnit::Seconds => {
            let s = now_ms.div_euclid(1000);
            (s.to_string(), Value::from(s))
        }
        TimeUnit::Millis => (now_ms.to_string(), Value::from(now_ms)),
        TimeUnit::Rfc3339 => {
            let t = jiff::Timestamp::from_millisecond(now_ms)
                .map_err(|e| anyhow!("the time of sending: {e}"))?
                .to_string();
            (t.clone(), Value::String(t))
        }
    };
    match &spec.from {
        TimestampFrom::Header(name) => headers.push((name.clone(), text.clone())),
        TimestampFrom::Json(pointer) => {
            set_pointer(payload.json_mut("the timestamp")?, pointer, json)?;
        }
        TimestampFrom::Signature(_) => {}
    }
    Ok(Some(text))
}

/// The encoded MAC written into the carrier: after its prefix, as the `name` item among
/// `items` (with the timestamp field where the signature carries it), in its header or body
/// field.
fn write_carrier(
    signed: &Signed,
    timestamp: Option<&str>,
    encoded: &str,
    payload: &mut Payload,
    headers: &mut Vec<(String, String)>,
) -> anyhow::Result<()> {
    let carrier = &signed.carrier;
    let mut value = carrier.prefix.clone();
    match (&carrier.items, &carrier.pairs, &carrier.name) {
        (Some(items), Some(pairs), Some(name)) => {
            if let Some(TimestampFrom::Signature(field)) =
                signed.timestamp.as_ref().map(|t| &t.from)
            {
                let t = timestamp.unwrap_or_default();
                value.push_str(&format!("{field}{pairs}{t}{items}"));
            }
            value.push_str(&format!("{name}{pairs}{encoded}"));
        }
        _ => value.push_str(encoded),
    }
    match &carrier.location {
        Location::Headers(names) => {
            let name = names
                .first()
                .ok_or_else(|| anyhow!("the scheme names no signature header"))?;
            headers.push((name.clone(), value));
        }
        Location::Json(pointer) => {
            set_pointer(
                payload.json_mut("the signature")?,
                pointer,
                Value::String(value),
            )?;
        }
    }
    Ok(())
}

fn has_header(headers: &[(String, String)], name: &str) -> bool {
    headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
}

/// A secret's text as the key, as the library reads it (`KeyEncoding`).
fn key_bytes(encoding: KeyEncoding, secret: &str) -> anyhow::Result<Vec<u8>> {
    Ok(match encoding {
        KeyEncoding::Raw => secret.as_bytes().to_vec(),
        KeyEncoding::Hex => hex::decode(secret).context("the secret is not hexadecimal")?,
        KeyEncoding::Base64 => B64
            .decode(secret)
            .or_else(|_| URL_SAFE.decode(secret))
            .context("the secret is not base64")?,
        KeyEncoding::Whsec => {
            inbox::whsec::decode(secret).map_err(|e| anyhow!("the Standard Webhooks secret {e}"))?
        }
    })
}

fn mac(algorithm: Algorithm, key: &[u8], pieces: &[Cow<'_, [u8]>]) -> Vec<u8> {
    fn run<M: Mac + hmac::digest::KeyInit>(key: &[u8], pieces: &[Cow<'_, [u8]>]) -> Vec<u8> {
        // HMAC takes a key of any length.
        let mut mac =
            <M as hmac::digest::KeyInit>::new_from_slice(key).expect("HMAC accepts any key length");
        for piece in pieces {
            mac.update(piece);
        }
        mac.finalize().into_bytes().to_vec()
    }
    match algorithm {
        Algorithm::Sha1 => run::<Hmac<sha1::Sha1>>(key, pieces),
        Algorithm::Sha256 => run::<Hmac<sha2::Sha256>>(key, pieces),
        Algorithm::Sha512 => run::<Hmac<sha2::Sha512>>(key, pieces),
    }
}

/// A body field's text as the library reads it: a string unescaped, a number as written.
fn json_text(payload: &Payload, pointer: &str) -> anyhow::Result<String> {
    let Payload::Json(doc) = payload else {
        bail!("a signed field is read from a JSON body, and this body is a form");
    };
    match doc.pointer(pointer) {
        Some(Value::String(text)) => Ok(text.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        _ => bail!("the body has no string or number at {pointer}"),
    }
}

/// Twilio's `{form_sorted}`: each parameter's name then its value, sorted, no separators.
fn form_sorted(payload: &Payload) -> anyhow::Result<Vec<u8>> {
    let Payload::Form(pairs) = payload else {
        bail!("the scheme signs a form, and this body is JSON");
    };
    let mut pairs = pairs.clone();
    pairs.sort();
    Ok(pairs
        .into_iter()
        .flat_map(|(k, v)| [k, v])
        .collect::<String>()
        .into_bytes())
}

/// Sets the value at a JSON pointer, making the objects on the way (a pointer's tokens are
/// object keys here, `~1` and `~0` unescaped).
pub fn set_pointer(doc: &mut Value, pointer: &str, value: Value) -> anyhow::Result<()> {
    let tokens: Vec<String> = pointer
        .strip_prefix('/')
        .ok_or_else(|| anyhow!("JSON pointer {pointer:?} does not start with '/'"))?
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect();
    let mut at = doc;
    for (i, token) in tokens.iter().enumerate() {
        if !at.is_object() {
            *at = Value::Object(Map::new());
        }
        let Value::Object(map) = at else {
            unreachable!("made an object above")
        };
        if i + 1 == tokens.len() {
            map.insert(token.clone(), value);
            return Ok(());
        }
        at = map.entry(token.clone()).or_insert(Value::Null);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use inbox::config::presets;
    use inbox::signature::{HmacSpec, Inbound, Verifier};
    use inbox::SourceSpecs;
    use reqwest::header::{HeaderMap, HeaderName};

    use super::*;

    const SECRET: &str = "It's a Secret to Everybody";
    const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const URL: &str = "https://hooks.example/webhooks/s";
    const NOW_MS: i64 = 1_700_000_000_123;

    fn header_map(headers: &[(String, String)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.insert(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        map
    }

    /// Signs a payload for `scheme` and verifies it with the library, as the receiver would.
    fn verifies(scheme: Scheme, secret: &str, mut payload: Payload) -> Result<(), String> {
        let ctx = Context {
            id: "smoke-1",
            now_ms: NOW_MS,
            public_url: Some(URL),
        };
        let headers = sign(&scheme, secret, ctx, &mut payload).map_err(|e| format!("{e:#}"))?;
        let map = header_map(&headers);
        let body = payload.bytes();
        let secrets = if scheme == Scheme::None {
            Vec::new()
        } else {
            vec![secret.to_owned()]
        };
        let verifier = Verifier::new(scheme, secrets, 300)?;
        let request = Inbound {
            public_url: Some(URL),
            ..Inbound::post(&map, &body)
        };
        verifier
            .verify_request(&request, NOW_MS / 1000)
            .map_err(|e| e.to_string())
    }

    fn json() -> Payload {
        Payload::Json(serde_json::json!({"type": "inbox.smoke", "id": "smoke-1"}))
    }

    #[test]
    fn the_named_schemes_sign_what_the_library_verifies() {
        for scheme in [Scheme::Github, Scheme::Stripe, Scheme::Shopify] {
            assert_eq!(verifies(scheme, SECRET, json()), Ok(()));
        }
        assert_eq!(verifies(Scheme::StandardWebhooks, WHSEC, json()), Ok(()));
        let bare = WHSEC.trim_start_matches("whsec_");
        assert_eq!(verifies(Scheme::StandardWebhooks, bare, json()), Ok(()));
        for (encoding, prefix) in [(Encoding::Hex, ""), (Encoding::Base64, "sha256=")] {
            let spec = HmacSpec {
                header: "X-Signature".into(),
                encoding,
                prefix: prefix.into(),
            };
            assert_eq!(verifies(Scheme::HmacSha256(spec), SECRET, json()), Ok(()));
        }
        assert_eq!(verifies(Scheme::None, "", json()), Ok(()));
    }

    /// Every preset whose family smoke can sign: signed as the preset declares, verified by the
    /// library with the preset's own verifier (the presets cover every family, every
    /// timestamp place and unit, every carrier and every content part).
    #[test]
    fn every_preset_smoke_can_sign_verifies() {
        let mut signed = 0;
        for (name, preset) in presets::all() {
            let mut entry =
                serde_json::json!({"preset": name, "signature": {"secrets": ["env:X"]}});
            for need in &preset.needs {
                entry[need.as_str()] = match need.as_str() {
                    "public_url" => Value::from(URL),
                    _ => Value::from("env:V"),
                };
            }
            let spec = SourceSpecs::parse(&serde_json::json!({ "s": entry }).to_string())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let spec = spec.get("s").unwrap();
            if Signing::of(&spec.scheme) == Signing::ProviderOnly {
                continue;
            }
            let secret = match spec.scheme.family() {
                Family::Hmac { signed, .. } if signed.key_encoding == KeyEncoding::Whsec => WHSEC,
                // Adyen's HMAC key: hex digits.
                Family::Hmac { signed, .. } if signed.key_encoding == KeyEncoding::Hex => {
                    "4c6f6e67206c6976652074686520696e626f782c2073616964207468652074657374"
                }
                Family::Basic => "smoke:It's a Secret to Everybody",
                _ => SECRET,
            };
            let payload = if spec.key.needs_form() {
                Payload::Form(vec![("MessageSid".into(), "SM1".into())])
            } else {
                json()
            };
            assert_eq!(
                verifies(spec.scheme.clone(), secret, payload),
                Ok(()),
                "{name} ({})",
                family_name(&spec.scheme)
            );
            signed += 1;
        }
        assert!(signed >= 45, "{signed} presets signed");
    }

    #[test]
    fn public_key_families_are_the_providers_alone() {
        let specs = SourceSpecs::parse(
            r#"{"d": {"preset": "discord-events", "signature": {"secrets": ["env:X"]}},
                "g": {"preset": "sendgrid", "signature": {"secrets": ["env:X"]}},
                "h": {"preset": "github", "signature": {"secrets": ["env:X"]}}}"#,
        )
        .unwrap();
        let of = |n: &str| Signing::of(&specs.get(n).unwrap().scheme);
        assert_eq!(of("d"), Signing::ProviderOnly);
        assert_eq!(of("g"), Signing::ProviderOnly);
        assert_eq!(of("h"), Signing::Signs);
        let mut payload = json();
        let headers = sign(
            &specs.get("d").unwrap().scheme,
            "00",
            Context {
                id: "i",
                now_ms: 0,
                public_url: None,
            },
            &mut payload,
        )
        .unwrap();
        assert!(headers.is_empty(), "{headers:?}");
    }

    #[test]
    fn a_secret_that_cannot_sign_is_refused() {
        let ctx = Context {
            id: "m",
            now_ms: 0,
            public_url: None,
        };
        let empty = sign(&Scheme::Github, "", ctx, &mut json()).unwrap_err();
        assert!(empty.to_string().contains("empty"), "{empty}");
        let whsec = sign(&Scheme::StandardWebhooks, "whsec_***", ctx, &mut json()).unwrap_err();
        assert!(whsec.to_string().contains("whsec_"), "{whsec}");
        let basic = sign(&Scheme::Basic, "no-colon", ctx, &mut json()).unwrap_err();
        assert!(basic.to_string().contains("user:password"), "{basic}");
    }

    #[test]
    fn pointers_make_their_objects_and_unescape() {
        let mut doc = serde_json::json!({"a": "scalar"});
        set_pointer(&mut doc, "/a/b~1c/d~0e", serde_json::json!(1)).unwrap();
        assert_eq!(doc, serde_json::json!({"a": {"b/c": {"d~e": 1}}}));
        let e = set_pointer(&mut doc, "a", serde_json::json!(1)).unwrap_err();
        assert_eq!(e.to_string(), r#"JSON pointer "a" does not start with '/'"#);
    }
}
