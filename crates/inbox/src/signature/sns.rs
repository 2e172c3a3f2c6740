//! AWS SNS's messages to an HTTP(S) subscription (docs/providers.md, "aws-sns"): the JSON
//! document, the string it signs, the hosts its signing certificate and its `SubscribeURL` may
//! come from, and the RSA check against the certificate's key.
//!
//! AWS's "Verifying the signatures of Amazon SNS messages": the string to sign is each field's
//! name and value, each followed by a newline, in this order: `Message`, `MessageId`, `Subject`
//! (if present), `Timestamp`, `TopicArn`, `Type` for a `Notification`; `Message`, `MessageId`,
//! `SubscribeURL`, `Timestamp`, `Token`, `TopicArn`, `Type` for the two confirmations.
//! `SignatureVersion` 1 is SHA1withRSA, 2 SHA256withRSA (PKCS #1 v1.5), the `Signature` base64.
//! The certificate is fetched over https from `SigningCertURL`, which must name an SNS host;
//! fetching it is the receiver's ([`crate::key_fetch`]), this module is pure.

use aws_lc_rs::signature::{
    UnparsedPublicKey, RSA_PKCS1_2048_8192_SHA1_FOR_LEGACY_USE_ONLY, RSA_PKCS1_2048_8192_SHA256,
};
use base64::Engine as _;
use serde::Deserialize;
use x509_cert::der::{Decode as _, DecodePem as _};

use super::SignatureError;

/// What an SNS message is, by its signed `Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Notification,
    SubscriptionConfirmation,
    UnsubscribeConfirmation,
}

/// The signature's hash, by `SignatureVersion`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// `1`: SHA1withRSA.
    V1,
    /// `2`: SHA256withRSA.
    V2,
}

/// The fields of an SNS message this receiver reads. A field twice is refused (serde), so
/// what is verified is what is keyed.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Raw {
    #[serde(rename = "Type")]
    kind: String,
    message_id: String,
    topic_arn: String,
    message: String,
    timestamp: String,
    signature_version: String,
    signature: String,
    #[serde(rename = "SigningCertURL")]
    signing_cert_url: String,
    #[serde(default)]
    subject: Option<String>,
    #[serde(default, rename = "SubscribeURL")]
    subscribe_url: Option<String>,
    #[serde(default)]
    token: Option<String>,
}

/// An SNS message, parsed; nothing about it is trusted until [`Message::verify`] passes.
#[derive(Debug)]
pub struct Message {
    pub kind: Kind,
    pub version: Version,
    pub topic_arn: String,
    pub signing_cert_url: String,
    /// The confirmations' URL (the one to visit to confirm a subscription).
    pub subscribe_url: Option<String>,
    /// The signed `Timestamp`, Unix seconds.
    pub timestamp: i64,
    signature: Vec<u8>,
    string_to_sign: Vec<u8>,
}

fn malformed(why: &str) -> SignatureError {
    SignatureError::Malformed(format!("aws-sns: {why}"))
}

impl Message {
    /// Parses `body` as an SNS message: every field its type signs present, the signature
    /// base64, the version 1 or 2, the timestamp RFC 3339.
    pub fn parse(body: &[u8]) -> Result<Message, SignatureError> {
        let raw: Raw = serde_json::from_slice(body)
            .map_err(|_| malformed("the body is not an SNS message"))?;
        let kind = match raw.kind.as_str() {
            "Notification" => Kind::Notification,
            "SubscriptionConfirmation" => Kind::SubscriptionConfirmation,
            "UnsubscribeConfirmation" => Kind::UnsubscribeConfirmation,
            _ => return Err(malformed("unknown Type")),
        };
        let version = match raw.signature_version.as_str() {
            "1" => Version::V1,
            "2" => Version::V2,
            _ => return Err(malformed("SignatureVersion is neither 1 nor 2")),
        };
        let signature = base64::engine::general_purpose::STANDARD
            .decode(raw.signature.as_bytes())
            .map_err(|_| malformed("Signature is not base64"))?;
        let timestamp = raw
            .timestamp
            .parse::<jiff::Timestamp>()
            .map_err(|_| malformed("Timestamp is not RFC 3339"))?
            .as_second();
        let mut text = String::new();
        let mut field = |name: &str, value: &str| {
            text.push_str(name);
            text.push('\n');
            text.push_str(value);
            text.push('\n');
        };
        field("Message", &raw.message);
        field("MessageId", &raw.message_id);
        match kind {
            Kind::Notification => {
                if let Some(subject) = &raw.subject {
                    field("Subject", subject);
                }
            }
            Kind::SubscriptionConfirmation | Kind::UnsubscribeConfirmation => {
                let url = raw
                    .subscribe_url
                    .as_deref()
                    .ok_or_else(|| malformed("a confirmation without SubscribeURL"))?;
                field("SubscribeURL", url);
            }
        }
        field("Timestamp", &raw.timestamp);
        if kind != Kind::Notification {
            let token = raw
                .token
                .as_deref()
                .ok_or_else(|| malformed("a confirmation without Token"))?;
            field("Token", token);
        }
        field("TopicArn", &raw.topic_arn);
        field("Type", &raw.kind);
        Ok(Message {
            kind,
            version,
            topic_arn: raw.topic_arn,
            signing_cert_url: raw.signing_cert_url,
            subscribe_url: raw.subscribe_url,
            timestamp,
            signature,
            string_to_sign: text.into_bytes(),
        })
    }

    /// The string AWS signed, as its documentation builds it.
    pub fn string_to_sign(&self) -> &[u8] {
        &self.string_to_sign
    }

    /// Whether the signature verifies under `key`.
    pub fn verify(&self, key: &CertKey, now_unix_secs: i64) -> Result<(), SignatureError> {
        if now_unix_secs < key.not_before || now_unix_secs > key.not_after {
            return Err(malformed("the signing certificate is not valid now"));
        }
        let algorithm = match self.version {
            Version::V1 => &RSA_PKCS1_2048_8192_SHA1_FOR_LEGACY_USE_ONLY,
            Version::V2 => &RSA_PKCS1_2048_8192_SHA256,
        };
        UnparsedPublicKey::new(algorithm, &key.rsa_public_key)
            .verify(&self.string_to_sign, &self.signature)
            .map_err(|_| SignatureError::Mismatch)
    }
}

/// The public key of a signing certificate, with its validity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertKey {
    /// The DER `RSAPublicKey`.
    rsa_public_key: Vec<u8>,
    not_before: i64,
    not_after: i64,
}

impl CertKey {
    /// Whether the certificate is valid at `now_unix_secs`.
    pub fn valid_at(&self, now_unix_secs: i64) -> bool {
        self.not_before <= now_unix_secs && now_unix_secs <= self.not_after
    }

    /// Whether `signature` is `algorithm`'s signature of `message` under this key (PayPal's
    /// transmissions, [`super::paypal`]).
    pub fn verify_rsa(
        &self,
        algorithm: &'static aws_lc_rs::signature::RsaParameters,
        message: &[u8],
        signature: &[u8],
    ) -> bool {
        UnparsedPublicKey::new(algorithm, &self.rsa_public_key)
            .verify(message, signature)
            .is_ok()
    }
}

/// The OID of `rsaEncryption` (RFC 8017).
const RSA_ENCRYPTION: &str = "1.2.840.113549.1.1.1";

impl CertKey {
    /// The RSA key of a certificate given as PEM (what SNS serves) or DER.
    pub fn from_certificate(bytes: &[u8]) -> Result<CertKey, String> {
        let cert = x509_cert::Certificate::from_pem(bytes)
            .or_else(|_| x509_cert::Certificate::from_der(bytes))
            .map_err(|_| "not an X.509 certificate (PEM or DER)".to_owned())?;
        let tbs = &cert.tbs_certificate;
        let spki = &tbs.subject_public_key_info;
        if spki.algorithm.oid.to_string() != RSA_ENCRYPTION {
            return Err("the certificate's key is not RSA".to_owned());
        }
        let seconds = |t: x509_cert::time::Time| {
            i64::try_from(t.to_unix_duration().as_secs()).unwrap_or(i64::MAX)
        };
        Ok(CertKey {
            rsa_public_key: spki.subject_public_key.raw_bytes().to_vec(),
            not_before: seconds(tbs.validity.not_before),
            not_after: seconds(tbs.validity.not_after),
        })
    }
}

/// Whether `host` is an SNS endpoint: `sns.<region>.amazonaws.com`, or
/// `sns.<region>.amazonaws.com.cn` in the China partition (AWS's SNS endpoints; the AWS
/// SDKs' message validators accept exactly these). The region is lowercase letters, digits
/// and dashes, at least three.
pub fn is_sns_host(host: &str) -> bool {
    let Some(rest) = host.strip_prefix("sns.") else {
        return false;
    };
    let region = rest
        .strip_suffix(".amazonaws.com")
        .or_else(|| rest.strip_suffix(".amazonaws.com.cn"));
    region.is_some_and(|r| {
        r.len() >= 3
            && r.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !r.starts_with('-')
            && !r.ends_with('-')
    })
}

/// `url` if it is `https` on an SNS host ([`is_sns_host`]), the default port, no user
/// information and no fragment; `pem` asks for a path ending `.pem` (a certificate) and no
/// query.
pub fn sns_url(url: &str, pem: bool) -> Result<reqwest::Url, SignatureError> {
    let parsed = reqwest::Url::parse(url).map_err(|_| malformed("a URL that does not parse"))?;
    let host_ok = parsed.host_str().is_some_and(is_sns_host);
    let plain = parsed.scheme() == "https"
        && parsed.port().is_none()
        && parsed.username().is_empty()
        && parsed.password().is_none()
        && parsed.fragment().is_none();
    let shaped = !pem || (parsed.path().ends_with(".pem") && parsed.query().is_none());
    if host_ok && plain && shaped {
        Ok(parsed)
    } else {
        Err(malformed(
            "a URL outside https://sns.<region>.amazonaws.com",
        ))
    }
}

/// Whether `arn` is an SNS topic ARN: `arn:<partition>:sns:<region>:<account>:<name>`.
pub fn is_topic_arn(arn: &str) -> bool {
    let parts: Vec<&str> = arn.split(':').collect();
    matches!(parts.as_slice(),
        ["arn", partition, "sns", region, account, name]
            if partition.starts_with("aws")
                && !region.is_empty()
                && account.len() == 12
                && account.bytes().all(|b| b.is_ascii_digit())
                && !name.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sns_hosts_are_the_documented_pattern_and_nothing_else() {
        for host in [
            "sns.us-east-1.amazonaws.com",
            "sns.eu-west-3.amazonaws.com",
            "sns.us-gov-west-1.amazonaws.com",
            "sns.cn-north-1.amazonaws.com.cn",
        ] {
            assert!(is_sns_host(host), "{host}");
        }
        for host in [
            "sns.amazonaws.com",
            "sns.us-east-1.amazonaws.com.evil.example",
            "evil.example",
            "sns.us-east-1.evil.com",
            "sqs.us-east-1.amazonaws.com",
            "sns.a.b.amazonaws.com",
            "sns.-x-.amazonaws.com",
            "SNS.US-EAST-1.AMAZONAWS.COM.",
            "sns.us.amazonaws.com",
        ] {
            assert!(!is_sns_host(host), "{host}");
        }
    }

    #[test]
    fn a_certificate_url_is_https_on_an_sns_host_with_a_pem_path() {
        let good = "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-0123.pem";
        assert!(sns_url(good, true).is_ok());
        for bad in [
            "http://sns.us-east-1.amazonaws.com/SimpleNotificationService-0123.pem",
            "https://sns.us-east-1.amazonaws.com:8443/SimpleNotificationService-0123.pem",
            "https://user@sns.us-east-1.amazonaws.com/SimpleNotificationService-0123.pem",
            "https://sns.us-east-1.amazonaws.com.evil.example/x.pem",
            "https://evil.example/sns.us-east-1.amazonaws.com/x.pem",
            "https://sns.us-east-1.amazonaws.com/x.pem?a=b",
            "https://sns.us-east-1.amazonaws.com/x.txt",
            "not a url",
        ] {
            assert!(
                matches!(sns_url(bad, true), Err(SignatureError::Malformed(m)) if m.starts_with("aws-sns: a URL")),
                "{bad}"
            );
        }
        let confirm = "https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&Token=t";
        assert!(sns_url(confirm, false).is_ok());
    }

    #[test]
    fn the_string_to_sign_is_the_documented_fields_in_order() {
        let body = br#"{"Type":"Notification","MessageId":"m-1","TopicArn":"arn:aws:sns:us-east-1:123456789012:t",
            "Subject":"s","Message":"hello\nworld","Timestamp":"2024-05-01T10:00:00.000Z","SignatureVersion":"2",
            "Signature":"AAAA","SigningCertURL":"https://sns.us-east-1.amazonaws.com/c.pem","UnsubscribeURL":"u"}"#;
        let message = Message::parse(body).unwrap();
        assert_eq!(
            String::from_utf8_lossy(message.string_to_sign()),
            "Message\nhello\nworld\nMessageId\nm-1\nSubject\ns\nTimestamp\n2024-05-01T10:00:00.000Z\nTopicArn\narn:aws:sns:us-east-1:123456789012:t\nType\nNotification\n"
        );
        assert_eq!(message.version, Version::V2);
        let confirm = br#"{"Type":"SubscriptionConfirmation","MessageId":"m-2","Token":"tok","TopicArn":"arn:aws:sns:us-east-1:123456789012:t",
            "Message":"confirm","SubscribeURL":"https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription","Timestamp":"2024-05-01T10:00:00.000Z",
            "SignatureVersion":"1","Signature":"AAAA","SigningCertURL":"https://sns.us-east-1.amazonaws.com/c.pem"}"#;
        let message = Message::parse(confirm).unwrap();
        assert_eq!(
            String::from_utf8_lossy(message.string_to_sign()),
            "Message\nconfirm\nMessageId\nm-2\nSubscribeURL\nhttps://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription\nTimestamp\n2024-05-01T10:00:00.000Z\nToken\ntok\nTopicArn\narn:aws:sns:us-east-1:123456789012:t\nType\nSubscriptionConfirmation\n"
        );
        assert_eq!(message.kind, Kind::SubscriptionConfirmation);
    }

    #[test]
    fn a_field_twice_an_unknown_version_or_type_is_refused() {
        let twice = br#"{"Type":"Notification","Type":"Notification","MessageId":"m","TopicArn":"a","Message":"x",
            "Timestamp":"2024-05-01T10:00:00Z","SignatureVersion":"1","Signature":"AAAA","SigningCertURL":"u"}"#;
        assert_eq!(
            Message::parse(twice).map(|_| ()),
            Err(malformed("the body is not an SNS message"))
        );
        let v3 = br#"{"Type":"Notification","MessageId":"m","TopicArn":"a","Message":"x",
            "Timestamp":"2024-05-01T10:00:00Z","SignatureVersion":"3","Signature":"AAAA","SigningCertURL":"u"}"#;
        assert_eq!(
            Message::parse(v3).map(|_| ()),
            Err(malformed("SignatureVersion is neither 1 nor 2"))
        );
        let other = br#"{"Type":"Other","MessageId":"m","TopicArn":"a","Message":"x",
            "Timestamp":"2024-05-01T10:00:00Z","SignatureVersion":"1","Signature":"AAAA","SigningCertURL":"u"}"#;
        assert_eq!(
            Message::parse(other).map(|_| ()),
            Err(malformed("unknown Type"))
        );
    }

    #[test]
    fn the_secrets_are_topic_arns_and_the_verifier_never_accepts_by_itself() {
        use crate::signature::{check_secret_length, Inbound, Scheme, Verifier};
        let topic = "arn:aws:sns:us-east-1:123456789012:orders";
        assert_eq!(check_secret_length(&Scheme::AwsSns, 1, topic), Ok(()));
        let err = check_secret_length(&Scheme::AwsSns, 2, "not-a-topic-arn-at-all").unwrap_err();
        assert!(
            err.starts_with("secret #2 is not an SNS topic ARN"),
            "{err}"
        );
        let verifier = Verifier::new(Scheme::AwsSns, vec![topic.to_owned()], 3600).unwrap();
        assert!(verifier.accepts_topic(topic));
        assert!(!verifier.accepts_topic("arn:aws:sns:us-east-1:123456789012:other"));
        // Its certificate is fetched by the receiver: the synchronous check always refuses.
        let headers = http::HeaderMap::new();
        assert!(matches!(
            verifier.verify_request(&Inbound::post(&headers, b"{}"), 0),
            Err(SignatureError::Malformed(m)) if m.contains("fetched certificate")
        ));
    }

    #[test]
    fn topic_arns_are_sns_arns() {
        assert!(is_topic_arn("arn:aws:sns:us-east-1:123456789012:orders"));
        assert!(is_topic_arn(
            "arn:aws-cn:sns:cn-north-1:123456789012:o.fifo"
        ));
        for bad in [
            "arn:aws:sqs:us-east-1:123456789012:q",
            "arn:aws:sns:us-east-1:1234:orders",
            "orders",
            "arn:aws:sns:us-east-1:123456789012:",
        ] {
            assert!(!is_topic_arn(bad), "{bad}");
        }
    }
}
