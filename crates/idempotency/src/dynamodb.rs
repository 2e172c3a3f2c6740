//! The DynamoDB store: one table, partition key `pk` (a string), TTL on `expires_at`.
//!
//! Every write is conditional, with the condition taken from [`crate::machine`], where each
//! sits beside the predicate the in-memory store evaluates. The table needs nothing else:
//!
//! ```text
//! aws dynamodb create-table --table-name idempotency \
//!   --attribute-definitions AttributeName=pk,AttributeType=S \
//!   --key-schema AttributeName=pk,KeyType=HASH --billing-mode PAY_PER_REQUEST
//! aws dynamodb update-time-to-live --table-name idempotency \
//!   --time-to-live-specification Enabled=true,AttributeName=expires_at
//! ```
//!
//! The function's role needs `dynamodb:UpdateItem`, `DeleteItem` and `GetItem` (the last only
//! where a refused condition does not return the old item) on the table.

use std::collections::HashMap;

use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use aws_sdk_dynamodb::Client;

use crate::machine::{
    gone, Claim, ClaimOutcome, Record, Status, CLAIM_CONDITION, CLAIM_UPDATE, COMPLETE_CONDITION,
    FAIL_CONDITION, RELEASE_CONDITION,
};
use crate::store::{Store, StoreError};

type Item = HashMap<String, AttributeValue>;

/// The records in a DynamoDB table, through an SDK client. Cloning shares the client.
#[derive(Clone, Debug)]
pub struct DynamoStore {
    client: Client,
    table: String,
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn unavailable<E, R>(err: SdkError<E, R>) -> StoreError
where
    E: std::error::Error + 'static,
    R: std::fmt::Debug,
{
    StoreError::Unavailable(DisplayErrorContext(err).to_string())
}

/// Whether a conditional write was made: `Ok(false)` where its condition refused it.
fn written<T, E, R>(result: Result<T, SdkError<E, R>>) -> Result<bool, StoreError>
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    match result {
        Ok(_) => Ok(true),
        Err(err)
            if err.as_service_error().and_then(ProvideErrorMetadata::code)
                == Some("ConditionalCheckFailedException") =>
        {
            Ok(false)
        }
        Err(err) => Err(unavailable(err)),
    }
}

impl DynamoStore {
    /// The store on `table` through `client`.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        DynamoStore {
            client,
            table: table.into(),
        }
    }

    /// The table's name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The claim: one UpdateItem, [`CLAIM_UPDATE`] under [`CLAIM_CONDITION`], with `ALL_OLD`:
    /// the old record comes back in the same call when the condition refuses it. Where the
    /// server leaves it out (some emulators), one consistent read stands in; nothing is
    /// written after it.
    async fn claim_item(&self, claim: &Claim) -> Result<ClaimOutcome, StoreError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(&claim.key))
            .update_expression(CLAIM_UPDATE)
            .condition_expression(CLAIM_CONDITION)
            .expression_attribute_names("#status", "status")
            .expression_attribute_names("#result", "result")
            .expression_attribute_values(":now_s", n(claim.now_ms.div_euclid(1000)))
            .expression_attribute_values(":now_ms", n(claim.now_ms))
            .expression_attribute_values(":sha", s(&claim.payload_sha256))
            .expression_attribute_values(":processing", s(Status::Processing.as_str()))
            .expression_attribute_values(":failed", s(Status::Failed.as_str()))
            .expression_attribute_values(":lease", n(claim.lease_until_ms))
            .expression_attribute_values(":me", s(&claim.owner))
            .expression_attribute_values(":exp", n(claim.expires_at))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":one", n(1))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(_) => Ok(ClaimOutcome::Claimed),
            Err(err) => match err.as_service_error() {
                Some(UpdateItemError::ConditionalCheckFailedException(e)) => {
                    let old = match e.item() {
                        Some(item) => Some(from_item(item)?),
                        None => self.get(&claim.key).await?,
                    };
                    let old = old.unwrap_or_else(|| gone(&claim.key, claim.now_ms));
                    Ok(ClaimOutcome::Exists(Box::new(old)))
                }
                _ => Err(unavailable(err)),
            },
        }
    }

    /// UpdateItem of the caller's own claim ([`crate::machine::HOLDER_CONDITION`]).
    async fn update_held(
        &self,
        key: &str,
        owner: &str,
        update: &str,
        condition: &str,
        values: Vec<(&str, AttributeValue)>,
    ) -> Result<bool, StoreError> {
        let mut req = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(key))
            .update_expression(update)
            .condition_expression(condition)
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":processing", s(Status::Processing.as_str()))
            .expression_attribute_values(":me", s(owner));
        for (name, value) in values {
            req = req.expression_attribute_values(name, value);
        }
        written(req.send().await)
    }
}

impl Store for DynamoStore {
    async fn claim(&self, claim: &Claim) -> Result<ClaimOutcome, StoreError> {
        self.claim_item(claim).await
    }

    async fn complete(
        &self,
        key: &str,
        owner: &str,
        result: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let update = "SET #status = :completed, #result = :result, completed_at = :now_ms \
                      REMOVE lease_until, lease_owner";
        let values = vec![
            (":completed", s(Status::Completed.as_str())),
            (":result", s(result)),
            (":now_ms", n(now_ms)),
        ];
        let mut req = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(key))
            .update_expression(update)
            .condition_expression(COMPLETE_CONDITION)
            .expression_attribute_names("#status", "status")
            .expression_attribute_names("#result", "result")
            .expression_attribute_values(":processing", s(Status::Processing.as_str()))
            .expression_attribute_values(":me", s(owner));
        for (name, value) in values {
            req = req.expression_attribute_values(name, value);
        }
        written(req.send().await)
    }

    async fn release(&self, key: &str, owner: &str) -> Result<bool, StoreError> {
        let result = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key("pk", s(key))
            .condition_expression(RELEASE_CONDITION)
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":processing", s(Status::Processing.as_str()))
            .expression_attribute_values(":me", s(owner))
            .send()
            .await;
        written(result)
    }

    async fn fail(
        &self,
        key: &str,
        owner: &str,
        error: &str,
        _now_ms: i64,
    ) -> Result<bool, StoreError> {
        // The owner stays, for the operator: HOLDER_CONDITION wants PROCESSING, so it gives
        // the failed call nothing; the next claim of this payload takes the record.
        let update = "SET #status = :failed, last_error = :error REMOVE lease_until";
        let values = vec![
            (":failed", s(Status::Failed.as_str())),
            (":error", s(error)),
        ];
        self.update_held(key, owner, update, FAIL_CONDITION, values)
            .await
    }

    async fn get(&self, key: &str) -> Result<Option<Record>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", s(key))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable)?;
        out.item().map(from_item).transpose()
    }
}

/// A record as a DynamoDB item (optional attributes left out when absent).
pub fn to_item(r: &Record) -> Item {
    let mut item = Item::new();
    item.insert("pk".into(), s(&r.key));
    item.insert("status".into(), s(r.status.as_str()));
    item.insert("expires_at".into(), n(r.expires_at));
    item.insert("payload_sha256".into(), s(&r.payload_sha256));
    item.insert("attempts".into(), n(r.attempts));
    item.insert("received_at".into(), n(r.received_at));
    let optional = [
        ("lease_until", r.lease_until.map(n)),
        ("lease_owner", r.lease_owner.as_deref().map(s)),
        ("result", r.result.as_deref().map(s)),
        ("last_error", r.last_error.as_deref().map(s)),
        ("completed_at", r.completed_at.map(n)),
    ];
    for (name, value) in optional {
        if let Some(value) = value {
            item.insert(name.into(), value);
        }
    }
    item
}

fn string(item: &Item, name: &str) -> Result<Option<String>, StoreError> {
    match item.get(name) {
        None => Ok(None),
        Some(AttributeValue::S(v)) => Ok(Some(v.clone())),
        Some(_) => Err(StoreError::Corrupt(format!("{name} is not a string"))),
    }
}

fn number(item: &Item, name: &str) -> Result<Option<i64>, StoreError> {
    match item.get(name) {
        None => Ok(None),
        Some(AttributeValue::N(v)) => v
            .parse()
            .map(Some)
            .map_err(|_| StoreError::Corrupt(format!("{name} is not an integer: {v}"))),
        Some(_) => Err(StoreError::Corrupt(format!("{name} is not a number"))),
    }
}

fn required<T>(value: Option<T>, name: &str) -> Result<T, StoreError> {
    value.ok_or_else(|| StoreError::Corrupt(format!("{name} is missing")))
}

/// A DynamoDB item as a record; an attribute missing or of the wrong type is
/// [`StoreError::Corrupt`].
pub fn from_item(item: &Item) -> Result<Record, StoreError> {
    let status = required(string(item, "status")?, "status")?;
    let status = Status::parse(&status)
        .ok_or_else(|| StoreError::Corrupt(format!("unknown status {status}")))?;
    let attempts = number(item, "attempts")?.unwrap_or(1);
    Ok(Record {
        key: required(string(item, "pk")?, "pk")?,
        status,
        expires_at: required(number(item, "expires_at")?, "expires_at")?,
        lease_until: number(item, "lease_until")?,
        lease_owner: string(item, "lease_owner")?,
        payload_sha256: required(string(item, "payload_sha256")?, "payload_sha256")?,
        result: string(item, "result")?,
        attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
        last_error: string(item, "last_error")?,
        received_at: number(item, "received_at")?.unwrap_or(0),
        completed_at: number(item, "completed_at")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> Record {
        Record {
            key: "k".into(),
            status: Status::Completed,
            expires_at: 1_700_003_600,
            lease_until: None,
            lease_owner: None,
            payload_sha256: "ab".into(),
            result: Some("{\"ok\":true}".into()),
            attempts: 2,
            last_error: Some("once".into()),
            received_at: 1_700_000_000_000,
            completed_at: Some(1_700_000_001_000),
        }
    }

    #[test]
    fn a_record_survives_the_round_trip_through_an_item() {
        let r = record();
        assert_eq!(from_item(&to_item(&r)), Ok(r.clone()));
        let mut held = r;
        held.status = Status::Processing;
        held.lease_until = Some(1_700_000_030_000);
        held.lease_owner = Some("me".into());
        held.result = None;
        held.completed_at = None;
        assert_eq!(from_item(&to_item(&held)), Ok(held));
    }

    #[test]
    fn an_unreadable_item_is_corrupt_not_a_panic() {
        let mut item = to_item(&record());
        item.insert("status".into(), s("DONE"));
        assert!(matches!(from_item(&item), Err(StoreError::Corrupt(_))));
        let mut item = to_item(&record());
        item.insert("expires_at".into(), n("soon"));
        assert!(matches!(from_item(&item), Err(StoreError::Corrupt(_))));
        let mut item = to_item(&record());
        item.insert("lease_owner".into(), n(1));
        assert!(matches!(from_item(&item), Err(StoreError::Corrupt(_))));
        let mut item = to_item(&record());
        item.remove("payload_sha256");
        assert!(matches!(from_item(&item), Err(StoreError::Corrupt(_))));
    }
}
