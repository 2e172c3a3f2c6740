//! A system of record on loopback over HTTPS, with a certificate of its own: a CA made at test
//! time ([`TestCertificates`], its PEM in a file for `HTTPS_TEST_CA_FILE`), a server certificate
//! it signed for `127.0.0.1` and `localhost`, and a server ([`HttpsServer`]) that records every
//! request (method, path, headers, body byte for byte) and answers from a programmed sequence
//! ([`Reply`]: fail N times, then 200; a 429 with `Retry-After`), then a default.
//!
//! The functions trust that CA only where the test-only setting names it (`inbox::test_ca`):
//! a client without it fails the handshake, which the server records too. For the https tests
//! of the forward, the destinations, and later the breaker, the rate limit and the trace header.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::TokioIo;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A CA made for one test, and a server certificate it signed for `127.0.0.1` and `localhost`;
/// the CA's PEM in a file of its own (removed on drop).
pub struct TestCertificates {
    ca_pem: String,
    ca_path: PathBuf,
    chain: Vec<CertificateDer<'static>>,
    key: Vec<u8>,
}

impl TestCertificates {
    /// A fresh CA and server certificate (ECDSA P-256), the CA's PEM written to a temporary
    /// file.
    ///
    /// # Panics
    /// Where the certificates cannot be made or the file written (a broken test machine).
    pub fn new() -> TestCertificates {
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        ca.distinguished_name
            .push(DnType::CommonName, "webhook-inbox test CA");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().expect("a CA key"))
            .expect("the CA's certificate");
        let key = KeyPair::generate().expect("a server key");
        let mut server =
            CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
                .expect("server parameters");
        server
            .distinguished_name
            .push(DnType::CommonName, "webhook-inbox test system of record");
        server.is_ca = IsCa::ExplicitNoCa;
        server.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let server = server
            .signed_by(&key, &ca)
            .expect("the server's certificate");
        let ca_pem = ca.pem();
        let ca_path = std::env::temp_dir().join(format!("{}.pem", super::unique("test-ca")));
        std::fs::write(&ca_path, &ca_pem).expect("the CA's PEM file");
        TestCertificates {
            ca_pem,
            ca_path,
            chain: vec![server.der().clone()],
            key: key.serialize_der(),
        }
    }

    /// The CA certificate, PEM.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The file holding [`Self::ca_pem`]: what `HTTPS_TEST_CA_FILE` names.
    pub fn ca_pem_path(&self) -> &Path {
        &self.ca_path
    }

    /// The server's TLS configuration: its certificate and key, TLS 1.2 and 1.3, ring.
    fn server_config(&self) -> rustls::ServerConfig {
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key.clone()));
        rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("the default protocol versions")
        .with_no_client_auth()
        .with_single_cert(self.chain.clone(), key)
        .expect("the server's certificate and key")
    }
}

impl Default for TestCertificates {
    fn default() -> Self {
        TestCertificates::new()
    }
}

impl Drop for TestCertificates {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.ca_path);
    }
}

/// One answer of the server: a status and headers (the body is `ok`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
}

impl Reply {
    /// This status, no header.
    pub fn status(status: u16) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
        }
    }

    /// 200.
    pub fn ok() -> Reply {
        Reply::status(200)
    }

    /// This status with `Retry-After: <seconds>` (a 429 or 503 asking to be called later).
    pub fn retry_after(status: u16, seconds: u64) -> Reply {
        Reply::status(status).header("Retry-After", &seconds.to_string())
    }

    /// This reply with one more header.
    #[must_use]
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

/// One request the server received (whatever it answered).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Received {
    pub method: String,
    /// The path and query.
    pub path: String,
    /// Each header, its name lower-case (the last value of a repeated one).
    pub headers: BTreeMap<String, String>,
    /// The body, byte for byte.
    pub body: Vec<u8>,
    /// The status it was answered.
    pub status: u16,
}

impl Received {
    /// The header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
}

#[derive(Default)]
struct State {
    script: VecDeque<Reply>,
    default: Option<Reply>,
    received: Vec<Received>,
    failed_handshakes: Vec<String>,
}

impl State {
    fn next_reply(&mut self) -> Reply {
        self.script
            .pop_front()
            .or_else(|| self.default.clone())
            .unwrap_or_else(Reply::ok)
    }
}

/// A system of record on loopback over HTTPS; see the module documentation. It runs on a
/// thread of its own (its own runtime), so it serves whatever runtime the test uses, and stops
/// on drop.
pub struct HttpsServer {
    url: String,
    certificates: TestCertificates,
    state: Arc<Mutex<State>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HttpsServer {
    /// A server on a free loopback port with fresh [`TestCertificates`], answering 200 until
    /// told otherwise.
    ///
    /// # Panics
    /// Where loopback cannot be bound or the runtime built.
    pub fn start() -> HttpsServer {
        let certificates = TestCertificates::new();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(certificates.server_config()));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let port = listener.local_addr().expect("an address").port();
        let state: Arc<Mutex<State>> = Arc::default();
        let (shutdown, stop) = tokio::sync::oneshot::channel();
        let shared = state.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("the server's runtime");
            runtime.block_on(serve(listener, acceptor, shared, stop));
        });
        HttpsServer {
            url: format!("https://127.0.0.1:{port}"),
            certificates,
            state,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    /// `https://127.0.0.1:<port>`, no path.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// [`Self::url`] with this path (`/in`, say).
    pub fn url_for(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    /// The file holding the server's CA certificate, PEM: what `HTTPS_TEST_CA_FILE` names.
    pub fn ca_pem_path(&self) -> &Path {
        self.certificates.ca_pem_path()
    }

    /// The server's CA and certificate.
    pub fn certificates(&self) -> &TestCertificates {
        &self.certificates
    }

    /// The next requests are answered these replies, in order (after any still queued); then
    /// the default.
    pub fn answer(&self, replies: impl IntoIterator<Item = Reply>) {
        self.with_state(|s| s.script.extend(replies));
    }

    /// What a request is answered once the queued replies are used up (200 until set).
    pub fn answer_otherwise(&self, reply: Reply) {
        self.with_state(|s| s.default = Some(reply));
    }

    /// Every request received so far, in order.
    pub fn received(&self) -> Vec<Received> {
        self.with_state(|s| s.received.clone())
    }

    /// Each TLS handshake that failed so far, as the server saw it (a client that does not
    /// trust the CA aborts the handshake with an alert).
    pub fn failed_handshakes(&self) -> Vec<String> {
        self.with_state(|s| s.failed_handshakes.clone())
    }

    fn with_state<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        match self.state.lock() {
            Ok(mut state) => f(&mut state),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }
}

impl Drop for HttpsServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Accepts connections until `stop`, each served on a task of its own.
async fn serve(
    listener: std::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    state: Arc<Mutex<State>>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
    loop {
        let stream = tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => continue,
            },
        };
        let (acceptor, state) = (acceptor.clone(), state.clone());
        tokio::spawn(async move {
            let tls = match acceptor.accept(stream).await {
                Ok(tls) => tls,
                Err(e) => {
                    lock(&state).failed_handshakes.push(e.to_string());
                    return;
                }
            };
            let service = hyper::service::service_fn(move |request| {
                let state = state.clone();
                async move { Ok::<_, hyper::Error>(respond(&state, request).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tls), service)
                .await;
        });
    }
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    match state.lock() {
        Ok(state) => state,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Records `request` and answers it the next reply.
async fn respond(
    state: &Mutex<State>,
    request: hyper::Request<Incoming>,
) -> hyper::Response<Full<Bytes>> {
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes().to_vec())
        .unwrap_or_default();
    let headers = parts
        .headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect();
    let reply = {
        let mut state = lock(state);
        let reply = state.next_reply();
        state.received.push(Received {
            method: parts.method.as_str().to_owned(),
            path: parts
                .uri
                .path_and_query()
                .map_or_else(|| parts.uri.path().to_owned(), |p| p.as_str().to_owned()),
            headers,
            body,
            status: reply.status,
        });
        reply
    };
    let mut response = hyper::Response::builder().status(reply.status);
    for (name, value) in &reply.headers {
        response = response.header(name, value);
    }
    response
        .body(Full::new(Bytes::from_static(b"ok")))
        .unwrap_or_else(|_| hyper::Response::new(Full::new(Bytes::from_static(b"bad reply"))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(ca: Option<&Path>) -> reqwest::Client {
        let mut builder = reqwest::Client::builder();
        if let Some(ca) = ca {
            let pem = std::fs::read(ca).expect("the CA's file");
            builder =
                builder.add_root_certificate(reqwest::Certificate::from_pem(&pem).expect("a PEM"));
        }
        builder.build().expect("a client")
    }

    #[tokio::test]
    async fn it_answers_the_programmed_replies_then_the_default_and_records_each_request() {
        let server = HttpsServer::start();
        server.answer([Reply::status(500), Reply::retry_after(429, 7)]);
        let client = client(Some(server.ca_pem_path()));
        let mut answers = Vec::new();
        for n in 0..3 {
            let response = client
                .post(server.url_for("/in?x=1"))
                .header("Idempotency-Key", format!("k-{n}"))
                .body(vec![0u8, 159, 146, 150, n])
                .send()
                .await
                .expect("an answer");
            answers.push((
                response.status().as_u16(),
                response
                    .headers()
                    .get("retry-after")
                    .map(|v| v.to_str().expect("text").to_owned()),
            ));
        }
        assert_eq!(
            answers,
            [(500, None), (429, Some("7".to_owned())), (200, None)]
        );
        let received = server.received();
        assert_eq!(received.len(), 3);
        for (n, r) in (0u8..).zip(&received) {
            assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/in?x=1"));
            assert_eq!(r.header("IDEMPOTENCY-KEY"), Some(format!("k-{n}").as_str()));
            assert_eq!(r.body, vec![0u8, 159, 146, 150, n]);
        }
        assert_eq!(
            received.iter().map(|r| r.status).collect::<Vec<_>>(),
            [500, 429, 200]
        );
        server.answer_otherwise(Reply::status(503));
        let status = client.get(server.url()).send().await.expect("an answer");
        assert_eq!(status.status().as_u16(), 503);
        assert!(server.failed_handshakes().is_empty());
    }

    #[tokio::test]
    async fn a_client_without_the_ca_fails_the_handshake_and_nothing_is_received() {
        let server = HttpsServer::start();
        let e = client(None)
            .get(server.url())
            .send()
            .await
            .expect_err("an unknown issuer");
        assert!(e.is_connect(), "{e:?}");
        let mut cause: &dyn std::error::Error = &e;
        while let Some(next) = cause.source() {
            cause = next;
        }
        assert_eq!(cause.to_string(), "invalid peer certificate: UnknownIssuer");
        assert!(server.received().is_empty());
        // The server saw the client's alert (its task may record it just after the client
        // returns: poll).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while server.failed_handshakes().is_empty() {
            assert!(std::time::Instant::now() < deadline, "no failed handshake");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(
            server.failed_handshakes(),
            ["received fatal alert: UnknownCA"]
        );
    }
}
