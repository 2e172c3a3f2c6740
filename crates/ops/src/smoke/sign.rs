//! A test event signed as its sender would sign it, for each scheme the library verifies
//! ([`inbox::signature`]): the headers to send with the body. Every scheme is HMAC-SHA256; the
//! key is the secret's bytes, except Standard Webhooks' (`whsec_` and base64, prefix optional).

use anyhow::{anyhow, bail};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use inbox::signature::{Encoding, Scheme};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// The signature headers for `body` sent as delivery `id` at `now_s` (epoch seconds), signed
/// with `secret` as `scheme` prescribes. `none` signs nothing.
pub fn signature_headers(
    scheme: &Scheme,
    secret: &str,
    id: &str,
    now_s: i64,
    body: &[u8],
) -> anyhow::Result<Vec<(String, String)>> {
    if secret.is_empty() && *scheme != Scheme::None {
        bail!("the secret is empty");
    }
    let mac = |key: &[u8], parts: &[&[u8]]| -> Vec<u8> {
        // HMAC takes a key of any length.
        let mut mac = HmacSha256::new_from_slice(key).expect("HMAC accepts any key length");
        for part in parts {
            mac.update(part);
        }
        mac.finalize().into_bytes().to_vec()
    };
    let t = now_s.to_string();
    let headers = match scheme {
        Scheme::StandardWebhooks => {
            let key = inbox::whsec::decode(secret)
                .map_err(|e| anyhow!("the Standard Webhooks secret {e}"))?;
            let signature = mac(&key, &[id.as_bytes(), b".", t.as_bytes(), b".", body]);
            vec![
                ("webhook-id".to_owned(), id.to_owned()),
                ("webhook-timestamp".to_owned(), t),
                (
                    "webhook-signature".to_owned(),
                    format!("v1,{}", B64.encode(signature)),
                ),
            ]
        }
        Scheme::Stripe => {
            let signature = mac(secret.as_bytes(), &[t.as_bytes(), b".", body]);
            vec![(
                "Stripe-Signature".to_owned(),
                format!("t={t},v1={}", hex::encode(signature)),
            )]
        }
        Scheme::Github => vec![(
            "X-Hub-Signature-256".to_owned(),
            format!("sha256={}", hex::encode(mac(secret.as_bytes(), &[body]))),
        )],
        Scheme::Shopify => vec![(
            "X-Shopify-Hmac-Sha256".to_owned(),
            B64.encode(mac(secret.as_bytes(), &[body])),
        )],
        Scheme::HmacSha256(spec) => {
            let signature = mac(secret.as_bytes(), &[body]);
            let encoded = match spec.encoding {
                Encoding::Hex => hex::encode(signature),
                Encoding::Base64 => B64.encode(signature),
                Encoding::Base64Url => {
                    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(signature)
                }
            };
            vec![(spec.header.clone(), format!("{}{encoded}", spec.prefix))]
        }
        Scheme::None => Vec::new(),
        other => bail!(
            "smoke signs the stripe, github, shopify, standard-webhooks and hmac-sha256 schemes; this source's is `{}`",
            other.name()
        ),
    };
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use inbox::signature::{HmacSpec, Verifier};
    use reqwest::header::{HeaderMap, HeaderName};

    use super::*;

    const SECRET: &str = "It's a Secret to Everybody";
    const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    fn verifies(scheme: Scheme, secret: &str) -> bool {
        let body = br#"{"id":"evt_1"}"#;
        let now = 1_700_000_000;
        let headers = signature_headers(&scheme, secret, "msg_1", now, body).unwrap();
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.insert(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        let secrets = if scheme == Scheme::None {
            Vec::new()
        } else {
            vec![secret.to_owned()]
        };
        let verifier = Verifier::new(scheme, secrets, 300).unwrap();
        verifier.verify(&map, body, now).is_ok()
    }

    #[test]
    fn every_scheme_signs_what_the_library_verifies() {
        assert!(verifies(Scheme::Github, SECRET));
        assert!(verifies(Scheme::Stripe, SECRET));
        assert!(verifies(Scheme::Shopify, SECRET));
        assert!(verifies(Scheme::StandardWebhooks, WHSEC));
        assert!(verifies(
            Scheme::StandardWebhooks,
            WHSEC.trim_start_matches("whsec_")
        ));
        for (encoding, prefix) in [(Encoding::Hex, ""), (Encoding::Base64, "sha256=")] {
            assert!(verifies(
                Scheme::HmacSha256(HmacSpec {
                    header: "X-Signature".into(),
                    encoding,
                    prefix: prefix.into(),
                }),
                SECRET
            ));
        }
        assert!(verifies(Scheme::None, ""));
    }

    #[test]
    fn a_secret_that_cannot_sign_is_refused() {
        let empty = signature_headers(&Scheme::Github, "", "m", 0, b"").unwrap_err();
        assert!(empty.to_string().contains("empty"), "{empty}");
        let whsec =
            signature_headers(&Scheme::StandardWebhooks, "whsec_***", "m", 0, b"").unwrap_err();
        assert!(whsec.to_string().contains("whsec_"), "{whsec}");
    }
}
