//! How each webhook sender signs a delivery: one type per sender, each giving the headers it
//! sends with a body.
//!
//! Every sender implements [`Sender::headers`]`(id, t, body)`: `id` is the delivery's id as the
//! sender names it (GitHub's `X-GitHub-Delivery`, Standard Webhooks' `webhook-id`, Shopify's
//! `X-Shopify-Event-Id`; Stripe and the generic HMAC carry theirs in the body and ignore it),
//! `t` the moment of sending in epoch seconds (signed by Stripe and Standard Webhooks, ignored
//! by the others). Each type also has `signature`, the signature header's value alone, for
//! requests that set their other headers themselves (tampered, keyless or sample events).
//!
//! The demo, the events generator, the bench driver and the test kit all sign through here.

use base64::Engine as _;
use hmac::{Hmac as HmacImpl, Mac};
use sha2::Sha256;

/// Headers to send, lower-case names as HTTP/2 and API Gateway carry them.
pub type Headers = Vec<(&'static str, String)>;

/// A webhook sender: the headers it sends with `body`, delivery `id`, at `t` (epoch seconds).
pub trait Sender: std::fmt::Debug + Send + Sync {
    fn headers(&self, id: &str, t: i64, body: &[u8]) -> Headers;
}

/// A Standard Webhooks secret that is not `whsec_` followed by base64 (inbox's one reader).
pub use inbox::whsec::WhsecError;

/// HMAC-SHA256 of the concatenation of `parts`.
pub fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut mac = HmacImpl::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    for p in parts {
        mac.update(p);
    }
    mac.finalize().into_bytes().into()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// GitHub: `X-Hub-Signature-256: sha256=<hex HMAC of the body>`, the delivery id in
/// `X-GitHub-Delivery`, the event name in `X-GitHub-Event`.
#[derive(Clone, Debug)]
pub struct GitHub {
    secret: Vec<u8>,
    /// `X-GitHub-Event` (`push` unless changed).
    pub event: String,
}

impl GitHub {
    pub fn new(secret: &str) -> GitHub {
        GitHub {
            secret: secret.as_bytes().to_vec(),
            event: "push".to_owned(),
        }
    }

    /// `X-Hub-Signature-256` of a body.
    pub fn signature(&self, body: &[u8]) -> String {
        format!("sha256={}", hex::encode(hmac_sha256(&self.secret, &[body])))
    }
}

impl Sender for GitHub {
    fn headers(&self, id: &str, _t: i64, body: &[u8]) -> Headers {
        vec![
            ("x-github-delivery", id.to_owned()),
            ("x-github-event", self.event.clone()),
            ("x-hub-signature-256", self.signature(body)),
            ("content-type", "application/json".to_owned()),
        ]
    }
}

/// Stripe: `Stripe-Signature: t=<t>,v1=<hex HMAC of "t.body">`; the event id is in the body.
#[derive(Clone, Debug)]
pub struct Stripe {
    secret: Vec<u8>,
}

impl Stripe {
    pub fn new(secret: &str) -> Stripe {
        Stripe {
            secret: secret.as_bytes().to_vec(),
        }
    }

    /// `Stripe-Signature` of a body signed at `t`.
    pub fn signature(&self, t: i64, body: &[u8]) -> String {
        let ts = t.to_string();
        let mac = hmac_sha256(&self.secret, &[ts.as_bytes(), b".", body]);
        format!("t={ts},v1={}", hex::encode(mac))
    }
}

impl Sender for Stripe {
    fn headers(&self, _id: &str, t: i64, body: &[u8]) -> Headers {
        vec![
            ("stripe-signature", self.signature(t, body)),
            ("content-type", "application/json".to_owned()),
        ]
    }
}

/// Standard Webhooks (Svix and others): `webhook-id`, `webhook-timestamp` and
/// `webhook-signature: v1,<base64 HMAC of "id.t.body">`, keyed with the bytes of a `whsec_`
/// secret.
#[derive(Clone, Debug)]
pub struct StandardWebhooks {
    key: Vec<u8>,
}

impl StandardWebhooks {
    /// From a `whsec_…` secret (the prefix is optional, as the libraries accept it).
    pub fn new(whsec: &str) -> Result<StandardWebhooks, WhsecError> {
        let key = inbox::whsec::decode(whsec)?;
        Ok(StandardWebhooks { key })
    }

    /// `webhook-signature` of a body with id `id`, signed at `t`.
    pub fn signature(&self, id: &str, t: i64, body: &[u8]) -> String {
        let ts = t.to_string();
        let mac = hmac_sha256(&self.key, &[id.as_bytes(), b".", ts.as_bytes(), b".", body]);
        format!("v1,{}", b64(&mac))
    }
}

impl Sender for StandardWebhooks {
    fn headers(&self, id: &str, t: i64, body: &[u8]) -> Headers {
        vec![
            ("webhook-id", id.to_owned()),
            ("webhook-timestamp", t.to_string()),
            ("webhook-signature", self.signature(id, t, body)),
            ("content-type", "application/json".to_owned()),
        ]
    }
}

/// Shopify: `X-Shopify-Hmac-Sha256: <base64 HMAC of the body>`, the event id in
/// `X-Shopify-Event-Id` (the same for every delivery of one event), the topic in
/// `X-Shopify-Topic`.
#[derive(Clone, Debug)]
pub struct Shopify {
    secret: Vec<u8>,
    /// `X-Shopify-Topic` (`orders/paid` unless changed).
    pub topic: String,
}

impl Shopify {
    pub fn new(secret: &str) -> Shopify {
        Shopify {
            secret: secret.as_bytes().to_vec(),
            topic: "orders/paid".to_owned(),
        }
    }

    /// `X-Shopify-Hmac-Sha256` of a body.
    pub fn signature(&self, body: &[u8]) -> String {
        b64(&hmac_sha256(&self.secret, &[body]))
    }
}

impl Sender for Shopify {
    fn headers(&self, id: &str, _t: i64, body: &[u8]) -> Headers {
        vec![
            ("x-shopify-hmac-sha256", self.signature(body)),
            ("x-shopify-event-id", id.to_owned()),
            ("x-shopify-topic", self.topic.clone()),
            ("content-type", "application/json".to_owned()),
        ]
    }
}

/// A generic sender: the hex HMAC-SHA256 of the body in one header of its choosing (the
/// `hmac-sha256` scheme with `encoding: hex`); the event id is in the body.
#[derive(Clone, Debug)]
pub struct HmacHex {
    secret: Vec<u8>,
    /// The signature header (lower case).
    pub header: &'static str,
}

impl HmacHex {
    pub fn new(secret: &str, header: &'static str) -> HmacHex {
        HmacHex {
            secret: secret.as_bytes().to_vec(),
            header,
        }
    }

    /// The hex HMAC of a body.
    pub fn signature(&self, body: &[u8]) -> String {
        hex::encode(hmac_sha256(&self.secret, &[body]))
    }
}

impl Sender for HmacHex {
    fn headers(&self, _id: &str, _t: i64, body: &[u8]) -> Headers {
        vec![
            (self.header, self.signature(body)),
            ("content-type", "application/json".to_owned()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get<'a>(headers: &'a Headers, name: &str) -> Option<&'a str> {
        headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    // Published examples, so the helpers sign exactly as the senders do.

    #[test]
    fn github_matches_its_documented_example() {
        // docs.github.com, "Validating webhook deliveries".
        let gh = GitHub::new("It's a Secret to Everybody");
        assert_eq!(
            gh.signature(b"Hello, World!"),
            "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
        );
        let h = gh.headers("d-1", 0, b"Hello, World!");
        assert_eq!(get(&h, "x-github-delivery"), Some("d-1"));
        assert_eq!(get(&h, "x-github-event"), Some("push"));
    }

    #[test]
    fn standard_webhooks_matches_the_reference_vector() {
        // The reference libraries' test vector.
        let sw = StandardWebhooks::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").expect("base64");
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            sw.signature("msg_p5jXN8AQM9LWM0D4loKWxJek", 1_614_265_330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
        let h = sw.headers("msg_p5jXN8AQM9LWM0D4loKWxJek", 1_614_265_330, body);
        assert_eq!(get(&h, "webhook-timestamp"), Some("1614265330"));
        assert!(matches!(
            StandardWebhooks::new("whsec_***"),
            Err(inbox::whsec::WhsecError::NotBase64AfterPrefix)
        ));
    }

    #[test]
    fn stripe_signs_the_timestamp_and_the_body() {
        let st = Stripe::new("whsec_test");
        let sig = st.signature(1_700_000_000, b"{}");
        let mac = hex::encode(hmac_sha256(b"whsec_test", &[b"1700000000.{}"]));
        assert_eq!(sig, format!("t=1700000000,v1={mac}"));
    }

    #[test]
    fn shopify_is_base64_and_the_generic_one_hex_of_the_same_mac() {
        let mac = hmac_sha256(b"s", &[b"body"]);
        assert_eq!(Shopify::new("s").signature(b"body"), b64(&mac));
        let generic = HmacHex::new("s", "x-signature");
        assert_eq!(generic.signature(b"body"), hex::encode(mac));
        assert_eq!(
            get(&generic.headers("", 0, b"body"), "x-signature"),
            Some(hex::encode(mac).as_str())
        );
    }
}
