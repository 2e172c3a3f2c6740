//! An optional in-process cache of completed results, bounded in bytes: a warm Lambda
//! instance answers a duplicate it has answered before without a store call.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

#[derive(Clone, Debug)]
struct Entry {
    payload_sha256: String,
    result: Arc<str>,
    /// Epoch seconds, as the record's.
    expires_at: i64,
    bytes: usize,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<String, Entry>,
    /// Oldest first: evicted first.
    order: VecDeque<String>,
    bytes: usize,
}

/// Completed results by key, at most `max_bytes` of keys, hashes and results together; the
/// oldest go first. Cloning shares the cache.
#[derive(Clone, Debug)]
pub struct ResultCache {
    inner: Arc<Mutex<Inner>>,
    max_bytes: usize,
}

/// What the cache knows of a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Cached {
    /// The stored result (same payload).
    Hit(Arc<str>),
    /// Completed with another payload.
    Mismatch,
}

impl ResultCache {
    /// A cache holding at most `max_bytes` (keys, hashes and results counted).
    pub fn new(max_bytes: usize) -> Self {
        ResultCache {
            inner: Arc::new(Mutex::new(Inner::default())),
            max_bytes,
        }
    }

    /// Bytes held now.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    /// Entries held now.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn get(&self, key: &str, payload_sha256: &str, now_ms: i64) -> Option<Cached> {
        let inner = self.lock();
        let entry = inner.entries.get(key)?;
        if entry.expires_at < now_ms.div_euclid(1000) {
            return None;
        }
        Some(if entry.payload_sha256 == payload_sha256 {
            Cached::Hit(entry.result.clone())
        } else {
            Cached::Mismatch
        })
    }

    pub(crate) fn put(&self, key: &str, payload_sha256: &str, result: &str, expires_at: i64) {
        let bytes = key.len() + payload_sha256.len() + result.len();
        if bytes > self.max_bytes {
            return;
        }
        let mut inner = self.lock();
        if let Some(old) = inner.entries.remove(key) {
            inner.bytes -= old.bytes;
            inner.order.retain(|k| k != key);
        }
        while inner.bytes + bytes > self.max_bytes {
            let Some(oldest) = inner.order.pop_front() else {
                break;
            };
            if let Some(old) = inner.entries.remove(&oldest) {
                inner.bytes -= old.bytes;
            }
        }
        inner.order.push_back(key.to_owned());
        inner.bytes += bytes;
        let entry = Entry {
            payload_sha256: payload_sha256.to_owned(),
            result: Arc::from(result),
            expires_at,
            bytes,
        };
        inner.entries.insert(key.to_owned(), entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_stays_within_its_bytes() {
        let cache = ResultCache::new(100);
        for i in 0..50 {
            cache.put(&format!("k{i}"), "h", &"r".repeat(20), i64::MAX);
            assert!(cache.bytes() <= 100, "{} bytes", cache.bytes());
        }
        // The newest stay, the oldest went.
        assert!(cache.get("k49", "h", 0).is_some());
        assert!(cache.get("k0", "h", 0).is_none());
        // Too big for the whole cache: not kept.
        cache.put("big", "h", &"r".repeat(200), i64::MAX);
        assert!(cache.get("big", "h", 0).is_none());
    }

    #[test]
    fn the_cache_knows_a_changed_payload_and_forgets_expired_results() {
        let cache = ResultCache::new(1000);
        cache.put("k", "h1", "r", 10);
        assert_eq!(cache.get("k", "h2", 0), Some(Cached::Mismatch));
        assert_eq!(
            cache.get("k", "h1", 10_999),
            Some(Cached::Hit(Arc::from("r")))
        );
        assert_eq!(cache.get("k", "h1", 11_000), None);
    }
}
