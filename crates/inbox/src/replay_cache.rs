//! The warm instance's memory of keys it has answered 200 for: a duplicate of such a key is
//! answered from here, with no AWS call.
//!
//! A key enters only once its event is durably on the queue (this instance's own send
//! succeeded, or the ledger showed it past RECEIVED), with the payload's SHA-256 and the
//! answer the first delivery got; so a hit is exactly what the ledger would have replayed,
//! and the payload-mismatch rule is applied to it the same way. The cache is bounded in
//! keys and in bytes (the oldest entry goes first: a key, and the stored answer that repeats
//! it, may each be kilobytes long, so a bound by keys alone could fill a small function's
//! memory) and in age (an entry older than `max_age_ms` is not
//! used), far below any source's `retention_hours`, so it never outlives the ledger's memory
//! of the key. Each Lambda execution environment has its own; nothing depends on a hit.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// What the cache remembers of a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    pub payload_sha256: String,
    pub response_status: u16,
    pub response_body: String,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<String, (Seen, i64)>,
    /// Keys in the order they were put in, with the time they were put in.
    order: VecDeque<(String, i64)>,
    /// What the entries hold, by [`entry_bytes`].
    bytes: usize,
}

/// What one entry costs in memory: the key twice (the map and the order), the stored hash
/// and answer, and a fixed allowance for the map's and the strings' own bookkeeping.
pub fn entry_bytes(key: &str, seen: &Seen) -> usize {
    2 * key.len() + seen.payload_sha256.len() + seen.response_body.len() + ENTRY_OVERHEAD_BYTES
}

/// The bookkeeping of one entry beyond its text: four `String` headers, the map's slot and
/// hash, the order's slot and the two timestamps, rounded up.
pub const ENTRY_OVERHEAD_BYTES: usize = 160;

/// A bounded map of keys answered 200, each with its age.
#[derive(Debug)]
pub struct ReplayCache {
    inner: Mutex<Inner>,
    capacity: usize,
    max_bytes: usize,
    max_age_ms: i64,
}

impl ReplayCache {
    /// At most `capacity` keys and `max_bytes` bytes ([`entry_bytes`]), each key used for
    /// `max_age_ms` after it was put in. A capacity, size or age of 0 disables the cache.
    pub fn new(capacity: usize, max_bytes: usize, max_age_ms: i64) -> Self {
        Self {
            inner: Mutex::default(),
            capacity,
            max_bytes,
            max_age_ms,
        }
    }

    pub fn enabled(&self) -> bool {
        self.capacity > 0 && self.max_bytes > 0 && self.max_age_ms > 0
    }

    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        let mut inner = match self.inner.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut inner)
    }

    /// The key's entry if it is younger than the maximum age at `now_ms`.
    pub fn get(&self, key: &str, now_ms: i64) -> Option<Seen> {
        if !self.enabled() {
            return None;
        }
        self.with(|inner| {
            let (seen, at) = inner.entries.get(key)?;
            (now_ms.saturating_sub(*at) <= self.max_age_ms).then(|| seen.clone())
        })
    }

    /// Remembers `key` as answered at `now_ms` (a key already held keeps its first time: the
    /// answer is the same); the oldest entries go beyond the capacity or the size, and
    /// entries past the maximum age are dropped on the way. An entry larger than the whole
    /// size is not kept.
    pub fn put(&self, key: &str, seen: Seen, now_ms: i64) {
        if !self.enabled() {
            return;
        }
        let cost = entry_bytes(key, &seen);
        if cost > self.max_bytes {
            return;
        }
        self.with(|inner| {
            if !inner.entries.contains_key(key) {
                inner.entries.insert(key.to_owned(), (seen, now_ms));
                inner.order.push_back((key.to_owned(), now_ms));
                inner.bytes += cost;
            }
            // `order` and `entries` hold the same keys, oldest first.
            while let Some((oldest, at)) = inner.order.front() {
                let full = inner.entries.len() > self.capacity || inner.bytes > self.max_bytes;
                let stale = now_ms.saturating_sub(*at) > self.max_age_ms;
                if !full && !stale {
                    break;
                }
                if let Some((gone, _)) = inner.entries.remove(oldest) {
                    inner.bytes -= entry_bytes(oldest, &gone);
                }
                inner.order.pop_front();
            }
        })
    }

    /// Bytes held now, by [`entry_bytes`] (for tests).
    pub fn bytes(&self) -> usize {
        self.with(|inner| inner.bytes)
    }

    /// Keys held now (for tests).
    pub fn len(&self) -> usize {
        self.with(|inner| inner.entries.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(sha: &str) -> Seen {
        Seen {
            payload_sha256: sha.into(),
            response_status: 200,
            response_body: "{}".into(),
        }
    }

    #[test]
    fn a_key_is_answered_until_its_maximum_age() {
        let c = ReplayCache::new(10, 1 << 20, 1000);
        c.put("k", seen("a"), 5_000);
        assert_eq!(c.get("k", 5_000), Some(seen("a")));
        assert_eq!(c.get("k", 6_000), Some(seen("a")));
        assert_eq!(c.get("k", 6_001), None);
        assert_eq!(c.get("other", 5_000), None);
    }

    #[test]
    fn the_oldest_keys_go_beyond_the_capacity() {
        let c = ReplayCache::new(3, 1 << 20, 60_000);
        for (i, k) in ["a", "b", "c", "d", "e"].iter().enumerate() {
            c.put(k, seen(k), i as i64);
        }
        assert_eq!(c.len(), 3);
        assert_eq!(c.get("a", 10), None);
        assert_eq!(c.get("b", 10), None);
        for k in ["c", "d", "e"] {
            assert_eq!(c.get(k, 10), Some(seen(k)), "{k}");
        }
    }

    #[test]
    fn stale_entries_are_dropped_when_keys_are_put_in() {
        let c = ReplayCache::new(100, 1 << 20, 1000);
        c.put("old", seen("a"), 0);
        c.put("new", seen("b"), 5_000);
        assert_eq!(c.len(), 1);
        assert_eq!(c.get("new", 5_000), Some(seen("b")));
    }

    #[test]
    fn a_disabled_cache_holds_nothing() {
        for c in [
            ReplayCache::new(0, 1 << 20, 1000),
            ReplayCache::new(10, 0, 1000),
            ReplayCache::new(10, 1 << 20, 0),
        ] {
            c.put("k", seen("a"), 0);
            assert_eq!(c.get("k", 0), None);
            assert!(c.is_empty());
        }
    }

    #[test]
    fn the_oldest_keys_go_beyond_the_size_in_bytes() {
        let long = |c: char| c.to_string().repeat(1000);
        let one = entry_bytes(&long('a'), &seen("h"));
        assert_eq!(one, 2000 + 1 + 2 + ENTRY_OVERHEAD_BYTES);
        // Room for two such entries, not three: the key count alone would keep all five.
        let c = ReplayCache::new(100, 2 * one + one / 2, 60_000);
        for (i, k) in ['a', 'b', 'c', 'd', 'e'].into_iter().enumerate() {
            c.put(&long(k), seen("h"), i as i64);
            assert!(c.bytes() <= 2 * one + one / 2, "after {k}: {}", c.bytes());
        }
        assert_eq!(c.len(), 2);
        assert_eq!(c.bytes(), 2 * one);
        assert_eq!(c.get(&long('c'), 10), None);
        assert_eq!(c.get(&long('e'), 10), Some(seen("h")));
        // An entry larger than the whole size is not kept, and evicts nothing.
        c.put(&long('z').repeat(3), seen("h"), 11);
        assert_eq!(c.len(), 2);
        // Stale entries give their bytes back.
        c.put("k", seen("h"), 1_000_000);
        assert_eq!(c.len(), 1);
        assert_eq!(c.bytes(), entry_bytes("k", &seen("h")));
    }
}
