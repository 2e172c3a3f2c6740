//! The event list: newest first, by source, status, event type and time range, a page at a
//! time, from the ledger's keys-only index [`INDEX`] (partition `source`, sort `received_at`;
//! docs/design.md §4). Only event items carry both attributes, so body guard items
//! (`#guard:…`) and (event, destination) items (`<key> to:<name>`) are never in it. A page queries each source's partition from where the last
//! page stopped (newest first, `Limit` the page size), merges them by `received_at`, and reads
//! the items of the keys it takes with `BatchGetItem`; the status and event type filters apply
//! to those items, so a filtered page reads at most [`EXAMINED_PER_ROW`] keys per row it shows
//! before it stops and offers the next. Never a table scan.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use anyhow::{anyhow, Context as _};
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// The ledger table's index of event items by source and receipt (template.yaml).
pub const INDEX: &str = "by-source-received";
/// A filtered page reads at most this many keys per row of the page.
pub const EXAMINED_PER_ROW: usize = 10;
/// The page size when none is asked for; at most [`MAX_PAGE`].
pub const DEFAULT_PAGE: usize = 50;
pub const MAX_PAGE: usize = 100;

/// What the list shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListFilter {
    pub source: Option<String>,
    /// A ledger status (`FAILED`, ...).
    pub status: Option<String>,
    pub event_type: Option<String>,
    /// Epoch milliseconds, included.
    pub from_ms: Option<i64>,
    /// Epoch milliseconds, excluded.
    pub to_ms: Option<i64>,
}

/// One row of the list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub key: String,
    pub source: String,
    pub event_type: Option<String>,
    pub status: String,
    pub attempts: i64,
    pub received_at: i64,
    pub last_error: Option<String>,
}

/// Where the next page starts: per source, the last key taken (its `pk` and `received_at`);
/// the sources whose partition is read to its end.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    #[serde(default)]
    pub after: BTreeMap<String, (String, i64)>,
    #[serde(default)]
    pub done: BTreeSet<String>,
}

impl Cursor {
    /// URL-safe base64 of its JSON.
    pub fn encode(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
    }

    pub fn decode(text: &str) -> Result<Cursor, String> {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(text)
            .map_err(|_| "the page cursor is not base64".to_owned())?;
        serde_json::from_slice(&bytes).map_err(|e| format!("the page cursor is not one: {e}"))
    }
}

/// One page and where the next starts (`None`: no more).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Page {
    pub rows: Vec<Row>,
    pub next: Option<Cursor>,
    /// Keys read from the index for this page.
    pub examined: usize,
}

/// One index entry: the key and its receipt.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    pk: String,
    received_at: i64,
}

/// One source's partition as this page reads it.
struct Lane {
    source: String,
    buffer: VecDeque<Entry>,
    /// The last key taken (from the cursor, then this page's).
    position: Option<Entry>,
    /// `ExclusiveStartKey` of the next query, where the last one had more.
    next_query: Option<HashMap<String, AttributeValue>>,
    exhausted: bool,
    queried: bool,
}

impl Lane {
    fn start_key(&self) -> Option<HashMap<String, AttributeValue>> {
        if self.queried {
            return self.next_query.clone();
        }
        self.position.as_ref().map(|e| {
            HashMap::from([
                ("pk".to_owned(), AttributeValue::S(e.pk.clone())),
                ("source".to_owned(), AttributeValue::S(self.source.clone())),
                (
                    "received_at".to_owned(),
                    AttributeValue::N(e.received_at.to_string()),
                ),
            ])
        })
    }
}

/// The ledger's table and the source names.
pub struct Lister<'a> {
    pub dynamo: &'a aws_sdk_dynamodb::Client,
    pub table: &'a str,
    pub sources: &'a [String],
    /// Epoch seconds: items past `expires_at` count as absent.
    pub now_s: i64,
}

impl Lister<'_> {
    /// The page of `size` rows after `cursor`.
    pub async fn page(
        &self,
        filter: &ListFilter,
        cursor: &Cursor,
        size: usize,
    ) -> anyhow::Result<Page> {
        let size = size.clamp(1, MAX_PAGE);
        let sources: Vec<String> = match &filter.source {
            Some(s) => vec![s.clone()],
            None => self.sources.to_vec(),
        };
        let mut lanes: Vec<Lane> = sources
            .into_iter()
            .filter(|s| !cursor.done.contains(s))
            .map(|source| Lane {
                position: cursor.after.get(&source).map(|(pk, at)| Entry {
                    pk: pk.clone(),
                    received_at: *at,
                }),
                source,
                buffer: VecDeque::new(),
                next_query: None,
                exhausted: false,
                queried: false,
            })
            .collect();
        let mut done = cursor.done.clone();
        let mut page = Page::default();
        let budget = size * EXAMINED_PER_ROW;
        while page.rows.len() < size && page.examined < budget {
            for lane in lanes.iter_mut() {
                if lane.buffer.is_empty() && !lane.exhausted {
                    self.fill(lane, filter, size).await?;
                }
            }
            let batch = take_newest(&mut lanes, size - page.rows.len());
            if batch.is_empty() {
                break;
            }
            page.examined += batch.len();
            let items = self.items(&batch).await?;
            for entry in &batch {
                if let Some(row) = items.get(&entry.pk).and_then(|i| self.row(i, filter)) {
                    page.rows.push(row);
                }
            }
        }
        let mut after = cursor.after.clone();
        for lane in &lanes {
            if lane.exhausted && lane.buffer.is_empty() {
                done.insert(lane.source.clone());
                after.remove(&lane.source);
            } else if let Some(p) = &lane.position {
                after.insert(lane.source.clone(), (p.pk.clone(), p.received_at));
            }
        }
        let more = lanes.iter().any(|l| !(l.exhausted && l.buffer.is_empty()));
        page.next = more.then_some(Cursor { after, done });
        Ok(page)
    }

    /// The next keys of a lane's partition, newest first, in the filter's time range.
    async fn fill(&self, lane: &mut Lane, filter: &ListFilter, size: usize) -> anyhow::Result<()> {
        let from = filter.from_ms.unwrap_or(0);
        let to = filter.to_ms.map_or(i64::MAX / 2, |t| t - 1);
        let out = self
            .dynamo
            .query()
            .table_name(self.table)
            .index_name(INDEX)
            .key_condition_expression("#source = :source AND received_at BETWEEN :from AND :to")
            .expression_attribute_names("#source", "source")
            .expression_attribute_values(":source", AttributeValue::S(lane.source.clone()))
            .expression_attribute_values(":from", AttributeValue::N(from.to_string()))
            .expression_attribute_values(":to", AttributeValue::N(to.to_string()))
            .scan_index_forward(false)
            .limit(i32::try_from(size).unwrap_or(100))
            .set_exclusive_start_key(lane.start_key())
            .send()
            .await
            .map_err(|e| {
                anyhow!(
                    "Query {} index {INDEX}: {}",
                    self.table,
                    aws_sdk_dynamodb::error::DisplayErrorContext(e)
                )
            })?;
        lane.queried = true;
        for item in out.items() {
            let pk = text(item, "pk");
            let received_at = number(item, "received_at");
            if let (Some(pk), Some(received_at)) = (pk, received_at) {
                lane.buffer.push_back(Entry { pk, received_at });
            }
        }
        lane.next_query = out.last_evaluated_key().cloned();
        lane.exhausted = lane.next_query.is_none();
        Ok(())
    }

    /// The items of `batch` (eventually consistent, the list's attributes only).
    async fn items(
        &self,
        batch: &[Entry],
    ) -> anyhow::Result<HashMap<String, HashMap<String, AttributeValue>>> {
        let keys = batch
            .iter()
            .map(|e| HashMap::from([("pk".to_owned(), AttributeValue::S(e.pk.clone()))]))
            .collect::<Vec<_>>();
        let mut request = Some(
            KeysAndAttributes::builder()
                .set_keys(Some(keys))
                .projection_expression(
                    "pk, #source, #status, attempts, received_at, last_error, event_type, expires_at",
                )
                .expression_attribute_names("#source", "source")
                .expression_attribute_names("#status", "status")
                .build()
                .context("BatchGetItem keys")?,
        );
        let mut found = HashMap::new();
        let mut rounds = 0;
        while let Some(keys) = request.take() {
            rounds += 1;
            let out = self
                .dynamo
                .batch_get_item()
                .request_items(self.table, keys)
                .send()
                .await
                .map_err(|e| {
                    anyhow!(
                        "BatchGetItem on {}: {}",
                        self.table,
                        aws_sdk_dynamodb::error::DisplayErrorContext(e)
                    )
                })?;
            for item in out
                .responses()
                .and_then(|r| r.get(self.table))
                .into_iter()
                .flatten()
            {
                if let Some(pk) = text(item, "pk") {
                    found.insert(pk, item.clone());
                }
            }
            request = out
                .unprocessed_keys()
                .and_then(|u| u.get(self.table))
                .filter(|k| !k.keys().is_empty())
                .cloned();
            if request.is_some() {
                if rounds >= 8 {
                    anyhow::bail!("BatchGetItem on {}: keys still unprocessed after {rounds} calls (throttled)", self.table);
                }
                tokio::time::sleep(std::time::Duration::from_millis(50 << rounds)).await;
            }
        }
        Ok(found)
    }

    /// The row of an item the filter admits (and that has not expired).
    fn row(&self, item: &HashMap<String, AttributeValue>, filter: &ListFilter) -> Option<Row> {
        if number(item, "expires_at").is_some_and(|e| e < self.now_s) {
            return None;
        }
        let row = Row {
            key: text(item, "pk")?,
            source: text(item, "source").unwrap_or_default(),
            event_type: text(item, "event_type"),
            status: text(item, "status").unwrap_or_default(),
            attempts: number(item, "attempts").unwrap_or(0),
            received_at: number(item, "received_at").unwrap_or(0),
            last_error: text(item, "last_error"),
        };
        let status_ok = filter.status.as_ref().is_none_or(|s| *s == row.status);
        let type_ok = filter
            .event_type
            .as_ref()
            .is_none_or(|t| row.event_type.as_ref() == Some(t));
        (status_ok && type_ok).then_some(row)
    }
}

/// Up to `want` entries, newest first across the lanes; stops where a lane that may hold newer
/// ones has none buffered (it is queried again first).
fn take_newest(lanes: &mut [Lane], want: usize) -> Vec<Entry> {
    let mut batch = Vec::new();
    while batch.len() < want {
        if lanes.iter().any(|l| l.buffer.is_empty() && !l.exhausted) {
            break;
        }
        let newest = lanes
            .iter()
            .enumerate()
            .filter_map(|(i, l)| l.buffer.front().map(|e| (i, e)))
            .max_by(|(_, a), (_, b)| {
                a.received_at
                    .cmp(&b.received_at)
                    .then_with(|| a.pk.cmp(&b.pk))
            })
            .map(|(i, _)| i);
        let Some(i) = newest else { break };
        if let Some(entry) = lanes[i].buffer.pop_front() {
            lanes[i].position = Some(entry.clone());
            batch.push(entry);
        }
    }
    batch
}

fn text(item: &HashMap<String, AttributeValue>, name: &str) -> Option<String> {
    item.get(name).and_then(|v| v.as_s().ok()).cloned()
}

fn number(item: &HashMap<String, AttributeValue>, name: &str) -> Option<i64> {
    item.get(name)
        .and_then(|v| v.as_n().ok())
        .and_then(|n| n.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane(source: &str, entries: &[(&str, i64)], exhausted: bool) -> Lane {
        Lane {
            source: source.into(),
            buffer: entries
                .iter()
                .map(|(pk, at)| Entry {
                    pk: (*pk).into(),
                    received_at: *at,
                })
                .collect(),
            position: None,
            next_query: None,
            exhausted,
            queried: true,
        }
    }

    #[test]
    fn lanes_merge_newest_first_and_wait_for_a_lane_to_refill() {
        let mut lanes = vec![
            lane("a", &[("a:3", 30), ("a:1", 10)], true),
            lane("b", &[("b:2", 20)], false),
        ];
        let taken: Vec<_> = take_newest(&mut lanes, 10)
            .into_iter()
            .map(|e| e.pk)
            .collect();
        // b's buffer ran dry while b may hold more: stop there, query b again first.
        assert_eq!(taken, ["a:3", "b:2"]);
        assert_eq!(lanes[1].position.as_ref().unwrap().pk, "b:2");
        lanes[1].exhausted = true;
        let rest: Vec<_> = take_newest(&mut lanes, 10)
            .into_iter()
            .map(|e| e.pk)
            .collect();
        assert_eq!(rest, ["a:1"]);
        assert!(take_newest(&mut lanes, 10).is_empty());
    }

    #[test]
    fn a_cursor_round_trips_and_refuses_junk() {
        let c = Cursor {
            after: BTreeMap::from([("github".to_owned(), ("github:d-1".to_owned(), 5))]),
            done: BTreeSet::from(["stripe".to_owned()]),
        };
        assert_eq!(Cursor::decode(&c.encode()), Ok(c));
        assert_eq!(
            Cursor::decode("!!"),
            Err("the page cursor is not base64".to_owned())
        );
        let e = Cursor::decode("bm90IGpzb24").unwrap_err();
        assert!(e.starts_with("the page cursor is not one: "), "{e}");
    }

    #[test]
    fn the_start_key_is_the_last_key_taken_with_the_index_keys() {
        let mut l = lane("github", &[], false);
        l.queried = false;
        l.position = Some(Entry {
            pk: "github:d-1".into(),
            received_at: 7,
        });
        let key = l.start_key().unwrap();
        assert_eq!(key["pk"], AttributeValue::S("github:d-1".into()));
        assert_eq!(key["source"], AttributeValue::S("github".into()));
        assert_eq!(key["received_at"], AttributeValue::N("7".into()));
    }
}
