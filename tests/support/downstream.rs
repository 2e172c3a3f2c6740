//! A system of record on loopback (plain HTTP): every request kept, each answered as the test
//! says. The forwarding tests' downstream, and the trace test's collector and destinations.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// One request the system of record received.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub headers: BTreeMap<String, String>,
    pub body: Vec<u8>,
}

/// An answer: status and headers.
pub type Reply = (u16, Vec<(&'static str, String)>);

/// A system of record on loopback: records every request and answers with `respond(request,
/// how many requests to its path came before)`.
pub struct Downstream {
    pub base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    server: Arc<tiny_http::Server>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Downstream {
    pub fn start(respond: impl Fn(&Seen, usize) -> Reply + Send + 'static) -> Downstream {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind loopback"));
        let port = server.server_addr().to_ip().expect("an IP listener").port();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let (s, log) = (server.clone(), seen.clone());
        let thread = std::thread::spawn(move || {
            for mut request in s.incoming_requests() {
                let mut body = Vec::new();
                let _ = std::io::Read::read_to_end(request.as_reader(), &mut body);
                let this = Seen {
                    method: request.method().as_str().to_owned(),
                    path: request.url().to_owned(),
                    headers: request
                        .headers()
                        .iter()
                        .map(|h| {
                            (
                                h.field.as_str().as_str().to_ascii_lowercase(),
                                h.value.as_str().to_owned(),
                            )
                        })
                        .collect(),
                    body,
                };
                let before = {
                    let mut log = log.lock().expect("log");
                    let n = log.iter().filter(|r| r.path == this.path).count();
                    log.push(this.clone());
                    n
                };
                let (status, headers) = respond(&this, before);
                let mut response = tiny_http::Response::from_string("{}").with_status_code(status);
                for (name, value) in headers {
                    let header = tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes())
                        .expect("a valid header");
                    response.add_header(header);
                }
                let _ = request.respond(response);
            }
        });
        Downstream {
            base: format!("http://127.0.0.1:{port}"),
            seen,
            server,
            thread: Some(thread),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("seen").clone()
    }

    /// Requests carrying this `Idempotency-Key`.
    pub fn for_key(&self, key: &str) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|r| r.headers.get("idempotency-key").map(String::as_str) == Some(key))
            .collect()
    }
}

impl Drop for Downstream {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
