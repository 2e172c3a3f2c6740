//! SNS, EventBridge, S3 notifications, DynamoDB streams and EventBridge Scheduler: the key is
//! the event's own identity (`natural_key`, `scheduled_key`, `scheduler_key`), one line each.
//! One binary here for brevity; each handler is its own function in practice. The event's
//! source is picked by `EVENT_SOURCE`.

use aws_lambda_events::dynamodb::Event as StreamEvent;
use aws_lambda_events::eventbridge::EventBridgeEvent;
use aws_lambda_events::s3::S3Event;
use aws_lambda_events::sns::SnsEvent;
use lambda_idempotency::dynamodb::DynamoStore;
use lambda_idempotency::events::{scheduled_key, scheduler_key, NaturalKey};
use lambda_idempotency::{Deadline, Idempotency};
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

type Idem = Idempotency<DynamoStore>;

/// The side effect every handler makes once per event.
async fn work(what: String) -> Result<String, String> {
    Ok(format!("done: {what}"))
}

async fn sns(idem: &Idem, event: LambdaEvent<SnsEvent>) -> Result<(), Error> {
    let deadline = Deadline::from(&event.context);
    for record in event.payload.records {
        let (key, body) = (record.natural_key()?, record.sns.message);
        idem.run(&key, body.as_bytes(), &deadline, || work(body.clone()))
            .await?;
    }
    Ok(())
}

async fn eventbridge(
    idem: &Idem,
    event: LambdaEvent<EventBridgeEvent<Value>>,
) -> Result<(), Error> {
    let payload = serde_json::to_vec(&event.payload.detail)?;
    let key = event.payload.natural_key()?;
    idem.run(&key, &payload, &(&event.context).into(), || {
        work(key.to_string())
    })
    .await?;
    Ok(())
}

async fn s3(idem: &Idem, event: LambdaEvent<S3Event>) -> Result<(), Error> {
    let deadline = Deadline::from(&event.context);
    for record in &event.payload.records {
        let key = record.natural_key()?;
        idem.run(&key, b"", &deadline, || work(key.to_string()))
            .await?;
    }
    Ok(())
}

async fn dynamodb_stream(idem: &Idem, event: LambdaEvent<StreamEvent>) -> Result<(), Error> {
    let deadline = Deadline::from(&event.context);
    for record in &event.payload.records {
        let key = record.natural_key()?;
        idem.run(&key, b"", &deadline, || work(key.to_string()))
            .await?;
    }
    Ok(())
}

/// A scheduled rule's event: the schedule and the time it was scheduled for, not when it ran.
async fn scheduled(idem: &Idem, event: LambdaEvent<EventBridgeEvent<Value>>) -> Result<(), Error> {
    let key = scheduled_key(&event.payload)?;
    idem.run(&key, b"", &(&event.context).into(), || {
        work(key.to_string())
    })
    .await?;
    Ok(())
}

/// An EventBridge Scheduler target whose input is
/// `{"schedule": "<aws.scheduler.schedule-arn>", "at": "<aws.scheduler.scheduled-time>"}`.
async fn scheduler(idem: &Idem, event: LambdaEvent<Value>) -> Result<(), Error> {
    let field = |name: &str| event.payload[name].as_str().unwrap_or_default().to_owned();
    let key = scheduler_key(&field("schedule"), &field("at"))?;
    idem.run(&key, b"", &(&event.context).into(), || {
        work(key.to_string())
    })
    .await?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let idem = &idempotent_lambdas::idempotency().await?;
    match std::env::var("EVENT_SOURCE").as_deref() {
        Ok("sns") => lambda_runtime::run(service_fn(|e| sns(idem, e))).await,
        Ok("eventbridge") => lambda_runtime::run(service_fn(|e| eventbridge(idem, e))).await,
        Ok("s3") => lambda_runtime::run(service_fn(|e| s3(idem, e))).await,
        Ok("dynamodb") => lambda_runtime::run(service_fn(|e| dynamodb_stream(idem, e))).await,
        Ok("schedule") => lambda_runtime::run(service_fn(|e| scheduled(idem, e))).await,
        Ok("scheduler") => lambda_runtime::run(service_fn(|e| scheduler(idem, e))).await,
        _ => Err("EVENT_SOURCE: sns, eventbridge, s3, dynamodb, schedule or scheduler".into()),
    }
}
