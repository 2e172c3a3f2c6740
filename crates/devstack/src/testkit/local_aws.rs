//! Local AWS for one test: the shared moto server, fresh resources made from template.yaml,
//! SDK clients with a fault plan, the function under test built on them, and what the test
//! reads back (queue messages and counts, ledger items).

use inbox::clock::SystemClock;
use inbox::config::AwsSecretResolver;
use inbox::consumer::Processor;
use inbox::ledger::dynamo::DynamoLedger;
use inbox::metrics::Metrics;
use inbox::queue::SqsQueue;
use inbox::receiver::{Receiver, ReceiverSettings};

use super::{
    consumer_on, set_test_secrets, test_sources, unique, MetricLines, TestConsumer, TestReceiver,
};
use crate::faults::{self, Faults};
use crate::moto;
use crate::provision::{self, Provisioned, Template};

/// Local AWS for one test: its own table and queues, made from template.yaml.
pub struct LocalAws {
    pub sdk: aws_config::SdkConfig,
    pub faults: Faults,
    pub dynamo: aws_sdk_dynamodb::Client,
    pub sqs: aws_sdk_sqs::Client,
    pub resources: Provisioned,
}

impl LocalAws {
    /// Shared moto server, standard environment, fresh resources named after `label`.
    pub async fn new(label: &str) -> LocalAws {
        moto::shared();
        set_test_secrets();
        let sdk = inbox::app::sdk_config().await;
        let faults = Faults::new();
        let dynamo = faults::dynamo_client(&sdk, &faults);
        let sqs = faults::sqs_client(&sdk, &faults);
        let template = Template::load(&provision::template_path()).expect("template.yaml loads");
        let resources = provision::provision(&template, &dynamo, &sqs, &unique(label))
            .await
            .expect("provisioning local AWS from template.yaml");
        faults.reset_calls();
        LocalAws {
            sdk,
            faults,
            dynamo,
            sqs,
            resources,
        }
    }

    /// The receiver over [`TEST_SOURCES`](super::TEST_SOURCES) on these clients, and the metric lines it writes.
    pub async fn receiver(&self, settings: ReceiverSettings) -> (TestReceiver, MetricLines) {
        let sources = test_sources()
            .resolve(&AwsSecretResolver::env_only())
            .await
            .expect("the test secrets resolve from the environment");
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

    /// The consumer over [`TEST_SOURCES`](super::TEST_SOURCES) on this ledger, running `processor`, and the metric
    /// lines it writes.
    pub fn consumer<P: Processor>(&self, processor: P) -> (TestConsumer<P>, MetricLines) {
        consumer_on(self.ledger(), processor)
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
    /// The same table and queues through clients of their own, with their own fault plan
    /// and SDK settings: another process (one that may die on its own, or retry faster).
    pub fn sibling(&self, sdk: aws_config::SdkConfig, faults: Faults) -> LocalAws {
        let dynamo = faults::dynamo_client(&sdk, &faults);
        let sqs = faults::sqs_client(&sdk, &faults);
        LocalAws {
            sdk,
            faults,
            dynamo,
            sqs,
            resources: self.resources.clone(),
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
