//! The ledger on DynamoDB: one table, partition key `pk` (a string), TTL on `expires_at`.
//! Every write is conditional, with the condition taken from [`super`], where each sits next
//! to the predicate the in-memory adapter evaluates. The writes go through the library's
//! conditional-write layer (`lambda_idempotency::dynamodb::Table`), and the claim, release,
//! take, complete and fail are the library's transitions with the ledger's attributes and
//! conditions added.

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use aws_sdk_dynamodb::Client;
use lambda_idempotency::dynamodb::{
    self as lib, claim_absent, holder, n, number, s, string, string_set, take_lease, Change, Item,
    Table, Update, Write, Written,
};

use super::{
    hook_secret_key, refused_replay_take, refused_take, take_condition, BodyGuard, Claim,
    ClaimOutcome, GuardOutcome, LedgerStore, Record, Status, StoreError, Take, TakeOutcome,
    GIVE_BACK_GUARD, GUARD_BODY_CONDITION, KEEP_HOOK_SECRET_CONDITION, MARK_RESENT_CONDITION,
    NOTE_REFUSAL_CONDITION, OPEN_HANDSHAKE_CONDITION, RELEASE_GUARD, REQUEST_REPLAY_CONDITION,
};

/// The ledger table, reached through the SDK client (region and endpoint from aws-config).
#[derive(Clone, Debug)]
pub struct DynamoLedger {
    table: Table,
}

fn status(st: Status) -> AttributeValue {
    s(st.as_str())
}

/// The count an update returned (`UPDATED_NEW`, `ALL_NEW`), `default` where it is absent.
fn count(written: Written, name: &str, default: i64) -> Result<Option<u32>, StoreError> {
    match written {
        Written::Done(item) => {
            let v = number(&item, name)?.unwrap_or(default);
            Ok(Some(u32::try_from(v).unwrap_or(u32::MAX)))
        }
        Written::Refused(_) => Ok(None),
    }
}

impl DynamoLedger {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            table: Table::new(client, table),
        }
    }

    pub fn table(&self) -> &str {
        self.table.name()
    }

    /// The write of a take (and of a replay's take) under `condition`: the library's lease
    /// ([`take_lease`]) and what a take adds (the attributes of an absent item filled in);
    /// `Ok(Ok(taken))`, or `Ok(Err(old item))` when the condition refused it.
    async fn take_if(
        &self,
        t: &Take,
        condition: &str,
        replay_id: Option<&str>,
    ) -> Result<Result<TakeOutcome, Option<Record>>, StoreError> {
        let mut change = take_lease(&t.lease(), condition)
            .set(
                "#source = if_not_exists(#source, :source), \
                 payload_sha256 = if_not_exists(payload_sha256, :sha), \
                 response_status = if_not_exists(response_status, :rs), \
                 response_body = if_not_exists(response_body, :rb)",
            )
            .name("#source", "source")
            .value(":source", s(&t.source))
            .value(":sha", s(&t.payload_sha256))
            .value(":rs", n(t.response_status))
            .value(":rb", s(&t.response_body))
            .returning(ReturnValue::UpdatedNew)
            .old_on_refusal();
        // Only an event's item is in the index of events (`Take::indexed`).
        if t.indexed() {
            change = change.set("received_at = if_not_exists(received_at, :now_ms)");
        }
        if let Some(at) = t.archived_at {
            change = change
                .set("archived_at = if_not_exists(archived_at, :archived)")
                .value(":archived", n(at));
        }
        // An ordinary take forgets a completion (it takes only a key that never completed, or
        // a forgotten one); a replay's take keeps it (TAKE_CONDITION, GIVE_BACK_REPLAY_CONDITION).
        // DynamoDB refuses a value the expressions do not use: the statuses only the take's
        // condition names, the replay id only the replay's.
        change = match replay_id {
            Some(rid) => change.value(":rid", s(rid)),
            None => change
                .remove("completed_at")
                .value(":received", status(Status::Received))
                .value(":queued", status(Status::Queued))
                .value(":failed", status(Status::Failed)),
        };
        match self.table.change(&t.key, change).await? {
            Written::Done(item) => {
                let attempts = number(&item, "attempts")?.unwrap_or(1);
                Ok(Ok(TakeOutcome::Taken {
                    attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
                }))
            }
            Written::Refused(old) => Ok(Err(old.as_ref().map(from_item).transpose()?)),
        }
    }

    /// A put of an item of its own (the body guard, a hook secret's) under `condition`:
    /// whether it was made.
    async fn put(&self, item: Item, write: Write) -> Result<bool, StoreError> {
        Ok(self.table.put_if(item, write).await?.done())
    }
}

fn item<const N: usize>(attributes: [(&str, AttributeValue); N]) -> Item {
    attributes
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
}

impl LedgerStore for DynamoLedger {
    async fn note_refusal(&self, key: &str, reason: &str, now_ms: i64) -> Result<bool, StoreError> {
        let write = Write::new(NOTE_REFUSAL_CONDITION)
            .value(":err", s(reason))
            .value(":now_s", n(now_ms.div_euclid(1000)));
        let written = self
            .table
            .update_if(key, "SET last_error = :err", write)
            .await?;
        Ok(written.done())
    }

    async fn guard_body(&self, g: &BodyGuard, now_ms: i64) -> Result<GuardOutcome, StoreError> {
        let guard = item([
            ("pk", s(&g.key)),
            ("event_key", s(&g.event_key)),
            ("expires_at", n(g.expires_at)),
        ]);
        let write = Write::new(GUARD_BODY_CONDITION)
            .value(":now_s", n(now_ms.div_euclid(1000)))
            .value(":event_key", s(&g.event_key));
        Ok(match self.put(guard, write).await? {
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
        let kept = item([
            ("pk", s(hook_secret_key(source))),
            ("source", s(source)),
            ("secret", s(secret)),
            ("kept_at", n(now_ms)),
        ]);
        let write =
            Write::new(KEEP_HOOK_SECRET_CONDITION).value(":now_s", n(now_ms.div_euclid(1000)));
        self.put(kept, write).await
    }

    async fn open_handshake(&self, source: &str, until_s: i64) -> Result<bool, StoreError> {
        let window = item([
            ("pk", s(hook_secret_key(source))),
            ("source", s(source)),
            ("open_until", n(until_s)),
            ("expires_at", n(until_s)),
        ]);
        self.put(window, Write::new(OPEN_HANDSHAKE_CONDITION)).await
    }

    async fn hook_secret(&self, source: &str) -> Result<Option<String>, StoreError> {
        let found = self.table.get(&hook_secret_key(source)).await?;
        Ok(found
            .as_ref()
            .and_then(|item| item.get("secret"))
            .and_then(|v| v.as_s().ok())
            .cloned())
    }

    /// The library's claim that takes nothing over: a PutItem of the whole item, RECEIVED,
    /// under `CLAIM_CONDITION`, the old item returned on a refusal.
    async fn claim(&self, c: &Claim) -> Result<ClaimOutcome, StoreError> {
        let mut claimed = item([
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
        ]);
        if let Some(event_type) = &c.event_type {
            claimed.insert("event_type".to_owned(), s(event_type));
        }
        if let Some(trace_id) = &c.trace_id {
            claimed.insert("trace_id".to_owned(), s(trace_id));
        }
        // An answer with no body (a 204) stores none: a duplicate finds no body and gives the
        // source's answer again, which is that same 204.
        if c.response_body.is_empty() {
            claimed.remove("response_body");
        }
        match self.table.put_if(claimed, claim_absent(c.now_ms)).await? {
            Written::Done(_) => Ok(ClaimOutcome::Claimed),
            Written::Refused(Some(old)) => Ok(ClaimOutcome::Exists(Box::new(from_item(&old)?))),
            // Gone between the refusal and the read: the sender's retry will claim it.
            Written::Refused(None) => Err(StoreError::Unavailable("claimed item vanished".into())),
        }
    }

    /// The library's release of a RECEIVED claim, and [`RELEASE_GUARD`].
    async fn release(&self, key: &str, owner: &str, now_ms: i64) -> Result<bool, StoreError> {
        let write = holder(owner, Status::Received.as_str())
            .and(RELEASE_GUARD)
            .value(":now_ms", n(now_ms));
        Ok(self.table.delete_if(key, write).await?.done())
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
        let write = Write::new(MARK_RESENT_CONDITION)
            .name("#status", "status")
            .value(":received", status(Status::Received))
            .value(":me", s(owner))
            .value(":sha", s(payload_sha256))
            .value(":now_s", n(now_ms.div_euclid(1000)))
            .old_on_refusal();
        match self
            .table
            .update_if(key, "SET resent_by = :me", write)
            .await?
        {
            Written::Done(_) => Ok(None),
            Written::Refused(old) => Ok(Some(old.as_ref().map(from_item).transpose()?)),
        }
    }

    async fn request_replay(
        &self,
        key: &str,
        payload_sha256: &str,
        replay_id: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let write = Write::new(REQUEST_REPLAY_CONDITION.as_str())
            .value(":sha", s(payload_sha256))
            .value(":now_s", n(now_ms.div_euclid(1000)))
            .value(":rid_set", AttributeValue::Ss(vec![replay_id.to_owned()]));
        let written = self
            .table
            .update_if(key, "ADD replay_requests :rid_set", write)
            .await?;
        Ok(written.done())
    }

    /// The library's complete, and the replay id added to `replays`.
    async fn complete_replay(
        &self,
        key: &str,
        owner: &str,
        replay_id: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let change = lib::complete(owner, now_ms)
            .add_to("replays :rid_set")
            .value(":rid_set", AttributeValue::Ss(vec![replay_id.to_owned()]));
        Ok(self.table.change(key, change).await?.done())
    }

    async fn give_back_replay(
        &self,
        key: &str,
        owner: &str,
        error: &str,
        failed: bool,
    ) -> Result<Option<u32>, StoreError> {
        let mut change = Change {
            update: Update::default()
                .set("#status = :completed, last_error = :err")
                .remove("lease_until, lease_owner"),
            write: holder(owner, Status::Processing.as_str())
                .and(GIVE_BACK_GUARD)
                .value(":completed", status(Status::Completed))
                .value(":err", s(error))
                .returning(ReturnValue::AllNew),
        };
        if failed {
            change = change
                .set("failures = if_not_exists(failures, :zero) + :one")
                .value(":zero", n(0))
                .value(":one", n(1));
        }
        count(self.table.change(key, change).await?, "failures", 0)
    }

    /// The library's complete.
    async fn complete(&self, key: &str, owner: &str, now_ms: i64) -> Result<bool, StoreError> {
        let change = lib::complete(owner, now_ms);
        Ok(self.table.change(key, change).await?.done())
    }

    /// The library's fail, and `failures` counted, the owner removed.
    async fn fail(
        &self,
        key: &str,
        owner: &str,
        error: &str,
        _now_ms: i64,
    ) -> Result<Option<u32>, StoreError> {
        let change = lib::fail(owner, error)
            .set("failures = if_not_exists(failures, :zero) + :one")
            .remove("lease_owner")
            .value(":zero", n(0))
            .value(":one", n(1))
            .returning(ReturnValue::UpdatedNew);
        count(self.table.change(key, change).await?, "failures", 1)
    }

    async fn defer(
        &self,
        key: &str,
        owner: &str,
        reason: &str,
        _now_ms: i64,
    ) -> Result<bool, StoreError> {
        let change = Change {
            update: Update::default()
                .set("#status = :queued, last_error = :err")
                .remove("lease_until, lease_owner"),
            write: holder(owner, Status::Processing.as_str())
                .value(":queued", status(Status::Queued))
                .value(":err", s(reason)),
        };
        Ok(self.table.change(key, change).await?.done())
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

/// Reads an item back into a [`Record`].
pub fn from_item(item: &Item) -> Result<Record, StoreError> {
    let text = |name: &str| string(item, name);
    let num = |name: &str| number(item, name);
    let key = lib::required(text("pk")?, "pk")?;
    let status_text = lib::required(text("status")?, "status")?;
    let status = Status::parse(&status_text)
        .ok_or_else(|| StoreError::Corrupt(format!("unknown status `{status_text}`")))?;
    Ok(Record {
        source: text("source")?.unwrap_or_default(),
        status,
        expires_at: lib::required(num("expires_at")?, "expires_at")?,
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
