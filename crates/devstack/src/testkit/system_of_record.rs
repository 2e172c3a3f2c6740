//! A system of record on loopback for the consumer to forward to: counts calls and applied
//! calls per `Idempotency-Key`, and fails chosen keys a chosen number of times.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// One request the system of record answered 2xx: its key, its `Webhook-Replay-Id` (a
/// replay's), and its body, byte for byte.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub key: String,
    pub replay_id: Option<String>,
    pub body: Vec<u8>,
}

/// A system of record on loopback: counts POSTs per `Idempotency-Key`, and answers 500 to
/// the first `fail_first` calls of any key listed in `failing`.
pub struct SystemOfRecord {
    url: String,
    deliveries: Arc<Mutex<Vec<Delivery>>>,
    calls: Arc<Mutex<BTreeMap<String, u64>>>,
    applied: Arc<Mutex<BTreeMap<String, u64>>>,
    failing: Arc<Mutex<BTreeMap<String, u64>>>,
    server: Arc<tiny_http::Server>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SystemOfRecord {
    pub fn start() -> SystemOfRecord {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind loopback"));
        let port = server
            .server_addr()
            .to_ip()
            .map(|a| a.port())
            .expect("an IP listener");
        let calls: Arc<Mutex<BTreeMap<String, u64>>> = Arc::default();
        let failing: Arc<Mutex<BTreeMap<String, u64>>> = Arc::default();
        let applied: Arc<Mutex<BTreeMap<String, u64>>> = Arc::default();
        let deliveries: Arc<Mutex<Vec<Delivery>>> = Arc::default();
        let (s, c, f, a, d) = (
            server.clone(),
            calls.clone(),
            failing.clone(),
            applied.clone(),
            deliveries.clone(),
        );
        let thread = std::thread::spawn(move || {
            for mut request in s.incoming_requests() {
                let key = request
                    .headers()
                    .iter()
                    .find(|h| h.field.equiv("Idempotency-Key"))
                    .map(|h| h.value.as_str().to_owned());
                let replay_id = request
                    .headers()
                    .iter()
                    .find(|h| h.field.equiv("Webhook-Replay-Id"))
                    .map(|h| h.value.as_str().to_owned());
                let mut sink = Vec::new();
                let _ = std::io::Read::read_to_end(request.as_reader(), &mut sink);
                let status = match key {
                    None => 400,
                    Some(key) => {
                        *c.lock().expect("calls").entry(key.clone()).or_default() += 1;
                        let mut fails = f.lock().expect("failing");
                        match fails.get_mut(&key) {
                            Some(left) if *left > 0 => {
                                *left -= 1;
                                500
                            }
                            _ => {
                                *a.lock().expect("applied").entry(key.clone()).or_default() += 1;
                                d.lock().expect("deliveries").push(Delivery {
                                    key,
                                    replay_id,
                                    body: std::mem::take(&mut sink),
                                });
                                200
                            }
                        }
                    }
                };
                let _ = request.respond(tiny_http::Response::empty(status));
            }
        });
        SystemOfRecord {
            url: format!("http://127.0.0.1:{port}/events"),
            deliveries,
            calls,
            applied,
            failing,
            server,
            thread: Some(thread),
        }
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// The next `times` calls with this key answer 500.
    pub fn fail_key(&self, key: &str, times: u64) {
        self.failing
            .lock()
            .expect("failing")
            .insert(key.to_owned(), times);
    }

    /// Calls per key so far.
    pub fn calls(&self) -> BTreeMap<String, u64> {
        self.calls.lock().expect("calls").clone()
    }

    pub fn calls_for(&self, key: &str) -> u64 {
        self.calls().get(key).copied().unwrap_or(0)
    }

    /// Calls per key answered 2xx (applied, as far as the caller knows) so far.
    pub fn applied(&self) -> BTreeMap<String, u64> {
        self.applied.lock().expect("applied").clone()
    }

    /// Every request answered 2xx, in order, with its body.
    pub fn deliveries(&self) -> Vec<Delivery> {
        self.deliveries.lock().expect("deliveries").clone()
    }

    pub fn applied_for(&self, key: &str) -> u64 {
        self.applied().get(key).copied().unwrap_or(0)
    }
}

impl Drop for SystemOfRecord {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
