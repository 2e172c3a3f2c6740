//! The ledger on DynamoDB: one table, partition key `pk` (a string), TTL on `expires_at`.
//! Every write is conditional, with the condition taken from [`super`], where each sits next
//! to the predicate the in-memory adapter evaluates.

use std::collections::HashMap;

use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};
use aws_sdk_dynamodb::Client;

use super::{
    hook_secret_key, refused_replay_take, refused_take, take_condition, BodyGuard, Claim,
    ClaimOutcome, GuardOutcome, LedgerStore, Record, Status, StoreError, Take, TakeOutcome,
    CLAIM_CONDITION, DEFER_CONDITION, FINISH_CONDITION, GIVE_BACK_REPLAY_CONDITION,
    GUARD_BODY_CONDITION, KEEP_HOOK_SECRET_CONDITION, MARK_RESENT_CONDITION,
    NOTE_REFUSAL_CONDITION, OPEN_HANDSHAKE_CONDITION, RELEASE_CONDITION, REPLAY_COMPLETE_CONDITION,
    REQUEST_REPLAY_CONDITION,
};

type Item = HashMap<String, AttributeValue>;

/// The ledger table, reached through the SDK client (region and endpoint from aws-config).
#[derive(Clone, Debug)]
pub struct DynamoLedger {
    client: Client,
    table: String,
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn status(st: Status) -> AttributeValue {
    s(st.as_str())
}

fn unavailable<E, R>(err: SdkError<E, R>) -> StoreError
where
    E: std::error::Error + 'static,
    R: std::fmt::Debug,
{
    StoreError::Unavailable(DisplayErrorContext(err).to_string())
}

/// Whether a conditional write was made: `Ok(false)` where its condition refused it
/// (`ConditionalCheckFailedException`), the store unavailable on any other error.
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

impl DynamoLedger {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    fn pk(key: &str) -> AttributeValue {
        s(key)
    }

    /// A condition failure carries the old item (`ALL_OLD`); moto and old DynamoDB Local may
    /// leave it out, and then one consistent read stands in. Nothing is written after it.
    async fn old_item(
        &self,
        key: &str,
        carried: Option<&Item>,
    ) -> Result<Option<Record>, StoreError> {
        match carried {
            Some(item) => from_item(item).map(Some),
            None => self.get(key).await,
        }
    }

    /// The write of a take (and of a replay's take) under `condition`: `Ok(Ok(taken))`, or
    /// `Ok(Err(old item))` when the condition refused it.
    async fn take_if(
        &self,
        t: &Take,
        condition: &str,
        replay_id: Option<&str>,
    ) -> Result<Result<TakeOutcome, Option<Record>>, StoreError> {
        const SET: &str = "SET #status = :processing, lease_until = :lease, lease_owner = :me, \
                 attempts = if_not_exists(attempts, :zero) + :one, expires_at = :exp, \
                 #source = if_not_exists(#source, :source), \
                 payload_sha256 = if_not_exists(payload_sha256, :sha), \
                 response_status = if_not_exists(response_status, :rs), \
                 response_body = if_not_exists(response_body, :rb)";
        // Only an event's item is in the index of events (`Take::indexed`).
        let received = if t.indexed() {
            ", received_at = if_not_exists(received_at, :now_ms)"
        } else {
            ""
        };
        // An ordinary take forgets a completion (it takes only a key that never completed, or
        // a forgotten one); a replay's take keeps it (TAKE_CONDITION, GIVE_BACK_REPLAY_CONDITION).
        let archived = if t.archived_at.is_some() {
            ", archived_at = if_not_exists(archived_at, :archived)"
        } else {
            ""
        };
        let update = match replay_id {
            Some(_) => format!("{SET}{received}{archived}"),
            None => format!("{SET}{received}{archived} REMOVE completed_at"),
        };
        let mut req = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", Self::pk(&t.key))
            .update_expression(update)
            .condition_expression(condition)
            .expression_attribute_names("#status", "status")
            .expression_attribute_names("#source", "source")
            .expression_attribute_values(":processing", status(Status::Processing))
            .expression_attribute_values(":lease", n(t.lease_until_ms))
            .expression_attribute_values(":me", s(&t.owner))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":exp", n(t.expires_at))
            .expression_attribute_values(":source", s(&t.source))
            .expression_attribute_values(":sha", s(&t.payload_sha256))
            .expression_attribute_values(":now_ms", n(t.now_ms))
            .expression_attribute_values(":now_s", n(t.now_ms.div_euclid(1000)))
            .expression_attribute_values(":rs", n(t.response_status))
            .expression_attribute_values(":rb", s(&t.response_body))
            .return_values(ReturnValue::UpdatedNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        // DynamoDB refuses a value the expressions do not use: the statuses only the take's
        // condition names, the replay id only the replay's.
        if let Some(at) = t.archived_at {
            req = req.expression_attribute_values(":archived", n(at));
        }
        req = match replay_id {
            Some(rid) => req.expression_attribute_values(":rid", s(rid)),
            None => req
                .expression_attribute_values(":received", status(Status::Received))
                .expression_attribute_values(":queued", status(Status::Queued))
                .expression_attribute_values(":failed", status(Status::Failed)),
        };
        let result = req.send().await;
        match result {
            Ok(out) => {
                let attempts = out
                    .attributes()
                    .and_then(|a| a.get("attempts"))
                    .map(number)
                    .transpose()?
                    .unwrap_or(1);
                Ok(Ok(TakeOutcome::Taken {
                    attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
                }))
            }
            Err(err) => match err.as_service_error() {
                Some(aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(e)) => {
                    Ok(Err(self.old_item(&t.key, e.item()).await?))
                }
                _ => Err(unavailable(err)),
            },
        }
    }

    /// UpdateItem with a condition. `Ok(false)` when the condition failed.
    async fn conditional_update(
        &self,
        key: &str,
        update: &str,
        condition: &str,
        values: Vec<(&str, AttributeValue)>,
    ) -> Result<bool, StoreError> {
        Ok(self
            .update_if(key, update, condition, values, ReturnValue::None)
            .await?
            .is_some())
    }

    /// UpdateItem with a condition, returning the attributes `returning` asks for; `None`
    /// when the condition failed.
    async fn update_if(
        &self,
        key: &str,
        update: &str,
        condition: &str,
        values: Vec<(&str, AttributeValue)>,
        returning: ReturnValue,
    ) -> Result<Option<Item>, StoreError> {
        let mut req = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", Self::pk(key))
            .update_expression(update)
            .condition_expression(condition)
            .expression_attribute_names("#status", "status")
            .return_values(returning);
        for (name, value) in values {
            req = req.expression_attribute_values(name, value);
        }
        match req.send().await {
            Ok(out) => Ok(Some(out.attributes.unwrap_or_default())),
            Err(err) => match err.as_service_error() {
                Some(e) if e.is_conditional_check_failed_exception() => Ok(None),
                _ => Err(unavailable(err)),
            },
        }
    }
}

impl LedgerStore for DynamoLedger {
    async fn note_refusal(&self, key: &str, reason: &str, now_ms: i64) -> Result<bool, StoreError> {
        // Not through update_if: this condition names no `#status`, and DynamoDB refuses an
        // expression attribute name an expression does not use.
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", Self::pk(key))
            .update_expression("SET last_error = :err")
            .condition_expression(NOTE_REFUSAL_CONDITION)
            .expression_attribute_values(":err", s(reason))
            .expression_attribute_values(":now_s", n(now_ms.div_euclid(1000)))
            .send()
            .await;
        written(result)
    }

    async fn guard_body(&self, g: &BodyGuard, now_ms: i64) -> Result<GuardOutcome, StoreError> {
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(&g.key))
            .item("event_key", s(&g.event_key))
            .item("expires_at", n(g.expires_at))
            .condition_expression(GUARD_BODY_CONDITION)
            .expression_attribute_values(":now_s", n(now_ms.div_euclid(1000)))
            .expression_attribute_values(":event_key", s(&g.event_key))
            .send()
            .await;
        Ok(match written(result)? {
            true => GuardOutcome::Fresh,
            false => GuardOutcome::Replayed,
        })
    }

    async fn keep_hook_secret(
        &self,
        source: &str,
        secret: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(hook_secret_key(source)))
            .item("source", s(source))
            .item("secret", s(secret))
            .item("kept_at", n(now_ms))
            .condition_expression(KEEP_HOOK_SECRET_CONDITION)
            .expression_attribute_values(":now_s", n(now_ms.div_euclid(1000)))
            .send()
            .await;
        written(result)
    }

    async fn open_handshake(&self, source: &str, until_s: i64) -> Result<bool, StoreError> {
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(hook_secret_key(source)))
            .item("source", s(source))
            .item("open_until", n(until_s))
            .item("expires_at", n(until_s))
            .condition_expression(OPEN_HANDSHAKE_CONDITION)
            .send()
            .await;
        written(result)
    }

    async fn hook_secret(&self, source: &str) -> Result<Option<String>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", s(hook_secret_key(source)))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable)?;
        Ok(out
            .item()
            .and_then(|item| item.get("secret"))
            .and_then(|v| v.as_s().ok())
            .cloned())
    }

    async fn claim(&self, c: &Claim) -> Result<ClaimOutcome, StoreError> {
        let mut item: Item = [
            ("pk", s(&c.key)),
            ("source", s(&c.source)),
            ("status", status(Status::Received)),
            ("expires_at", n(c.expires_at)),
            ("lease_until", n(c.lease_until_ms)),
            ("lease_owner", s(&c.owner)),
            ("payload_sha256", s(&c.payload_sha256)),
            ("response_status", n(c.response_status)),
            ("response_body", s(&c.response_body)),
            ("attempts", n(0)),
            ("received_at", n(c.now_ms)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .chain(
            c.event_type
                .as_deref()
                .map(|t| ("event_type".to_owned(), s(t))),
        )
        .collect();
        // An answer with no body (a 204) stores none: a duplicate finds no body and gives the
        // source's answer again, which is that same 204.
        if c.response_body.is_empty() {
            item.remove("response_body");
        }
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(CLAIM_CONDITION)
            .expression_attribute_values(":now_s", n(c.now_ms.div_euclid(1000)))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(_) => Ok(ClaimOutcome::Claimed),
            Err(err) => match err.as_service_error() {
                Some(aws_sdk_dynamodb::operation::put_item::PutItemError::ConditionalCheckFailedException(e)) => {
                    match self.old_item(&c.key, e.item()).await? {
                        Some(old) => Ok(ClaimOutcome::Exists(Box::new(old))),
                        // Gone between the refusal and the read: the sender's retry will claim it.
                        None => Err(StoreError::Unavailable("claimed item vanished".into())),
                    }
                }
                _ => Err(unavailable(err)),
            },
        }
    }

    async fn release(&self, key: &str, owner: &str, now_ms: i64) -> Result<bool, StoreError> {
        let result = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key("pk", Self::pk(key))
            .condition_expression(RELEASE_CONDITION)
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":received", status(Status::Received))
            .expression_attribute_values(":me", s(owner))
            .expression_attribute_values(":now_ms", n(now_ms))
            .send()
            .await;
        written(result)
    }

    async fn take(&self, t: &Take) -> Result<TakeOutcome, StoreError> {
        match self.take_if(t, take_condition(t.item, false), None).await? {
            Ok(taken) => Ok(taken),
            Err(old) => Ok(refused_take(old, t)),
        }
    }

    async fn take_replay(&self, t: &Take, replay_id: &str) -> Result<TakeOutcome, StoreError> {
        match self
            .take_if(t, take_condition(t.item, true), Some(replay_id))
            .await?
        {
            Ok(taken) => Ok(taken),
            Err(old) => Ok(refused_replay_take(old, t, replay_id)),
        }
    }

    async fn mark_resent(
        &self,
        key: &str,
        owner: &str,
        payload_sha256: &str,
        now_ms: i64,
    ) -> Result<Option<Option<Record>>, StoreError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", Self::pk(key))
            .update_expression("SET resent_by = :me")
            .condition_expression(MARK_RESENT_CONDITION)
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":received", status(Status::Received))
            .expression_attribute_values(":me", s(owner))
            .expression_attribute_values(":sha", s(payload_sha256))
            .expression_attribute_values(":now_s", n(now_ms.div_euclid(1000)))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(_) => Ok(None),
            Err(err) => match err.as_service_error() {
                Some(aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(e)) => {
                    Ok(Some(self.old_item(key, e.item()).await?))
                }
                _ => Err(unavailable(err)),
            },
        }
    }

    async fn request_replay(
        &self,
        key: &str,
        payload_sha256: &str,
        replay_id: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", Self::pk(key))
            .update_expression("ADD replay_requests :rid_set")
            .condition_expression(REQUEST_REPLAY_CONDITION)
            .expression_attribute_values(":sha", s(payload_sha256))
            .expression_attribute_values(":now_s", n(now_ms.div_euclid(1000)))
            .expression_attribute_values(":rid_set", AttributeValue::Ss(vec![replay_id.to_owned()]))
            .send()
            .await;
        written(result)
    }

    async fn complete_replay(
        &self,
        key: &str,
        owner: &str,
        replay_id: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        self.conditional_update(
            key,
            "SET #status = :completed, completed_at = :now_ms ADD replays :rid_set \
             REMOVE lease_until, lease_owner",
            REPLAY_COMPLETE_CONDITION,
            vec![
                (":completed", status(Status::Completed)),
                (":processing", status(Status::Processing)),
                (":me", s(owner)),
                (":now_ms", n(now_ms)),
                (":rid_set", AttributeValue::Ss(vec![replay_id.to_owned()])),
            ],
        )
        .await
    }

    async fn give_back_replay(
        &self,
        key: &str,
        owner: &str,
        error: &str,
        failed: bool,
    ) -> Result<Option<u32>, StoreError> {
        let update = if failed {
            "SET #status = :completed, last_error = :err, \
             failures = if_not_exists(failures, :zero) + :one REMOVE lease_until, lease_owner"
        } else {
            "SET #status = :completed, last_error = :err REMOVE lease_until, lease_owner"
        };
        let mut values = vec![
            (":completed", status(Status::Completed)),
            (":processing", status(Status::Processing)),
            (":me", s(owner)),
            (":err", s(error)),
        ];
        if failed {
            values.extend([(":zero", n(0)), (":one", n(1))]);
        }
        let updated = self
            .update_if(
                key,
                update,
                GIVE_BACK_REPLAY_CONDITION,
                values,
                ReturnValue::AllNew,
            )
            .await?;
        updated
            .map(|item| {
                let failures = item.get("failures").map(number).transpose()?.unwrap_or(0);
                Ok(u32::try_from(failures).unwrap_or(u32::MAX))
            })
            .transpose()
    }

    async fn complete(&self, key: &str, owner: &str, now_ms: i64) -> Result<bool, StoreError> {
        self.conditional_update(
            key,
            "SET #status = :completed, completed_at = :now_ms REMOVE lease_until, lease_owner",
            FINISH_CONDITION,
            vec![
                (":completed", status(Status::Completed)),
                (":processing", status(Status::Processing)),
                (":me", s(owner)),
                (":now_ms", n(now_ms)),
            ],
        )
        .await
    }

    async fn fail(
        &self,
        key: &str,
        owner: &str,
        error: &str,
        _now_ms: i64,
    ) -> Result<Option<u32>, StoreError> {
        let updated = self
            .update_if(
                key,
                "SET #status = :failed, last_error = :err, \
                 failures = if_not_exists(failures, :zero) + :one \
                 REMOVE lease_until, lease_owner",
                FINISH_CONDITION,
                vec![
                    (":failed", status(Status::Failed)),
                    (":processing", status(Status::Processing)),
                    (":me", s(owner)),
                    (":err", s(error)),
                    (":zero", n(0)),
                    (":one", n(1)),
                ],
                ReturnValue::UpdatedNew,
            )
            .await?;
        updated
            .map(|item| {
                let failures = item.get("failures").map(number).transpose()?.unwrap_or(1);
                Ok(u32::try_from(failures).unwrap_or(u32::MAX))
            })
            .transpose()
    }

    async fn defer(
        &self,
        key: &str,
        owner: &str,
        reason: &str,
        _now_ms: i64,
    ) -> Result<bool, StoreError> {
        self.conditional_update(
            key,
            "SET #status = :queued, last_error = :err REMOVE lease_until, lease_owner",
            DEFER_CONDITION,
            vec![
                (":queued", status(Status::Queued)),
                (":processing", status(Status::Processing)),
                (":me", s(owner)),
                (":err", s(reason)),
            ],
        )
        .await
    }

    async fn get(&self, key: &str) -> Result<Option<Record>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", Self::pk(key))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable)?;
        out.item().map(from_item).transpose()
    }
}

fn number(v: &AttributeValue) -> Result<i64, StoreError> {
    v.as_n()
        .ok()
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| StoreError::Corrupt(format!("expected a number, found {v:?}")))
}

/// Reads an item back into a [`Record`].
pub fn from_item(item: &Item) -> Result<Record, StoreError> {
    let text = |name: &str| -> Result<Option<String>, StoreError> {
        item.get(name)
            .map(|v| {
                v.as_s()
                    .cloned()
                    .map_err(|_| StoreError::Corrupt(format!("`{name}` is not a string")))
            })
            .transpose()
    };
    let num =
        |name: &str| -> Result<Option<i64>, StoreError> { item.get(name).map(number).transpose() };
    let required = |name: &str, v: Option<String>| {
        v.ok_or_else(|| StoreError::Corrupt(format!("item lacks `{name}`")))
    };
    let key = required("pk", text("pk")?)?;
    let status_text = required("status", text("status")?)?;
    let status = Status::parse(&status_text)
        .ok_or_else(|| StoreError::Corrupt(format!("unknown status `{status_text}`")))?;
    Ok(Record {
        source: text("source")?.unwrap_or_default(),
        status,
        expires_at: num("expires_at")?
            .ok_or_else(|| StoreError::Corrupt("item lacks `expires_at`".into()))?,
        lease_until: num("lease_until")?,
        lease_owner: text("lease_owner")?,
        payload_sha256: text("payload_sha256")?.unwrap_or_default(),
        response_status: num("response_status")?.and_then(|v| u16::try_from(v).ok()),
        response_body: text("response_body")?,
        attempts: num("attempts")?
            .and_then(|v| u32::try_from(v).ok())
            .unwrap_or(0),
        failures: num("failures")?
            .and_then(|v| u32::try_from(v).ok())
            .unwrap_or(0),
        last_error: text("last_error")?,
        received_at: num("received_at")?.unwrap_or(0),
        completed_at: num("completed_at")?,
        archived_at: num("archived_at")?,
        replays: string_set(item, "replays")?,
        replay_requests: string_set(item, "replay_requests")?,
        resent_by: text("resent_by")?,
        key,
    })
}

/// A string set attribute (absent: empty).
fn string_set(item: &Item, name: &str) -> Result<std::collections::BTreeSet<String>, StoreError> {
    match item.get(name) {
        None => Ok(Default::default()),
        Some(v) => Ok(v
            .as_ss()
            .map_err(|_| StoreError::Corrupt(format!("`{name}` is not a string set")))?
            .iter()
            .cloned()
            .collect()),
    }
}
