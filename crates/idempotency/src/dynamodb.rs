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
//!
//! # The conditional-write layer
//!
//! [`DynamoStore`] is built on [`Table`], public for a layer on top of this library whose
//! items hold more than a [`Record`]: one [`Table::update_if`], [`Table::put_if`] and
//! [`Table::delete_if`], each a [`Write`] (the condition, its names and values) in and a
//! [`Written`] out; a refusal is an outcome, not an error, and carries the old item where the
//! write asked for it ([`Write::old_on_refusal`]: `ReturnValuesOnConditionCheckFailure=ALL_OLD`,
//! one consistent read standing in where a server leaves it out). The shared transitions of
//! [`crate::machine`] are [`Change`]s ([`take_lease`], [`complete`], [`fail`]) and
//! [`Write`]s ([`holder`], [`claim_absent`]) that such a layer extends with its own
//! attributes and conditions before sending them.

use std::collections::{BTreeSet, HashMap};

use aws_sdk_dynamodb::error::{DisplayErrorContext, SdkError};
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};
use aws_sdk_dynamodb::Client;

use crate::machine::{
    gone, Claim, ClaimOutcome, Record, Status, ABSENT_CONDITION, CLAIM_CONDITION, CLAIM_UPDATE,
    HOLDER_CONDITION, LEASE_SET,
};
use crate::store::{Store, StoreError};

/// A DynamoDB item: attribute name to value.
pub type Item = HashMap<String, AttributeValue>;

/// The partition key's attribute name.
pub const PK: &str = "pk";

/// A string attribute value.
pub fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

/// A number attribute value.
pub fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn unavailable<E, R>(err: SdkError<E, R>) -> StoreError
where
    E: std::error::Error + 'static,
    R: std::fmt::Debug,
{
    StoreError::Unavailable(DisplayErrorContext(err).to_string())
}

/// One conditional write's condition, the `#name`s and `:value`s its expressions use, what it
/// returns when made, and whether a refusal returns the old item. DynamoDB refuses a name or a
/// value no expression uses: add only those the write's expressions name.
#[derive(Clone, Debug, Default)]
pub struct Write {
    condition: String,
    names: HashMap<String, String>,
    values: Item,
    returning: Option<ReturnValue>,
    old_on_refusal: bool,
}

impl Write {
    /// A write under `condition`.
    pub fn new(condition: impl Into<String>) -> Write {
        Write {
            condition: condition.into(),
            ..Write::default()
        }
    }

    /// The condition and `conjunct`, both of which must hold (`conjunct` parenthesised where
    /// it holds an `OR`).
    pub fn and(mut self, conjunct: &str) -> Write {
        self.condition = format!("{} AND {conjunct}", self.condition);
        self
    }

    /// `#placeholder` stands for `attribute`.
    pub fn name(mut self, placeholder: &str, attribute: &str) -> Write {
        self.names
            .insert(placeholder.to_owned(), attribute.to_owned());
        self
    }

    /// `:placeholder` is `value`.
    pub fn value(mut self, placeholder: &str, value: AttributeValue) -> Write {
        self.values.insert(placeholder.to_owned(), value);
        self
    }

    /// What a write that was made returns ([`Written::Done`]); nothing by default.
    pub fn returning(mut self, returning: ReturnValue) -> Write {
        self.returning = Some(returning);
        self
    }

    /// A refusal returns the item as it was (`ALL_OLD`, [`Written::Refused`]); where the
    /// server leaves it out, one consistent read stands in. Nothing by default: a refusal
    /// then costs no read.
    pub fn old_on_refusal(mut self) -> Write {
        self.old_on_refusal = true;
        self
    }

    /// The condition expression.
    pub fn condition(&self) -> &str {
        &self.condition
    }

    fn names(&self) -> Option<HashMap<String, String>> {
        Some(self.names.clone()).filter(|m| !m.is_empty())
    }

    fn values(&self) -> Option<Item> {
        Some(self.values.clone()).filter(|m| !m.is_empty())
    }

    fn on_refusal(&self) -> ReturnValuesOnConditionCheckFailure {
        if self.old_on_refusal {
            ReturnValuesOnConditionCheckFailure::AllOld
        } else {
            ReturnValuesOnConditionCheckFailure::None
        }
    }
}

/// An update expression in parts: `SET` clauses, `REMOVE`d attributes, `ADD` clauses.
#[derive(Clone, Debug, Default)]
pub struct Update {
    set: Vec<String>,
    remove: Vec<String>,
    add: Vec<String>,
}

impl Update {
    /// `SET` clauses (`a = :a, b = :b`).
    pub fn set(mut self, clauses: &str) -> Update {
        self.set.push(clauses.to_owned());
        self
    }

    /// `REMOVE`d attributes (`a, b`).
    pub fn remove(mut self, attributes: &str) -> Update {
        self.remove.push(attributes.to_owned());
        self
    }

    /// `ADD` clauses (`a :a`: adds to a number or a set).
    pub fn add_to(mut self, clauses: &str) -> Update {
        self.add.push(clauses.to_owned());
        self
    }

    /// The update expression.
    pub fn expression(&self) -> String {
        let mut parts = Vec::new();
        for (verb, clauses) in [
            ("SET", &self.set),
            ("REMOVE", &self.remove),
            ("ADD", &self.add),
        ] {
            if !clauses.is_empty() {
                parts.push(format!("{verb} {}", clauses.join(", ")));
            }
        }
        parts.join(" ")
    }
}

/// A conditional `UpdateItem`: its [`Update`] and its [`Write`]. The shared transitions are
/// `Change`s ([`take_lease`], [`complete`], [`fail`]); a layer on top adds what it writes and
/// requires beside them, then sends it with [`Table::change`].
#[derive(Clone, Debug, Default)]
pub struct Change {
    /// What it writes.
    pub update: Update,
    /// Under which condition, with which names and values.
    pub write: Write,
}

impl Change {
    /// More `SET` clauses.
    pub fn set(mut self, clauses: &str) -> Change {
        self.update = self.update.set(clauses);
        self
    }

    /// More `REMOVE`d attributes.
    pub fn remove(mut self, attributes: &str) -> Change {
        self.update = self.update.remove(attributes);
        self
    }

    /// An `ADD` clause (adds to a number or a set).
    pub fn add_to(mut self, clauses: &str) -> Change {
        self.update = self.update.add_to(clauses);
        self
    }

    /// A further condition ([`Write::and`]).
    pub fn and(mut self, conjunct: &str) -> Change {
        self.write = self.write.and(conjunct);
        self
    }

    /// A `#name` ([`Write::name`]).
    pub fn name(mut self, placeholder: &str, attribute: &str) -> Change {
        self.write = self.write.name(placeholder, attribute);
        self
    }

    /// A `:value` ([`Write::value`]).
    pub fn value(mut self, placeholder: &str, value: AttributeValue) -> Change {
        self.write = self.write.value(placeholder, value);
        self
    }

    /// What it returns when made ([`Write::returning`]).
    pub fn returning(mut self, returning: ReturnValue) -> Change {
        self.write = self.write.returning(returning);
        self
    }

    /// A refusal returns the old item ([`Write::old_on_refusal`]).
    pub fn old_on_refusal(mut self) -> Change {
        self.write = self.write.old_on_refusal();
        self
    }
}

/// What a conditional write did.
#[derive(Clone, Debug, PartialEq)]
pub enum Written {
    /// Made: the attributes its [`Write::returning`] asked for (none by default).
    Done(Item),
    /// Its condition refused it: the item as it was where [`Write::old_on_refusal`] asked for
    /// it (`None`: absent, or not asked for).
    Refused(Option<Item>),
}

impl Written {
    /// Whether the write was made.
    pub fn done(&self) -> bool {
        matches!(self, Written::Done(_))
    }
}

/// Sends one conditional write (`UpdateItem`, `PutItem`, `DeleteItem`: three builder types
/// with the same methods) with `$write`'s expressions, and reads its answer as [`Written`].
macro_rules! send_if {
    ($table:expr, $request:expr, $write:expr, $key:expr, $error:ident) => {{
        let write = $write;
        let request = $request
            .condition_expression(write.condition())
            .set_expression_attribute_names(write.names())
            .set_expression_attribute_values(write.values())
            .set_return_values(write.returning.clone())
            .return_values_on_condition_check_failure(write.on_refusal());
        // Boxed: the SDK's future is deeply nested, and a caller's future holding it inline
        // (a handler closure around `sqs::process_batch`) overflows the compiler's query
        // depth limit when its layout is computed.
        let result = Box::pin(request.send()).await;
        match result {
            Ok(out) => Ok(Written::Done(out.attributes.unwrap_or_default())),
            Err(err) => match err.as_service_error() {
                Some($error::ConditionalCheckFailedException(e)) => {
                    $table.refused($key, &write, e.item()).await
                }
                _ => Err(unavailable(err)),
            },
        }
    }};
}

/// A table with partition key [`PK`] (a string), through an SDK client: the conditional
/// writes every transition is made of. Cloning shares the client.
#[derive(Clone, Debug)]
pub struct Table {
    client: Client,
    name: String,
}

impl Table {
    /// The table `name` through `client`.
    pub fn new(client: Client, name: impl Into<String>) -> Table {
        Table {
            client,
            name: name.into(),
        }
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The SDK client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// One `UpdateItem` of `key` under `write`.
    pub async fn update_if(
        &self,
        key: &str,
        update: &str,
        write: Write,
    ) -> Result<Written, StoreError> {
        let request = self
            .client
            .update_item()
            .table_name(&self.name)
            .key(PK, s(key))
            .update_expression(update);
        send_if!(self, request, write, key, UpdateItemError)
    }

    /// One `UpdateItem` of `key`: [`Change`]'s update under its write.
    pub async fn change(&self, key: &str, change: Change) -> Result<Written, StoreError> {
        self.update_if(key, &change.update.expression(), change.write)
            .await
    }

    /// One `PutItem` of `item` (which holds its [`PK`]) under `write`.
    pub async fn put_if(&self, item: Item, write: Write) -> Result<Written, StoreError> {
        let key = match item.get(PK) {
            Some(AttributeValue::S(key)) => key.clone(),
            _ => {
                return Err(StoreError::Corrupt(format!(
                    "an item to put has no string {PK}"
                )))
            }
        };
        let request = self
            .client
            .put_item()
            .table_name(&self.name)
            .set_item(Some(item));
        send_if!(self, request, write, &key, PutItemError)
    }

    /// One `DeleteItem` of `key` under `write`.
    pub async fn delete_if(&self, key: &str, write: Write) -> Result<Written, StoreError> {
        let request = self
            .client
            .delete_item()
            .table_name(&self.name)
            .key(PK, s(key));
        send_if!(self, request, write, key, DeleteItemError)
    }

    /// A consistent `GetItem` of `key`.
    pub async fn get(&self, key: &str) -> Result<Option<Item>, StoreError> {
        let request = self
            .client
            .get_item()
            .table_name(&self.name)
            .key(PK, s(key))
            .consistent_read(true);
        // Boxed, as in `send_if!`: the SDK's future is deeply nested.
        let out = Box::pin(request.send()).await.map_err(unavailable)?;
        Ok(out.item)
    }

    /// A refusal: the old item where the write asked for it, carried (`ALL_OLD`) or read.
    async fn refused(
        &self,
        key: &str,
        write: &Write,
        carried: Option<&Item>,
    ) -> Result<Written, StoreError> {
        if !write.old_on_refusal {
            return Ok(Written::Refused(None));
        }
        let old = match carried {
            Some(item) => Some(item.clone()),
            None => self.get(key).await?,
        };
        Ok(Written::Refused(old))
    }
}

/// The write of a claim that takes nothing over ([`crate::machine::Takeover::Never`]): a
/// `PutItem` of the whole item under [`ABSENT_CONDITION`], the old item returned on a
/// refusal. Nothing of an absent or expired item is kept, so the claim writes all of it.
pub fn claim_absent(now_ms: i64) -> Write {
    Write::new(ABSENT_CONDITION)
        .value(":now_s", n(now_ms.div_euclid(1000)))
        .old_on_refusal()
}

/// The caller's own claim, its status `held` ([`HOLDER_CONDITION`]): what ends a lease
/// requires. Release is a [`Table::delete_if`] under it.
pub fn holder(owner: &str, held: &str) -> Write {
    Write::new(HOLDER_CONDITION)
        .name("#status", "status")
        .value(":held", s(held))
        .value(":me", s(owner))
}

/// Taking `claim`'s lease ([`LEASE_SET`]) under `condition`, which the caller gives (with the
/// values it names beyond `:processing`, `:me`, `:now_s`, `:now_ms`) and may extend; the
/// `attempts` it counted come back with [`ReturnValue::UpdatedNew`] where asked.
pub fn take_lease(claim: &Claim, condition: &str) -> Change {
    Change {
        update: Update::default().set(LEASE_SET),
        write: Write::new(condition)
            .name("#status", "status")
            .value(":processing", s(Status::Processing.as_str()))
            .value(":lease", n(claim.lease_until_ms))
            .value(":me", s(&claim.owner))
            .value(":exp", n(claim.expires_at))
            .value(":zero", n(0))
            .value(":one", n(1))
            .value(":now_s", n(claim.now_ms.div_euclid(1000)))
            .value(":now_ms", n(claim.now_ms)),
    }
}

/// Complete ([`crate::machine::COMPLETE_UPDATE`] under [`HOLDER_CONDITION`], `:held` PROCESSING): this
/// library's own complete adds `#result = :result`.
pub fn complete(owner: &str, now_ms: i64) -> Change {
    Change {
        update: Update::default()
            .set("#status = :completed, completed_at = :now_ms")
            .remove("lease_until, lease_owner"),
        write: holder(owner, Status::Processing.as_str())
            .value(":completed", s(Status::Completed.as_str()))
            .value(":now_ms", n(now_ms)),
    }
}

/// Fail ([`crate::machine::FAIL_UPDATE`] under [`HOLDER_CONDITION`], `:held` PROCESSING).
pub fn fail(owner: &str, error: &str) -> Change {
    Change {
        update: Update::default()
            .set("#status = :failed, last_error = :error")
            .remove("lease_until"),
        write: holder(owner, Status::Processing.as_str())
            .value(":failed", s(Status::Failed.as_str()))
            .value(":error", s(error)),
    }
}

/// The records in a DynamoDB table, through an SDK client. Cloning shares the client.
#[derive(Clone, Debug)]
pub struct DynamoStore {
    table: Table,
}

impl DynamoStore {
    /// The store on `table` through `client`.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        DynamoStore {
            table: Table::new(client, table),
        }
    }

    /// The table's name.
    pub fn table(&self) -> &str {
        self.table.name()
    }
}

impl Store for DynamoStore {
    /// The claim: one UpdateItem, [`CLAIM_UPDATE`] under [`CLAIM_CONDITION`], with `ALL_OLD`:
    /// the old record comes back in the same call when the condition refuses it. Where the
    /// server leaves it out (some emulators), one consistent read stands in; nothing is
    /// written after it.
    async fn claim(&self, claim: &Claim) -> Result<ClaimOutcome, StoreError> {
        let write = take_lease(claim, CLAIM_CONDITION)
            .write
            .name("#result", "result")
            .value(":sha", s(&claim.payload_sha256))
            .value(":failed", s(Status::Failed.as_str()))
            .old_on_refusal();
        match self
            .table
            .update_if(&claim.key, CLAIM_UPDATE, write)
            .await?
        {
            Written::Done(_) => Ok(ClaimOutcome::Claimed),
            Written::Refused(old) => {
                let old = match old {
                    Some(item) => from_item(&item)?,
                    None => gone(&claim.key, claim.now_ms),
                };
                Ok(ClaimOutcome::Exists(Box::new(old)))
            }
        }
    }

    async fn complete(
        &self,
        key: &str,
        owner: &str,
        result: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let change = complete(owner, now_ms)
            .set("#result = :result")
            .name("#result", "result")
            .value(":result", s(result));
        Ok(self.table.change(key, change).await?.done())
    }

    async fn release(&self, key: &str, owner: &str) -> Result<bool, StoreError> {
        let write = holder(owner, Status::Processing.as_str());
        Ok(self.table.delete_if(key, write).await?.done())
    }

    async fn fail(
        &self,
        key: &str,
        owner: &str,
        error: &str,
        _now_ms: i64,
    ) -> Result<bool, StoreError> {
        Ok(self.table.change(key, fail(owner, error)).await?.done())
    }

    async fn get(&self, key: &str) -> Result<Option<Record>, StoreError> {
        self.table
            .get(key)
            .await?
            .as_ref()
            .map(from_item)
            .transpose()
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

/// A string attribute, if present; of another type [`StoreError::Corrupt`].
pub fn string(item: &Item, name: &str) -> Result<Option<String>, StoreError> {
    match item.get(name) {
        None => Ok(None),
        Some(AttributeValue::S(v)) => Ok(Some(v.clone())),
        Some(_) => Err(StoreError::Corrupt(format!("{name} is not a string"))),
    }
}

/// An integer attribute, if present; of another type, or not an integer,
/// [`StoreError::Corrupt`].
pub fn number(item: &Item, name: &str) -> Result<Option<i64>, StoreError> {
    match item.get(name) {
        None => Ok(None),
        Some(AttributeValue::N(v)) => v
            .parse()
            .map(Some)
            .map_err(|_| StoreError::Corrupt(format!("{name} is not an integer: {v}"))),
        Some(_) => Err(StoreError::Corrupt(format!("{name} is not a number"))),
    }
}

/// A required attribute: absent is [`StoreError::Corrupt`].
pub fn required<T>(value: Option<T>, name: &str) -> Result<T, StoreError> {
    value.ok_or_else(|| StoreError::Corrupt(format!("{name} is missing")))
}

/// A string set attribute (absent: empty); of another type [`StoreError::Corrupt`].
pub fn string_set(item: &Item, name: &str) -> Result<BTreeSet<String>, StoreError> {
    match item.get(name) {
        None => Ok(BTreeSet::new()),
        Some(AttributeValue::Ss(v)) => Ok(v.iter().cloned().collect()),
        Some(_) => Err(StoreError::Corrupt(format!("{name} is not a string set"))),
    }
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
    fn the_shared_updates_are_the_machines_constants() {
        use crate::machine::{COMPLETE_UPDATE, FAIL_UPDATE};
        assert_eq!(complete("me", 1).update.expression(), COMPLETE_UPDATE);
        assert_eq!(fail("me", "e").update.expression(), FAIL_UPDATE);
        assert_eq!(
            take_lease(&claim(), "c").update.expression(),
            format!("SET {LEASE_SET}")
        );
        assert_eq!(
            CLAIM_UPDATE,
            take_lease(&claim(), "c")
                .set("payload_sha256 = :sha, received_at = if_not_exists(received_at, :now_ms)")
                .remove("#result, last_error, completed_at")
                .update
                .expression()
        );
        assert_eq!(
            Update::default()
                .add_to("s :s")
                .remove("a")
                .set("b = :b")
                .expression(),
            "SET b = :b REMOVE a ADD s :s"
        );
    }

    fn claim() -> Claim {
        Claim {
            key: "k".into(),
            owner: "me".into(),
            payload_sha256: "ab".into(),
            now_ms: 1_700_000_000_000,
            lease_until_ms: 1_700_000_030_000,
            expires_at: 1_700_003_600,
        }
    }

    #[test]
    fn a_written_condition_keeps_its_conjuncts_in_order() {
        let w = holder("me", "RECEIVED").and("lease_until >= :now_ms");
        assert_eq!(
            w.condition(),
            "#status = :held AND lease_owner = :me AND lease_until >= :now_ms"
        );
        assert_eq!(w.values().map(|v| v.len()), Some(2));
        assert_eq!(Write::new("x").values(), None);
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
