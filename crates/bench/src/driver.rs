//! The bench in order: moto, the local system of record and the resources, the receiver (with
//! its consumer) and the peer under the workload, the init durations, the zip sizes; the
//! report as text.

use std::time::Duration;

use anyhow::{bail, Result};
use devstack::moto;

use crate::aws::Aws;
use crate::consumer::ConsumerSetup;
use crate::forward::ForwardServer;
use crate::function::{Function, SOURCES};
use crate::init::init_durations_of;
use crate::options::Options;
use crate::phases::{run_function, Run, Store};
use crate::report::report;
use crate::zips::zip_sizes;

/// The mapping's batch size where the stack's mapping does not say (Lambda's default for SQS:
/// 10 records); its concurrency is then the bench's own.
const DEFAULT_BATCH_SIZE: i32 = 10;

/// Runs everything `o` asks for and hands back the report.
pub async fn run(o: &Options) -> Result<String> {
    let root = moto::workspace_root();
    let mut o = o.clone();
    if o.memory_mb == 0 {
        o.memory_mb = crate::bill::template_memory_mb(&root)?;
    }
    let o = &o;
    let python = moto::python()?;
    for p in [&o.receiver, &o.consumer] {
        if !p.exists() {
            bail!(
                "{} not found: build the release binaries first (make bench does)",
                p.display()
            );
        }
    }

    eprintln!("bench: starting moto");
    let endpoint = moto::shared().to_owned();
    let sdk = inbox::app::sdk_config().await;
    let aws = Aws {
        dynamo: aws_sdk_dynamodb::Client::new(&sdk),
        sqs: aws_sdk_sqs::Client::new(&sdk),
    };
    let forward = ForwardServer::start(Duration::from_millis(o.forward_ms)).await?;
    let ours = Aws::stack(SOURCES, &forward.url(), o.archive, o.destinations).await?;
    let (peer_table, peer_queue) = aws.peer_resources("bench").await?;

    let receiver = Function::receiver(&o.receiver, &ours.receiver.environment);
    let consumer = Function::consumer(&o.consumer, &ours.consumer.environment, &endpoint);
    let peer = Function::powertools_peer(&python, &root, &peer_table, &peer_queue);
    let mapping = &ours.event_source_mapping;
    let setup = ConsumerSetup {
        function: &consumer,
        queue_url: &ours.queue_url,
        table: &ours.table,
        batch_size: mapping.batch_size.unwrap_or(DEFAULT_BATCH_SIZE),
        pollers: mapping
            .maximum_concurrency
            .and_then(|c| usize::try_from(c).ok())
            .unwrap_or(o.concurrency)
            .max(1),
        upstream: &endpoint,
        forward: &forward,
        o,
    };

    let mut runs: Vec<Run> = Vec::new();
    eprintln!("bench: receiver ({} deliveries)", o.deliveries);
    let store = Store {
        table: &ours.table,
        queue_url: &ours.queue_url,
        consumer: Some(&setup),
    };
    runs.push(run_function(&receiver, o, &endpoint, store, &aws).await?);
    if !o.skip_peer {
        eprintln!("bench: powertools peer ({} deliveries)", o.deliveries);
        let store = Store {
            table: &peer_table,
            queue_url: &peer_queue,
            consumer: None,
        };
        runs.push(run_function(&peer, o, &endpoint, store, &aws).await?);
    }

    let mut inits: Vec<(String, Vec<Duration>)> = Vec::new();
    if o.init_runs > 0 {
        let mut functions = vec![receiver.with_endpoint(&endpoint), consumer];
        if !o.skip_peer {
            functions.push(peer.with_endpoint(&endpoint));
        }
        inits = init_durations_of(&functions, o.init_runs).await?;
    }

    let mut zips = Vec::new();
    for (name, path) in &o.zips {
        let (zip, unpacked) = zip_sizes(path)?;
        zips.push((name.clone(), zip, unpacked));
    }

    Ok(report(o, &runs, &inits, &zips))
}
