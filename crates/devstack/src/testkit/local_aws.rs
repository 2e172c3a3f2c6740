//! Local AWS for one test: the shared moto server, a stack of its own created from
//! template.yaml on moto's CloudFormation (its sources' secrets in moto's Secrets Manager), SDK
//! clients with a fault plan, the functions under test built from the stack's function
//! configurations, and what the test reads back (queue messages and counts, ledger items).

use std::sync::Arc;

use inbox::archive::FirehoseArchive;
use inbox::bucket::S3Bucket;
use inbox::clock::SystemClock;
use inbox::config::{AwsSecretResolver, SourceSpecs};
use inbox::consumer::{Consumer, ConsumerSettings, Processor};
use inbox::ledger::dynamo::DynamoLedger;
use inbox::metrics::Metrics;
use inbox::queue::SqsQueue;
use inbox::receiver::{Receiver, ReceiverSettings};
use tokio::sync::OnceCell;

use super::{
    consumer_with, set_test_secrets, stack_sources, unique, ArchivingConsumer, MetricLines,
    TestConsumer, TestReceiver,
};
use crate::cloudformation::{Function, Stack};
use crate::faults::{self, Faults};
use crate::local_stack::{self, Resources, Secret};
use crate::moto;

/// The consumer's `FORWARD_URL` in the tests' stacks: the tests give the consumer its
/// processor (a [`super::SystemOfRecord`]'s forwarder, say), so nothing listens here.
pub const UNUSED_FORWARD_URL: &str = "http://127.0.0.1:9/unused";

/// Local AWS for one test: its own stack, made from template.yaml.
pub struct LocalAws {
    pub sdk: aws_config::SdkConfig,
    pub faults: Faults,
    pub dynamo: aws_sdk_dynamodb::Client,
    pub sqs: aws_sdk_sqs::Client,
    /// S3 through the fault interceptor (PutObject, GetObject, ...).
    pub s3: aws_sdk_s3::Client,
    /// The stack's table and queues.
    pub resources: Resources,
    /// The stack as moto's CloudFormation holds it: the functions' configurations, the event
    /// source mapping, the outputs.
    pub stack: Arc<Stack>,
}

impl LocalAws {
    /// Shared moto server, standard environment, a fresh stack named after `label` over the
    /// test sources with their secrets in Secrets Manager ([`stack_sources`]; put there and
    /// looked up once per process).
    pub async fn new(label: &str) -> LocalAws {
        Self::with_parameters(label, &[]).await
    }

    /// [`LocalAws::new`] with `Destinations` (JSON, docs/routing.md) among the stack's
    /// parameters: the consumer's `WEBHOOK_DESTINATIONS`, and what `inbox-ops` reads.
    pub async fn with_destinations(label: &str, destinations: &str) -> LocalAws {
        Self::with_parameters(label, &[("Destinations", destinations)]).await
    }

    /// [`LocalAws::new`] with these parameters over the local ones.
    async fn with_parameters(label: &str, extra: &[(&str, &str)]) -> LocalAws {
        static SECRET_ARNS: OnceCell<Vec<String>> = OnceCell::const_new();
        let (sources, secrets) = stack_sources();
        let sdk = Self::shared_sdk().await;
        let arns = SECRET_ARNS
            .get_or_init(|| async {
                let specs = SourceSpecs::parse(&sources).expect("the stack sources parse");
                let arns = async {
                    local_stack::put_secrets(&sdk, &secrets).await?;
                    local_stack::secret_arns(&sdk, &specs).await
                };
                arns.await
                    .unwrap_or_else(|e| panic!("the test secrets in Secrets Manager: {e:#}"))
            })
            .await;
        let mut parameters = local_stack::parameters(&sources, UNUSED_FORWARD_URL, arns)
            .unwrap_or_else(|e| panic!("the local stack's parameters: {e:#}"));
        for (name, value) in extra {
            parameters.set(name, value);
        }
        let stack = local_stack::deploy_parameters(&sdk, &unique(label), &parameters)
            .await
            .unwrap_or_else(|e| panic!("the local stack from template.yaml: {e:#}"));
        Self::on(sdk, stack)
    }

    /// Shared moto server, standard environment, these secrets put in Secrets Manager, and a
    /// fresh stack named after `label` with these sources (JSON, as `WebhookSources` takes it).
    pub async fn with_sources(label: &str, sources: &str, secrets: &[Secret]) -> LocalAws {
        let sdk = Self::shared_sdk().await;
        local_stack::put_secrets(&sdk, secrets)
            .await
            .unwrap_or_else(|e| panic!("secrets in Secrets Manager: {e:#}"));
        let stack = local_stack::deploy(&sdk, &unique(label), sources, UNUSED_FORWARD_URL)
            .await
            .unwrap_or_else(|e| panic!("the local stack from template.yaml: {e:#}"));
        Self::on(sdk, stack)
    }

    /// The shared moto server's SDK configuration; the test secrets in the environment too,
    /// for [`super::test_sources`].
    async fn shared_sdk() -> aws_config::SdkConfig {
        moto::shared();
        set_test_secrets();
        inbox::app::sdk_config().await
    }

    /// Clients with a fault plan of their own on `stack`.
    fn on(sdk: aws_config::SdkConfig, stack: Stack) -> LocalAws {
        let faults = Faults::new();
        let dynamo = faults::dynamo_client(&sdk, &faults);
        let sqs = faults::sqs_client(&sdk, &faults);
        let s3 = faults::s3_client(&sdk, &faults);
        LocalAws {
            sdk,
            faults,
            dynamo,
            sqs,
            s3,
            resources: Resources::from(&stack),
            stack: Arc::new(stack),
        }
    }

    /// `WEBHOOK_SOURCES` of a function of the stack, checked against its
    /// retention chain (`QUEUE_RETENTION_SECONDS`, `DLQ_RETENTION_SECONDS`) as at a cold start.
    fn sources_of(function: &Function) -> SourceSpecs {
        let env = &function.environment;
        let text = env
            .get("WEBHOOK_SOURCES")
            .unwrap_or_else(|| panic!("{} has no WEBHOOK_SOURCES", function.name));
        let specs = SourceSpecs::parse(text).expect("the stack's WEBHOOK_SOURCES parses");
        if let Some(retention) = env.get("QUEUE_RETENTION_SECONDS") {
            let seconds = retention
                .parse()
                .expect("QUEUE_RETENTION_SECONDS is a number");
            let dlq = env
                .get("DLQ_RETENTION_SECONDS")
                .map(|d| d.parse::<u64>().expect("DLQ_RETENTION_SECONDS is a number"));
            specs
                .check_retention(inbox::config::retention_chain_seconds(seconds, dlq))
                .expect("the sources outlast the retention chain");
        }
        specs
    }

    /// The receiver over the stack's `WEBHOOK_SOURCES` (the receiver function's
    /// configuration), its secrets read from Secrets Manager as at a cold start, on these
    /// clients; and the metric lines it writes.
    pub async fn receiver(&self, settings: ReceiverSettings) -> (TestReceiver, MetricLines) {
        let sources = Self::sources_of(&self.stack.receiver)
            .resolve(&AwsSecretResolver::new(&self.sdk))
            .await
            .unwrap_or_else(|e| panic!("the stack's sources resolve from Secrets Manager: {e}"));
        let (metrics, lines) = Metrics::memory("receiver");
        let receiver = Receiver::new(
            sources,
            self.ledger(),
            self.queue(),
            SystemClock,
            settings,
            metrics,
        );
        (receiver, lines)
    }

    /// The consumer over the stack's `WEBHOOK_SOURCES` (the consumer function's configuration)
    /// on this ledger, running `processor`, and the metric lines it writes.
    /// The receiver as deployed (payload bucket), on `clock`: events received at chosen
    /// times.
    pub async fn receiver_at<C: inbox::clock::Clock>(
        &self,
        clock: C,
        settings: ReceiverSettings,
    ) -> (Receiver<DynamoLedger, SqsQueue, C, S3Bucket>, MetricLines) {
        let sources = Self::sources_of(&self.stack.receiver)
            .resolve(&AwsSecretResolver::new(&self.sdk))
            .await
            .unwrap_or_else(|e| panic!("the stack's sources resolve from Secrets Manager: {e}"));
        let (metrics, lines) = Metrics::memory("receiver");
        let receiver = Receiver::new(
            sources,
            self.ledger(),
            self.queue(),
            clock,
            settings,
            metrics,
        )
        .with_store(self.payload_store());
        (receiver, lines)
    }

    /// The stack's payload bucket, through the fault interceptor.
    pub fn payload_store(&self) -> S3Bucket {
        assert!(
            !self.resources.payload_bucket.is_empty(),
            "the stack has a payload bucket (output PayloadBucketName)"
        );
        S3Bucket::new(self.s3.clone(), &self.resources.payload_bucket)
    }

    /// The receiver as deployed: with the stack's payload bucket.
    pub async fn receiver_with_store(
        &self,
        settings: ReceiverSettings,
    ) -> (TestReceiver<S3Bucket>, MetricLines) {
        let (receiver, lines) = self.receiver(settings).await;
        (receiver.with_store(self.payload_store()), lines)
    }

    /// The stack's archive stream (the consumer's `ARCHIVE_STREAM`), on moto's Firehose, which
    /// files each call's records as one object in the payload bucket.
    pub fn archive(&self) -> FirehoseArchive {
        let stream = self
            .stack
            .consumer
            .environment
            .get("ARCHIVE_STREAM")
            .expect("the consumer has ARCHIVE_STREAM");
        FirehoseArchive::new(aws_sdk_firehose::Client::new(&self.sdk), stream)
    }

    /// The consumer as deployed: the stack's payload bucket, its archive stream and
    /// `ARCHIVE_BODIES` as the stack sets them, running `processor`.
    pub fn archiving_consumer<P: Processor>(
        &self,
        processor: P,
    ) -> (ArchivingConsumer<P>, MetricLines) {
        let archive_bodies = self
            .stack
            .consumer
            .environment
            .get("ARCHIVE_BODIES")
            .is_some_and(|v| v == "true");
        let (metrics, lines) = Metrics::memory("consumer");
        let consumer = Consumer::new(
            Self::sources_of(&self.stack.consumer),
            self.ledger(),
            processor,
            SystemClock,
            ConsumerSettings {
                archive_bodies,
                ..ConsumerSettings::default()
            },
            metrics,
        )
        .with_store(self.payload_store())
        .with_archive(self.archive());
        (consumer, lines)
    }

    pub fn consumer<P: Processor>(&self, processor: P) -> (TestConsumer<P>, MetricLines) {
        consumer_with(
            Self::sources_of(&self.stack.consumer),
            self.ledger(),
            processor,
        )
    }

    pub fn ledger(&self) -> DynamoLedger {
        DynamoLedger::new(self.dynamo.clone(), &self.resources.table)
    }

    pub fn queue(&self) -> SqsQueue {
        SqsQueue::new(self.sqs.clone(), &self.resources.queue_url)
    }

    /// Receives every message now visible on `queue_url`, leaving them in flight.
    pub async fn receive_all(&self, queue_url: &str) -> Vec<aws_sdk_sqs::types::Message> {
        let mut all = Vec::new();
        loop {
            let out = self
                .sqs
                .receive_message()
                .queue_url(queue_url)
                .max_number_of_messages(10)
                .visibility_timeout(600)
                .message_system_attribute_names(aws_sdk_sqs::types::MessageSystemAttributeName::All)
                .send()
                .await
                .expect("receive");
            let batch = out.messages.unwrap_or_default();
            if batch.is_empty() {
                return all;
            }
            all.extend(batch);
        }
    }

    /// Items in the ledger table.
    pub async fn ledger_items(&self) -> Vec<inbox::ledger::Record> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let out = self
                .dynamo
                .scan()
                .table_name(&self.resources.table)
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .expect("scan");
            for item in out.items() {
                items.push(inbox::ledger::dynamo::from_item(item).expect("readable item"));
            }
            start = out.last_evaluated_key;
            if start.is_none() {
                return items;
            }
        }
    }
}

impl LocalAws {
    /// The same stack through clients of their own, with their own fault plan
    /// and SDK settings: another process (one that may die on its own, or retry faster).
    pub fn sibling(&self, sdk: aws_config::SdkConfig, faults: Faults) -> LocalAws {
        let dynamo = faults::dynamo_client(&sdk, &faults);
        let sqs = faults::sqs_client(&sdk, &faults);
        let s3 = faults::s3_client(&sdk, &faults);
        LocalAws {
            sdk,
            faults,
            dynamo,
            sqs,
            s3,
            resources: self.resources.clone(),
            stack: self.stack.clone(),
        }
    }

    /// Messages on `queue_url`: (visible, in flight), as SQS approximates them.
    pub async fn queue_counts(&self, queue_url: &str) -> (u64, u64) {
        use aws_sdk_sqs::types::QueueAttributeName as Q;
        let out = self
            .sqs
            .get_queue_attributes()
            .queue_url(queue_url)
            .attribute_names(Q::ApproximateNumberOfMessages)
            .attribute_names(Q::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await
            .expect("queue attributes");
        let get = |name: &Q| {
            out.attributes()
                .and_then(|a| a.get(name))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        (
            get(&Q::ApproximateNumberOfMessages),
            get(&Q::ApproximateNumberOfMessagesNotVisible),
        )
    }

    /// The keys of the messages now visible on `queue_url`, left visible (each is received,
    /// read, and made visible again at once).
    pub async fn peek_keys(&self, queue_url: &str) -> Vec<String> {
        let messages = self.receive_all(queue_url).await;
        let mut keys = Vec::new();
        for m in &messages {
            if let Some(env) = m.body().and_then(|b| inbox::queue::Envelope::parse(b).ok()) {
                keys.push(env.key);
            }
            self.sqs
                .change_message_visibility()
                .queue_url(queue_url)
                .receipt_handle(m.receipt_handle().unwrap_or_default())
                .visibility_timeout(0)
                .send()
                .await
                .expect("visible again");
        }
        keys.sort();
        keys
    }
}
