//! The world's constants: the template's ratios, at a scale a simulation can cover, and the
//! two sources the receiver and the consumer are configured with.

/// 2023-11-14T22:13:20Z.
pub(crate) const START_MS: i64 = 1_700_000_000_000;
/// The receiver's Lambda timeout: its claim's lease runs to this deadline.
pub(crate) const RECEIVER_TIMEOUT_MS: i64 = 10_000;
/// The consumer's Lambda timeout: its take's lease runs to this deadline.
pub(crate) const CONSUMER_TIMEOUT_MS: i64 = 20_000;
/// The queue's visibility timeout: six times the consumer's timeout, as in the template.
pub(crate) const VISIBILITY_MS: i64 = 6 * CONSUMER_TIMEOUT_MS;
/// A visibility timeout shorter than the consumer's timeout (and than a side effect can take),
/// which the configuration does not forbid: a message still being worked on comes back and a
/// second consumer gets it while the first runs. A quarter of the seeds use it.
pub(crate) const SHORT_VISIBILITY_MS: i64 = CONSUMER_TIMEOUT_MS / 2;
/// The redrive policy's maxReceiveCount: a safety net, since the consumer dead-letters a key
/// itself after MAX_FAILURES real failures. It must be reached by a message failing for other
/// reasons (store errors, crashes, a busy key) well within the queue's retention: the
/// template's 500 receives take 50 h at its 6-minute visibility against 96 h of retention.
/// This scheduler receives far less often than a mapping polls (minutes apart), so its net
/// is lower, just above MAX_FAILURES.
pub(crate) const MAX_RECEIVE: u32 = MAX_FAILURES + 1;
/// The routed seeds' maxReceiveCount: the template's. A message a breaker holds is received
/// again after each cool-down, failing nothing; the consumer sends it again as a fresh message
/// at 400 receives (`HELD_RESEND_RECEIVES`), against this bound, so the scaled-down net above
/// would dead-letter a held message that the deployed queue keeps (`Mutant::QueueBoundBelowHolds`).
pub(crate) const TEMPLATE_MAX_RECEIVE: u32 = 500;
/// Real failures of a key before the consumer moves its message to the dead-letter queue
/// (`MAX_FAILURES`, the template's default).
pub(crate) const MAX_FAILURES: u32 = 5;
/// SQS FIFO's deduplication window.
pub(crate) const DEDUP_WINDOW_MS: i64 = 5 * 60_000;
/// The ledger remembers a key this long (`retention_hours`, below): longer than any message
/// of its event can live (the template's chain: 264 h against the queue's 96 h, the
/// dead-letter queue's 144 h and a day to redrive). The consumer takes only an event whose
/// item exists (docs/design.md §5), so a message that outlived its item would be refused; the
/// simulated dead-letter queue keeps its messages until the operator redrives them, within
/// the run, so the item outlives the run's...
pub(crate) const LEDGER_RETENTION_HOURS: u64 = 24;
/// ...longer than the queue keeps a message...
pub(crate) const QUEUE_RETENTION_MS: i64 = 50 * 60_000;
/// The routed seeds' queue retention: a message a breaker holds stays on the queue through
/// the run (the deployed queue keeps it four days; the consumer sends it again before the
/// end, `RETENTION_MARGIN_MS`), still well within the ledger's retention.
pub(crate) const ROUTED_QUEUE_RETENTION_MS: i64 = 4 * 3_600_000;
/// ...and longer than a sender keeps retrying.
pub(crate) const SENDER_WINDOW_MS: i64 = 15 * 60_000;
/// The batch source's `max_events`: above any batch a sender here makes.
pub(crate) const MAX_BATCH_EVENTS: usize = 10;
/// Scheduler steps before the drain.
pub(crate) const MAIN_STEPS: usize = 260;

/// Three sources, no signatures (the scheme is written out, as the config demands): one keyed
/// by a header with a group per event, one keyed by a body field with a group per customer,
/// so that FIFO ordering within a group matters, and one whose requests are batches of events
/// at `/events` (docs/design.md §14), each keyed and grouped by its own fields.
pub(crate) fn sources_json() -> String {
    format!(
        r#"{{
          "gh":   {{"signature": {{"scheme": "none"}}, "allow_unsigned": true,
                   "key": {{"from": "header", "name": "X-Event-Id"}},
                   "retention_hours": {LEDGER_RETENTION_HOURS}}},
          "shop": {{"signature": {{"scheme": "none"}}, "allow_unsigned": true,
                   "key": {{"from": "json", "pointers": ["/id"]}},
                   "group": {{"from": "json", "pointers": ["/customer_id"]}},
                   "retention_hours": {LEDGER_RETENTION_HOURS}}},
          "hub":  {{"signature": {{"scheme": "none"}}, "allow_unsigned": true,
                   "batch": {{"format": "json_array", "at": "/events", "max_events": {MAX_BATCH_EVENTS}}},
                   "key": {{"from": "json", "pointers": ["/id"]}},
                   "group": {{"from": "json", "pointers": ["/customer_id"]}},
                   "retention_hours": {LEDGER_RETENTION_HOURS}}}
        }}"#
    )
}
