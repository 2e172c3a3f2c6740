//! PayPal's webhook notifications (docs/providers.md, "paypal"): the headers a transmission
//! carries, the string PayPal signs, the hosts its certificate may come from, and the RSA
//! check against the certificate's key (fetched by the receiver, [`crate::key_fetch`]; this
//! module is pure).
//!
//! PayPal's "Integrate webhooks" guide and its SDKs' `WebhookEvent.verify`: the signed string
//! is `<PAYPAL-TRANSMISSION-ID>|<PAYPAL-TRANSMISSION-TIME>|<webhook id>|<CRC32 of the raw
//! body, unsigned decimal>`, the webhook id the one PayPal gave the listener URL when it was
//! subscribed; `PAYPAL-TRANSMISSION-SIG` is the base64 signature, `PAYPAL-AUTH-ALGO` names
//! the algorithm (`SHA256withRSA`, PKCS #1 v1.5), `PAYPAL-CERT-URL` the certificate.

use aws_lc_rs::signature::RSA_PKCS1_2048_8192_SHA256;
use base64::Engine as _;
use http::HeaderMap;

use super::sns::CertKey;
use super::{header, SignatureError};

/// The header naming the transmission (one per HTTP delivery).
pub const TRANSMISSION_ID: &str = "paypal-transmission-id";
/// The header with the transmission's time, RFC 3339.
pub const TRANSMISSION_TIME: &str = "paypal-transmission-time";
/// The header with the base64 signature.
pub const TRANSMISSION_SIG: &str = "paypal-transmission-sig";
/// The header with the signing certificate's URL.
pub const CERT_URL: &str = "paypal-cert-url";
/// The header naming the algorithm.
pub const AUTH_ALGO: &str = "paypal-auth-algo";

/// The hosts a certificate is fetched from: PayPal's REST API hosts, live and sandbox (the
/// `PAYPAL-CERT-URL`s PayPal sends are `https://api.paypal.com/v1/notifications/certs/CERT-…`
/// and `https://api.sandbox.paypal.com/v1/notifications/certs/CERT-…`; `api-m` is the name
/// PayPal's API reference gives the same hosts).
pub const CERT_HOSTS: [&str; 4] = [
    "api.paypal.com",
    "api-m.paypal.com",
    "api.sandbox.paypal.com",
    "api-m.sandbox.paypal.com",
];
/// The path every certificate is under.
pub const CERT_PATH: &str = "/v1/notifications/certs/";
/// The longest webhook id PayPal's API takes (`^[a-zA-Z0-9]+$`, at most 50).
const MAX_WEBHOOK_ID: usize = 50;

fn malformed(why: &str) -> SignatureError {
    SignatureError::Malformed(format!("paypal: {why}"))
}

/// One transmission's signature headers, parsed; nothing is trusted until
/// [`Transmission::verify`] passes.
#[derive(Debug)]
pub struct Transmission {
    id: String,
    time_text: String,
    /// The transmission time, Unix seconds.
    pub time: i64,
    signature: Vec<u8>,
    /// The certificate's URL as sent (check it with [`cert_url`] before any fetch).
    pub cert_url: String,
    crc: u32,
}

impl Transmission {
    /// The headers read (each once, visible ASCII), the algorithm `SHA256withRSA`, the
    /// signature base64, the time RFC 3339; and the CRC32 of `body`.
    pub fn parse(headers: &HeaderMap, body: &[u8]) -> Result<Transmission, SignatureError> {
        let id = header(headers, TRANSMISSION_ID)?.to_owned();
        let time_text = header(headers, TRANSMISSION_TIME)?.to_owned();
        let signature_text = header(headers, TRANSMISSION_SIG)?;
        let cert_url = header(headers, CERT_URL)?.to_owned();
        if header(headers, AUTH_ALGO)? != "SHA256withRSA" {
            return Err(malformed("PAYPAL-AUTH-ALGO is not SHA256withRSA"));
        }
        if id.contains('|') || time_text.contains('|') {
            return Err(malformed("a signed header holds the separator |"));
        }
        let signature = base64::engine::general_purpose::STANDARD
            .decode(signature_text.as_bytes())
            .map_err(|_| malformed("PAYPAL-TRANSMISSION-SIG is not base64"))?;
        let time = time_text
            .parse::<jiff::Timestamp>()
            .map_err(|_| malformed("PAYPAL-TRANSMISSION-TIME is not RFC 3339"))?
            .as_second();
        Ok(Transmission {
            id,
            time_text,
            time,
            signature,
            cert_url,
            crc: crc32(body),
        })
    }

    /// The string PayPal signed for the webhook `webhook_id`.
    pub fn string_to_sign(&self, webhook_id: &str) -> String {
        format!("{}|{}|{}|{}", self.id, self.time_text, webhook_id, self.crc)
    }

    /// Whether the signature verifies under `key` (valid at `now_unix_secs`) for any of
    /// the source's webhook ids.
    pub fn verify(
        &self,
        key: &CertKey,
        webhook_ids: &[String],
        now_unix_secs: i64,
    ) -> Result<(), SignatureError> {
        if !key.valid_at(now_unix_secs) {
            return Err(malformed("the signing certificate is not valid now"));
        }
        let matched = webhook_ids.iter().any(|id| {
            key.verify_rsa(
                &RSA_PKCS1_2048_8192_SHA256,
                self.string_to_sign(id).as_bytes(),
                &self.signature,
            )
        });
        if matched {
            Ok(())
        } else {
            Err(SignatureError::Mismatch)
        }
    }
}

/// `url` if it is `https` on one of [`CERT_HOSTS`], the default port, no user information,
/// query or fragment, and a path under [`CERT_PATH`].
pub fn cert_url(url: &str) -> Result<reqwest::Url, SignatureError> {
    let refused = || {
        malformed(
            "a certificate URL outside https://api(-m)(.sandbox).paypal.com/v1/notifications/certs/",
        )
    };
    let parsed = reqwest::Url::parse(url).map_err(|_| refused())?;
    let ok = parsed.scheme() == "https"
        && parsed.host_str().is_some_and(|h| CERT_HOSTS.contains(&h))
        && parsed.port().is_none()
        && parsed.username().is_empty()
        && parsed.password().is_none()
        && parsed.query().is_none()
        && parsed.fragment().is_none()
        && parsed
            .path()
            .strip_prefix(CERT_PATH)
            .is_some_and(|rest| !rest.is_empty() && !rest.contains('/'));
    if ok {
        Ok(parsed)
    } else {
        Err(refused())
    }
}

/// Whether `id` is a PayPal webhook id: letters and digits, at most 50.
pub fn is_webhook_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_WEBHOOK_ID && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// CRC-32 (ISO-HDLC: reflected, polynomial 0xEDB88320, the one zlib's `crc32` computes).
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFF_u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_is_zlibs() {
        // zlib.crc32(b"123456789") == 0xCBF43926, the CRC-32 check value.
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
        assert_eq!(
            crc32(b"The quick brown fox jumps over the lazy dog"),
            0x414F_A339
        );
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, value.parse().expect("a header value"));
        }
        map
    }

    const GOOD: [(&str, &str); 5] = [
        (TRANSMISSION_ID, "69cd13f0-d67a-11e5-baa3-778b53f4ae55"),
        (TRANSMISSION_TIME, "2016-02-18T20:01:35Z"),
        (TRANSMISSION_SIG, "AAAA"),
        (
            CERT_URL,
            "https://api.paypal.com/v1/notifications/certs/CERT-360caa42-fca2a594-1d93a270",
        ),
        (AUTH_ALGO, "SHA256withRSA"),
    ];

    #[test]
    fn the_string_to_sign_is_id_time_webhook_id_and_the_bodys_crc32() {
        let t = Transmission::parse(&headers(&GOOD), b"123456789").unwrap();
        assert_eq!(
            t.string_to_sign("1JE4291016473214C"),
            "69cd13f0-d67a-11e5-baa3-778b53f4ae55|2016-02-18T20:01:35Z|1JE4291016473214C|3421780262"
        );
        assert_eq!(t.time, 1_455_825_695);
    }

    #[test]
    fn a_missing_header_another_algorithm_or_a_bad_time_is_refused() {
        let without: Vec<_> = GOOD
            .iter()
            .copied()
            .filter(|(n, _)| *n != CERT_URL)
            .collect();
        assert_eq!(
            Transmission::parse(&headers(&without), b"{}").map(|_| ()),
            Err(SignatureError::MissingHeader(CERT_URL.to_owned()))
        );
        let mut sha1 = GOOD;
        sha1[4].1 = "SHA1withRSA";
        assert_eq!(
            Transmission::parse(&headers(&sha1), b"{}").map(|_| ()),
            Err(malformed("PAYPAL-AUTH-ALGO is not SHA256withRSA"))
        );
        let mut late = GOOD;
        late[1].1 = "yesterday";
        assert_eq!(
            Transmission::parse(&headers(&late), b"{}").map(|_| ()),
            Err(malformed("PAYPAL-TRANSMISSION-TIME is not RFC 3339"))
        );
        let mut piped = GOOD;
        piped[0].1 = "a|b";
        assert_eq!(
            Transmission::parse(&headers(&piped), b"{}").map(|_| ()),
            Err(malformed("a signed header holds the separator |"))
        );
        let mut twice = headers(&GOOD);
        twice.append(TRANSMISSION_ID, "other".parse().unwrap());
        assert!(matches!(
            Transmission::parse(&twice, b"{}"),
            Err(SignatureError::Malformed(m)) if m.contains("more than once")
        ));
    }

    #[test]
    fn a_certificate_url_is_https_on_a_paypal_api_host_under_the_certs_path() {
        for good in [
            "https://api.paypal.com/v1/notifications/certs/CERT-360caa42-fca2a594-1d93a270",
            "https://api.sandbox.paypal.com/v1/notifications/certs/CERT-360caa42-fca2a594-a5cafa77",
            "https://api-m.paypal.com/v1/notifications/certs/CERT-1",
            "https://api-m.sandbox.paypal.com/v1/notifications/certs/CERT-1",
        ] {
            assert!(cert_url(good).is_ok(), "{good}");
        }
        for bad in [
            "http://api.paypal.com/v1/notifications/certs/CERT-1",
            "https://api.paypal.com:8443/v1/notifications/certs/CERT-1",
            "https://user@api.paypal.com/v1/notifications/certs/CERT-1",
            "https://api.paypal.com.evil.example/v1/notifications/certs/CERT-1",
            "https://evil.example/v1/notifications/certs/CERT-1",
            "https://www.paypal.com/v1/notifications/certs/CERT-1",
            "https://api.paypal.com/v1/notifications/certs/",
            "https://api.paypal.com/v1/notifications/certs/a/b",
            "https://api.paypal.com/v1/other/CERT-1",
            "https://api.paypal.com/v1/notifications/certs/CERT-1?x=y",
            "not a url",
        ] {
            assert!(
                matches!(cert_url(bad), Err(SignatureError::Malformed(m)) if m.starts_with("paypal: a certificate URL")),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_secrets_are_webhook_ids_and_the_verifier_never_accepts_by_itself() {
        use crate::signature::{check_secret_length, Inbound, Scheme, Verifier};
        assert_eq!(
            check_secret_length(&Scheme::Paypal, 1, "1JE4291016473214C"),
            Ok(())
        );
        let err = check_secret_length(&Scheme::Paypal, 2, "WH-not-a-webhook-id").unwrap_err();
        assert!(
            err.starts_with("secret #2 is not a PayPal webhook id"),
            "{err}"
        );
        let ids = vec![
            "1JE4291016473214C".to_owned(),
            "8PT597110X687430L".to_owned(),
        ];
        let verifier = Verifier::new(Scheme::Paypal, ids.clone(), 3600).unwrap();
        assert_eq!(verifier.webhook_ids(), ids.as_slice());
        // Its certificate is fetched by the receiver: the synchronous check always refuses.
        let headers = headers(&GOOD);
        assert!(matches!(
            verifier.verify_request(&Inbound::post(&headers, b"{}"), 0),
            Err(SignatureError::Malformed(m)) if m.contains("fetched certificate")
        ));
    }

    #[test]
    fn webhook_ids_are_letters_and_digits() {
        assert!(is_webhook_id("1JE4291016473214C"));
        for bad in ["", "WH-1", "a b", &"A".repeat(51)] {
            assert!(!is_webhook_id(bad), "{bad}");
        }
    }
}
