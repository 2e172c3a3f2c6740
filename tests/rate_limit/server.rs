//! The destination of `rate_limit`: a counting server on loopback.

use std::sync::{Arc, Mutex};

use devstack::testkit;

/// A destination on loopback that answers 200 and notes each request's key and the epoch
/// millisecond it arrived.
pub struct CountingServer {
    pub url: String,
    arrivals: Arc<Mutex<Vec<(String, i64)>>>,
    server: Arc<tiny_http::Server>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl CountingServer {
    pub fn start() -> CountingServer {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind loopback"));
        let port = server
            .server_addr()
            .to_ip()
            .map(|a| a.port())
            .expect("an IP listener");
        let arrivals: Arc<Mutex<Vec<(String, i64)>>> = Arc::default();
        let (s, a) = (server.clone(), arrivals.clone());
        let thread = std::thread::spawn(move || {
            for mut request in s.incoming_requests() {
                let at = testkit::now_ms();
                let key = request
                    .headers()
                    .iter()
                    .find(|h| h.field.equiv("Idempotency-Key"))
                    .map(|h| h.value.as_str().to_owned())
                    .unwrap_or_default();
                let mut sink = Vec::new();
                let _ = std::io::Read::read_to_end(request.as_reader(), &mut sink);
                a.lock().expect("arrivals").push((key, at));
                let _ = request.respond(tiny_http::Response::empty(200));
            }
        });
        CountingServer {
            url: format!("http://127.0.0.1:{port}/in"),
            arrivals,
            server,
            thread: Some(thread),
        }
    }

    pub fn arrivals(&self) -> Vec<(String, i64)> {
        self.arrivals.lock().expect("arrivals").clone()
    }
}

impl Drop for CountingServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
