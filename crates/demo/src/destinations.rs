//! The demo's destinations (docs/routing.md), as a user of Stripe sets them up: the invoices to
//! the billing team's queue (SQS FIFO, filter `invoice.*`), and every Stripe event to the
//! company's EventBridge bus, whose rule copies it to a queue the demo reads. The other sources
//! keep the single forward to the system of record.

use std::collections::BTreeMap;

use devstack::targets;

/// The billing queue's destination name.
pub const BILLING: &str = "billing";
/// The bus's destination name.
pub const BUS: &str = "events";

/// The targets, created on the demo's moto before the stack that names them.
#[derive(Clone, Debug)]
pub struct DemoDestinations {
    /// `Destinations` (the stack parameter, the consumer's `WEBHOOK_DESTINATIONS`).
    pub json: String,
    billing_arn: String,
    billing_url: String,
    bus_arn: String,
    /// The queue the bus's rule sends to.
    seen_url: String,
}

impl DemoDestinations {
    pub async fn create(sdk: &aws_config::SdkConfig) -> anyhow::Result<DemoDestinations> {
        let sqs = aws_sdk_sqs::Client::new(sdk);
        let (billing_url, billing_arn) = targets::queue(&sqs, "demo-billing.fifo", true).await?;
        let (bus_arn, seen_url) =
            targets::bus_to_queue(sdk, "demo-payments", "demo-payments-seen").await?;
        let json = serde_json::json!({
            BILLING: {"target": billing_arn, "sources": ["stripe"], "event_types": ["invoice.*"]},
            BUS: {"target": bus_arn, "sources": ["stripe"]},
        })
        .to_string();
        Ok(DemoDestinations {
            json,
            billing_arn,
            billing_url,
            bus_arn,
            seen_url,
        })
    }

    /// The stack parameters: the destinations and the ARNs the consumer may call.
    pub fn parameters(&self) -> [(&'static str, &str); 3] {
        [
            ("Destinations", self.json.as_str()),
            ("DestinationQueueArns", self.billing_arn.as_str()),
            ("DestinationBusArns", self.bus_arn.as_str()),
        ]
    }

    /// One line for the progress output.
    pub fn describe(&self) -> String {
        format!(
            "destinations: {BILLING} (SQS FIFO queue, stripe's invoice.*), {BUS} (EventBridge \
             bus, every stripe event, its rule copying to a queue); the other sources forward"
        )
    }

    /// What each destination's target received, by key.
    pub async fn received(
        &self,
        sqs: &aws_sdk_sqs::Client,
    ) -> anyhow::Result<BTreeMap<&'static str, BTreeMap<String, u64>>> {
        Ok(BTreeMap::from([
            (
                BILLING,
                targets::received_by_key(sqs, &self.billing_url).await?,
            ),
            (BUS, targets::received_by_key(sqs, &self.seen_url).await?),
        ]))
    }

    /// The kind of target, for the table.
    pub fn target_kind(name: &str) -> &'static str {
        match name {
            BILLING => "SQS FIFO queue",
            BUS => "EventBridge bus",
            _ => "?",
        }
    }
}
