//! Sending the events of one request together (docs/design.md §14): SendMessageBatch calls of
//! at most 10 entries and 1 MiB, calls sharing no FIFO group at once, calls linked by a group
//! one after another in order.

use super::{Outgoing, Queue, QueueError, SqsQueue, SQS_MAX_MESSAGE_BYTES};

/// SendMessageBatch's limits: 10 entries, 1 MiB for the whole request.
pub const SEND_BATCH_ENTRIES: usize = 10;
pub const SEND_BATCH_BYTES: usize = SQS_MAX_MESSAGE_BYTES;

/// The messages cut into calls of at most `entries` messages and `bytes` of bodies, in order,
/// and the calls into runs that must go one after another: calls that share no FIFO group
/// with any other call are runs of their own (sent at once); calls linked by a group form one
/// run, in order. Each call is a list of indices into `msgs`.
pub fn group_runs(msgs: &[Outgoing], entries: usize, bytes: usize) -> Vec<Vec<Vec<usize>>> {
    let mut calls: Vec<Vec<usize>> = Vec::new();
    let mut size = 0usize;
    for (i, m) in msgs.iter().enumerate() {
        let len = m.body.len();
        match calls.last_mut() {
            Some(call) if call.len() < entries && size + len <= bytes => {
                call.push(i);
                size += len;
            }
            _ => {
                calls.push(vec![i]);
                size = len;
            }
        }
    }
    // Union the calls that share a group (a group's messages must keep their order).
    let mut run_of: Vec<usize> = (0..calls.len()).collect();
    let mut first_call: std::collections::HashMap<&str, usize> = Default::default();
    for (c, call) in calls.iter().enumerate() {
        for &i in call {
            let g = msgs[i].group_id.as_str();
            match first_call.get(g) {
                Some(&earlier) => {
                    let (a, b) = (find(&mut run_of, earlier), find(&mut run_of, c));
                    run_of[b.max(a)] = a.min(b);
                }
                None => {
                    first_call.insert(g, c);
                }
            }
        }
    }
    let mut runs: Vec<Vec<Vec<usize>>> = Vec::new();
    let mut index_of_root: std::collections::HashMap<usize, usize> = Default::default();
    for (c, call) in calls.into_iter().enumerate() {
        let root = find(&mut run_of, c);
        let at = *index_of_root.entry(root).or_insert_with(|| {
            runs.push(Vec::new());
            runs.len() - 1
        });
        runs[at].push(call);
    }
    runs
}

fn find(parent: &mut [usize], mut x: usize) -> usize {
    while parent[x] != x {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    x
}

/// [`Queue::send_batch`] by [`Queue::send`]: each message alone, concurrently, a group's
/// messages one after another in order.
pub(super) async fn one_by_one<Q: Queue + ?Sized>(
    queue: &Q,
    msgs: Vec<Outgoing>,
) -> Vec<Result<(), QueueError>> {
    let n = msgs.len();
    let runs = group_runs(&msgs, 1, usize::MAX);
    let mut slots: Vec<Option<Outgoing>> = msgs.into_iter().map(Some).collect();
    let runs: Vec<Vec<(usize, Outgoing)>> = runs
        .into_iter()
        .map(|run| {
            run.into_iter()
                .flatten()
                .filter_map(|i| slots[i].take().map(|m| (i, m)))
                .collect()
        })
        .collect();
    let done = futures::future::join_all(runs.into_iter().map(|run| async move {
        let mut out = Vec::with_capacity(run.len());
        for (i, msg) in run {
            out.push((i, queue.send(msg).await));
        }
        out
    }))
    .await;
    gather(n, done)
}

/// Each message's result in its place; one the runs did not report, an error.
fn gather(
    n: usize,
    done: Vec<Vec<(usize, Result<(), QueueError>)>>,
) -> Vec<Result<(), QueueError>> {
    let mut results: Vec<Result<(), QueueError>> = vec![Err(QueueError("not sent".to_owned())); n];
    for (i, r) in done.into_iter().flatten() {
        results[i] = r;
    }
    results
}

impl SqsQueue {
    /// SendMessageBatch, 10 entries and 1 MiB a call; calls sharing no group at once, calls
    /// linked by a group one after another. An entry SQS lists as failed, or every entry of
    /// a call that failed, is that message's error.
    pub(super) async fn send_calls(&self, msgs: Vec<Outgoing>) -> Vec<Result<(), QueueError>> {
        let runs = group_runs(&msgs, SEND_BATCH_ENTRIES, SEND_BATCH_BYTES);
        let msgs = &msgs;
        let done = futures::future::join_all(runs.into_iter().map(|run| async move {
            let mut out = Vec::new();
            for call in run {
                out.extend(self.send_call(msgs, &call).await);
            }
            out
        }))
        .await;
        gather(msgs.len(), done)
    }

    /// One SendMessageBatch of `msgs[call]`; entry ids are the indices.
    pub(super) async fn send_call(
        &self,
        msgs: &[Outgoing],
        call: &[usize],
    ) -> Vec<(usize, Result<(), QueueError>)> {
        use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
        let entries: Result<Vec<_>, _> = call
            .iter()
            .map(|&i| {
                let msg = &msgs[i];
                let mut e = SendMessageBatchRequestEntry::builder()
                    .id(i.to_string())
                    .message_body(msg.body.clone());
                if self.fifo {
                    e = e
                        .message_group_id(msg.group_id.clone())
                        .message_deduplication_id(msg.dedup_id.clone());
                }
                if let Some(header) = aws_trace_header(msg.trace_header.as_deref()) {
                    e = e.message_system_attributes(
                        aws_sdk_sqs::types::MessageSystemAttributeNameForSends::AwsTraceHeader,
                        header,
                    );
                }
                e.build()
            })
            .collect();
        let failed_all = |why: String| {
            call.iter()
                .map(|&i| (i, Err(QueueError(why.clone()))))
                .collect::<Vec<_>>()
        };
        let entries = match entries {
            Ok(entries) => entries,
            Err(e) => return failed_all(e.to_string()),
        };
        let out = match self
            .client
            .send_message_batch()
            .queue_url(&self.url)
            .set_entries(Some(entries))
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) => return failed_all(aws_sdk_sqs::error::DisplayErrorContext(e).to_string()),
        };
        let failed: std::collections::HashMap<String, String> = out
            .failed()
            .iter()
            .map(|f| {
                (
                    f.id().to_owned(),
                    format!("{}: {}", f.code(), f.message().unwrap_or_default()),
                )
            })
            .collect();
        let succeeded: std::collections::HashSet<&str> =
            out.successful().iter().map(|s| s.id()).collect();
        call.iter()
            .map(|&i| {
                let id = i.to_string();
                let r = match failed.get(&id) {
                    Some(why) => Err(QueueError(why.clone())),
                    None if succeeded.contains(id.as_str()) => Ok(()),
                    None => Err(QueueError("not in SendMessageBatch's answer".to_owned())),
                };
                (i, r)
            })
            .collect()
    }
}

/// The `AWSTraceHeader` system attribute of a message carrying `header` (X-Ray's form of its
/// trace context; docs/operations.md, "Traces"): the receiver's sends and an SQS destination's.
pub(crate) fn aws_trace_header(
    header: Option<&str>,
) -> Option<aws_sdk_sqs::types::MessageSystemAttributeValue> {
    aws_sdk_sqs::types::MessageSystemAttributeValue::builder()
        .data_type("String")
        .string_value(header?)
        .build()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_batch_calls_hold_10_entries_and_1_mib_and_a_shared_group_links_them_in_order() {
        let msg = |group: &str, len: usize| Outgoing::new(group, group, "x".repeat(len));
        // 25 messages, each its own group: 10 + 10 + 5, three runs sent at once.
        let alone: Vec<Outgoing> = (0..25).map(|i| msg(&format!("g{i}"), 10)).collect();
        let runs = group_runs(&alone, SEND_BATCH_ENTRIES, SEND_BATCH_BYTES);
        assert_eq!(runs.len(), 3);
        assert_eq!(
            runs.iter().map(|r| r[0].len()).collect::<Vec<_>>(),
            [10, 10, 5]
        );
        // Bodies of 400 KiB: two a call (1 MiB).
        let big: Vec<Outgoing> = (0..5).map(|i| msg(&format!("b{i}"), 400 * 1024)).collect();
        let runs = group_runs(&big, SEND_BATCH_ENTRIES, SEND_BATCH_BYTES);
        assert_eq!(
            runs.iter().map(|r| r[0].len()).collect::<Vec<_>>(),
            [2, 2, 1]
        );
        // A group in the first and third calls: those two are one run, in order; the second
        // call goes at once.
        let mut linked: Vec<Outgoing> = (0..30).map(|i| msg(&format!("h{i}"), 10)).collect();
        linked[3] = msg("same", 10);
        linked[25] = msg("same", 10);
        let runs = group_runs(&linked, SEND_BATCH_ENTRIES, SEND_BATCH_BYTES);
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].len(), 2);
        assert_eq!((runs[0][0][0], runs[0][1][0]), (0, 20));
        assert_eq!(runs[1], vec![(10..20).collect::<Vec<_>>()]);
    }
}
