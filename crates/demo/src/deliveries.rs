//! What the demo's senders deliver: signed events of the demo sources (each signed by its
//! sender in [`devstack::senders`]), bad signatures, malformed bodies, and the receiver events of
//! `events/` turned back into the HTTP requests a sender would make.

use std::sync::Arc;

use anyhow::Context as _;
use aws_lambda_events::apigw::ApiGatewayV2httpRequest;
use base64::Engine as _;
use serde_json::Value;

use devstack::senders::{GitHub, HmacHex, Sender, Shopify, Stripe};
use devstack::testkit::{self, TEST_SECRET};

/// How a delivery is signed.
#[derive(Clone, Debug)]
enum Signing {
    /// By its sender at each attempt, as delivery `id` (a retry of a timestamped scheme
    /// carries a fresh timestamp, as real senders' retries do).
    Sender { sender: Arc<dyn Sender>, id: String },
    /// These headers, every attempt (a sample event, or a signature made for another body).
    Fixed(Vec<(String, String)>),
}

/// One webhook a sender delivers, retrying as real senders do.
#[derive(Clone, Debug)]
pub struct Delivery {
    pub source: String,
    pub method: reqwest::Method,
    pub body: Vec<u8>,
    signing: Signing,
}

impl Delivery {
    /// The headers of an attempt made now.
    pub fn headers(&self) -> Vec<(String, String)> {
        match &self.signing {
            Signing::Fixed(h) => h.clone(),
            Signing::Sender { sender, id } => sender
                .headers(id, testkit::now_ms() / 1000, &self.body)
                .into_iter()
                .map(|(n, v)| (n.to_owned(), v))
                .collect(),
        }
    }

    fn post(source: &str, body: Vec<u8>, signing: Signing) -> Delivery {
        Delivery {
            source: source.to_owned(),
            method: reqwest::Method::POST,
            body,
            signing,
        }
    }
}

/// The sender of a demo source (secrets of [`testkit::TEST_SOURCES`]).
fn sender_of(source: &str) -> Arc<dyn Sender> {
    match source {
        "github" => Arc::new(GitHub::new(TEST_SECRET)),
        "stripe" => Arc::new(Stripe::new(TEST_SECRET)),
        "acme" => Arc::new(testkit::standard_webhooks()),
        "shop" => Arc::new(Shopify::new(TEST_SECRET)),
        _ => Arc::new(HmacHex::new(TEST_SECRET, "x-signature")),
    }
}

/// A signed, valid event of one of the demo sources; its key is [`key_of`]`(source, id)`.
pub fn valid(source: &str, id: &str, n: usize) -> Delivery {
    let body = match source {
        "github" => format!(r#"{{"action":"opened","issue":{{"number":{n}}}}}"#),
        "stripe" => format!(
            r#"{{"id":"{id}","object":"event","type":"invoice.paid","data":{{"object":{{"amount":{n}}}}}}}"#
        ),
        "acme" => format!(
            r#"{{"type":"invoice.paid","customer_id":"cus_{}","n":{n}}}"#,
            n % 5
        ),
        "shop" => format!(r#"{{"id":{n},"total_price":"{n}.00"}}"#),
        _ => format!(r#"{{"type":"order.created","order":{{"id":"{id}","n":{n}}}}}"#),
    };
    let signing = Signing::Sender {
        sender: sender_of(source),
        id: id.to_owned(),
    };
    Delivery::post(source, body.into_bytes(), signing)
}

/// A delivery whose body was changed after signing (or, for Stripe, signed long ago).
pub fn bad_signature(i: usize) -> Delivery {
    let source = ["github", "shop", "orders", "stripe"][i % 4];
    let mut d = valid(source, &format!("bad-signature-{i}"), i);
    if source == "stripe" {
        let an_hour_ago = testkit::now_ms() / 1000 - 3600;
        let signature = Stripe::new(TEST_SECRET).signature(an_hour_ago, &d.body);
        d.signing = Signing::Fixed(vec![("stripe-signature".to_owned(), signature)]);
    } else {
        d.signing = Signing::Fixed(d.headers());
        d.body.extend_from_slice(b" ");
    }
    d
}

/// A correctly signed body that is not JSON, or lacks its key.
pub fn malformed(i: usize) -> Delivery {
    let body = if i.is_multiple_of(2) {
        b"type=order.created&order=1".to_vec()
    } else {
        br#"{"type":"order.created","order":{}}"#.to_vec()
    };
    let signature = HmacHex::new(TEST_SECRET, "x-signature").signature(&body);
    Delivery::post(
        "orders",
        body,
        Signing::Fixed(vec![("x-signature".to_owned(), signature)]),
    )
}

/// The key [`valid`]`(source, id, _)` is accepted under: `<source>:<id>` (orders:
/// `orders:order.created|<id>`).
pub fn key_of(source: &str, id: &str) -> String {
    match source {
        "orders" => format!("orders:order.created|{id}"),
        _ => format!("{source}:{id}"),
    }
}

/// An API Gateway v2 event from `events/` as the HTTP request a sender would make.
pub fn from_event(event: &Value) -> anyhow::Result<Delivery> {
    let request: ApiGatewayV2httpRequest =
        serde_json::from_value(event.clone()).context("an API Gateway v2 event")?;
    let source = request
        .path_parameters
        .get("source")
        .context("event without pathParameters.source")?;
    let body = request.body.unwrap_or_default();
    let body = if request.is_base64_encoded {
        base64::engine::general_purpose::STANDARD
            .decode(body)
            .context("base64 body")?
    } else {
        body.into_bytes()
    };
    let mut headers = Vec::new();
    for (name, value) in &request.headers {
        // Hop-by-hop and API Gateway's own headers are set by the HTTP client and the emulator.
        if matches!(
            name.as_str(),
            "content-length" | "host" | "x-forwarded-for" | "x-forwarded-proto"
        ) {
            continue;
        }
        let value = value.to_str().unwrap_or_default().to_owned();
        headers.push((name.as_str().to_owned(), value));
    }
    Ok(Delivery {
        source: source.clone(),
        method: request.request_context.http.method,
        body,
        signing: Signing::Fixed(headers),
    })
}

/// A fixed shuffle (no randomness needed, and the same run every time).
pub fn shuffle<T>(items: &mut [T]) {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in (1..items.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let j = usize::try_from(state % (i as u64 + 1)).unwrap_or(0);
        items.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn bad_signatures_sign_another_body_than_the_one_sent() {
        for i in 0..3 {
            let bad = bad_signature(i);
            let honest = valid(&bad.source, &format!("bad-signature-{i}"), i);
            assert_ne!(bad.body, honest.body);
            assert_eq!(bad.headers(), honest.headers(), "{}", bad.source);
        }
        let stripe = bad_signature(3).headers();
        let t: i64 = header(&stripe, "stripe-signature")
            .and_then(|s| s.strip_prefix("t="))
            .and_then(|s| s.split(',').next())
            .and_then(|t| t.parse().ok())
            .expect("t=");
        assert!(t < testkit::now_ms() / 1000 - 3000);
    }

    #[test]
    fn sample_events_come_back_as_their_requests() {
        let samples = crate::events::generate(testkit::now_ms() / 1000);
        let get = samples
            .iter()
            .find(|s| s.file == "wrong-method.json")
            .expect("wrong-method.json");
        let d = from_event(&get.event).expect("a request");
        assert_eq!(d.method, reqwest::Method::GET);
        assert_eq!(d.source, "github");
        assert!(header(&d.headers(), "x-hub-signature-256").is_some());
        assert!(header(&d.headers(), "host").is_none());
        let b64 = samples
            .iter()
            .find(|s| s.file == "github-base64.json")
            .expect("github-base64.json");
        assert!(from_event(&b64.event)
            .expect("a request")
            .body
            .starts_with(b"{\"ref\""));
    }
}
