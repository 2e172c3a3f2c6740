//! PayPal's webhook notifications (the `paypal` scheme; docs/providers.md, "paypal"), checked
//! in an order that costs a forger nothing: the signature headers parsed, the
//! `PAYPAL-CERT-URL` on a PayPal API host over https, then the certificate (cached, else
//! fetched: a failure is 503 `key_unavailable`, nothing written, and PayPal retries), the
//! signature over the string PayPal documents for one of the source's webhook ids, the
//! transmission time within the tolerance. What passes is an event like any other.

use crate::bucket::PayloadBucket;
use crate::clock::Clock;
use crate::config::Source;
use crate::ledger::LedgerStore;
use crate::queue::Queue;
use crate::signature::paypal::{cert_url, Transmission};

use super::answer::Rejection;
use super::{Checked, Receiver};

impl<L: LedgerStore, Q: Queue, C: Clock, S: PayloadBucket> Receiver<L, Q, C, S> {
    /// A `paypal` source's request: the event, once its transmission verifies.
    pub(super) async fn paypal_verified<'s, 'r>(
        &self,
        source: &'s Source,
        headers: &http::HeaderMap,
        body: &'r [u8],
    ) -> Result<Checked<'s, 'r>, Rejection> {
        let name = source.spec.name.as_str();
        let held = self.stored.held(source, self.clock.now_ms()).await?;
        let verifier = held
            .as_ref()
            .or(source.verifier.as_ref())
            .ok_or_else(|| Rejection::SourcePending(format!("source {name} has no webhook id")))?;
        let transmission = Transmission::parse(headers, body)?;
        // Only PayPal's hosts, before any fetch: a forged URL costs nothing.
        let url = cert_url(&transmission.cert_url)?;
        let key = self.signing_certificate(name, &url, "PayPal").await?;
        let now = self.clock.now_secs();
        transmission.verify(&key, verifier.webhook_ids(), now)?;
        verifier.within_tolerance(transmission.time, now)?;
        Ok(Checked::Event(source, std::borrow::Cow::Borrowed(body)))
    }
}
