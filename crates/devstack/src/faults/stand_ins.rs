//! The loopback endpoints [`super::Faults`] sends attempts to instead of the server: one
//! answers every request as a throttled AWS JSON-protocol service would (so the SDK's own
//! retry strategy sees a retryable error), the other accepts connections and never answers
//! (a frozen process).

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::sync::OnceLock;

/// Loopback endpoints standing in for the server: one answers every request as a throttled
/// AWS JSON-protocol service would; the other accepts connections and never answers.
pub(super) struct StandIns {
    throttling: String,
    black_hole: String,
}

impl StandIns {
    pub(super) fn throttling(&self) -> &str {
        &self.throttling
    }

    pub(super) fn black_hole(&self) -> &str {
        &self.black_hole
    }
}

/// The stand-ins, started on first use and kept for the process.
pub(super) fn stand_ins() -> &'static StandIns {
    static STAND_INS: OnceLock<StandIns> = OnceLock::new();
    STAND_INS.get_or_init(|| {
        let throttling = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let black_hole = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let endpoints = StandIns {
            throttling: format!("http://{}", throttling.local_addr().expect("address")),
            black_hole: format!("http://{}", black_hole.local_addr().expect("address")),
        };
        std::thread::spawn(move || {
            for stream in throttling.incoming().flatten() {
                std::thread::spawn(move || answer_throttled(stream));
            }
        });
        std::thread::spawn(move || {
            // Held open, never read from or answered.
            let mut held = Vec::new();
            for stream in black_hole.incoming().flatten() {
                held.push(stream);
            }
        });
        endpoints
    })
}

/// Answers each request on one connection with `400 ThrottlingException` (DynamoDB's and
/// SQS's JSON protocol), reading the request fully first so the connection stays reusable.
fn answer_throttled(mut stream: std::net::TcpStream) {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        // One request: headers, then Content-Length bytes of body.
        let head_end = loop {
            if let Some(i) = find(&buffer, b"\r\n\r\n") {
                break i + 4;
            }
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buffer[..head_end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        while buffer.len() < head_end + length {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        }
        let namespace = if head.contains("x-amz-target: amazonsqs.") {
            "com.amazonaws.sqs"
        } else {
            "com.amazonaws.dynamodb.v20120810"
        };
        buffer.drain(..head_end + length);
        let body = format!(
            r#"{{"__type":"{namespace}#ThrottlingException","message":"Rate exceeded (injected by devstack::faults)"}}"#
        );
        let response = format!(
            "HTTP/1.1 400 Bad Request\r\ncontent-type: application/x-amz-json-1.0\r\n\
             x-amzn-requestid: local-faults-throttle\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        if stream.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

/// Where `needle` first occurs in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
