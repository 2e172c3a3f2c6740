//! The FIFO group rule, in one place: which group an event joins, how the consumer runs a
//! batch by group, and how a group or deduplication id is made one SQS accepts.
//!
//! **Which group.** Every event of a source joins the group its `group` setting names. By
//! default (`{"from": "key"}`) that is its own key: each event is a group of its own, so
//! nothing waits on anything else and order is kept only between deliveries of the same
//! event. With `{"from": "json", "pointers": [...]}` the group is `<source>:<values>` (the
//! values joined as a composite key's are), so the events of one customer, say, run one after
//! the other in the order they were accepted. Where such a pointer is absent from a body, or
//! the body is not JSON, the event's key serves: an event with no customer has no order to
//! keep with any other. The group's pointers are read in the same one pass over the body as
//! the key's ([`crate::key::fields`]), before the claim: a member appearing twice on a group
//! path is refused (`malformed_body`) like one on a key path.
//!
//! **How a batch runs.** The consumer splits a batch into its groups (`MessageGroupId`), each
//! in arrival order; a message without a group id (a standard queue) is a group of its own.
//! Groups run concurrently, bounded by `MAX_CONCURRENT_GROUPS`; within a group, one message at
//! a time. Once a message of a group fails, it and every later message of that group in the
//! batch are reported failed without running, so SQS hands them back in the same order; the
//! other groups go on.
//!
//! **SQS-safe ids.** SQS takes a `MessageGroupId` or `MessageDeduplicationId` of at most 128
//! characters of letters, digits and punctuation. An id that fits is used as it is; any other
//! becomes its SHA-256 (64 hex characters). The same value always gives the same id, so the
//! deduplication id of an event (its key) stays the operation, not the delivery.
//! [`crate::queue::Outgoing::new`] applies this to every message it builds.

use std::collections::HashMap;
use std::future::Future;

use aws_lambda_events::sqs::SqsMessage;
use tracing::info;

use crate::config::GroupSpec;
use crate::json_fields::Fields;
use crate::key::{join_parts, pointer_value, sha256_hex};

/// SQS's limit on `MessageDeduplicationId` and `MessageGroupId`.
pub const SQS_ID_MAX: usize = 128;

/// The group of an event: its key, or `<source>:<values>` where the source groups by values
/// from the body and the body (its [`crate::key::fields`]) holds them all.
pub fn group(key: &str, spec: &GroupSpec, source: &str, json: Option<&Fields>) -> String {
    match (spec, json) {
        (GroupSpec::Json(pointers), Some(json)) => {
            let parts: Result<Vec<_>, _> =
                pointers.iter().map(|p| pointer_value(json, p)).collect();
            match parts {
                Ok(parts) => format!("{source}:{}", join_parts(&parts)),
                Err(_) => key.to_owned(),
            }
        }
        _ => key.to_owned(),
    }
}

/// An id SQS accepts: the value itself where it is at most 128 characters of the allowed
/// set (letters, digits, punctuation), else its SHA-256 hex. Same input, same id, always.
pub fn sqs_id(value: &str) -> String {
    let fits = !value.is_empty()
        && value.len() <= SQS_ID_MAX
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b.is_ascii_punctuation());
    if fits {
        value.to_owned()
    } else {
        sha256_hex(value.as_bytes())
    }
}

/// The batch in the order to run it: groups of message indexes, each group in arrival order.
/// FIFO messages group by `MessageGroupId`; a message without one stands alone.
pub fn plan(messages: &[SqsMessage]) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    for (i, m) in messages.iter().enumerate() {
        match m.attributes.get("MessageGroupId") {
            Some(group) => match by_id.get(group.as_str()) {
                Some(&g) => groups[g].push(i),
                None => {
                    by_id.insert(group.as_str(), groups.len());
                    groups.push(vec![i]);
                }
            },
            None => groups.push(vec![i]),
        }
    }
    groups
}

/// Runs one group's messages in order with `run` (`true`: done, may be deleted) and returns
/// the indexes to report failed: the first failure and every later message of the group,
/// which do not run.
pub async fn run_in_order<F, Fut>(group: Vec<usize>, mut run: F) -> Vec<usize>
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = bool>,
{
    for (pos, &i) in group.iter().enumerate() {
        if !run(i).await {
            if group.len() > pos + 1 {
                info!(
                    skipped = group.len() - pos - 1,
                    "later messages of the group held back after a failure"
                );
            }
            return group[pos..].to_vec();
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::KeySpec;
    use crate::key::fields;

    fn msg(id: &str, group: Option<&str>) -> SqsMessage {
        let mut m = SqsMessage::default();
        m.message_id = Some(id.to_owned());
        if let Some(g) = group {
            m.attributes
                .insert("MessageGroupId".to_owned(), g.to_owned());
        }
        m
    }

    #[test]
    fn group_from_pointer_or_key() {
        let spec = GroupSpec::Json(vec!["/customer_id".into()]);
        let read = |body: &[u8]| fields(body, &KeySpec::PayloadSha256, &spec).unwrap();
        let body = read(br#"{"customer_id": "cus_1"}"#);
        assert_eq!(group("acme:k", &spec, "acme", Some(&body)), "acme:cus_1");
        assert_eq!(group("acme:k", &spec, "acme", Some(&read(b"{}"))), "acme:k");
        assert_eq!(group("acme:k", &spec, "acme", None), "acme:k");
        assert_eq!(
            group("acme:k", &GroupSpec::Key, "acme", Some(&body)),
            "acme:k"
        );
    }

    #[test]
    fn sqs_id_keeps_short_keys_and_hashes_the_rest() {
        assert_eq!(sqs_id("stripe:evt_1"), "stripe:evt_1");
        let long = format!("s:{}", "x".repeat(200));
        assert_eq!(sqs_id(&long), sha256_hex(long.as_bytes()));
        assert_eq!(sqs_id(&long).len(), 64);
        assert_eq!(sqs_id("s:caf\u{e9}"), sha256_hex("s:caf\u{e9}".as_bytes()));
        assert_eq!(sqs_id("s:a b"), sha256_hex(b"s:a b"));
        assert_eq!(sqs_id(&"k".repeat(128)), "k".repeat(128));
    }

    #[test]
    fn fifo_messages_group_in_arrival_order() {
        let batch = [
            msg("a1", Some("A")),
            msg("b1", Some("B")),
            msg("a2", Some("A")),
            msg("b2", Some("B")),
            msg("c1", Some("C")),
        ];
        assert_eq!(plan(&batch), vec![vec![0, 2], vec![1, 3], vec![4]]);
    }

    #[test]
    fn standard_queue_messages_stand_alone() {
        let batch = [msg("x", None), msg("y", None), msg("z", None)];
        assert_eq!(plan(&batch), vec![vec![0], vec![1], vec![2]]);
        assert!(plan(&[]).is_empty());
    }

    #[tokio::test]
    async fn a_failure_holds_back_the_rest_of_its_group() {
        let ran = std::sync::Mutex::new(Vec::new());
        let failed = run_in_order(vec![3, 5, 8, 9], |i| {
            ran.lock().unwrap().push(i);
            std::future::ready(i != 5)
        })
        .await;
        assert_eq!(failed, vec![5, 8, 9]);
        assert_eq!(
            *ran.lock().unwrap(),
            vec![3, 5],
            "nothing after the failure runs"
        );

        let failed = run_in_order(vec![1, 2], |_| std::future::ready(true)).await;
        assert!(failed.is_empty());
    }
}
