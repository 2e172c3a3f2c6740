//! `inbox-ops replay`: puts archived events back on the queue as replays (docs/design.md §12).
//!
//! The archive (`ARCHIVE_BODIES`, [`inbox::archive`]) holds each accepted event's envelope as
//! one line of an object under `archive/<yyyy>/<mm>/<dd>/<hh>/`, the hour Firehose filed it;
//! a key is found from its ledger item's `archived_at` (three hours listed, their objects
//! read), and a time range of one source is one listing per hour of the range, an hour either
//! side. Each selected envelope is sent with one replay id for the whole run: in the envelope
//! (`replay_id`) and in the `MessageDeduplicationId` (`<key>#replay:<id>`, made SQS-safe), so
//! the consumer runs the side effect once more per replay id, COMPLETED or not, and a second
//! delivery of the same replay, or the same command run again with `--replay-id`, does
//! nothing more. With `--destination`, the replay runs for that one destination of a routed
//! event (docs/routing.md): the envelope names it, the deduplication id too, and `--status`
//! reads that destination's item. No index beyond S3 itself.
//!
//! The archive is an input like any other (docs/design.md §5): an envelope is selected only
//! where the event's ledger item exists, has not expired and holds the envelope's
//! `payload_sha256`, and of several envelopes of one key, the one whose hash the item holds.
//! What is passed over is said, with why ([`Skipped`]). Before its message is sent, each
//! replay id is recorded on the event's item (`request_replay`), and the consumer runs only
//! a replay recorded so: a planted object, or a forged replay message, runs nothing.

use crate::stack::DEFAULT_STACK;
use clap::builder::NonEmptyStringValueParser;
use clap::Args;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _};
use inbox::archive::{archive_hour_prefix, archive_hours, envelopes_in};
use inbox::bucket::PayloadBucket;
use inbox::ledger::{LedgerStore, Status};
use inbox::queue::{Envelope, Outgoing, Queue, MAX_REPLAY_ID_LEN};

/// Which ledger statuses a replay selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StatusFilter {
    Completed,
    Failed,
    /// Every archived event, whatever its status (none, too).
    Any,
}

/// `replay`'s arguments.
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct ReplayArgs {
    /// One event, by its key `<source>:<value>` (found through its ledger item).
    #[arg(long, value_name = "KEY", conflicts_with_all = ["source", "from", "to"], required_unless_present = "source", value_parser = NonEmptyStringValueParser::new())]
    pub key: Option<String>,
    /// One source's events received from --from (included) to --to (excluded).
    #[arg(long, value_name = "SOURCE", requires_all = ["from", "to"], value_parser = NonEmptyStringValueParser::new())]
    pub source: Option<String>,
    /// RFC 3339 time (2026-12-03T13:00:00Z) or epoch milliseconds.
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub from: Option<i64>,
    /// RFC 3339 time or epoch milliseconds (excluded).
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub to: Option<i64>,
    /// With --from and --to: how many hours after its receipt an event may have been archived
    /// (the consumer archives a batch as it receives it; give more after a pause or a backlog).
    #[arg(long, value_name = "HOURS", default_value_t = 1, requires = "from")]
    pub archive_lag: u32,
    /// Only the events whose ledger item is so.
    #[arg(long, value_enum, default_value_t = StatusFilter::Any)]
    pub status: StatusFilter,
    /// List what would be replayed (key, receipt, status, archived object); send nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// At most this many events a second (`N/s`).
    #[arg(long, value_name = "N/s", default_value = "10/s", value_parser = parse_rate)]
    pub rate: u32,
    /// The replay's id [default: a new one]; the same id again sends nothing that already ran.
    #[arg(long, value_name = "ID")]
    pub replay_id: Option<String>,
    /// One destination of a routed event only (docs/routing.md); --status then reads that
    /// destination's item.
    #[arg(long, value_name = "NAME", value_parser = destination_name)]
    pub destination: Option<String>,
    /// The payload bucket [default: the stack's PayloadBucketName].
    #[arg(long, env = "PAYLOAD_BUCKET", value_name = "BUCKET", value_parser = NonEmptyStringValueParser::new())]
    pub bucket: Option<String>,
    /// The ledger table's name [default: the stack's LedgerTableName].
    #[arg(long, env = "LEDGER_TABLE", value_name = "LEDGER_TABLE", value_parser = NonEmptyStringValueParser::new())]
    pub table: Option<String>,
    /// The webhook queue's URL [default: the stack's QueueUrl].
    #[arg(long, env = "QUEUE_URL", value_name = "QUEUE_URL", value_parser = NonEmptyStringValueParser::new())]
    pub queue: Option<String>,
    /// The stack whose outputs name what a flag below leaves out.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_STACK, value_parser = NonEmptyStringValueParser::new())]
    pub stack: String,
}

/// `--destination`: a destination's name (1 to 64 letters, digits, `-` and `_`).
fn destination_name(text: &str) -> Result<String, String> {
    if inbox::route::valid_name(text) {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "`{text}` is not a destination name (1 to 64 letters, digits, `-` and `_`)"
        ))
    }
}

/// Which events: one key, or one source's events received in `[from_ms, to_ms)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    Key(String),
    Range {
        source: String,
        from_ms: i64,
        to_ms: i64,
        /// How long after its receipt an event may have been archived (the consumer archives
        /// a batch when it receives it: seconds, unless delivery was paused or backlogged).
        archive_lag_ms: i64,
    },
}

/// One event the archive holds, selected for a replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The archive object holding its envelope (one line of it).
    pub object: String,
    pub envelope: Envelope,
    /// The ledger item's status (the destination's item's, for one destination), where there
    /// is one.
    pub status: Option<Status>,
}

/// An archived envelope a replay passed over, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// The archive object holding it.
    pub object: String,
    pub key: String,
    pub reason: SkipReason,
}

/// Why an archived envelope is not replayed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SkipReason {
    /// No unexpired ledger item holds its key: no receiver accepted it (a planted object), its
    /// source keeps no ledger (at-most-once), or it is older than the ledger's retention.
    #[error("no ledger item holds this key")]
    NoLedgerItem,
    /// The ledger item holds another body's hash: not the event the receiver accepted.
    #[error("its payload_sha256 is not the ledger item's")]
    PayloadDiffers,
    /// The ledger refused to record the replay id (the item expired since it was selected).
    #[error("the ledger item refused the replay id")]
    NotRecorded,
}

/// What a selection found: the candidates, in the archive's order, and what it passed over.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selected {
    pub candidates: Vec<Candidate>,
    pub skipped: Vec<Skipped>,
}

/// What a run of [`send`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sent {
    pub count: usize,
    pub skipped: Vec<Skipped>,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "skipped {} ({}): {}",
            crate::text::shown(&self.key),
            crate::text::shown(&self.object),
            self.reason
        )
    }
}

/// Whether the event's ledger item vouches for an archived envelope: `None` where it holds the
/// envelope's body hash and has not expired.
fn unvouched(
    record: Option<&inbox::ledger::Record>,
    envelope: &Envelope,
    now_ms: i64,
) -> Option<SkipReason> {
    match record {
        None => Some(SkipReason::NoLedgerItem),
        Some(r) if r.is_expired(now_ms) => Some(SkipReason::NoLedgerItem),
        Some(r) if r.payload_sha256 != envelope.payload_sha256 => Some(SkipReason::PayloadDiffers),
        Some(_) => None,
    }
}

fn now_ms() -> i64 {
    inbox::clock::Clock::now_ms(&inbox::clock::SystemClock)
}

impl StatusFilter {
    fn admits(self, status: Option<Status>) -> bool {
        match self {
            StatusFilter::Any => true,
            StatusFilter::Completed => status == Some(Status::Completed),
            StatusFilter::Failed => status == Some(Status::Failed),
        }
    }
}

/// A replay id: 1 to [`MAX_REPLAY_ID_LEN`] letters, digits, `-` and `_`.
pub fn check_replay_id(id: &str) -> anyhow::Result<()> {
    if id.is_empty()
        || id.len() > MAX_REPLAY_ID_LEN
        || !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        bail!("a replay id is 1 to {MAX_REPLAY_ID_LEN} letters, digits, `-` and `_`: `{id}`");
    }
    Ok(())
}

/// A new replay id: `rp-<UTC time>-<8 hex digits>`.
pub fn new_replay_id(now_ms: i64) -> String {
    let stamp = jiff::Timestamp::from_millisecond(now_ms)
        .map(|t| t.strftime("%Y%m%dT%H%M%SZ").to_string())
        .unwrap_or_else(|_| now_ms.to_string());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let noise = inbox::key::sha256_hex(format!("{nanos}:{}", std::process::id()).as_bytes());
    format!("rp-{stamp}-{}", &noise[..8])
}

/// The `MessageDeduplicationId` of a replay (before [`Outgoing::new`] makes it SQS-safe); a
/// replay for one destination adds `#to:<name>`, so it is not taken for the whole event's.
pub fn replay_dedup(key: &str, replay_id: &str, destination: Option<&str>) -> String {
    match destination {
        Some(name) => format!("{key}#replay:{replay_id}#to:{name}"),
        None => format!("{key}#replay:{replay_id}"),
    }
}

/// The archived envelope of a ledger item's key, and the object holding it: searched in the
/// hours around the item's `archived_at` ([`archive_hours`]); of the envelopes with that key,
/// the one whose `payload_sha256` the item holds (an object planted under another name, even
/// one listed first, is passed over).
pub async fn archived_envelope(
    store: &impl PayloadBucket,
    ledger: &impl LedgerStore,
    key: &str,
) -> anyhow::Result<Candidate> {
    let shown = crate::text::shown(key);
    let record = ledger
        .get(key)
        .await?
        .filter(|r| !r.is_expired(now_ms()))
        .ok_or_else(|| anyhow!("no ledger item for `{shown}`: select by --source, --from, --to"))?;
    let archived_at = record.archived_at.ok_or_else(|| {
        anyhow!("`{shown}` is not in the archive: its source does not archive, or the consumer has not taken it yet")
    })?;
    let hours = archive_hours(archived_at);
    for hour in &hours {
        for object in store.list(hour).await? {
            if let Some(envelope) = read_object(store, &object)
                .await?
                .into_iter()
                .find(|e| e.key == key && e.payload_sha256 == record.payload_sha256)
            {
                return Ok(Candidate {
                    object,
                    envelope,
                    status: Some(record.status),
                });
            }
        }
    }
    bail!(
        "`{shown}` is not in the archive under {} to {} with the body its ledger item holds",
        store.url(&hours[0]),
        store.url(&hours[2])
    )
}

/// The envelopes of an archive object, in order; a line that is not one stops the command,
/// naming the object.
pub async fn read_object(
    store: &impl PayloadBucket,
    object: &str,
) -> anyhow::Result<Vec<Envelope>> {
    let bytes = store
        .get(object)
        .await?
        .ok_or_else(|| anyhow!("not in the archive: {}", store.url(object)))?;
    envelopes_in(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("archive object {}", store.url(object)))
}

/// The events a replay would send, in the archive's order, filtered by their ledger status,
/// and what it passed over.
pub async fn select(
    store: &impl PayloadBucket,
    ledger: &impl LedgerStore,
    selection: &Selection,
    status: StatusFilter,
) -> anyhow::Result<Selected> {
    select_for(store, ledger, selection, status, None).await
}

/// The ledger status [`select_for`] filters on: the event's item, or its destination's.
async fn status_of(
    ledger: &impl LedgerStore,
    event: Option<&inbox::ledger::Record>,
    key: &str,
    destination: Option<&str>,
) -> anyhow::Result<Option<Status>> {
    Ok(match destination {
        Some(name) => ledger
            .get(&inbox::route::destination_key(key, name))
            .await?
            .map(|r| r.status),
        None => event.map(|r| r.status),
    })
}

/// [`select`] for one destination: each candidate's envelope names it, and the status is
/// that of its (event, destination) item (`None`: the event's own).
pub async fn select_for(
    store: &impl PayloadBucket,
    ledger: &impl LedgerStore,
    selection: &Selection,
    status: StatusFilter,
    destination: Option<&str>,
) -> anyhow::Result<Selected> {
    let mut out = Selected::default();
    match selection {
        Selection::Key(key) => {
            let mut candidate = archived_envelope(store, ledger, key).await?;
            if destination.is_some() {
                candidate.status = status_of(ledger, None, key, destination).await?;
            }
            if status.admits(candidate.status) {
                out.candidates.push(candidate);
            }
        }
        Selection::Range {
            source,
            from_ms,
            to_ms,
            archive_lag_ms,
        } => {
            if to_ms <= from_ms {
                bail!("--to must be after --from");
            }
            // The hours the range's events were filed under: archived after their receipt
            // (up to the lag), in an object filed under its oldest record's hour (up to the
            // stream's 15-minute buffer earlier). One listing per hour, an hour either side;
            // the envelope's received_at decides; a key once (a redelivered message is
            // archived again), the first envelope its ledger item vouches for.
            const HOUR_MS: i64 = 3_600_000;
            let mut seen = std::collections::HashSet::new();
            let mut hour = from_ms - from_ms.rem_euclid(HOUR_MS) - HOUR_MS;
            let until = to_ms.saturating_add((*archive_lag_ms).max(0)) + HOUR_MS;
            while hour < until {
                for object in store.list(&archive_hour_prefix(hour)).await? {
                    for envelope in read_object(store, &object).await? {
                        if envelope.source != *source
                            || envelope.received_at < *from_ms
                            || envelope.received_at >= *to_ms
                            || seen.contains(&envelope.key)
                        {
                            continue;
                        }
                        let event = ledger.get(&envelope.key).await?;
                        if let Some(reason) = unvouched(event.as_ref(), &envelope, now_ms()) {
                            out.skipped.push(Skipped {
                                object: object.clone(),
                                key: envelope.key,
                                reason,
                            });
                            continue;
                        }
                        seen.insert(envelope.key.clone());
                        let found =
                            status_of(ledger, event.as_ref(), &envelope.key, destination).await?;
                        if status.admits(found) {
                            out.candidates.push(Candidate {
                                object: object.clone(),
                                envelope,
                                status: found,
                            });
                        }
                    }
                }
                hour += HOUR_MS;
            }
        }
    }
    if let Some(name) = destination {
        for c in &mut out.candidates {
            c.envelope.destination = Some(name.to_owned());
        }
    }
    Ok(out)
}

/// The queue message of a replay: the archived envelope with the replay id, grouped by its
/// key, deduplicated by key, replay id and (where the envelope names one) destination.
pub fn replay_message(candidate: &Candidate, replay_id: &str) -> Outgoing {
    let mut envelope = candidate.envelope.clone();
    envelope.replay_id = Some(replay_id.to_owned());
    Outgoing::new(
        &envelope.key,
        &replay_dedup(&envelope.key, replay_id, envelope.destination.as_deref()),
        envelope.to_json(),
    )
}

/// Sends each candidate's replay, at most `per_second` a second, calling `sent` after each:
/// first the replay id recorded on the event's ledger item (the consumer runs no replay that
/// is not), then the message. A candidate whose item refuses the id is passed over and said.
pub async fn send(
    queue: &impl Queue,
    ledger: &impl LedgerStore,
    candidates: &[Candidate],
    replay_id: &str,
    per_second: u32,
    mut sent: impl FnMut(&Candidate),
) -> anyhow::Result<Sent> {
    check_replay_id(replay_id)?;
    let gap = Duration::from_secs_f64(1.0 / f64::from(per_second.max(1)));
    let mut ticks = tokio::time::interval(gap);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut out = Sent::default();
    for candidate in candidates {
        ticks.tick().await;
        let envelope = &candidate.envelope;
        let recorded = ledger
            .request_replay(&envelope.key, &envelope.payload_sha256, replay_id, now_ms())
            .await
            .with_context(|| {
                format!(
                    "recording the replay of {}",
                    crate::text::shown(&envelope.key)
                )
            })?;
        if !recorded {
            out.skipped.push(Skipped {
                object: candidate.object.clone(),
                key: envelope.key.clone(),
                reason: SkipReason::NotRecorded,
            });
            continue;
        }
        queue
            .send(replay_message(candidate, replay_id))
            .await
            .with_context(|| {
                format!(
                    "sending the replay of {}",
                    crate::text::shown(&envelope.key)
                )
            })?;
        out.count += 1;
        sent(candidate);
    }
    Ok(out)
}

/// `--destination`: a destination of the stack that takes the selected source's events.
pub fn check_destination(
    routes: &inbox::route::Routes,
    selection: &Selection,
    name: &str,
) -> anyhow::Result<()> {
    let Some(destination) = routes.get(name) else {
        let known: Vec<&str> = routes.iter().map(|d| d.name.as_str()).collect();
        bail!(
            "no destination `{name}` in the stack's Destinations (known: {})",
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        );
    };
    let source = match selection {
        Selection::Key(key) => key.split_once(':').map_or(key.as_str(), |(s, _)| s),
        Selection::Range { source, .. } => source.as_str(),
    };
    if !destination.sources.contains(source) {
        bail!("destination `{name}` takes no event of source `{source}`");
    }
    Ok(())
}

/// `--from` / `--to`: RFC 3339 (`2026-12-03T13:00:00Z`) or epoch milliseconds.
pub fn parse_time(text: &str) -> Result<i64, String> {
    if let Ok(ms) = text.parse::<i64>() {
        return Ok(ms);
    }
    text.parse::<jiff::Timestamp>()
        .map(|t| t.as_millisecond())
        .map_err(|e| format!("`{text}` is neither RFC 3339 nor epoch milliseconds: {e}"))
}

/// `--rate`: `N/s` or `N`, events a second, 1 to 1000.
pub fn parse_rate(text: &str) -> Result<u32, String> {
    let n = text.strip_suffix("/s").unwrap_or(text);
    match n.trim().parse::<u32>() {
        Ok(n @ 1..=1000) => Ok(n),
        _ => Err(format!("`{text}` is not a rate of 1/s to 1000/s")),
    }
}

/// Runs `replay`: lists (`--dry-run`) or sends, with a progress bar on stderr.
/// `--key`, or `--source` with `--from` and `--to`.
fn selection_of(args: &ReplayArgs) -> anyhow::Result<Selection> {
    Ok(match (&args.key, &args.source, args.from, args.to) {
        (Some(key), None, None, None) => Selection::Key(key.clone()),
        (None, Some(source), Some(from_ms), Some(to_ms)) => Selection::Range {
            source: source.clone(),
            from_ms,
            to_ms,
            archive_lag_ms: i64::from(args.archive_lag) * 3_600_000,
        },
        _ => bail!("give --key KEY, or --source SOURCE --from TIME --to TIME"),
    })
}

/// The dry run's lines: key, receipt time, ledger status, archived object.
fn print_dry_run(candidates: &[Candidate]) {
    for c in candidates {
        println!(
            "{}\t{}\t{}\t{}",
            crate::text::shown(&c.envelope.key),
            time_text(c.envelope.received_at),
            c.status.map_or("(no ledger item)", Status::as_str),
            crate::text::shown(&c.object)
        );
    }
    eprintln!("dry run: {} event(s) would be replayed", candidates.len());
}

pub async fn run(args: &ReplayArgs) -> anyhow::Result<ExitCode> {
    let selection = selection_of(args)?;
    let replay_id = match &args.replay_id {
        Some(id) => id.clone(),
        None => new_replay_id(inbox::clock::Clock::now_ms(&inbox::clock::SystemClock)),
    };
    check_replay_id(&replay_id)?;
    let sdk = crate::aws::config().await;
    let mut stack = crate::stack::Lazy::new(&sdk, &args.stack);
    let bucket = stack
        .pick(args.bucket.as_deref(), crate::stack::BUCKET_OUTPUT, |r| {
            &r.bucket
        })
        .await?;
    let table = stack
        .pick(args.table.as_deref(), crate::stack::TABLE_OUTPUT, |r| {
            &r.table
        })
        .await?;
    let store = inbox::bucket::S3Bucket::new(inbox::bucket::s3_client(&sdk), &bucket);
    let ledger = inbox::ledger::dynamo::DynamoLedger::new(crate::aws::dynamo(&sdk), &table);
    if let Some(name) = args.destination.as_deref() {
        check_destination(&stack.routes().await?, &selection, name)?;
    }
    let Selected {
        candidates,
        skipped,
    } = select_for(
        &store,
        &ledger,
        &selection,
        args.status,
        args.destination.as_deref(),
    )
    .await?;
    for s in &skipped {
        eprintln!("{s}");
    }
    if args.dry_run {
        print_dry_run(&candidates);
        return Ok(ExitCode::SUCCESS);
    }
    let queue = stack
        .pick(args.queue.as_deref(), crate::stack::QUEUE_OUTPUT, |r| {
            &r.queue_url
        })
        .await?;
    let queue = inbox::queue::SqsQueue::new(crate::aws::sqs(&sdk), &queue);
    let bar = indicatif::ProgressBar::new(candidates.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} {per_sec} eta {eta}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let sent = send(&queue, &ledger, &candidates, &replay_id, args.rate, |_| {
        bar.inc(1)
    })
    .await;
    bar.finish_and_clear();
    let sent = sent?;
    for s in &sent.skipped {
        eprintln!("{s}");
    }
    println!("replay {replay_id}: {} event(s) sent", sent.count);
    Ok(ExitCode::SUCCESS)
}

fn time_text(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| ms.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_ids_times_and_rates_parse() {
        assert!(check_replay_id("rp-20261203T130000Z-0a1b2c3d").is_ok());
        assert!(check_replay_id(&new_replay_id(1_796_306_399_999)).is_ok());
        assert!(new_replay_id(1_796_306_399_999).starts_with("rp-20261203T135959Z-"));
        for bad in ["", "a b", "x#y", &"x".repeat(65)] {
            let e = check_replay_id(bad).unwrap_err().to_string();
            assert!(e.starts_with("a replay id is 1 to"), "{bad}: {e}");
        }
        assert_eq!(parse_time("2026-12-03T13:00:00Z"), Ok(1_796_302_800_000));
        assert_eq!(parse_time("5"), Ok(5));
        let e = parse_time("yesterday").unwrap_err();
        assert!(
            e.starts_with("`yesterday` is neither RFC 3339 nor epoch milliseconds"),
            "{e}"
        );
        assert_eq!(parse_rate("10/s"), Ok(10));
        assert_eq!(parse_rate("3"), Ok(3));
        for bad in ["0/s", "fast"] {
            assert_eq!(
                parse_rate(bad),
                Err(format!("`{bad}` is not a rate of 1/s to 1000/s"))
            );
        }
    }

    #[test]
    fn a_replay_message_carries_the_id_in_body_and_dedup_id() {
        let c = Candidate {
            object: "archive/s/x".into(),
            envelope: Envelope::new("s:1", "s", 5, "h", Default::default(), b"{}"),
            status: Some(Status::Completed),
        };
        let m = replay_message(&c, "rp-1");
        assert_eq!(m.dedup_id(), "s:1#replay:rp-1");
        let mut one = c.clone();
        one.envelope.destination = Some("crm".into());
        let to_crm = replay_message(&one, "rp-1");
        assert_eq!(to_crm.dedup_id(), "s:1#replay:rp-1#to:crm");
        assert_eq!(
            Envelope::parse(to_crm.body())
                .unwrap()
                .destination
                .as_deref(),
            Some("crm")
        );
        assert_eq!(m.group_id(), "s:1");
        let back = Envelope::parse(m.body()).unwrap();
        assert_eq!(back.replay_id.as_deref(), Some("rp-1"));
        assert_eq!(back.body_bytes().unwrap(), b"{}");
        // A long key: the SQS-safe hash, still one per key and replay.
        let long = Candidate {
            envelope: Envelope::new(
                &format!("s:{}", "k".repeat(130)),
                "s",
                5,
                "h",
                Default::default(),
                b"{}",
            ),
            ..c
        };
        let (a, b) = (replay_message(&long, "rp-1"), replay_message(&long, "rp-2"));
        assert_eq!(a.dedup_id().len(), 64);
        assert_ne!(a.dedup_id(), b.dedup_id());
    }
}
