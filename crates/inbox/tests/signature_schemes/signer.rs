//! A tiny independent signer, used to produce requests for the verifier, and the header
//! helpers the tests build and mangle requests with.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use http::{HeaderMap, HeaderName, HeaderValue};
use inbox::signature::{Encoding, Scheme};
use sha2::Sha256;

use crate::fixtures::ID;

pub(crate) fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().to_vec()
}

pub(crate) fn standard_webhooks_key(secret: &str) -> Vec<u8> {
    B64.decode(secret.strip_prefix("whsec_").unwrap_or(secret))
        .expect("test secrets are canonical base64")
}

pub(crate) fn encode(encoding: Encoding, mac: &[u8]) -> String {
    match encoding {
        Encoding::Hex => hex::encode(mac),
        Encoding::Base64 => B64.encode(mac),
        Encoding::Base64Url => base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac),
    }
}

pub(crate) fn insert(headers: &mut HeaderMap, name: &str, value: &str) {
    headers.insert(
        HeaderName::from_bytes(name.as_bytes()).expect("valid header name"),
        HeaderValue::from_str(value).expect("valid header value"),
    );
}

/// Headers for `body` signed with `secret`; `mangle` rewrites the MAC bytes before encoding.
pub(crate) fn sign_with(
    scheme: &Scheme,
    secret: &str,
    timestamp: i64,
    body: &[u8],
    mangle: &dyn Fn(Vec<u8>) -> Vec<u8>,
) -> HeaderMap {
    let mut headers = HeaderMap::new();
    let ts = timestamp.to_string();
    match scheme {
        Scheme::StandardWebhooks => {
            let mac = hmac_sha256(
                &standard_webhooks_key(secret),
                &[ID.as_bytes(), b".", ts.as_bytes(), b".", body],
            );
            insert(&mut headers, "webhook-id", ID);
            insert(&mut headers, "webhook-timestamp", &ts);
            let signature = format!("v1,{}", B64.encode(mangle(mac)));
            insert(&mut headers, "webhook-signature", &signature);
        }
        Scheme::Stripe => {
            let mac = hmac_sha256(secret.as_bytes(), &[ts.as_bytes(), b".", body]);
            let signature = format!("t={ts},v1={}", hex::encode(mangle(mac)));
            insert(&mut headers, "Stripe-Signature", &signature);
        }
        Scheme::Github => {
            let mac = mangle(hmac_sha256(secret.as_bytes(), &[body]));
            let signature = format!("sha256={}", hex::encode(mac));
            insert(&mut headers, "X-Hub-Signature-256", &signature);
        }
        Scheme::Shopify => {
            let mac = mangle(hmac_sha256(secret.as_bytes(), &[body]));
            insert(&mut headers, "X-Shopify-Hmac-Sha256", &B64.encode(mac));
        }
        Scheme::HmacSha256(spec) => {
            let mac = mangle(hmac_sha256(secret.as_bytes(), &[body]));
            let signature = format!("{}{}", spec.prefix, encode(spec.encoding, &mac));
            insert(&mut headers, &spec.header, &signature);
        }
        Scheme::None => {}
        other => panic!(
            "the independent signer covers the named schemes; {} is proven by tests/providers",
            other.name()
        ),
    }
    headers
}

pub(crate) fn sign(scheme: &Scheme, secret: &str, timestamp: i64, body: &[u8]) -> HeaderMap {
    sign_with(scheme, secret, timestamp, body, &|mac| mac)
}

/// The header holding the MAC itself (the last one the scheme reads).
pub(crate) fn signature_header(scheme: &Scheme) -> String {
    scheme.header_names().pop().expect("scheme reads headers")
}

pub(crate) fn header_text(headers: &HeaderMap, name: &str) -> String {
    headers[name].to_str().expect("ascii").to_owned()
}

pub(crate) fn with_header(headers: &HeaderMap, name: &str, value: &[u8]) -> HeaderMap {
    let mut headers = headers.clone();
    headers.insert(
        HeaderName::from_bytes(name.as_bytes()).expect("valid header name"),
        HeaderValue::from_bytes(value).expect("valid header value bytes"),
    );
    headers
}
