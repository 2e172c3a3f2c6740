//! AWS SNS's messages (the `aws-sns` scheme; docs/providers.md, "aws-sns"), checked in an
//! order that costs a forger nothing: the body parsed, its `TopicArn` one the source accepts,
//! its `SigningCertURL` on an SNS host over https, then the certificate (cached, else fetched:
//! a failure is 503 `key_unavailable`, nothing written), the signature, the signed
//! `Timestamp` within the tolerance. Then by `Type`: a `Notification` is an event like any
//! other (keyed by `MessageId`); a `SubscriptionConfirmation` is confirmed by visiting its
//! `SubscribeURL` (an SNS host only; a failed visit is 503 `subscription_not_confirmed`, and
//! SNS sends the confirmation again); an `UnsubscribeConfirmation` is answered 200. Neither
//! confirmation is claimed or queued.

use http::StatusCode;
use lambda_http::{Body, Response};
use tracing::{info, warn};

use crate::bucket::PayloadBucket;
use crate::clock::Clock;
use crate::config::Source;
use crate::ledger::LedgerStore;
use crate::queue::Queue;
use crate::signature::sns::{sns_url, CertKey, Kind, Message};
use crate::signature::SignatureError;

use super::answer::{json_response, Rejection};
use super::{Checked, Receiver};

impl<L: LedgerStore, Q: Queue, C: Clock, S: PayloadBucket> Receiver<L, Q, C, S> {
    /// The key of `provider`'s signing certificate at `url` (its host already checked), from
    /// this instance's cache or fetched; a fetch that fails is 503 `key_unavailable`, logged
    /// under the source's name. Shared by the schemes whose key is fetched (SNS, PayPal).
    pub(super) async fn signing_certificate(
        &self,
        source_name: &str,
        url: &reqwest::Url,
        provider: &str,
    ) -> Result<CertKey, Rejection> {
        self.keys
            .certificate(url, self.clock.now_ms())
            .await
            .map_err(|e| {
                warn!(source = source_name, error = %e, "the {provider} signing certificate could not be fetched");
                Rejection::KeyUnavailable(e.to_string())
            })
    }

    /// An `aws-sns` source's request: the notification to claim, or a confirmation answered.
    pub(super) async fn sns_verified<'s, 'r>(
        &self,
        source: &'s Source,
        body: &'r [u8],
    ) -> Result<Checked<'s, 'r>, Rejection> {
        let name = source.spec.name.as_str();
        let held = self.stored.held(source, self.clock.now_ms()).await?;
        let verifier = held
            .as_ref()
            .or(source.verifier.as_ref())
            .ok_or_else(|| Rejection::SourcePending(format!("source {name} has no topic ARNs")))?;
        let message = Message::parse(body)?;
        // AWS: "Reject any message with an unexpected TopicArn": before any fetch, so a
        // message from someone else's topic costs nothing.
        if !verifier.accepts_topic(&message.topic_arn) {
            return Err(SignatureError::Mismatch.into());
        }
        let cert_url = sns_url(&message.signing_cert_url, true)?;
        let key = self.signing_certificate(name, &cert_url, "SNS").await?;
        let now = self.clock.now_secs();
        message.verify(&key, now)?;
        verifier.within_tolerance(message.timestamp, now)?;
        match message.kind {
            Kind::Notification => Ok(Checked::Event(source, std::borrow::Cow::Borrowed(body))),
            Kind::SubscriptionConfirmation => {
                let url = sns_url(message.subscribe_url.as_deref().unwrap_or_default(), false)?;
                self.keys.visit(&url).await.map_err(|e| {
                    warn!(source = name, error = %e, "the SNS subscription could not be confirmed");
                    Rejection::SubscriptionNotConfirmed(e.to_string())
                })?;
                info!(source = name, "SNS subscription confirmed");
                Ok(Checked::Answered(answer("subscription_confirmed")))
            }
            Kind::UnsubscribeConfirmation => {
                info!(source = name, "SNS unsubscribe confirmation received");
                Ok(Checked::Answered(answer("unsubscribe_received")))
            }
        }
    }
}

fn answer(status: &str) -> Response<Body> {
    json_response(
        StatusCode::OK,
        serde_json::json!({ "status": status }).to_string(),
    )
}
